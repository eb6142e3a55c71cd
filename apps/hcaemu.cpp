// hcaemu: one emulated HCA (PF + VFs) served to QEMU guests over vfio-user, one socket per function.
#include <boost/program_options.hpp>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "common/app_cli.h"
#include "common/log.h"
#include "fabric/link_faults.h"
#include "qemu-bridge/control_commands.h"
#include "qemu-bridge/control_server.h"
#include "qemu-bridge/dma_reply_waiter.h"
#include "qemu-bridge/function_backend.h"
#include "qemu-bridge/kernel_queue.h"
#include "qemu-bridge/netdev_link.h"
#include "qemu-bridge/server.h"
#include "qemu-bridge/uplink_port.h"
#include "sriov/device_recorder.h"
#include "sriov/device_report.h"
#include "model/congestion/dcqcn.h"
#include "sriov/hca_device.h"

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

With two physical ports (--ports 2), each port is a PF of its own, as on a dual-port ConnectX-6 Dx:
port 1's PF is DIR/pf1.sock, its VFs DIR/pf1-vf0.sock, ...; it has its own embedded switch, VFs
(--vfs1), uplink (--uplink1...), and writes the --pcap and --trace files with ".port1" in their name.

Options)";

// What the command line says about one physical port.
struct PortOptions {
  unsigned vfs = 0;
  std::string uplink;         // empty: the configuration's, else no physical link
  std::string uplink_faults;  // empty: none; else fabric/link_faults.h settings
  std::string uplink_pcap;    // empty: no capture of the uplink
};

struct Options {
  fs::path socket_dir;
  unsigned ports = 0;  // physical ports; 0: the configuration's physical_ports
  PortOptions port[2];
  fs::path config_file;
  std::string log_level = "info";
  std::string pcap_file;
  uint64_t pcap_limit_mib = 4096;
  std::string timing_preset = "connectx6dx-100g";
  std::string timing_file;
  std::string trace_prefix;
  bool print_config = false;
  bool wall_clock_timers = true;
  unsigned retransmit_floor_ms = 200;
  std::string socket_mode = "600";
  std::string dcqcn;  // empty: off; else a profile of model/congestion/dcqcn.h
  bool software_steering = false;
  bool no_software_steering = false;
  std::string control_socket; // empty: SOCKET_DIR/control.sock; "none": no control socket
};

// The options of the functions and their sockets, configuration and logging, bound to `o`.
void add_device_options(po::options_description& desc, Options& o) {
  desc.add_options()
      ("help,h", "show this help and exit")
      ("version", "print the version and exit")
      ("socket-dir", po::value<std::string>(), "directory for the vfio-user sockets (created if missing)")
      ("socket-mode", po::value<std::string>(&o.socket_mode)->default_value("600"),
       "permissions of the socket files, octal; clients of another uid than hcaemu's (root excepted) are "
       "refused whatever the mode")
      ("vfs", po::value<unsigned>(&o.port[0].vfs)->default_value(0),
       "VFs to enable at start, through the PF's SR-IOV capability like sriov_numvfs")
      ("ports", po::value<unsigned>(&o.ports),
       "physical ports, 1 or 2 (default: the configuration's physical_ports, else 1); each is a PF with its "
       "own VFs, embedded switch and uplink")
      ("vfs1", po::value<unsigned>(&o.port[1].vfs)->default_value(0), "as --vfs, for port 1's PF (pf1)")
      ("config", po::value<std::string>(), "JSON device configuration (see docs/configuration.md)")
      ("print-config", "print the effective configuration as JSON and exit")
      ("log-level", po::value<std::string>(&o.log_level)->default_value("info"),
       "trace, debug, info, warn, error, critical or off");
}

