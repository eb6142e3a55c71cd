#pragma once
// Runs a workload (replay/workload.h) through the model of the HCA in model time: one headless
// host per workload host (hostsim: simulated memory, the firmware, the RDMA engine behind a PCIe
// link model), each running its device work items on a SystemC thread of its own as HcaFunction
// runs a guest's (pcie/model_time.h), all on one output-queued switch (lossless, the preset's
// link rate and propagation delay). A driver thread posts each operation when its timing mode
// and its dependencies allow, and notes when its completion appears. Deterministic: the same
// workload and options give the same results and the same capture, byte for byte.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

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
  uint32_t max_outstanding = 16;     // operations in flight per QP (its send queue's room)
  std::string pcap_path;             // the replayed wire; empty: none
  std::string trace_prefix;          // the per-stage latency trace (PREFIX.json, PREFIX.csv); empty: none
  bool switched = true;              // the hosts on one switch (else wired straight to each other)
  uint64_t bin_ps = 10'000'000;      // the timelines' bin (10 us)
  uint64_t max_model_time_ps = 10'000'000'000'000;  // the run stops here (10 s of model time)
  // ... and when operations are in flight but none has completed for this long (a livelock: RNR
  // NAKs retried for ever, say).
  uint64_t stall_ps = 20'000'000'000;  // 20 ms
  // Called now and then with (model ps, packets, operations done, operations in all) on long runs.
  std::function<void(uint64_t, uint64_t, size_t, size_t)> progress;
};

struct OpResult {
  size_t qp = 0, op = 0;
  MessageKind kind = MessageKind::kSend;
  uint64_t bytes = 0;
  uint64_t post_ps = 0, done_ps = 0;  // model time; done_ps 0: it never completed
  uint8_t status = 0;                 // 0 success, else the completion's syndrome
};

// One switch port, toward one host.
struct PortResult {
  uint64_t frames = 0, bytes = 0;
  uint64_t busy_ps = 0;                    // time spent sending
  uint64_t max_queue_bytes = 0, max_queue_frames = 0;  // the most waiting (the frame being sent included)
  // Per bin of ReplayOptions::bin_ps (key: bin number) with any traffic: bytes sent (a frame
  // counts in the bin its last bit leaves) and the most bytes waiting.
  struct Bin {
    uint64_t bytes = 0, max_queue_bytes = 0;
  };
  std::map<uint64_t, Bin> timeline;
};

struct ReplayResult {
  std::vector<OpResult> ops;  // QP by QP, operation by operation
  std::vector<PortResult> ports;  // the switch port to each host
  uint64_t packets = 0, wire_bytes = 0, end_ps = 0;
  size_t incomplete = 0;      // operations that never completed
  bool stalled = false;       // the run stopped: nothing completed for ReplayOptions::stall_ps
};

// The largest operation the headless hosts take (their buffers are this big).
inline constexpr uint64_t kMaxReplayMessage = uint64_t(4) << 20;

// Runs the SystemC kernel: once per process. Null with `error` for what it cannot replay.
std::optional<ReplayResult> replay(const Workload& workload, const ReplayOptions& options, std::string* error);

}  // namespace hcaemu::replay
