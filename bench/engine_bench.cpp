// engine_bench: the RDMA engine headless, in model time. Two functions of the headless host
// (hostsim/) joined by a wire, their DMA through the PCIe link model, the engine spending model
// time on a SystemC thread; no QEMU, no wall-clock timer. Prints, per workload, how fast the
// engine simulates (packets per wall-clock second) and what it models (model-time Gb/s).
//
// Model time here is one SystemC thread for both functions: the responder's work is spent after
// the requester's, not beside it, so model-time figures are lower than a full-system run's (where
// each function has its own thread). The wall-clock rate is the figure of interest.
//
// With --pcap/--trace the run writes the frames (model-time stamps) and the per-stage latency
// trace; the same workload and seed give byte-identical files (bench/determinism_test.sh).
// ENGINE_BENCH_DEBUG=1 logs every frame on the wire (and its loss) and the engines' counters.
#include <systemc>

#include <boost/program_options.hpp>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/log.h"
#include "pcie/model_time.h"
#include "hostsim/rdma_host.h"
#include "model/timing_preset.h"
#include "pcie/timed_host_memory.h"
#include "traces/latency_trace.h"
#include "traces/pcap_writer.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"  // work requests name only what they use

namespace po = boost::program_options;
using namespace hcaemu;
using namespace hcaemu::hostsim;

namespace {

constexpr const char* kUsage =
    "Usage: engine_bench [options]\n"
    "Runs RC (and, in 'mix', UD) workloads between two functions of the headless host and prints\n"
    "simulated packets per wall-clock second and model-time throughput. Workloads:\n"
    "  write64k  64 KiB RDMA WRITEs at path MTU 4096, 16 in flight\n"
    "  write64   64 B RDMA WRITEs, 16 in flight\n"
    "  send64    64 B SENDs into posted receive WQEs, 16 in flight\n"
    "  qps16     64 B RDMA WRITEs round-robin over 16 QPs, 4 in flight each\n"
    "  mix       WRITE/READ/SEND/atomics on RC and UD datagrams over a lossy wire (--loss), with\n"
    "            receives posted late (RNR) and timers in model time: the determinism workload\n"
    "  all       the four streams, one after the other\n"
    "Options";

struct Options {
  std::string workload = "all";
  uint64_t messages = 0;  // 0: the workload's default
  uint64_t seed = 1;
  double loss = 0.02;
  std::string pcap, trace, preset = "connectx6dx-100g";
};

uint64_t now_ps() { return pcie::model_time_ps(); }

// Two functions, timed DMA, engines on model time, optional captures.
struct Bench {
  RdmaPair p;
  std::unique_ptr<pcie::TimedHostMemory> dma[2];
  std::unique_ptr<traces::PcapWriter> pcap;
  std::unique_ptr<traces::LatencyTrace> trace;
  std::mt19937_64 rng;
  double loss = 0;
  uint64_t payload_bytes = 0, messages = 0;

  Bench(const Options& o, const model::TimingPreset& preset, double wire_loss) : rng(o.seed), loss(wire_loss) {
    for (int i = 0; i < 2; ++i) dma[i] = p.node(i).attach_timed_dma(preset);
    std::string error;
    if (!o.pcap.empty() && !(pcap = traces::PcapWriter::open(o.pcap, &error))) throw std::runtime_error(error);
    if (!o.trace.empty() && !(trace = traces::LatencyTrace::open(o.trace, &error))) throw std::runtime_error(error);
    if (trace)
      for (int i = 0; i < 2; ++i)
        p.node(i).engine.set_stage_hook([this, i](const model::StageStamp& s) {
          trace->record({.time_ps = s.time_ps != 0 ? s.time_ps : now_ps(),
                         .function = uint16_t(s.function >= 0 ? s.function : i),
                         .qpn = s.qpn, .message = s.message, .opcode = s.opcode, .bytes = s.bytes,
                         .stage = s.stage});
        });
    static const bool debug = std::getenv("ENGINE_BENCH_DEBUG") != nullptr;
    p.wire.filter = [this](WireFrame& frame) {
      if (pcap) pcap->write(now_ps(), frame.bytes);
      const bool keep = loss <= 0 || std::uniform_real_distribution<double>(0, 1)(rng) >= loss;
      if (debug) {
        const auto parsed = parse(frame);
        std::cerr << "wire to " << frame.to << " op 0x" << std::hex << int(parsed.packet.opcode) << " psn 0x"
                  << parsed.packet.psn << " qp 0x" << parsed.packet.dest_qp << std::dec << " aeth "
                  << int(parsed.packet.aeth.syndrome) << (keep ? "" : " LOST") << "\n";
      }
      return keep;
    };
  }

