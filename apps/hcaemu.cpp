// hcaemu: one emulated HCA (PF + VFs) served to QEMU guests over vfio-user, one socket per function.
#include <boost/program_options.hpp>

#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "common/log.h"
#include "pcie/model_time.h"
#include "qemu-bridge/function_backend.h"
#include "qemu-bridge/kernel_queue.h"
#include "qemu-bridge/server.h"
#include "sriov/hca_device.h"
#include "traces/latency_trace.h"
#include "traces/pcap_writer.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace hcaemu;

namespace {

constexpr const char* kUsage = R"(Usage: hcaemu --socket-dir DIR [--vfs N] [--config FILE] [options]

Emulates one ConnectX-like HCA (a PF and up to TotalVFs SR-IOV VFs) and serves each PCIe function on
its own vfio-user socket: DIR/pf.sock for the PF, DIR/vf0.sock, DIR/vf1.sock, ... for the VFs. Attach a
socket to a QEMU (>= 10.1) guest with
  -device '{"driver":"vfio-user-pci","socket":{"type":"unix","path":"DIR/pf.sock"}}'
and guest RAM shared through memory-backend-memfd,share=on (or use hcavm). Stops cleanly on SIGINT or
SIGTERM.

Options)";

struct Options {
  fs::path socket_dir;
  unsigned vfs = 0;
  fs::path config_file;
  std::string log_level = "info";
  std::string pcap_file;
  std::string timing_preset = "connectx6dx-100g";
  std::string timing_file;
  std::string trace_prefix;
  bool print_config = false;
  bool wall_clock_timers = true;
  std::string socket_mode = "600";
};

// Returns the exit code to stop with, or -1 to go on.
int parse_options(int argc, char** argv, Options& o) {
  po::options_description desc(kUsage);
  desc.add_options()
      ("help,h", "show this help and exit")
      ("version", "print the version and exit")
      ("socket-dir", po::value<std::string>(), "directory for the vfio-user sockets (created if missing)")
      ("socket-mode", po::value<std::string>(&o.socket_mode)->default_value("600"),
       "permissions of the socket files, octal; clients of another uid than hcaemu's (root excepted) are "
       "refused whatever the mode")
      ("vfs", po::value<unsigned>(&o.vfs)->default_value(0),
       "VFs to enable at start, through the PF's SR-IOV capability like sriov_numvfs")
      ("config", po::value<std::string>(), "JSON device configuration (see docs/configuration.md)")
      ("print-config", "print the effective configuration as JSON and exit")
      ("log-level", po::value<std::string>(&o.log_level)->default_value("info"),
       "trace, debug, info, warn, error, critical or off")
      ("timing-preset", po::value<std::string>(&o.timing_preset)->default_value("connectx6dx-100g"),
       "named timing preset: HCA pipeline cycles, firmware latency, port rate, propagation (docs/timing.md)")
      ("timing-file", po::value<std::string>(&o.timing_file),
       "JSON file of timing presets to pick --timing-preset from (default: the built-in ones, which "
       "config/timing-presets.json lists)")
      ("wall-clock-timers", po::value<bool>(&o.wall_clock_timers)->default_value(true),
       "retransmission and RNR timers also wait out a wall-clock floor (200 ms / 1 ms), so guests running "
       "at emulation speed get the time to act before the model retransmits; 0 = model time only, as in "
       "closed runs (deterministic, but live guests see spurious retransmissions)")
      ("pcap", po::value<std::string>(&o.pcap_file),
       "write every frame the embedded switch carries to FILE (pcap, nanosecond timestamps = model time)")
      ("trace", po::value<std::string>(&o.trace_prefix),
       "write the RDMA latency trace (model time per stage of each WQE) to PREFIX.json (Perfetto/Chrome "
       "trace-event format) and PREFIX.csv; summarise with hcatrace summary PREFIX.csv");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "hcaemu: " << e.what() << "\n(see hcaemu --help)\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (vm.count("version")) {
    std::cout << "hcaemu 0.1.0 (SystemC " << sc_core::sc_release() << ")\n";
    return 0;
  }
  o.print_config = vm.count("print-config") > 0;
  if (vm.count("config")) o.config_file = vm["config"].as<std::string>();
  if (vm.count("socket-dir")) o.socket_dir = vm["socket-dir"].as<std::string>();
  if (o.socket_mode.empty() || o.socket_mode.size() > 4 ||
      o.socket_mode.find_first_not_of("01234567") != std::string::npos) {
    std::cerr << "hcaemu: --socket-mode takes an octal mode such as 600 or 660\n";
    return 2;
  }
  if (o.socket_dir.empty() && !o.print_config) {
    std::cerr << "hcaemu: --socket-dir is required (see hcaemu --help)\n";
    return 2;
  }
  if (!set_log_level(o.log_level)) {
    std::cerr << "hcaemu: unknown --log-level \"" << o.log_level << "\"\n";
    return 2;
  }
  return -1;
}