// The options of the model: timing, timers, congestion control, software steering.
void add_model_options(po::options_description& desc, Options& o) {
  desc.add_options()
      ("timing-preset", po::value<std::string>(&o.timing_preset)->default_value("connectx6dx-100g"),
       "named timing preset: HCA pipeline cycles, firmware latency, port rate, propagation (docs/timing.md)")
      ("timing-file", po::value<std::string>(&o.timing_file),
       "JSON file of timing presets to pick --timing-preset from (default: the built-in ones, which "
       "config/timing-presets.json lists)")
      ("wall-clock-timers", po::value<bool>(&o.wall_clock_timers)->default_value(true),
       "retransmission and RNR timers also wait out a wall-clock floor (200 ms / 1 ms), so guests running "
       "at emulation speed get the time to act before the model retransmits; 0 = model time only, as in "
       "closed runs (deterministic, but live guests see spurious retransmissions)")
      ("retransmit-floor-ms", po::value<unsigned>(&o.retransmit_floor_ms)->default_value(200),
       "with --wall-clock-timers, the least wall-clock time an RC requester waits for an ACK before it "
       "retransmits (1 to 10000); the QP's own timeout counts when it is longer. A QP's retry budget in a live "
       "run is then about (retry_cnt + 1) x max(its timeout, this floor)")
      ("dcqcn", po::value<std::string>(&o.dcqcn)->implicit_value("connectx"),
       "DCQCN congestion control in every function (ECN-capable RoCE data, CNPs for CE-marked packets, a "
       "rate limiter per QP; mlx5_ib's hw_counters np_cnp_sent, rp_cnp_handled, ...): connectx (the "
       "default: ConnectX firmware values) or paper (Zhu et al., SIGCOMM 2015); off without the option")
      ("no-software-steering", po::bool_switch(&o.no_software_steering),
       "do not offer mlx5 DR software steering (rdma-core's mlx5dv_dr_*), which every function offers by "
       "default: steering ICM, software-owned NIC RX/TX tables walked as STE v1 (MAC, metadata-register "
       "and Geneve lookups, format-0 match definers; counters, flow tags, VLAN push/pop, tunnel "
       "encap/decap, modify lists, destination arrays, flow samplers; drop/allow/TIR/table terminals; "
       "not yet flow meters: an entry the model cannot perform drops the frame, counted and logged). "
       "Without it DR builds root tables only, through the kernel. Also \"software_steering\": false "
       "in --config")
      ("software-steering", po::bool_switch(&o.software_steering),
       "offer mlx5 DR software steering (the default; kept for older command lines)");
}

