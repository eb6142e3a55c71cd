// preset_figures: what a timing preset implies, computed from the preset and the PCIe link model
// alone (no SystemC run), next to the published figures of calibration.md:
//   1. the 64 B RDMA WRITE latency budget along the model's path, stage by stage;
//   2. perftest-style one-way latencies (ib_send_lat) against the measured ConnectX-4 figures;
//   3. the 64 KiB bandwidth limit (port vs PCIe) and the 2/4 KiB message bandwidths;
//   4. the PCIe link against calibration.md's derived table.
// docs/timing.md explains each formula.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "model/timing_preset.h"
#include "pcie/link_timing.h"

using hcaemu::model::TimingPreset;
using hcaemu::pcie::LinkTiming;

namespace {

constexpr const char* kUsage = R"(Usage: preset_figures [--file PRESETS.json] [--pcie-one-way NS] [NAME...]
       preset_figures --list | --help

Prints, for each named timing preset (default: connectx6dx-100g), the latency budget of a 64 B
RDMA WRITE along the model's path, perftest-style one-way latencies, the 64 KiB bandwidth limit
and the PCIe link figures, each next to the published figure it should reproduce
(calibration.md). Model arithmetic only: nothing is simulated.

  --file FILE         take the presets from FILE (config/timing-presets.json format) instead of
                      the built-in ones
  --pcie-one-way NS   override the presets' one-way PCIe latency (what-if)
  --list              list the presets and exit
)";

// Frame sizes (destination MAC to ICRC, no FCS: TimingPreset::wire_ns adds FCS, preamble and IFG).
constexpr uint32_t kRoceHeaders = 14 + 20 + 8 + 12 + 4;  // Eth + IPv4 + UDP + BTH + ICRC
constexpr uint32_t kReth = 16, kAeth = 4;
constexpr uint32_t kMtu = 4096;
constexpr uint32_t kWqeBytes = 64, kCqeBytes = 64, kEqeBytes = 64, kDoorbellBytes = 8, kMsixBytes = 4;

struct Row {
  std::string what;
  double ns;
};

double us(double ns) { return ns / 1000.0; }

