// hcafabric: an Ethernet learning switch whose ports are sockets in QEMU's netdev framing, so the
// uplinks of several hcaemu processes and ordinary VMs share one L2 segment.
#include <boost/program_options.hpp>

#include <pthread.h>

#include <charconv>
#include <chrono>
#include <csignal>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/app_cli.h"
#include "common/log.h"
#include "fabric/learning_switch.h"
#include "fabric/link_faults.h"
#include "qemu-bridge/netdev_link.h"

namespace po = boost::program_options;
using namespace hcaemu;

namespace {

constexpr const char* kUsage = R"(Usage: hcafabric --port SPEC --port SPEC [--port SPEC ...] [options]

Runs an Ethernet learning switch whose ports are sockets in QEMU's netdev framing, so the uplinks of
several hcaemu processes (--uplink) and QEMU VMs (-netdev stream or dgram) share one L2 segment. Port i is
the i-th --port (port0, port1, ...), with one peer each. The switch learns each source MAC on the port it
came in by, sends known unicast to that port only, and floods unknown unicast, broadcast and multicast to
every other port whose link is up (a stream port's link is up while its peer is connected; a port going
down forgets its MACs). MACs age out after --ageing-time; the table holds at most --max-macs. There is no
spanning tree: join fabrics as a tree, never in a loop. Each hcaemu on the segment needs its own
mac_base (--config, docs/configuration.md). Stops on SIGINT or SIGTERM and prints each port's counters.

Example: two hcaemu hosts and a VM with virtio-net on one segment
  mkdir -p /tmp/f
  hcafabric --port stream,listen=unix:/tmp/f/p0.sock --port stream,listen=unix:/tmp/f/p1.sock \
            --port stream,listen=unix:/tmp/f/p2.sock &
  hcaemu --socket-dir /tmp/h0 --uplink stream,connect=unix:/tmp/f/p0.sock &
  hcaemu --socket-dir /tmp/h1 --config h1.json --uplink stream,connect=unix:/tmp/f/p1.sock &
  qemu-system-x86_64 ... -netdev stream,id=n0,server=off,addr.type=unix,addr.path=/tmp/f/p2.sock \
                         -device virtio-net-pci,netdev=n0
(h1.json: {"mac_base": "02:c9:00:00:01:00"})

Options)";

struct Options {
  std::vector<std::string> ports;
  std::vector<std::string> port_faults;
  std::string log_level = "info";
  double ageing_s = 300;
  size_t max_macs = 8192;
};

// Returns the exit code to stop with, or -1 to go on.
int parse_options(int argc, char** argv, Options& o) {
  po::options_description desc(kUsage, 100, 50);  // wide enough that a link spec is not cut
  desc.add_options()
      ("help,h", "show this help and exit")
      ("version", "print the version and exit")
      ("port", po::value<std::vector<std::string>>(&o.ports),
       "a switch port (at least two; repeat the option): stream,listen=unix:PATH | stream,listen=tcp:HOST:PORT "
       "(wait for a peer: hcaemu --uplink stream,connect=unix:PATH, or a VM with -netdev "
       "stream,server=off,addr.type=unix,addr.path=PATH) | stream,connect=unix:PATH | stream,connect=tcp:HOST:PORT "
       "(connect to a listening peer, retried every second) | dgram,local=udp:HOST:PORT,remote=udp:HOST:PORT | "
       "dgram,local=unix:PATH,remote=unix:PATH (one frame per datagram, as -netdev dgram; always up)")
      ("port-faults", po::value<std::vector<std::string>>(&o.port_faults),
       "I:SETTINGS: inject faults into the frames the switch sends out of port I (repeatable, once per port): "
       "loss=P,corrupt=P,duplicate=P,reorder=P,delay=T,jitter=T,rate=R,seed=N (P a fraction or a percentage, "
       "T in ns/us/ms/s, R in bit/s or kbit/mbit/gbit; e.g. 1:loss=1%,corrupt=0.1%). The seed is I+1 unless "
       "given, so the same frames see the same faults in every run. Counted and reported at exit")
      ("ageing-time", po::value<double>(&o.ageing_s)->default_value(300),
       "seconds a learned MAC is kept without a frame from it (0: forever)")
      ("max-macs", po::value<size_t>(&o.max_macs)->default_value(8192),
       "MACs the table holds; past it new MACs are not learned (their frames are flooded) and counted")
      ("log-level", po::value<std::string>(&o.log_level)->default_value("info"),
       "trace, debug, info, warn, error, critical or off");
  po::variables_map vm;
  if (int code = parse_app_options("hcafabric", "0.1.0", argc, argv, desc, vm); code >= 0) return code;
  if (o.ports.size() < 2) {
    std::cerr << "hcafabric: at least two --port options are needed (see hcafabric --help)\n";
    return 2;
  }
  if (!(o.ageing_s >= 0 && o.ageing_s <= 1e6)) {
    std::cerr << "hcafabric: --ageing-time takes seconds from 0 to 1000000\n";
    return 2;
  }
  if (o.max_macs == 0) {
    std::cerr << "hcafabric: --max-macs must be at least 1\n";
    return 2;
  }
  if (!set_log_level(o.log_level)) {
    std::cerr << "hcafabric: unknown --log-level \"" << o.log_level << "\"\n";
    return 2;
  }
  return -1;
}

