// hcareplay: replays packet captures and workloads through the model of the HCA in model time
// (issue 13): captures rebuilt into hosts, queue pairs and messages, the workload format every
// input is lowered to, and the run itself. Thin: the work is replay/.
#include <systemc>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fabric/topology.h"
#include "replay/inspect.h"
#include "replay/reconstruct.h"
#include "replay/replayer.h"
#include "replay/trace_timing.h"
#include "replay/report.h"
#include "replay/sweep.h"
#include "replay/workload.h"

namespace {

using namespace hcaemu::replay;

constexpr const char* kUsage = R"(Usage: hcareplay run INPUT --out DIR [--timing MODE] [--timing-preset NAME]
                     [--topology FILE | --no-switch] [--dcqcn[=PROFILE]] [--set KEY=VALUE]...
                     [--seed N] [--max-outstanding N] [--max-model-time-ms T] [--stall-ms T]
                     [--bin-us T] [--no-ideal] [--no-pcap] [--no-trace] [--no-plots] [--quiet]
       hcareplay inspect [--unmapped N] INPUT
       hcareplay lower INPUT -o WORKLOAD.json
       hcareplay sweep INPUT --out DIR --set KEY=V1,V2,... [--set KEY=V1,V2,...]...
                       [-j N | --emit-jobs FILE] [--quiet] [RUN OPTIONS]
       hcareplay collect DIR
       hcareplay plot DIR [--x KEY --y METRIC [--by size|opcode] [--opcode OP] [--size S]]
       hcareplay --help

INPUT is a packet capture of RoCEv2 traffic (pcap or pcapng, Ethernet; IPv4 or IPv6, VLAN tags,
UDP port 4791, any MTU) or a workload file (JSON, format hcareplay-workload/1; docs/replay.md).

Commands:
  run INPUT       replay INPUT through the model of the HCA in model time: one headless host per
                  host of the input, its device on a thread of its own, on a switched network (by
                  default one output-queued switch, 12 MB shared buffer, ECN and PFC on, at the
                  preset's link rate). Each kind of operation first runs once alone (its ideal
                  FCT). Writes DIR/messages.csv (one row per operation: post, first packet,
                  completion, FCT, ideal FCT, slowdown, status), DIR/summary.txt (FCT and
                  slowdown percentiles per opcode and size, links, totals; also printed),
                  DIR/summary.csv, DIR/totals.csv, DIR/settings.csv, DIR/links.csv (per link and
                  bin: bytes, Gb/s, queue, ECN marks, PFC frames, drops), DIR/qps.csv (per QP and
                  bin: payload done, DCQCN rate, CNPs), DIR/trace.json and DIR/trace.csv (every
                  stage of every message, as hcaemu --trace writes them) and DIR/wire.pcap (the
                  hosts' frames as sent and the switches' PFC frames), and DIR/plots/ (FCT CDF,
                  slowdown by size, throughput and queue depth over time, PNG and SVG, drawn by
                  gnuplot). The same input, options and seed give byte-identical files.
  inspect INPUT   print what was reconstructed: hosts, queue pairs, message counts by opcode and
                  size, think-time statistics, ACKs/NAKs/retransmissions, and every frame that is
                  not part of a message with the reason (a workload: its hosts, QPs and operations)
  lower INPUT     write INPUT as a workload file: each message an operation with its captured
                  post time and, where known, its think time after the QP's previous completion
  sweep INPUT     run INPUT once per point of the cartesian product of the --set values (the
                  first key outermost), each point a process of its own: `hcareplay run INPUT
                  --out DIR/pNNNN RUN OPTIONS --set KEY=v... --quiet`, its output in
                  DIR/pNNNN/log.txt. DIR (new or empty) gets points.csv (point and values),
                  status.csv (each point's exit status) and, by collect at the end, results.csv.
                  INPUT comes first; the options sweep does not know go to every run as given
  collect DIR     DIR/results.csv from a sweep's DIR/pNNNN: one row per point and row of its
                  summary.csv (point, the keys, opcode, size, count, FCT and slowdown
                  percentiles, then totals.csv's values); points with files missing or
                  malformed are named and left out
  plot DIR        with --x and --y: METRIC of DIR/results.csv against the swept KEY, one line
                  per opcode/size row and per value of the other swept keys, as
                  DIR/plot-METRIC-vs-KEY.png and .svg (and the .gp and .dat gnuplot draws them
                  from). Without them, DIR is a run: DIR/plots/ gets fct_cdf, slowdown_by_size,
                  throughput and queue_depth (.png, .svg, .gp, .dat). Needs gnuplot

Options:
  --out DIR             where run writes its files (created if missing)
  --timing MODE         think (default: each operation's think time after its QP's previous
                        completion, else as soon as allowed), asis (at the captured post times),
                        asap (as soon as the QP has room), scale=K (captured times times K)
  --timing-preset NAME  the NIC, PCIe and wire timing (default connectx6dx-100g; see
                        docs/timing.md for the list)
  --topology FILE       the network (format hcareplay-topology/1, docs/replay.md): switches and
                        links, or a leaf-spine; buffer, ECN and PFC settings
  --no-switch           wire the hosts straight to each other, no switch
  --dcqcn[=PROFILE]     DCQCN congestion control in every NIC: connectx (the default: ConnectX
                        firmware values) or paper (Zhu et al., SIGCOMM 2015)
  --set KEY=VALUE       one parameter (repeatable): preset.<key> (docs/timing.md), dcqcn.<key>,
                        qp.ack_timeout, switch.buffer_bytes, switch.shared_buffer, ecn.enabled,
                        ecn.kmin_bytes, ecn.kmax_bytes, ecn.pmax, pfc.enabled, pfc.xoff_bytes,
                        pfc.xon_bytes, pfc.pause_quanta, pfc.priorities, link.gbps,
                        link.propagation_ns, ecmp; recorded in DIR/settings.csv
  --seed N              RED's random draws and the order of frames that reach a switch at the
                        same time (default 1)
  --hcaemu-trace FILE   with a capture hcaemu wrote (--pcap): its latency trace of the same run
                        (--trace PREFIX: PREFIX.csv). Each message is then posted at its doorbell
                        and its FCT (doorbell to CQE) kept; run reports the replay's FCT against it
                        (messages.csv captured_fct_ns, fct_error; the summary). The QP table beside
                        it (PREFIX.qps.csv) gives each QP its captured CQs and send queue size. The
                        captured functions shared one HCA's embedded switch: without --topology the
                        replay wires them straight to each other (as --no-switch)
  --no-ideal            skip the ideal-FCT runs (no slowdown)
  --max-outstanding N   operations in flight per QP (default 16); a QP whose send queue size
                        the workload gives (sq_wqebbs) has as many as its send queue holds
  --max-model-time-ms T stop the run after T ms of model time (default 10000), counted from the
                        last captured post time with asis and scale=K; operations not done by
                        then are reported incomplete
  --stall-ms T          stop the run when operations are in flight and none has completed for
                        T ms of model time (default 20, or three ACK timeouts if longer)
  --bin-us T            the timelines' bin (default 10 us)
  --no-pcap             do not write DIR/wire.pcap
  --no-trace            do not write DIR/trace.json and DIR/trace.csv
  --no-plots            do not draw DIR/plots/ (fct_cdf, slowdown_by_size, throughput,
                        queue_depth as PNG and SVG, with gnuplot; `hcareplay plot DIR` later)
  --quiet               no progress lines on stderr
  --unmapped N          inspect: list at most N unmapped frames (default 20; counts are complete)
  -o FILE               lower: where the workload goes
  --set KEY=V1,V2,...   sweep: the values of one parameter (run's --set keys); KEY of letters,
                        digits, '_', '.', '-'; at most 10000 points in all
  -j N                  sweep: run N points at a time (default 1)
  --emit-jobs FILE      sweep: run nothing; write one shell command per point into FILE (for
                        `parallel -j N < FILE` or `parallel --sshloginfile HOSTS < FILE` on a
                        shared filesystem) and FILE.slurm.sh, a Slurm array job running line
                        $SLURM_ARRAY_TASK_ID of FILE; then `hcareplay collect DIR`
  --x KEY, --y METRIC   plot: a swept key of results.csv and a column after size (count,
                        fct_p99_ns, slowdown_p99, goodput_gbps, ...); an unknown one is listed
  --by size|opcode      plot: one line per size bucket or opcode (default: the "all" row)
  --opcode OP, --size S plot: only the rows of that opcode or size bucket
  -h, --help            show this help and exit

Exit status: 0 on success, 1 when INPUT cannot be read or replayed (the message names the file
and the frame, or the place in the JSON), 2 on a usage error, 3 when operations never completed.
sweep, collect and plot: 1 when a point failed (all are listed), no point could be read, or a plot
could not be drawn (no gnuplot: the scripts and data are written all the same).
)";

int usage_error(const std::string& what) {
  std::cerr << "hcareplay: " << what << "\n(see hcareplay --help)\n";
  return 2;
}

bool looks_like_json(const std::string& path) {
  std::ifstream in(path);
  char c = 0;
  while (in.get(c))
    if (!std::isspace(static_cast<unsigned char>(c))) return c == '{';
  return false;
}

// The input as a reconstruction (a capture) or a workload; false with a message on error.
bool load(const std::string& path, std::optional<Reconstruction>& capture, std::optional<Workload>& workload) {
  std::string error;
  if (looks_like_json(path)) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    workload = parse_workload(text.str(), &error);
    if (!workload) std::cerr << "hcareplay: " << path << ": " << error << "\n";
    return workload.has_value();
  }
  capture = reconstruct_capture(path, &error);
  if (!capture) std::cerr << "hcareplay: " << error << "\n";
  return capture.has_value();
}

// hcaemu's latency trace of the captured run: each message's doorbell and CQE times.
bool add_trace_timing(const std::string& csv, Reconstruction& capture) {
  std::string error;
  // The QP table beside it first (hcaemu writes PREFIX.qps.csv with PREFIX.csv): each QP end's
  // function, CQs and send queue.
  const std::string table_path = hcaemu::traces::qp_table_path(csv);
  const bool has_table = std::filesystem::exists(table_path);
  if (has_table) {
    const auto table = hcaemu::traces::read_qp_table(table_path, &error);
    if (!table) {
      std::cerr << "hcareplay: " << error << "\n";
      return false;
    }
    const size_t ends = apply_qp_table(capture, *table);
    std::cerr << "hcareplay: " << table_path << ": " << ends << " of " << 2 * capture.queue_pairs.size()
              << " QP ends found (their functions, CQs and send queues)\n";
  } else {
    std::cerr << "hcareplay: no " << table_path << ": each QP end gets CQs of its own\n";
  }
  const auto timing = read_trace_timing(csv, &error);
  if (!timing) {
    std::cerr << "hcareplay: " << error << "\n";
    return false;
  }
  const size_t timed = apply_trace_timing(capture, *timing);
  std::cerr << "hcareplay: " << csv << ": " << timed << " of " << capture.messages.size()
            << " messages timed by the latency trace (" << timing->messages << " in it";
  if (timing->ambiguous != 0)
    std::cerr << ", " << timing->ambiguous << " ids in several functions"
              << (has_table ? ", told apart by the QP table" : " left out");
  std::cerr << ")\n";
  return true;
}


struct Args {
  std::string command, input, output, out_dir, preset = "connectx6dx-100g", topology, hcaemu_trace;
  size_t max_unmapped = 20;
  ReplayOptions replay;
  bool pcap = true, trace = true, quiet = false, switched = true, plots = true;
  std::vector<std::pair<std::string, std::string>> settings;  // --set KEY=V, in order
};

// An option without a value: true when `arg` is one (set in `a`, or *error for a bad one).
bool flag_option(const std::string& arg, Args& a, std::string* error) {
  if (arg == "--no-pcap") a.pcap = false;
  else if (arg == "--no-plots") a.plots = false;
  else if (arg == "--no-trace") a.trace = false;
  else if (arg == "--no-switch") a.switched = false;
  else if (arg == "--no-ideal") a.replay.ideal = false;
  else if (arg == "--quiet") a.quiet = true;
  else if (arg == "--dcqcn" || arg.rfind("--dcqcn=", 0) == 0) {
    const auto profile = hcaemu::model::dcqcn_profile(arg == "--dcqcn" ? "connectx" : arg.substr(8));
    if (profile) a.replay.dcqcn = *profile;
    else *error = "--dcqcn=PROFILE: connectx or paper";
  } else {
    return false;
  }
  return true;
}

// --timing MODE.
std::string parse_timing(const std::string& v, ReplayOptions& o) {
  if (v == "think") o.timing = TimingMode::kThink;
  else if (v == "asis") o.timing = TimingMode::kAsis;
  else if (v == "asap") o.timing = TimingMode::kAsap;
  else if (v.rfind("scale=", 0) == 0) {
    o.timing = TimingMode::kScale;
    char* end = nullptr;
    o.scale = std::strtod(v.c_str() + 6, &end);
    if (end == v.c_str() + 6 || *end != 0 || !(o.scale > 0)) return "--timing scale=K needs K > 0";
  } else {
    return "--timing must be think, asis, asap or scale=K";
  }
  return {};
}

// --set KEY=VALUE, each key once.
std::string add_setting(const std::string& v, Args& a) {
  const size_t eq = v.find('=');
  if (eq == std::string::npos || eq == 0) return "--set needs KEY=VALUE";
  const std::string key = v.substr(0, eq);
  for (const auto& [k, old] : a.settings)
    if (k == key) return "--set " + key + " given twice";
  a.settings.emplace_back(key, v.substr(eq + 1));
  return {};
}

bool takes_value(const std::string& arg) {
  static const std::set<std::string> kValueOptions = {
      "-o", "--out", "--timing", "--timing-preset", "--max-outstanding", "--unmapped", "--max-model-time-ms",
      "--stall-ms", "--bin-us", "--topology", "--seed", "--set", "--hcaemu-trace"};
  return kValueOptions.contains(arg);
}

// An option with its value, into `a`; the usage error or empty.
std::string value_option(const std::string& arg, const std::string& v, Args& a) {
  if (arg == "-o") a.output = v;
  if (arg == "--out") a.out_dir = v;
  if (arg == "--timing-preset") a.preset = v;
  if (arg == "--topology") a.topology = v;
  if (arg == "--hcaemu-trace") a.hcaemu_trace = v;
  if (arg == "--set") return add_setting(v, a);
  if (arg == "--timing") return parse_timing(v, a.replay);
  try {
    if (arg == "--unmapped") a.max_unmapped = std::stoul(v);
    if (arg == "--max-outstanding") a.replay.max_outstanding = uint32_t(std::stoul(v));
    if (arg == "--max-model-time-ms") a.replay.max_model_time_ps = std::stoull(v) * 1'000'000'000ull;
    if (arg == "--stall-ms") a.replay.stall_ps = std::stoull(v) * 1'000'000'000ull;
    if (arg == "--bin-us") a.replay.bin_ps = std::stoull(v) * 1'000'000ull;
    if (arg == "--seed") a.replay.seed = std::stoull(v);
  } catch (const std::exception&) {
    return arg + " needs a number";
  }
  if (arg == "--max-outstanding" && a.replay.max_outstanding == 0) return "--max-outstanding must be at least 1";
  if ((arg == "--stall-ms" && a.replay.stall_ps == 0) || (arg == "--bin-us" && a.replay.bin_ps == 0) ||
      (arg == "--max-model-time-ms" && a.replay.max_model_time_ps == 0))
    return arg + " must be at least 1";
  return {};
}

// Parses the command line into `a`; an empty string or the usage error.
std::string parse_args(const std::vector<std::string>& args, Args& a) {
  a.command = args[0];
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    std::string error;
    if (flag_option(arg, a, &error)) {
      if (!error.empty()) return error;
    } else if (takes_value(arg)) {
      if (i + 1 == args.size()) return arg + " needs a value";
      if (std::string why = value_option(arg, args[++i], a); !why.empty()) return why;
    } else if (!arg.empty() && arg[0] == '-') {
      return "unknown option " + arg;
    } else if (a.input.empty()) {
      a.input = arg;
    } else {
      return "one INPUT only";
    }
  }
  if (a.command != "inspect" && a.command != "lower" && a.command != "run") return "unknown command " + a.command;
  if (a.input.empty()) return a.command + " needs an INPUT";
  if (a.command == "lower" && a.output.empty()) return "lower needs -o WORKLOAD.json";
  if (a.command == "run" && a.out_dir.empty()) return "run needs --out DIR";
  if (!a.switched && !a.topology.empty()) return "--topology and --no-switch exclude each other";
  return {};
}

// The network (a topology file, --no-switch, or one switch at the preset's link rate) and every
// --set applied to the preset ("preset.KEY") or the network; a message for what is wrong.
std::string configure(Args& a, const Workload& workload) {
  for (const auto& [key, value] : a.settings) {
    std::string error;
    if (key.rfind("preset.", 0) == 0 && !hcaemu::model::set_timing_parameter(a.replay.preset, key.substr(7), value, &error))
      return "--set " + error;
  }
  const uint32_t hosts = uint32_t(workload.hosts.size());
  const hcaemu::model::TimingPreset& p = a.replay.preset;
  hcaemu::fabric::Topology topology = a.switched ? hcaemu::fabric::single_switch(hosts, p.link_gbps, p.propagation_ns / 2)
                                                 : hcaemu::fabric::direct(hosts, p.link_gbps, p.propagation_ns);
  if (!a.topology.empty()) {
    std::ifstream in(a.topology);
    if (!in) return "cannot read " + a.topology;
    std::stringstream text;
    text << in.rdbuf();
    std::string error;
    auto parsed = hcaemu::fabric::parse_topology(text.str(), hosts, &error);
    if (!parsed) return a.topology + ": " + error;
    topology = *parsed;
  }
  for (const auto& [key, value] : a.settings) {
    if (key.rfind("preset.", 0) == 0) continue;
    std::string error;
    if (key == "qp.ack_timeout") {
      char* end = nullptr;
      const unsigned long v = std::strtoul(value.c_str(), &end, 10);
      if (value.empty() || *end != 0 || v > 31) return "--set qp.ack_timeout: \"" + value + "\" is not 0..31";
      a.replay.ack_timeout = uint8_t(v);
      continue;
    }
    if (key.rfind("dcqcn.", 0) == 0) {
      if (!hcaemu::model::set_dcqcn_parameter(a.replay.dcqcn, key.substr(6), value, &error)) return "--set " + error;
      continue;
    }
    if (!hcaemu::fabric::set_parameter(topology, key, value, &error)) {
      std::string known = "preset.<timing preset key>, dcqcn.<DCQCN parameter>, qp.ack_timeout";
      for (const std::string& name : hcaemu::fabric::parameter_names()) known += ", " + name;
      return "--set " + error + " (known: " + known + ")";
    }
  }
  if (const std::string why = hcaemu::fabric::validate(topology); !why.empty()) return "topology: " + why;
  a.replay.topology = topology;
  return {};
}

int run(Args& a, const Workload& workload) {
  const auto presets = hcaemu::model::builtin_timing_presets();
  const auto preset = std::find_if(presets.begin(), presets.end(), [&](const auto& p) { return p.name == a.preset; });
  if (preset == presets.end()) {
    std::cerr << "hcareplay: unknown timing preset " << a.preset << " (docs/timing.md lists them)\n";
    return 2;
  }
  a.replay.preset = *preset;
  if (const std::string why = configure(a, workload); !why.empty()) {
    std::cerr << "hcareplay: " << why << "\n";
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(a.out_dir, ec);
  if (ec) {
    std::cerr << "hcareplay: cannot create " << a.out_dir << ": " << ec.message() << "\n";
    return 1;
  }
  if (a.pcap) a.replay.pcap_path = a.out_dir + "/wire.pcap";
  if (a.trace) a.replay.trace_prefix = a.out_dir + "/trace";
  if (!a.quiet) {
    const auto start = std::chrono::steady_clock::now();
    a.replay.progress = [start](uint64_t ps, uint64_t packets, size_t done, size_t total) {
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::cerr << "hcareplay: model time " << ps / 1000000 << " us, " << packets << " packets, " << done << "/" << total
                << " operations done";
      if (done != 0) std::cerr << ", about " << int(wall * double(total - done) / double(done) + 0.5) << " s to go";
      std::cerr << "\n";
    };
  }
  setenv("SC_COPYRIGHT_MESSAGE", "DISABLE", 1);
  std::string error;
  const auto result = replay(workload, a.replay, &error);
  if (!result) {
    std::cerr << "hcareplay: " << a.input << ": " << error << "\n";
    return 1;
  }
  std::ofstream csv(a.out_dir + "/messages.csv");
  write_messages_csv(csv, *result);
  std::ofstream summary(a.out_dir + "/summary.txt"), summary_csv(a.out_dir + "/summary.csv");
  write_summary(summary, *result);
  write_summary_csv(summary_csv, *result);
  std::ofstream totals(a.out_dir + "/totals.csv"), settings(a.out_dir + "/settings.csv");
  write_totals_csv(totals, *result);
  settings << "key,value\n";
  for (const auto& [key, value] : a.settings) settings << key << ',' << value << '\n';
  std::ofstream links(a.out_dir + "/links.csv"), qps(a.out_dir + "/qps.csv");
  write_link_timeline(links, *result, a.replay.bin_ps);
  write_qp_timeline(qps, *result, a.replay.bin_ps);
  write_summary(std::cout, *result);
  for (std::ofstream* file : {&csv, &summary, &summary_csv, &totals, &settings, &links, &qps}) {
    file->close();
    if (!*file) {
      std::cerr << "hcareplay: cannot write into " << a.out_dir << "\n";
      return 1;
    }
  }
  if (a.plots) {  // a warning, not a failure: the CSV files are complete without them
    std::string error;
    if (!plot_run(a.out_dir, &error)) std::cerr << "hcareplay: plots: " << error << "\n";
  }
  if (result->stalled)
    std::cerr << "hcareplay: stopped at " << result->end_ps / 1000000 << " us of model time: operations in flight and "
              << "none completed for " << result->stall_limit_ps / 1000000000 << " ms (RNR NAKs or retransmissions without "
              << "end, or a rate limit so low that one message takes longer: see the rate column of qps.csv; "
              << "--stall-ms T waits longer)\n";
  if (result->incomplete != 0) {
    std::cerr << "hcareplay: " << result->incomplete << " operations never completed (see messages.csv)\n";
    return 3;
  }
  return 0;
}

}  // namespace

// libsystemc references sc_main; hcareplay starts the kernel itself (replay()).
int sc_main(int, char**) { return 0; }

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage_error("no command");
  if (args[0] == "-h" || args[0] == "--help") {
    std::cout << kUsage;
    return 0;
  }
  // The tools around runs: they run hcareplay processes or read the files runs wrote.
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "sweep") return sweep_command(rest, self_executable(argv[0]));
  if (args[0] == "collect") return collect_command(rest);
  if (args[0] == "plot") return plot_command(rest);
  Args a;
  if (const std::string why = parse_args(args, a); !why.empty()) return usage_error(why);
  std::optional<Reconstruction> capture;
  std::optional<Workload> workload;
  if (!load(a.input, capture, workload)) return 1;
  if (!a.hcaemu_trace.empty()) {
    if (!capture) return usage_error("--hcaemu-trace goes with a capture of the same run, not a workload");
    if (!add_trace_timing(a.hcaemu_trace, *capture)) return 1;
    if (a.switched && a.topology.empty() && a.command == "run") {
      a.switched = false;
      std::cerr << "hcareplay: the captured functions shared hcaemu's embedded switch: no switch between the hosts "
                   "(--topology FILE puts one in)\n";
    }
  }
  if (a.command == "inspect") {
    if (capture) print_capture(std::cout, *capture, a.max_unmapped);
    else print_workload(std::cout, *workload);
    return 0;
  }
  const Workload lowered = capture ? lower(*capture) : *workload;
  if (a.command == "run") return run(a, lowered);
  std::ofstream out(a.output);
  out << workload_json(lowered);
  if (!out) {
    std::cerr << "hcareplay: cannot write " << a.output << "\n";
    return 1;
  }
  return 0;
}