// The options of the wire and of what hcaemu records: captures, uplinks, control socket, trace.
void add_wire_options(po::options_description& desc, Options& o) {
  desc.add_options()
      ("pcap", po::value<std::string>(&o.pcap_file),
       "write every frame the embedded switch carries to FILE (pcap, nanosecond timestamps = model time)")
      ("pcap-limit-mib", po::value<uint64_t>(&o.pcap_limit_mib)->default_value(4096),
       "stop writing the --pcap file at this size, in MiB (later frames are counted; 0: no limit), so a guest "
       "flooding the wire cannot fill the disk")
      ("uplink", po::value<std::string>(&o.port[0].uplink),
       "connect the HCA's physical port to a socket in QEMU's netdev framing, so VMs with virtio-net "
       "(Soft-RoCE, TCP), another hcaemu or a switch share its Ethernet: frames for addresses no function "
       "owns leave through it, frames arriving are switched to the function owning their destination. "
       "SPEC is stream,listen=unix:PATH | stream,listen=tcp:HOST:PORT (a VM joins with -netdev "
       "stream,server=off,addr.type=unix,addr.path=PATH) | stream,connect=unix:PATH | "
       "stream,connect=tcp:HOST:PORT (retried every second) | dgram,local=udp:HOST:PORT,remote=udp:HOST:PORT "
       "| dgram,local=unix:PATH,remote=unix:PATH (one frame per datagram, as -netdev dgram). A stream "
       "port's link is up while its peer is connected")
      ("uplink-faults", po::value<std::string>(&o.port[0].uplink_faults),
       "inject faults into the uplink's frames: loss=P,corrupt=P,duplicate=P,reorder=P (both ways; P a "
       "fraction or a percentage, e.g. loss=1%,corrupt=0.1%), delay=T,jitter=T,rate=R (what the port sends; "
       "T as 100us or 2ms, R as 10gbit), seed=N. A corrupted frame has one bit flipped past its headers, so "
       "the receiver drops it on its ICRC or checksum; a reordered one goes out after the next frame. "
       "Counted, logged per frame with --uplink-pcap, changed while running with hcactl link set")
      ("uplink-pcap", po::value<std::string>(&o.port[0].uplink_pcap),
       "write the frames the uplink sends and receives to FILE (pcap, model time), and the faults the link "
       "injected to FILE.faults.csv (model time, direction, faults, the frame's number in FILE); both stop at "
       "--pcap-limit-mib")
      ("uplink1", po::value<std::string>(&o.port[1].uplink), "as --uplink, for port 1 (link uplink1)")
      ("uplink1-faults", po::value<std::string>(&o.port[1].uplink_faults), "as --uplink-faults, for port 1")
      ("uplink1-pcap", po::value<std::string>(&o.port[1].uplink_pcap), "as --uplink-pcap, for port 1")
      ("control-socket", po::value<std::string>(&o.control_socket),
       "UNIX socket for hcactl (link up/down, faults, stats, VFs while running); default SOCKET_DIR/control.sock, "
       "none for no control socket")
      ("trace", po::value<std::string>(&o.trace_prefix),
       "write the RDMA latency trace (model time per stage of each WQE) to PREFIX.json (Perfetto/Chrome "
       "trace-event format) and PREFIX.csv, and the QPs (CQs, send queue, peer) to PREFIX.qps.csv; summarise "
       "with hcatrace summary PREFIX.csv");
}

// The options, each bound to its field of `o`.
po::options_description describe_options(Options& o) {
  po::options_description desc(kUsage);
  add_device_options(desc, o);
  add_model_options(desc, o);
  add_wire_options(desc, o);
  return desc;
}

// Returns the exit code to stop with, or -1 to go on.
int parse_options(int argc, char** argv, Options& o) {
  const po::options_description desc = describe_options(o);
  po::variables_map vm;
  const std::string version = "0.1.0 (SystemC " + std::string(sc_core::sc_release()) + ")";
  if (int code = parse_app_options("hcaemu", version, argc, argv, desc, vm); code >= 0) return code;
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
  if (o.retransmit_floor_ms < 1 || o.retransmit_floor_ms > 10000) {
    std::cerr << "hcaemu: --retransmit-floor-ms takes 1 to 10000\n";
    return 2;
  }
  if (vm.count("ports") && (o.ports < 1 || o.ports > 2)) {
    std::cerr << "hcaemu: --ports takes 1 or 2\n";
    return 2;
  }
  if (!set_log_level(o.log_level)) {
    std::cerr << "hcaemu: unknown --log-level \"" << o.log_level << "\"\n";
    return 2;
  }
  return -1;
}

// The timing preset the options name, from --timing-file or the built-in ones; nullopt (with the
// reason on stderr) when there is none.
std::optional<model::TimingPreset> resolve_timing(const Options& options) {
  std::string error;
  std::vector<model::TimingPreset> presets =
      options.timing_file.empty() ? model::builtin_timing_presets() : model::load_timing_presets(options.timing_file, &error);
  if (!error.empty()) {
    std::cerr << "hcaemu: --timing-file " << options.timing_file << ": " << error << "\n";
    return std::nullopt;
  }
  for (const auto& p : presets)
    if (p.name == options.timing_preset) return p;
  std::cerr << "hcaemu: unknown --timing-preset \"" << options.timing_preset << "\"; known:";
  for (const auto& p : presets) std::cerr << " " << p.name;
  std::cerr << "\n";
  return std::nullopt;
}