struct PortSetup {
  bridge::LinkSpec spec;
  std::optional<fabric::LinkFaultSettings> faults;
};

// The ports the options name, each spec and fault setting checked; empty (reason on stderr) if
// one is wrong.
std::vector<PortSetup> resolve_ports(const Options& options) {
  std::vector<PortSetup> ports;
  std::set<std::string> locals;
  for (const std::string& text : options.ports) {
    std::string error;
    std::optional<bridge::LinkSpec> spec = bridge::parse_link_spec(text, error);
    if (!spec) {
      std::cerr << "hcafabric: --port " << text << ": " << error << "\n";
      return {};
    }
    // A second listener on a UNIX path would replace the first one's socket file.
    if (spec->kind != bridge::LinkSpec::Kind::kStreamConnect && !locals.insert(spec->local.text()).second) {
      std::cerr << "hcafabric: --port " << text << ": " << spec->local.text() << " is another port's already\n";
      return {};
    }
    ports.push_back({*spec, std::nullopt});
  }
  for (const std::string& text : options.port_faults) {
    const size_t colon = text.find(':');
    size_t index = 0;
    if (colon == std::string::npos ||
        std::from_chars(text.data(), text.data() + colon, index).ec != std::errc{} ||
        std::to_string(index) != text.substr(0, colon) || index >= ports.size()) {
      std::cerr << "hcafabric: --port-faults " << text << ": expected I:SETTINGS with I a port from 0 to "
                << ports.size() - 1 << "\n";
      return {};
    }
    if (ports[index].faults) {
      std::cerr << "hcafabric: --port-faults: port " << index << " given twice\n";
      return {};
    }
    std::string error;
    fabric::LinkFaultSettings base;
    base.seed = index + 1;  // each port its own faults, the same in every run
    ports[index].faults = fabric::parse_link_faults(std::string_view(text).substr(colon + 1), error, base);
    if (!ports[index].faults) {
      std::cerr << "hcafabric: --port-faults " << text << ": " << error << "\n";
      return {};
    }
  }
  return ports;
}

uint64_t now_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

// The switch and its links. The links' I/O threads call in (a frame arrived, a peer came or
// went); one mutex keeps the switch, and each port's faults, to one frame at a time, so frames
// cross the switch in one order and a port's faults are drawn in the order its frames leave.
// NetdevLink::send never blocks, so sending under the mutex holds up no other port.
class Fabric {
 public:
  Fabric(std::vector<PortSetup> setups, fabric::LearningSwitchOptions switch_options)
      : switch_(setups.size(), switch_options), ports_(setups.size()) {
    // Each link is down until its carrier says otherwise (a stream port: until its peer connects).
    for (size_t i = 0; i < ports_.size(); ++i) {
      switch_.set_port_up(i, false);
      ports_[i].spec = setups[i].spec;
      if (setups[i].faults) ports_[i].faults.emplace(*setups[i].faults);
      if (setups[i].faults && setups[i].faults->shapes_time()) ports_[i].shaper.emplace(*setups[i].faults);
    }
  }
  ~Fabric() { stop(); }
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  // Opens every port's socket; throws (naming the port's spec) when one cannot be opened.
  void open() {
    for (size_t i = 0; i < ports_.size(); ++i) {
      Port& port = ports_[i];
      const std::string name = "port" + std::to_string(i);
      std::unique_ptr<bridge::NetdevLink> link;
      try {
        link = std::make_unique<bridge::NetdevLink>(
            name, port.spec, [this, i](std::vector<uint8_t> frame) { receive(i, frame); },
            [this, i](bool up) { carrier(i, up); });
      } catch (const std::exception& e) {
        throw std::runtime_error("--port " + port.spec.text + ": " + e.what());
      }
      if (port.shaper) link->set_pace([shaper = &*port.shaper](uint64_t now, size_t bytes) { return shaper->release_ns(now, bytes); });
      if (port.faults) log().info("{}: injecting faults on its frames out: {}", name, port.faults->settings().text());
      std::lock_guard lock(mutex_);
      port.link = std::move(link);
    }
  }