void budget(const TimingPreset& p, const LinkTiming& pcie) {
  std::vector<Row> request = {
      {"doorbell: CPU's 8 B MMIO write to the UAR (posted)", pcie.mmio_write_latency(kDoorbellBytes).count()},
      {fmt::format("doorbell unit ({} cycles)", p.doorbell_cycles), p.cycles_ns(p.doorbell_cycles)},
      {"WQE fetch: DMA read of one 64 B WQEBB", pcie.dma_read_time(kWqeBytes).count()},
      {fmt::format("WQE parse and checks ({} cycles)", p.wqe_fetch_cycles), p.cycles_ns(p.wqe_fetch_cycles)},
      {"payload: DMA read of 64 B", pcie.dma_read_time(64).count()},
      {fmt::format("TX pipeline: build the packet ({} cycles)", p.per_packet_tx_cycles),
       p.cycles_ns(p.per_packet_tx_cycles)},
      {fmt::format("wire: {} B frame at {:g} Gb/s (+24 B FCS, preamble, IFG)", kRoceHeaders + kReth + 64, p.link_gbps),
       p.wire_ns(kRoceHeaders + kReth + 64)},
      {"propagation: cable + one switch hop", p.propagation_ns},
      {fmt::format("peer RX pipeline ({} cycles)", p.per_packet_rx_cycles), p.cycles_ns(p.per_packet_rx_cycles)},
  };
  const Row remote_write{"peer: DMA write of the 64 B payload", pcie.dma_write_time(64).count()};
  const std::vector<Row> ack = {
      {fmt::format("peer builds the ACK ({} cycles)", p.per_packet_tx_cycles), p.cycles_ns(p.per_packet_tx_cycles)},
      {fmt::format("wire: {} B ACK frame", kRoceHeaders + kAeth), p.wire_ns(kRoceHeaders + kAeth)},
      {"propagation back", p.propagation_ns},
      {fmt::format("RX pipeline: the ACK ({} cycles)", p.per_packet_rx_cycles), p.cycles_ns(p.per_packet_rx_cycles)},
      {fmt::format("CQE build ({} cycles)", p.cqe_cycles), p.cycles_ns(p.cqe_cycles)},
      {"CQE: DMA write of 64 B", pcie.dma_write_time(kCqeBytes).count()},
  };
  const std::vector<Row> interrupt = {
      {fmt::format("EQE build ({} cycles)", p.eqe_cycles), p.cycles_ns(p.eqe_cycles)},
      {"EQE: DMA write of 64 B", pcie.dma_write_time(kEqeBytes).count()},
      {"MSI-X: 4 B write right behind it", pcie.serialize(pcie.write_wire_bytes(kMsixBytes)).count()},
  };

  fmt::print("1. 64 B RDMA WRITE along the model's path (doorbell, then WQE and payload fetched by DMA)\n");
  fmt::print("   {:<58} {:>9} {:>9}\n", "stage", "ns", "at ns");
  double t = 0;
  auto print = [&](const Row& r) {
    t += r.ns;
    fmt::print("   {:<58} {:>9.1f} {:>9.1f}\n", r.what, r.ns, t);
  };
  for (const Row& r : request) print(r);
  const double rx_done = t;
  print(remote_write);
  const double delivered = t;
  fmt::print("   {:<58} {:>9} {:>9.1f}  one-way latency\n", "= payload in the peer's memory", "", delivered);
  t = rx_done;
  fmt::print("   (the peer ACKs once its RX pipeline has checked the packet, in parallel with its DMA write)\n");
  for (const Row& r : ack) print(r);
  const double completed = t;
  fmt::print("   {:<58} {:>9} {:>9.1f}  requester completion\n", "= CQE in host memory (a polling CPU sees it)", "",
             completed);
  for (const Row& r : interrupt) print(r);
  fmt::print("   {:<58} {:>9} {:>9.1f}\n", "= MSI-X delivered (armed CQ)", "", t);
  const double pcie_share = request[0].ns + request[2].ns + request[4].ns + remote_write.ns;
  fmt::print("   perftest rings with BlueFlame and sends small payloads inline, saving both DMA reads: see 2.\n");
  fmt::print("   PCIe in the one-way latency: {:.0f} of {:.0f} ns (six traversals: the doorbell, two DMA read round\n"
             "   trips, the peer's write). Published: \"PCIe contributes ~250 ns of a small-message latency\n"
             "   breakdown\" [Hoefler et al., sPIN slides] (calibration.md, Bandwidth and message rate).\n\n",
             pcie_share, delivered);
}

// One-way latency of ib_send_lat (RC SEND, ping-pong / 2): the WQE goes to the HCA by BlueFlame
// (a 64 B MMIO write, no WQE fetch), the payload inline or by DMA read; the receiver polls its CQ,
// so its CQE is part of the latency (its receive WQE is assumed prefetched). Packets of a message
// flow through PCIe read, TX, wire, RX and PCIe write as a pipeline: the first packet pays every
// stage, each further one the slowest stage.
double send_lat_ns(const TimingPreset& p, const LinkTiming& pcie, uint32_t bytes, bool inline_payload) {
  const uint32_t packets = std::max<uint32_t>(1, (bytes + kMtu - 1) / kMtu);
  const uint32_t first = std::min(bytes, kMtu);
  double t = pcie.mmio_write_latency(kWqeBytes).count() + p.cycles_ns(p.doorbell_cycles + p.wqe_fetch_cycles);
  t += inline_payload ? 0.0 : pcie.dma_read_time(first).count();
  t += p.cycles_ns(p.per_packet_tx_cycles) + p.wire_ns(kRoceHeaders + first) + p.propagation_ns +
       p.cycles_ns(p.per_packet_rx_cycles) + pcie.dma_write_time(first).count();
  const double slowest = std::max({inline_payload ? 0.0 : pcie.serialize(pcie.completion_wire_bytes(kMtu)).count(),
                                   p.cycles_ns(p.per_packet_tx_cycles), p.wire_ns(kRoceHeaders + kMtu),
                                   p.cycles_ns(p.per_packet_rx_cycles),
                                   pcie.serialize(pcie.write_wire_bytes(kMtu)).count()});
  t += (packets - 1) * slowest;
  // The receiver's CQE is posted right behind the payload.
  return t + p.cycles_ns(p.cqe_cycles) + pcie.serialize(pcie.write_wire_bytes(kCqeBytes)).count();
}