// The device configuration the options name, checked against them; nullopt (reason on stderr) if
// it is unusable. --print-config prints it and sets `done`.
std::optional<sriov::DeviceConfig> load_config(const Options& options, bool& done) {
  sriov::DeviceConfig config;
  try {
    if (!options.config_file.empty()) config = sriov::load_device_config(options.config_file);
    if (options.ports != 0) config.physical_ports = uint8_t(options.ports);
    if (options.software_steering && options.no_software_steering)
      throw std::runtime_error("--software-steering and --no-software-steering contradict each other");
    if (options.software_steering) config.software_steering = true;
    if (options.no_software_steering) config.software_steering = false;
    config.validate();
  } catch (const std::exception& e) {
    std::cerr << "hcaemu: " << e.what() << "\n";
    return std::nullopt;
  }
  done = options.print_config;
  if (done) {
    std::cout << sriov::to_json(config) << "\n";
    return config;
  }
  for (unsigned port = 0; port < 2; ++port) {
    const PortOptions& p = options.port[port];
    const std::string suffix = port == 0 ? "" : "1";
    if (p.vfs > config.total_vfs) {
      std::cerr << "hcaemu: --vfs" << suffix << " " << p.vfs << " exceeds TotalVFs " << config.total_vfs << "\n";
      return std::nullopt;
    }
    if (port >= config.physical_ports && (p.vfs != 0 || !p.uplink.empty() || !p.uplink_faults.empty() || !p.uplink_pcap.empty())) {
      std::cerr << "hcaemu: --vfs1 and --uplink1... need two physical ports (--ports 2, or physical_ports in --config)\n";
      return std::nullopt;
    }
  }
  std::error_code ec;
  fs::create_directories(options.socket_dir, ec);
  if (!fs::is_directory(options.socket_dir)) {
    std::cerr << "hcaemu: cannot use socket directory " << options.socket_dir << ": " << ec.message() << "\n";
    return std::nullopt;
  }
  return config;
}

// One vfio-user server per function: its kernel queue and backend exist from the start, its server
// (socket) once the function does. A disabled VF keeps its socket and answers like an absent
// function (all ones) until it is enabled again.
class FunctionServers {
 public:
  FunctionServers(sriov::HcaDevice& device, fs::path socket_dir, unsigned socket_mode)
      : device_(device), socket_dir_(std::move(socket_dir)), socket_mode_(socket_mode) {
    functions_.resize(1 + device.vf_ports());
    for (unsigned i = 0; i < functions_.size(); ++i) {
      std::string name = port(i).name() + "_queue";  // pf_queue, vf0_queue, pf1_queue, pf1_vf0_queue
      std::replace(name.begin(), name.end(), '-', '_');
      functions_[i].queue = std::make_unique<bridge::KernelQueue>(name.c_str());
      functions_[i].waiter = std::make_unique<bridge::DmaReplyWaiter>((name + "_dma").c_str());
      functions_[i].backend = std::make_unique<bridge::FunctionBackend>(port(i), *functions_[i].queue);
    }
  }
  // Sockets are named after their functions: pf.sock, vf0.sock, ...; pf1.sock, pf1-vf0.sock, ...
  void serve_pf() { start(0); }
  void serve_vfs(uint16_t count) {
    for (uint16_t i = 0; i < count; ++i) {
      try {
        start(1u + i);
      } catch (const std::exception& e) {
        log().error("{}: cannot serve: {}", port(1u + i).name(), e.what());
      }
    }
  }
  void stop() {
    for (auto& f : functions_) f.server.reset();
  }