  // Joins every link's I/O thread; no callback runs after it. Idempotent.
  void stop() {
    // Not under the mutex: a link's thread may be waiting for it in receive().
    for (Port& port : ports_)
      if (port.link) port.link->stop();
  }

  std::string describe() const {
    std::string text;
    for (size_t i = 0; i < ports_.size(); ++i) text += (i ? ", port" : "port") + std::to_string(i) + " " + ports_[i].spec.text;
    return text;
  }

  // After stop(): each port's counters (the switch's and its link's), then the switch's.
  void report() const {
    for (size_t i = 0; i < ports_.size(); ++i) {
      const fabric::SwitchPortCounters& s = switch_.port_counters(i);
      log().info("port{} ({}): in {} frames {} bytes, out {} frames {} bytes, flooded {}, dropped: runt {}, "
                 "bad source {}, same port {}, port down {}",
                 i, ports_[i].spec.text, s.rx_frames, s.rx_bytes, s.tx_frames, s.tx_bytes, s.flooded, s.dropped_runt,
                 s.dropped_bad_source, s.dropped_same_port, s.dropped_port_down);
      if (!ports_[i].link) continue;
      const bridge::LinkCounters& c = ports_[i].link->counters();
      log().info("port{} link: sent {}, received {}, dropped: no peer {}, backlog {}, oversized {}, garbage framing {}, "
                 "cut by a disconnect {}; peers: connected {}, disconnected {}, second refused {}",
                 i, c.tx_frames.load(), c.rx_frames.load(), c.tx_dropped_no_peer.load(), c.tx_dropped_backlog.load(),
                 c.rx_oversized.load(), c.rx_bad_framing.load(), c.rx_cut_frames.load(), c.connects.load(),
                 c.disconnects.load(), c.second_peers_refused.load());
      if (const auto& f = ports_[i].faults) {
        const fabric::LinkFaultCounters& fc = f->counters();
        log().info("port{} faults out: {} frames, lost {}, corrupted {}, duplicated {}, reordered {}", i, fc.frames,
                   fc.lost, fc.corrupted, fc.duplicated, fc.reordered);
      }
    }
    const fabric::SwitchCounters& c = switch_.counters();
    log().info("switch: {} MACs in the table; learned {}, moved {}, aged {}, forgotten (port down) {}, "
               "not learned (table full) {}",
               switch_.table_size(), c.learned, c.moved, c.aged, c.forgotten, c.table_full);
  }

 private:
  struct Port {
    bridge::LinkSpec spec;
    std::unique_ptr<bridge::NetdevLink> link;    // set once open; null while its socket opens
    std::optional<fabric::LinkFaults> faults;    // on the frames out, under mutex_
    std::optional<fabric::LinkShaper> shaper;    // the link's pace, called under its outbox lock
  };

  void receive(size_t in, const std::vector<uint8_t>& frame) {
    std::lock_guard lock(mutex_);
    for (size_t out : switch_.forward(in, frame, now_ns())) transmit(ports_[out], frame);
  }

  void transmit(Port& port, std::span<const uint8_t> frame) {
    // A datagram port is up from its constructor on, a moment before open() stores its link.
    if (!port.link) return;
    if (!port.faults) return port.link->send(frame);
    for (const auto& carried : port.faults->carry(frame)) port.link->send(carried);
  }

  void carrier(size_t index, bool up) {
    size_t forgotten = 0;
    {
      std::lock_guard lock(mutex_);
      forgotten = switch_.set_port_up(index, up);
    }
    if (up)
      log().info("port{}: link up", index);
    else
      log().info("port{}: link down ({} MACs forgotten)", index, forgotten);
  }

  std::mutex mutex_;
  fabric::LearningSwitch switch_;
  std::vector<Port> ports_;  // sized once: the links' callbacks hold indices into it
};

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (int code = parse_options(argc, argv, options); code >= 0) return code;
  std::vector<PortSetup> setups = resolve_ports(options);
  if (setups.empty()) return 2;
  const sigset_t stop_signals = block_stop_signals();

  Fabric fabric(std::move(setups), {.ageing_ns = uint64_t(options.ageing_s * 1e9), .max_entries = options.max_macs});
  try {
    fabric.open();
  } catch (const std::exception& e) {
    std::cerr << "hcafabric: " << e.what() << "\n";
    return 2;
  }
  log().info("hcafabric ready: {} ports: {}", options.ports.size(), fabric.describe());

  int signal = 0;
  sigwait(&stop_signals, &signal);
  log().info("hcafabric: {} received, shutting down", signal == SIGINT ? "SIGINT" : "SIGTERM");
  fabric.stop();
  fabric.report();
  log().info("hcafabric: stopped");
  return 0;
}