void send_lat(const TimingPreset& p, const LinkTiming& pcie) {
  struct Published {
    uint32_t bytes;
    bool inline_payload;
    const char* figure;
  };
  const Published rows[] = {{32, true, "0.81-0.83 us"}, {1024, false, "1.52-1.61 us"}, {4096, false, "2.25-2.28 us"},
                            {32768, false, "~4.57 us"}};
  fmt::print("2. perftest ib_send_lat RC one-way (RTT/2): WQE by BlueFlame, receiver polls its CQ\n");
  fmt::print("   {:>8}  {:<8} {:>10}  {:<14} {}\n", "bytes", "payload", "model", "published", "source");
  for (const auto& r : rows)
    fmt::print("   {:>8}  {:<8} {:>7.3f} us  {:<14} {}\n", r.bytes, r.inline_payload ? "inline" : "DMA read",
               us(send_lat_ns(p, pcie, r.bytes, r.inline_payload)), r.figure,
               "ConnectX-4 EDR 100 Gb/s, PCIe Gen3 x16, MLNX OFED 4.4 [Potter]");
  fmt::print("   {:>8}  {:<8} {:>10}  {:<14} {}\n", "small", "", "", "600 ns",
             "InfiniBand HDR 200 Gb/s, ConnectX-6 class [vendor claim]");
  fmt::print("   (calibration.md, End-to-end verbs latency. The measured adapter is InfiniBand: its headers are\n"
             "   ~50 B shorter per packet than RoCEv2's, ~4 ns at 100 Gb/s. The published figures come from Gen3 x16.)\n\n");
}

// Bandwidth of back-to-back messages: the port carries every packet's headers (a WRITE's first
// packet also its RETH); PCIe carries the payload as read completions at the requester and as
// memory writes at the responder.
void bandwidth(const TimingPreset& p, const LinkTiming& pcie) {
  auto wire_gbps = [&](uint32_t bytes, bool write) {
    const uint32_t packets = std::max<uint32_t>(1, (bytes + kMtu - 1) / kMtu);
    const double wire_bytes = double(bytes) + packets * (kRoceHeaders + 4 + 20) + (write ? kReth : 0);
    return p.link_gbps * double(bytes) / wire_bytes;
  };
  const uint32_t big = 64 * 1024;
  const double link = wire_gbps(big, true);
  const double read = big * 8.0 / pcie.serialize(pcie.completion_wire_bytes(big)).count();
  const double write = big * 8.0 / pcie.serialize(pcie.write_wire_bytes(big)).count();
  fmt::print("3. Bandwidth, MTU {}: per packet Eth 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4 + preamble/IFG 20 B\n",
             kMtu);
  fmt::print("   64 KiB RDMA WRITE: port {:.2f} Gb/s, PCIe requester (read completions) {:.2f} Gb/s,\n"
             "   PCIe responder (memory writes) {:.2f} Gb/s -> limit {:.2f} Gb/s ({})\n",
             link, read, write, std::min({link, read, write}), link <= std::min(read, write) ? "the port" : "PCIe");
  fmt::print("   {:>8}  {:>12} {:>12}  {:<22} {}\n", "message", "model WRITE", "model SEND", "published WRITE/SEND",
             "source");
  const char* published[] = {"95.2 / 94.5 Gb/s", "97.5 / 97.6 Gb/s"};
  const uint32_t sizes[] = {2048, 4096};
  for (int i = 0; i < 2; ++i) {
    const double limit_w = std::min({wire_gbps(sizes[i], true), read, write});
    const double limit_s = std::min({wire_gbps(sizes[i], false), read, write});
    fmt::print("   {:>6} B  {:>7.2f} Gb/s {:>7.2f} Gb/s  {:<22} {}\n", sizes[i], limit_w, limit_s, published[i],
               "100 Gb/s RoCEv2 RNIC to CPU memory [PMC7842203, Table 2]");
  }
  fmt::print("   (calibration.md, Bandwidth and message rate. Model: wire and PCIe limits only, no host effects.)\n\n");
}