 private:
  struct Served {
    std::unique_ptr<bridge::KernelQueue> queue;
    std::unique_ptr<bridge::FunctionBackend> backend;
    std::unique_ptr<bridge::DmaReplyWaiter> waiter;  // a slow client holds up only its function
    std::unique_ptr<vfio_user::VfioUserServer> server;
  };
  sriov::FunctionPort& port(unsigned index) { return index == 0 ? device_.pf() : device_.vf(index - 1); }
  void start(unsigned index) {
    Served& f = functions_[index];
    if (f.server) return;
    vfio_user::ServerOptions server_options;
    server_options.socket_mode = socket_mode_;
    const fs::path path = socket_dir_ / (port(index).name() + ".sock");
    f.server = std::make_unique<vfio_user::VfioUserServer>(path.string(), *f.backend, server_options);
    f.server->set_dma_waiter(f.waiter.get());
    // QEMU emulates the MSI-X table and its masks (vfio-user.md section 6): interrupts go to its eventfds.
    port(index).attach_host(&f.server->host_memory(), &f.server->msix(), sriov::FunctionFace::MsixRouting::kHostOwnsTable);
    log().info("{}: serving on {}", port(index).name(), path.string());
  }

  sriov::HcaDevice& device_;
  fs::path socket_dir_;
  unsigned socket_mode_;
  std::vector<Served> functions_;
};

// The physical port's link, when --uplink (--uplink1 for port 1) or the configuration names one;
// returns the exit code to stop with, or -1.
int open_uplink(PortOptions options, uint64_t pcap_limit_mib, sriov::HcaDevice& device, bridge::KernelQueue& control,
                std::unique_ptr<bridge::UplinkPort>& uplink) {
  const sriov::UplinkConfig& configured = device.config().uplink;
  const unsigned port = device.config().port;
  const std::string option = port == 0 ? "--uplink" : "--uplink" + std::to_string(port);
  // The configuration file's uplink, where the command line does not name one.
  std::string source = option + " " + options.uplink;
  if (options.uplink.empty()) {
    source = (port == 0 ? "uplink" : "port1.uplink") + std::string(".endpoint ") + configured.endpoint + " (--config)";
    options.uplink = configured.endpoint;
    if (options.uplink_faults.empty()) options.uplink_faults = configured.faults;
    if (options.uplink_pcap.empty()) options.uplink_pcap = configured.pcap;
  }
  if (options.uplink.empty()) {
    if (!options.uplink_faults.empty() || !options.uplink_pcap.empty()) {
      std::cerr << "hcaemu: " << option << "-faults and " << option << "-pcap need an " << option << "\n";
      return 2;
    }
    return -1;
  }
  bridge::UplinkSettings settings;
  std::string error;
  const std::optional<bridge::LinkSpec> spec = bridge::parse_link_spec(options.uplink, error);
  if (!spec) {
    std::cerr << "hcaemu: " << source << ": " << error << "\n";
    return 2;
  }
  settings.name = "uplink" + std::to_string(port);
  settings.spec = *spec;
  if (!options.uplink_faults.empty()) {
    const std::optional<fabric::LinkFaultSettings> faults = fabric::parse_link_faults(options.uplink_faults, error);
    if (!faults) {
      std::cerr << "hcaemu: uplink faults " << options.uplink_faults << ": " << error << "\n";
      return 2;
    }
    settings.faults = *faults;
  }
  settings.pcap_file = options.uplink_pcap;
  settings.pcap_limit_bytes = pcap_limit_mib << 20;
  try {
    uplink = std::make_unique<bridge::UplinkPort>(settings, device, control);
  } catch (const std::exception& e) {
    std::cerr << "hcaemu: " << source << ": " << e.what() << "\n";
    return 2;
  }
  return -1;
}