// One served function: its kernel queue, backend and (once the function exists) its server.
struct ServedFunction {
  std::unique_ptr<bridge::KernelQueue> queue;
  std::unique_ptr<bridge::FunctionBackend> backend;
  std::unique_ptr<vfio_user::VfioUserServer> server;
};

void start_server(ServedFunction& f, sriov::FunctionPort& port, const fs::path& path, unsigned socket_mode) {
  if (f.server) return;
  vfio_user::ServerOptions server_options;
  server_options.socket_mode = socket_mode;
  f.server = std::make_unique<vfio_user::VfioUserServer>(path.string(), *f.backend, server_options);
  // QEMU emulates the MSI-X table and its masks (vfio-user.md section 6): interrupts go to its eventfds.
  port.attach_host(&f.server->host_memory(), &f.server->msix(), sriov::FunctionFace::MsixRouting::kHostOwnsTable);
  log().info("{}: serving on {}", port.name(), path.string());
}

}  // namespace

int sc_main(int argc, char** argv) {
  Options options;
  if (int code = parse_options(argc, argv, options); code >= 0) return code;

  sriov::DeviceConfig config;
  try {
    if (!options.config_file.empty()) config = sriov::load_device_config(options.config_file);
    config.validate();
  } catch (const std::exception& e) {
    std::cerr << "hcaemu: " << e.what() << "\n";
    return 2;
  }
  if (options.print_config) {
    std::cout << sriov::to_json(config) << "\n";
    return 0;
  }
  if (options.vfs > config.total_vfs) {
    std::cerr << "hcaemu: --vfs " << options.vfs << " exceeds TotalVFs " << config.total_vfs << "\n";
    return 2;
  }
  std::error_code ec;
  fs::create_directories(options.socket_dir, ec);
  if (!fs::is_directory(options.socket_dir)) {
    std::cerr << "hcaemu: cannot use socket directory " << options.socket_dir << ": " << ec.message() << "\n";
    return 2;
  }

  // Signals go to one waiting thread, never into the SystemC kernel or the I/O threads.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  std::optional<model::TimingPreset> timing;
  {
    std::string error;
    std::vector<model::TimingPreset> presets =
        options.timing_file.empty() ? model::builtin_timing_presets() : model::load_timing_presets(options.timing_file, &error);
    if (!error.empty()) {
      std::cerr << "hcaemu: --timing-file " << options.timing_file << ": " << error << "\n";
      return 2;
    }
    for (const auto& p : presets)
      if (p.name == options.timing_preset) timing = p;
    if (!timing) {
      std::cerr << "hcaemu: unknown --timing-preset \"" << options.timing_preset << "\"; known:";
      for (const auto& p : presets) std::cerr << " " << p.name;
      std::cerr << "\n";
      return 2;
    }
  }
  // The preset's PCIe latency; generation and width stay the device configuration's.
  config.link_one_way_ns = timing->pcie_one_way_ns;
  if (timing->pcie_gen != config.link_generation || timing->pcie_width != config.link_width)
    log().warn("timing preset {} assumes PCIe Gen{} x{}, the device configuration has Gen{} x{}", timing->name,
               timing->pcie_gen, timing->pcie_width, config.link_generation, config.link_width);
  std::unique_ptr<traces::PcapWriter> pcap;
  std::unique_ptr<traces::LatencyTrace> trace;
  std::string error;
  if (!options.pcap_file.empty() && !(pcap = traces::PcapWriter::open(options.pcap_file, &error))) {
    std::cerr << "hcaemu: --pcap " << options.pcap_file << ": " << error << "\n";
    return 2;
  }
  if (!options.trace_prefix.empty() && !(trace = traces::LatencyTrace::open(options.trace_prefix, &error))) {
    std::cerr << "hcaemu: --trace " << options.trace_prefix << ": " << error << "\n";
    return 2;
  }

  // Elaboration: every module exists before sc_start (VF ports for all of TotalVFs).
  sriov::HcaDevice device("hca", config);
  device.pf().hca().apply_timing(*timing);
  for (unsigned i = 0; i < device.vf_ports(); ++i) device.vf(i).hca().apply_timing(*timing);
  const model::TimerPolicy timers{.wall_clock_floor = options.wall_clock_timers};
  device.pf().hca().set_timer_policy(timers);
  for (unsigned i = 0; i < device.vf_ports(); ++i) device.vf(i).hca().set_timer_policy(timers);
  if (pcap) {
    device.eswitch().set_tap([&pcap](std::span<const uint8_t> frame) {
      pcap->write(pcie::model_time_ps(), frame);
    });
  }
  if (trace) {
    auto hook = [&trace](uint16_t function) {
      return [&trace, function](const model::StageStamp& s) {
        trace->record({.time_ps = s.time_ps != 0 ? s.time_ps : pcie::model_time_ps(),
                       .function = s.function >= 0 ? uint16_t(s.function) : function,
                       .qpn = s.qpn,
                       .message = s.message,
                       .opcode = s.opcode,
                       .bytes = s.bytes,
                       .stage = traces::Stage(s.stage)});
      };
    };
    // Remote delivery is stamped by the responder on the requester's record: MAC -> function.
    auto peer = [&config](const transport::Mac& mac) -> int32_t {
      for (uint16_t vhca = 0; vhca <= config.total_vfs; ++vhca)
        if (config.function_mac(vhca) == mac) return vhca;
      return -1;
    };
    device.pf().hca().set_stage_hook(hook(0));
    device.pf().hca().set_peer_lookup(peer);
    for (unsigned i = 0; i < device.vf_ports(); ++i) {
      device.vf(i).hca().set_stage_hook(hook(uint16_t(1 + i)));
      device.vf(i).hca().set_peer_lookup(peer);
    }
  }
  bridge::KernelQueue control("control");
  ServedFunction pf;
  pf.queue = std::make_unique<bridge::KernelQueue>("pf_queue");
  pf.backend = std::make_unique<bridge::FunctionBackend>(device.pf(), *pf.queue);
  std::vector<ServedFunction> vfs(device.vf_ports());
  for (unsigned i = 0; i < vfs.size(); ++i) {
    vfs[i].queue = std::make_unique<bridge::KernelQueue>(("vf" + std::to_string(i) + "_queue").c_str());
    vfs[i].backend = std::make_unique<bridge::FunctionBackend>(device.vf(i), *vfs[i].queue);
  }

  const unsigned socket_mode = unsigned(std::stoul(options.socket_mode, nullptr, 8));
  try {
    start_server(pf, device.pf(), options.socket_dir / "pf.sock", socket_mode);
  } catch (const std::exception& e) {
    std::cerr << "hcaemu: " << e.what() << "\n";
    return 1;
  }
  // VF sockets appear when VF Enable creates the VFs. A disabled VF keeps its socket and answers
  // like an absent function (all ones) until it is enabled again.
  device.on_vfs_changed([&](uint16_t count) {
    for (uint16_t i = 0; i < count; ++i) {
      try {
        start_server(vfs[i], device.vf(i), options.socket_dir / ("vf" + std::to_string(i) + ".sock"), socket_mode);
      } catch (const std::exception& e) {
        log().error("vf{}: cannot serve: {}", i, e.what());
      }
    }
  });
  control.post([&] {
    if (options.vfs > 0) {
      if (std::string error = device.set_num_vfs(uint16_t(options.vfs)); !error.empty())
        log().error("enabling {} VFs failed: {}", options.vfs, error);
    }
    log().info("hcaemu ready: PF {:04x}:{:04x} firmware {}.{}.{}, {} of {} VFs enabled, timing {}, sockets in {}",
               config.vendor_id, config.pf_device_id, config.firmware.major, config.firmware.minor,
               config.firmware.subminor, device.enabled_vfs(), config.total_vfs, timing->name,
               options.socket_dir.string());
  });

  std::thread signal_waiter([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    log().info("hcaemu: {} received, shutting down", signal == SIGINT ? "SIGINT" : "SIGTERM");
    control.request_stop();
  });

  sc_core::sc_start();

  // What each function did, for the log: the first place to look when traffic goes missing.
  auto report = [](sriov::FunctionPort& port) {
    const auto& e = port.hca().eth_counters();
    log().info("{}: commands {} (unsupported {}, failed {}); eth tx {} frames / {} WQEs / {} CQEs, rx {} frames "
               "(no WQE {}, steering miss {}, no RQ {}), tx errors {}, unclaimed SQ doorbells {}",
               port.name(), port.hca().command_counters().executed, port.hca().firmware().unsupported_commands(),
               port.hca().firmware().failed_commands(), e.tx_frames, e.tx_wqes, e.tx_cqes, e.rx_frames, e.rx_no_wqe,
               e.rx_steering_miss, e.rx_no_rq, e.tx_error_cqes, port.hca().unclaimed_sq_doorbells());
  };
  auto details = [](sriov::FunctionPort& port) {
    const auto& e = port.hca().eth_counters();
    log().debug("{}: eth doorbells {} (unknown sq {}, not ready {}, in error {}, dbr faults {}, overrun {}), tx nops {} "
                "tso {} no-port {}, rx cqes {} (dma faults {}, cqe failures {}, too big {}, rq not ready {})",
                port.name(), e.doorbells, e.doorbell_unknown_sq, e.doorbell_not_ready, e.doorbell_in_error,
                e.dbr_faults, e.producer_overrun, e.tx_nops, e.tx_tso_wqes, e.tx_no_port, e.rx_cqes, e.rx_dma_faults,
                e.rx_cqe_failures, e.rx_too_big, e.rx_rq_not_ready);
  };
  auto rdma = [](sriov::FunctionPort& port) {
    const auto& r = port.hca().rdma_counters();
    if (r.sq_doorbells == 0 && r.rx_packets == 0) return;
    log().info("{}: rdma {} WQEs, {} messages completed, tx {} packets, rx {} packets, acks {}/{} naks {}/{} rnr {}/{} "
               "(sent/received), retransmits {}, timeouts {}, duplicates {}, error CQEs {}, flushed {}",
               port.name(), r.wqes, r.messages_completed, r.tx_packets, r.rx_packets, r.acks_sent, r.acks_received,
               r.naks_sent, r.naks_received, r.rnr_naks_sent, r.rnr_naks_received, r.retransmits, r.timeouts,
               r.duplicates, r.error_cqes, r.flushed_wqes);
    log().debug("{}: rdma drops: not addressed to it {}, parse errors {}, bad ICRC {}, unknown QP {}, QP not ready {}, "
                "RoCE v1 {}; local protection {}, remote access {}, invalid requests {}, bad WQEs {}, DMA faults {}, "
                "other services {}",
                port.name(), r.rx_not_addressed, r.rx_parse_errors, r.rx_bad_icrc, r.rx_unknown_qp, r.rx_qp_not_ready,
                r.rx_roce_v1_unsupported, r.local_protection_errors, r.remote_access_errors, r.invalid_requests,
                r.bad_wqes, r.dma_faults, r.unsupported_service);
    if (r.umr_wqes != 0 || r.umr_errors != 0)
      log().info("{}: rdma UMR WQEs (memory re-registration) {}, refused {}", port.name(), r.umr_wqes, r.umr_errors);
    if (r.datagrams_sent != 0 || r.datagrams_received != 0 || r.datagrams_dropped_no_receive != 0 || r.rx_bad_qkey != 0)
      log().info("{}: datagrams (UD/QP1) sent {}, received {}, dropped: no receive {}, bad Q_Key {}, too long {}",
                 port.name(), r.datagrams_sent, r.datagrams_received, r.datagrams_dropped_no_receive, r.rx_bad_qkey,
                 r.datagrams_too_long);
  };
  rdma(device.pf());
  for (uint16_t i = 0; i < device.enabled_vfs(); ++i) rdma(device.vf(i));
  if (pcap) log().info("pcap: {} frames written to {}", pcap->frames(), options.pcap_file);
  if (trace) {
    trace->close();
    log().info("trace: {} events written to {}.json and {}.csv", trace->events(), options.trace_prefix,
               options.trace_prefix);
  }
  details(device.pf());
  for (uint16_t i = 0; i < device.enabled_vfs(); ++i) details(device.vf(i));
  report(device.pf());
  for (uint16_t i = 0; i < device.enabled_vfs(); ++i) report(device.vf(i));
  const auto& sw = device.eswitch().counters();
  log().info("eswitch: forwarded {}, flooded {}, looped back {}, dropped: unknown unicast {}, sender down {}, to self {}, "
             "runt {}",
             sw.forwarded, sw.flooded, sw.looped_back, sw.drop_unknown_unicast, sw.drop_sender_down, sw.drop_to_self,
             sw.drop_runt);

  pf.server.reset();
  for (auto& f : vfs) f.server.reset();
  pthread_kill(signal_waiter.native_handle(), SIGTERM);
  signal_waiter.join();
  log().info("hcaemu: stopped");
  return 0;
}