void pcie_table(const TimingPreset& p, const LinkTiming& pcie) {
  struct Published {
    uint32_t gen;
    const char *raw, *tlp, *write;
  };
  const Published rows[] = {{3, "126.0", "113.7", "~104"}, {4, "252.1", "227.4", "~208"}, {5, "504.1", "454.8", "~416"}};
  fmt::print("4. PCIe Gen{} x{}, MPS {}, MRRS {}, one way {:g} ns\n", p.pcie_gen, p.pcie_width, pcie.config().mps,
             pcie.config().mrrs, pcie.config().one_way_latency_ns);
  fmt::print("   model:     raw {:.1f} Gb/s, TLP layer {:.1f} Gb/s, effective DMA write {:.1f} Gb/s, read {:.1f} Gb/s\n",
             pcie.raw_gbps(), pcie.tlp_gbps(), pcie.effective_write_gbps(), pcie.effective_read_gbps());
  for (const auto& r : rows)
    if (r.gen == p.pcie_gen && p.pcie_width == 16 && pcie.config().mps == 256)
      fmt::print("   published: raw {} Gb/s, TLP layer {} Gb/s, effective DMA write {} Gb/s (derived, pcie-bench\n"
                 "              overheads; calibration.md, PCIe table)\n",
                 r.raw, r.tlp, r.write);
  fmt::print("   64 B DMA read {:.1f} ns, 64 B DMA write {:.1f} ns, 4 B MMIO read {:.1f} ns\n\n",
             pcie.dma_read_time(64).count(), pcie.dma_write_time(64).count(), pcie.mmio_read_latency(4).count());
}

int usage_error(const std::string& what) {
  std::cerr << "preset_figures: " << what << "\n(see preset_figures --help)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string file;
  std::vector<std::string> names;
  double one_way = -1;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--list") {
      list = true;
    } else if (a == "--file" || a == "--pcie-one-way") {
      if (i + 1 >= argc) return usage_error(a + " needs a value");
      const std::string v = argv[++i];
      if (a == "--file") {
        file = v;
      } else {
        char* end = nullptr;
        one_way = std::strtod(v.c_str(), &end);
        if (end == v.c_str() || *end || !(one_way >= 0)) return usage_error("bad --pcie-one-way \"" + v + "\"");
      }
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option \"" + a + "\"");
    } else {
      names.push_back(a);
    }
  }

  std::vector<TimingPreset> presets = hcaemu::model::builtin_timing_presets();
  if (!file.empty()) {
    std::string error;
    presets = hcaemu::model::load_timing_presets(file, &error);
    if (presets.empty()) {
      std::cerr << "preset_figures: " << error << "\n";
      return 1;
    }
  }
  if (list) {
    for (const auto& p : presets) std::cout << p.name << "  " << p.description << "\n";
    return 0;
  }
  if (names.empty()) names.push_back("connectx6dx-100g");
  for (const auto& name : names) {
    auto it = std::find_if(presets.begin(), presets.end(), [&](const TimingPreset& p) { return p.name == name; });
    if (it == presets.end()) return usage_error("no preset \"" + name + "\" (see --list)");
    TimingPreset p = *it;
    if (one_way >= 0) p.pcie_one_way_ns = one_way;
    const LinkTiming pcie(p.link_config());
    fmt::print("preset {}: {}\n", p.name, p.description);
    fmt::print("HCA clock {:g} MHz; port {:g} Gb/s; propagation {:g} ns; PCIe Gen{} x{}, {:g} ns one way\n\n",
               p.hca_clock_mhz, p.link_gbps, p.propagation_ns, p.pcie_gen, p.pcie_width, p.pcie_one_way_ns);
    budget(p, pcie);
    send_lat(p, pcie);
    bandwidth(p, pcie);
    pcie_table(p, pcie);
  }
  return 0;
}