// hcactl's socket: each request is run on the kernel thread (through the control queue), and its
// answer awaited for at most 5 s, so a stopping kernel cannot hold the control thread for ever.
std::unique_ptr<bridge::ControlServer> open_control_server(const Options& options, bridge::KernelQueue& control,
                                                           bridge::ControlTargets& targets) {
  if (options.control_socket == "none") return nullptr;
  const fs::path path = options.control_socket.empty() ? options.socket_dir / "control.sock" : fs::path(options.control_socket);
  auto handler = [&control, &targets](const std::vector<std::string>& words) {
    auto reply = std::make_shared<std::promise<bridge::ControlReply>>();
    std::future<bridge::ControlReply> answer = reply->get_future();
    control.post([reply, words, &targets] { reply->set_value(bridge::run_control_command(words, targets)); });
    if (answer.wait_for(std::chrono::seconds(5)) != std::future_status::ready)
      return bridge::ControlReply{false, "the model did not answer within 5 s"};
    return answer.get();
  };
  auto server = std::make_unique<bridge::ControlServer>(path.string(), unsigned(std::stoul(options.socket_mode, nullptr, 8)),
                                                        handler);
  log().info("control: hcactl --socket {}", path.string());
  return server;
}

// The preset's PCIe latency; generation and width stay the device configuration's.
void take_pcie_latency(const model::TimingPreset& timing, sriov::DeviceConfig& config) {
  config.link_one_way_ns = timing.pcie_one_way_ns;
  if (timing.pcie_gen != config.link_generation || timing.pcie_width != config.link_width)
    log().warn("timing preset {} assumes PCIe Gen{} x{}, the device configuration has Gen{} x{}", timing.name,
               timing.pcie_gen, timing.pcie_width, config.link_generation, config.link_width);
}

// One physical port as hcaemu runs it: its device (PF + VFs), their sockets, recordings and uplink.
struct PortRun {
  std::unique_ptr<sriov::HcaDevice> device;
  std::unique_ptr<FunctionServers> servers;
  std::optional<sriov::DeviceRecorder> recorder;
  std::unique_ptr<bridge::UplinkPort> uplink;
};

// Port 1's name for an output file of port 0: "run.pcap" -> "run.port1.pcap", "trace" -> "trace.port1".
std::string port_output(const std::string& path, unsigned port, bool keep_extension) {
  if (path.empty() || port == 0) return path;
  const std::string tag = ".port" + std::to_string(port);
  const fs::path p(path);
  if (!keep_extension || !p.has_extension()) return path + tag;
  return (p.parent_path() / (p.stem().string() + tag + p.extension().string())).string();
}

// Elaboration of port `index`: its device with the options' timing and congestion control, its
// recordings and its uplink. Returns the exit code to stop with, or -1.
int build_port(const Options& options, const sriov::DeviceConfig& config, const model::TimingPreset& timing,
               const model::DcqcnParameters* dcqcn, unsigned index, bridge::KernelQueue& control, PortRun& run) {
  const std::string module = index == 0 ? "hca" : "hca" + std::to_string(index);
  run.device = std::make_unique<sriov::HcaDevice>(module.c_str(), config.port_config(uint8_t(index)));
  sriov::HcaDevice& device = *run.device;
  device.apply_timing(timing, {.wall_clock_floor = options.wall_clock_timers,
                               .min_retransmit_wait = std::chrono::milliseconds(options.retransmit_floor_ms)});
  device.set_congestion_control(dcqcn);
  run.servers = std::make_unique<FunctionServers>(device, options.socket_dir, unsigned(std::stoul(options.socket_mode, nullptr, 8)));
  try {
    run.recorder.emplace(device, port_output(options.pcap_file, index, true), port_output(options.trace_prefix, index, false),
                         options.pcap_limit_mib << 20);
  } catch (const std::exception& e) {
    std::cerr << "hcaemu: " << e.what() << "\n";
    return 2;
  }
  return open_uplink(options.port[index], options.pcap_limit_mib, device, control, run.uplink);
}