  // Delivers everything in flight; when the wire is quiet but a timer is armed, model time runs
  // to the earliest deadline and the timers fire (retransmission, RNR). False when nothing is left.
  bool step() {
    if (p.pump() != 0) return true;
    // The earliest armed timer of either function (a disarmed one is not waited for).
    RdmaNode* owner = nullptr;
    uint64_t at = 0;
    for (int i = 0; i < 2; ++i)
      for (auto& [qpn, qp] : p.node(i).f.resources.qps)
        if (qp.rc.req.timer_armed && (owner == nullptr || qp.rc.req.deadline.model_ps < at)) {
          owner = &p.node(i);
          at = qp.rc.req.deadline.model_ps;
        }
    if (owner == nullptr) return false;
    if (at > now_ps()) sc_core::wait(sc_core::sc_time(double(at - now_ps()), sc_core::SC_PS));
    owner->deadline.reset();
    owner->work_item([&] { return owner->engine.on_timer(), true; });
    return true;
  }
  uint64_t packets() const { return p.a.engine.counters().tx_packets + p.b.engine.counters().tx_packets; }
};

// Keeps `depth` messages in flight on each connection until `total` have completed.
struct Stream {
  uint8_t opcode;
  uint32_t size;
  int qps;
  uint32_t depth;
  uint8_t mtu;
};

void run_stream(Bench& bench, const Stream& s, uint64_t total) {
  RdmaPair& p = bench.p;
  RcAttributes attr;
  attr.mtu = s.mtu;
  std::vector<Connection> conns;
  for (int i = 0; i < s.qps; ++i) conns.push_back(p.connect(attr));
  const Mr src = p.a.reg_mr(std::max<uint32_t>(s.size, 64));
  const Mr dst = p.b.reg_mr(std::max<uint32_t>(s.size, 64));
  const bool send = s.opcode == model::wqe_op::kSend;
  std::vector<uint32_t> in_flight(conns.size(), 0);
  uint64_t posted = 0, done = 0;
  while (done < total) {
    for (size_t q = 0; q < conns.size(); ++q) {
      while (in_flight[q] < s.depth && posted < total) {
        if (send) p.b.post_recv(*conns[q].b, {{dst.va(0), s.size, dst.key}});
        Wr wr{.opcode = s.opcode, .sges = {{src.va(0), s.size, src.key}}};
        if (!send) {
          wr.remote_va = dst.va(0);
          wr.rkey = dst.key;
        }
        p.a.post_send(*conns[q].a, wr);
        ++in_flight[q];
        ++posted;
      }
    }
    while (bench.step()) {
    }
    for (size_t q = 0; q < conns.size(); ++q) {
      for (const Cqe& c : p.a.drain(*conns[q].a->scq)) {
        if (c.opcode != 0) throw std::runtime_error("error completion, syndrome " + std::to_string(c.syndrome));
        --in_flight[q];
        ++done;
      }
      if (send) p.b.drain(*conns[q].b->rcq);
    }
  }
  bench.payload_bytes += total * s.size;
  bench.messages += total;
}

// RC WRITE/READ/SEND/atomics and UD datagrams, receives sometimes posted late, over a lossy wire.
void run_mix(Bench& bench, uint64_t total) {
  RdmaPair& p = bench.p;
  std::mt19937_64 rng(bench.rng());
  RcAttributes attr;
  attr.ack_timeout = 10;  // 4.2 ms of model time
  attr.min_rnr_nak = 2;
  Connection rc = p.connect(attr);
  Cq& ud_cq_a = p.a.make_cq();
  Cq& ud_cq_b = p.b.make_cq();
  Qp& ud_a = p.a.create_qp(ud_cq_a, ud_cq_a, 0, model::qp_st::kUd);
  Qp& ud_b = p.b.create_qp(ud_cq_b, ud_cq_b, 0, model::qp_st::kUd);
  constexpr uint32_t kQkey = 0x1234;
  p.a.bring_up_ud(ud_a, kQkey);
  p.b.bring_up_ud(ud_b, kQkey);
  const auto av = p.a.address_vector(p.b, ud_b.qpn, kQkey);
  const Mr src = p.a.reg_mr(16384), dst = p.b.reg_mr(16384);
  uint32_t receives_owed = 0;
  uint64_t ud_posted = 0, ud_received = 0;  // a lost datagram leaves its receive posted: keep the RQ from overfilling
  for (uint64_t i = 0; i < total; ++i) {
    const uint32_t size = 1 + uint32_t(rng() % 6000);
    switch (rng() % 6) {
      case 0:
        p.a.post_send(*rc.a, {.opcode = model::wqe_op::kRdmaWrite, .sges = {{src.va(0), size, src.key}},
                              .remote_va = dst.va(0), .rkey = dst.key});
        break;
      case 1:
        p.a.post_send(*rc.a, {.opcode = model::wqe_op::kRdmaRead, .sges = {{src.va(0), size, src.key}},
                              .remote_va = dst.va(0), .rkey = dst.key});
        break;
      case 2:  // the receive comes late half of the time: an RNR NAK, then the retry lands
        if (rng() % 2) p.b.post_recv(*rc.b, {{dst.va(0), 8192, dst.key}}); else ++receives_owed;
        p.a.post_send(*rc.a, {.sges = {{src.va(0), size, src.key}}});
        break;
      case 3:
        p.a.post_send(*rc.a, {.opcode = model::wqe_op::kAtomicFa, .sges = {{src.va(64), 8, src.key}},
                              .remote_va = dst.va(128), .rkey = dst.key, .swap_add = i});
        break;
      case 4:
        p.a.post_send(*rc.a, {.opcode = model::wqe_op::kAtomicCs, .sges = {{src.va(64), 8, src.key}},
                              .remote_va = dst.va(128), .rkey = dst.key, .swap_add = i, .compare = i - 1});
        break;
      default:
        if (ud_posted - ud_received < 8) {
          p.b.post_recv(ud_b, {{dst.va(8192), 2048, dst.key}});
          ++ud_posted;
        }
        p.a.post_send(ud_a, {.sges = {{src.va(0), std::min<uint32_t>(size, 1024), src.key}}, .av = av});
        break;
    }
    if (p.pump() == 0 || rng() % 4 == 0) {
      for (; receives_owed != 0; --receives_owed) p.b.post_recv(*rc.b, {{dst.va(0), 8192, dst.key}});
    }
    if (i % 8 == 7) {  // every receive owed is posted, then everything in flight completes
      for (; receives_owed != 0; --receives_owed) p.b.post_recv(*rc.b, {{dst.va(0), 8192, dst.key}});
      while (bench.step()) {
      }
      p.a.drain(*rc.a->scq);
      p.b.drain(*rc.b->rcq);
      p.a.drain(ud_cq_a);
      ud_received += p.b.drain(ud_cq_b).size();
    }
  }
  for (; receives_owed != 0; --receives_owed) p.b.post_recv(*rc.b, {{dst.va(0), 8192, dst.key}});
  while (bench.step()) {
  }
  bench.messages += total;
}

struct Result {
  std::string name;
  uint64_t messages = 0, packets = 0, payload = 0, model_ps = 0;
  uint64_t timeouts = 0, retransmits = 0, rnr_naks = 0, dropped = 0, error_cqes = 0;
  double wall_s = 0;
};

void print(const Result& r) {
  const double model_s = double(r.model_ps) / 1e12;
  std::cout << std::left << std::setw(9) << r.name << std::right << std::fixed << std::setprecision(3)
            << " messages " << std::setw(7) << r.messages << "  packets " << std::setw(8) << r.packets
            << "  wall " << std::setw(7) << r.wall_s << " s  " << std::setw(8) << std::setprecision(0)
            << (r.wall_s > 0 ? double(r.packets) / r.wall_s : 0) << " packets/s  model " << std::setprecision(1)
            << std::setw(9) << model_s * 1e6 << " us  ";
  if (r.payload != 0 && model_s > 0)
    std::cout << std::setprecision(2) << std::setw(7) << double(r.payload) * 8 / model_s / 1e9 << " Gb/s (model)";
  std::cout << "\n"
            << "          wire losses " << r.dropped << ", ACK timeouts " << r.timeouts << ", retransmitted packets "
            << r.retransmits << ", RNR NAKs " << r.rnr_naks << ", error CQEs " << r.error_cqes << "\n";
}

int parse(int argc, char** argv, Options& o) {
  po::options_description desc(kUsage);
  desc.add_options()("help,h", "show this help and exit")
      ("workload", po::value<std::string>(&o.workload)->default_value("all"), "write64k, write64, send64, qps16, mix or all")
      ("messages", po::value<uint64_t>(&o.messages)->default_value(0), "messages per workload (0: its default)")
      ("seed", po::value<uint64_t>(&o.seed)->default_value(1), "seed of the mix workload and the wire's losses")
      ("loss", po::value<double>(&o.loss)->default_value(0.02), "frame loss probability on the wire (mix only)")
      ("timing-preset", po::value<std::string>(&o.preset)->default_value("connectx6dx-100g"), "built-in timing preset")
      ("pcap", po::value<std::string>(&o.pcap), "write the wire's frames to FILE (model-time stamps)")
      ("trace", po::value<std::string>(&o.trace), "write the latency trace to PREFIX.json and PREFIX.csv");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "engine_bench: " << e.what() << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (o.loss < 0 || o.loss >= 1) {
    std::cerr << "engine_bench: --loss must be in [0, 1)\n";
    return 2;
  }
  return -1;
}

}  // namespace

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  log().set_level(std::getenv("ENGINE_BENCH_DEBUG") ? spdlog::level::trace : spdlog::level::warn);
  Options o;
  if (const int rc = parse(argc, argv, o); rc >= 0) return rc;
  std::optional<model::TimingPreset> preset;
  for (const auto& t : model::builtin_timing_presets())
    if (t.name == o.preset) preset = t;
  if (!preset) {
    std::cerr << "engine_bench: unknown timing preset " << o.preset << "\n";
    return 2;
  }
  const std::vector<std::pair<std::string, Stream>> streams = {
      {"write64k", {model::wqe_op::kRdmaWrite, 65536, 1, 16, 5}},
      {"write64", {model::wqe_op::kRdmaWrite, 64, 1, 16, 3}},
      {"send64", {model::wqe_op::kSend, 64, 1, 16, 3}},
      {"qps16", {model::wqe_op::kRdmaWrite, 64, 16, 4, 3}},
  };
  std::vector<std::string> names;
  if (o.workload == "all")
    for (const auto& [name, s] : streams) names.push_back(name);
  else
    names.push_back(o.workload);

  int status = 0;
  struct Runner : sc_core::sc_module {
    std::function<void()> body;
    SC_HAS_PROCESS(Runner);
    explicit Runner(sc_core::sc_module_name n) : sc_module(n) { SC_THREAD(run); }
    void run() { body(); }
  } runner("runner");
  runner.body = [&] {
    try {
      for (const std::string& name : names) {
        Bench bench(o, *preset, name == "mix" ? o.loss : 0.0);
        Result r{.name = name};
        const uint64_t start_ps = now_ps();
        const auto wall = std::chrono::steady_clock::now();
        if (name == "mix") {
          run_mix(bench, o.messages != 0 ? o.messages : 2000);
        } else {
          auto it = std::find_if(streams.begin(), streams.end(), [&](const auto& s) { return s.first == name; });
          if (it == streams.end()) throw std::runtime_error("unknown workload " + name + " (see --help)");
          run_stream(bench, it->second, o.messages != 0 ? o.messages : (it->second.size > 4096 ? 20000 : 200000));
        }
        r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
        r.model_ps = now_ps() - start_ps;
        r.messages = bench.messages;
        r.packets = bench.packets();
        r.payload = bench.payload_bytes;
        for (int i = 0; i < 2; ++i) {
          const auto& c = bench.p.node(i).engine.counters();
          r.timeouts += c.timeouts;
          r.retransmits += c.retransmits;
          r.rnr_naks += c.rnr_naks_sent;
          r.error_cqes += c.error_cqes;
        }
        r.dropped = bench.p.wire.dropped;
        if (std::getenv("ENGINE_BENCH_DEBUG"))
          for (int i = 0; i < 2; ++i) {
            const auto& c = bench.p.node(i).engine.counters();
            std::cerr << "node " << i << ": seq errors " << c.sequence_errors << " duplicates " << c.duplicates
                      << " naks sent/recv " << c.naks_sent << "/" << c.naks_received << " rnr sent/recv "
                      << c.rnr_naks_sent << "/" << c.rnr_naks_received << " timeouts " << c.timeouts
                      << " invalid " << c.invalid_requests << " remote access " << c.remote_access_errors << "\n";
          }
        print(r);
      }
    } catch (const std::exception& e) {
      std::cerr << "engine_bench: " << e.what() << "\n";
      status = 1;
    }
    sc_core::sc_stop();
  };
  sc_core::sc_start();
  return status;
}
