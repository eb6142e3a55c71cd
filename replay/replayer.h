#pragma once
// Runs a workload (replay/workload.h) through the model of the HCA in model time: one headless
// host per workload host (hostsim: simulated memory, the firmware, the RDMA engine behind a PCIe
// link model), each running its device work items on a SystemC thread of its own as HcaFunction
// runs a guest's (pcie/model_time.h), all on a switched network (fabric/: one 100 Gb/s switch by
// default, or a topology file: buffers, ECN, PFC, ECMP). A driver thread posts each operation when
// its timing mode and its dependencies allow, and notes when its completion appears. Before the
// workload, each kind of operation it holds runs once alone on the empty network: its ideal FCT.
// Deterministic: the same workload, options and seed give the same results and capture, byte for
// byte.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fabric/network.h"
#include "fabric/topology.h"
#include "model/congestion/dcqcn.h"
#include "model/timing_preset.h"
#include "replay/workload.h"

namespace hcaemu::replay {

enum class TimingMode : uint8_t {
  kThink,  // an operation's think time after its QP's previous completion; else as soon as allowed
  kAsis,   // at its post time (relative to the earliest in the workload)
  kAsap,   // as soon as its QP has room and its dependencies are done
  kScale,  // at its post time times `scale`
};

struct ReplayOptions {
  TimingMode timing = TimingMode::kThink;
  double scale = 1.0;
  model::TimingPreset preset;        // the NIC, PCIe link and wire
  // The network; none: every host on one switch at the preset's link rate, each link half the
  // preset's propagation delay (so host to host is the preset's, plus the switch's store and forward).
  std::optional<fabric::Topology> topology;
  uint64_t seed = 1;                 // RED's draws, the order of simultaneous arrivals
  model::DcqcnParameters dcqcn;      // congestion control in every host's NIC (off by default)
  bool ideal = true;                 // measure each kind of operation alone first (ideal FCT, slowdown)
  uint32_t max_outstanding = 16;     // operations in flight per QP (its send queue's room)
  // The RC/UC QPs' local ACK timeout (IB enum: 4.096 us x 2^N; perftest's 14 is 67 ms).
  uint8_t ack_timeout = 14;
  std::string pcap_path;             // the replayed wire; empty: none
  std::string trace_prefix;          // the per-stage latency trace (PREFIX.json, PREFIX.csv); empty: none
  uint64_t bin_ps = 10'000'000;      // the timelines' bin (10 us)
  // The run stops this long after the last captured post time it keeps (asis, scale=K), else
  // after this much model time (10 s).
  uint64_t max_model_time_ps = 10'000'000'000'000;
  // ... and when operations are in flight but none has completed for this long (a livelock: RNR
  // NAKs retried for ever, say).
  // 0: 20 ms, or three ACK timeouts if longer (a lossy network recovers by them).
  uint64_t stall_ps = 0;
  // Called now and then with (model ps, packets, operations done, operations in all) on long runs.
  std::function<void(uint64_t, uint64_t, size_t, size_t)> progress;
};

struct OpResult {
  size_t qp = 0, op = 0;
  MessageKind kind = MessageKind::kSend;
  uint64_t bytes = 0;
  // Model time from the workload's start (after the ideal-FCT measurements); done_ps 0: it never
  // completed, first_packet_ps 0: no packet of it left (or it was not seen).
  uint64_t post_ps = 0, first_packet_ps = 0, done_ps = 0;
  // The same as the device stamps them (hcaemu --trace's doorbell and cqe_write): 0 when not seen
  // (an unsignalled operation has no CQE).
  uint64_t device_post_ps = 0, device_done_ps = 0;
  uint64_t ideal_ps = 0;              // its FCT alone on the empty network (0: not measured)
  uint64_t captured_fct_ps = 0;       // the FCT of the captured run, from its latency trace (0: none)
  CapturedAnomalies captured_anomalies;  // what the capture showed of it besides its packets
  uint8_t status = 0;                 // 0 success, else the completion's syndrome
};

// One QP's congestion control over the run (DCQCN).
struct QpCongestion {
  uint64_t cnps = 0;  // CNPs that reached it and cut its rate
  struct Bin {
    double rate_gbps = 0;  // its rate at the end of the bin
    uint64_t cnps = 0;
  };
  std::map<uint64_t, Bin> timeline;  // per bin with a change
};

// DCQCN's counters summed over the hosts (mlx5 hw_counters names).
struct CongestionTotals {
  uint64_t np_ecn_marked_roce_packets = 0, np_cnp_sent = 0, rp_cnp_handled = 0, rp_cnp_ignored = 0;
};

struct ReplayResult {
  std::vector<OpResult> ops;             // QP by QP, operation by operation (the data's: no connection set-up)
  size_t connection_setup_ops = 0, connection_setup_incomplete = 0;  // the capture's CM MADs, replayed
  std::vector<fabric::LinkStats> links;  // each direction of each link
  fabric::NetworkTotals network;
  std::vector<QpCongestion> congestion;  // per workload QP
  CongestionTotals cc;
  std::string topology;                  // described
  uint64_t packets = 0, wire_bytes = 0, end_ps = 0;  // frames the hosts sent
  size_t incomplete = 0;      // operations that never completed
  bool stalled = false;       // the run stopped: nothing completed for the stall limit
  uint64_t stall_limit_ps = 0;  // ... which was this
};

// The largest operation the headless hosts take (their buffers are this big).
inline constexpr uint64_t kMaxReplayMessage = uint64_t(4) << 20;

// How long nothing may complete before a run is called stalled.
uint64_t stall_limit(const ReplayOptions& options);

// Runs the SystemC kernel: once per process. Null with `error` for what it cannot replay.
std::optional<ReplayResult> replay(const Workload& workload, const ReplayOptions& options, std::string* error);

}  // namespace hcaemu::replay