// Kernel thread, once it runs: the VFs --vfs (--vfs1) ask for, then the line that says hcaemu is ready.
void enable_vfs_and_announce(const Options& options, const sriov::DeviceConfig& config, const std::string& timing,
                             std::vector<PortRun>& ports) {
  std::string enabled;
  for (unsigned i = 0; i < ports.size(); ++i) {
    sriov::HcaDevice& device = *ports[i].device;
    const unsigned vfs = options.port[i].vfs;
    if (vfs > 0) {
      if (std::string error = device.set_num_vfs(uint16_t(vfs)); !error.empty())
        log().error("{}: enabling {} VFs failed: {}", device.pf().name(), vfs, error);
    }
    enabled += (i == 0 ? "" : ", port " + std::to_string(i) + " (" + device.pf().name() + "): ") +
               std::to_string(device.enabled_vfs()) + " of " + std::to_string(config.total_vfs) + " VFs enabled";
  }
  log().info("hcaemu ready: PF {:04x}:{:04x} firmware {}.{}.{}, {}, timing {}, sockets in {}", config.vendor_id,
             config.pf_device_id, config.firmware.major, config.firmware.minor, config.firmware.subminor, enabled, timing,
             options.socket_dir.string());
}

}  // namespace

int sc_main(int argc, char** argv) {
  Options options;
  if (int code = parse_options(argc, argv, options); code >= 0) return code;
  bool done = false;
  std::optional<sriov::DeviceConfig> config = load_config(options, done);
  if (!config) return 2;
  if (done) return 0;
  const sigset_t stop_signals = block_stop_signals();
  const std::optional<model::TimingPreset> timing = resolve_timing(options);
  if (!timing) return 2;
  take_pcie_latency(*timing, *config);
  std::optional<model::DcqcnParameters> dcqcn;
  if (!options.dcqcn.empty() && !(dcqcn = model::dcqcn_profile(options.dcqcn))) {
    std::cerr << "hcaemu: unknown --dcqcn profile \"" << options.dcqcn << "\" (connectx or paper)\n";
    return 2;
  }
  if (dcqcn) log().info("dcqcn: on in every function ({} profile)", options.dcqcn);

  // Elaboration: every module exists before sc_start (VF ports for all of TotalVFs), port by port.
  bridge::KernelQueue control("control");
  std::vector<PortRun> ports(config->physical_ports);
  for (unsigned i = 0; i < ports.size(); ++i)
    if (int code = build_port(options, *config, *timing, dcqcn ? &*dcqcn : nullptr, i, control, ports[i]); code >= 0)
      return code;
  bridge::ControlTargets targets;
  for (PortRun& port : ports) {
    try {
      port.servers->serve_pf();
    } catch (const std::exception& e) {
      std::cerr << "hcaemu: " << e.what() << "\n";
      return 1;
    }
    port.device->on_vfs_changed([&port](uint16_t count) { port.servers->serve_vfs(count); });
    targets.devices.push_back(port.device.get());
    if (port.uplink) targets.uplinks.push_back(port.uplink.get());
  }
  std::unique_ptr<bridge::ControlServer> control_server;
  try {
    control_server = open_control_server(options, control, targets);
  } catch (const std::exception& e) {
    std::cerr << "hcaemu: control socket: " << e.what() << "\n";
    return 1;
  }
  control.post([&] { enable_vfs_and_announce(options, *config, timing->name, ports); });
  std::thread signal_waiter([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    log().info("hcaemu: {} received, shutting down", signal == SIGINT ? "SIGINT" : "SIGTERM");
    control.request_stop();
  });

  sc_core::sc_start();

  for (PortRun& port : ports) port.recorder->close();
  if (control_server) control_server->stop();
  for (PortRun& port : ports) {
    if (!port.uplink) continue;
    port.uplink->stop();
    log().info("{}", port.uplink->counters());
  }
  for (PortRun& port : ports) sriov::log_device_counters(*port.device);
  for (PortRun& port : ports) port.servers->stop();
  pthread_kill(signal_waiter.native_handle(), SIGTERM);
  signal_waiter.join();
  log().info("hcaemu: stopped");
  return 0;
}
