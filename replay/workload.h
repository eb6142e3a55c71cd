#pragma once
// The one workload format every replay input is lowered to (docs/replay.md): hosts, queue pairs
// with their service and path MTU, and per QP an ordered list of operations, each with its opcode,
// length, flags, immediate, when it is posted (an absolute time, or a think time after the previous
// operation of its QP completes) and the completions it waits for. Users write it by hand or
// generate it; hcareplay lowers captures to it. Parsing is strict: an unknown key, a wrong type, a
// reference to nothing or a cycle in the dependencies is an error naming its place in the file.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "replay/reconstruct.h"

namespace hcaemu::replay {

inline constexpr const char* kWorkloadFormat = "hcareplay-workload/1";
// Bounds on the CQs a host declares (64 bytes of simulated host memory per entry).
inline constexpr uint32_t kMaxCqEntries = 1u << 16;
inline constexpr uint32_t kMaxHostCqEntries = 1u << 20;
inline constexpr uint32_t kMaxSqWqebbs = 1u << 13;  // 512 KiB of simulated host memory
inline constexpr uint32_t kMinRqStride = 16, kMaxRqStride = 2048;  // the qpc's log_rq_stride, 0 to 7

struct OpRef {
  size_t qp = 0, op = 0;  // "QP:OP" in the file
  bool operator==(const OpRef&) const = default;
};

// What the capture showed of an operation besides its packets: they explain a replayed FCT that
// differs from the captured one (the replay does not repeat them).
struct CapturedAnomalies {
  uint32_t resent_packets = 0;  // request packets sent again
  uint32_t rnr_naks = 0;        // RNR NAKs that turned it away (no receive posted, an ODP fault)
  uint32_t naks = 0;            // other NAKs naming it (a PSN sequence error, an access error)
  bool any() const { return resent_packets != 0 || rnr_naks != 0 || naks != 0; }
  bool operator==(const CapturedAnomalies&) const = default;
};
// Its counts by the names the workload JSON and messages.csv give them, in that order.
struct CapturedAnomalyCount {
  const char* name;
  uint32_t CapturedAnomalies::*count;
};
inline constexpr std::array<CapturedAnomalyCount, 3> kCapturedAnomalyCounts{{
    {"resent_packets", &CapturedAnomalies::resent_packets},
    {"rnr_naks", &CapturedAnomalies::rnr_naks},
    {"naks", &CapturedAnomalies::naks},
}};

struct WorkloadOp {
  MessageKind kind = MessageKind::kSend;
  uint64_t bytes = 0;
  // When it is posted: at post_ps (timing "asis", a captured time), or think_ps after the QP's
  // previous operation completed (timing "think"); an operation may give both, the run's timing
  // mode picks (docs/replay.md). In picoseconds, as the model's time: the JSON's post_ns and
  // think_ns carry them in nanoseconds with up to three decimals (a doorbell and a frame a few
  // picoseconds apart keep their order).
  std::optional<uint64_t> post_ps;
  std::optional<uint64_t> think_ps;
  bool signalled = true;
  bool inline_data = false;
  std::optional<uint32_t> immediate;
  std::vector<OpRef> after;         // completions it waits for
  // The FCT the captured run saw (doorbell to CQE, from its latency trace): the replay reports its
  // own against it.
  std::optional<uint64_t> captured_fct_ns;
  CapturedAnomalies captured_anomalies;
};

// The completion queues of a QP's two ends: ids of CQs their hosts declare (shared by every QP
// naming the same id, as the captured software shared them); none: a CQ of the QP's own.
struct QpCompletionQueues {
  std::optional<uint32_t> send, recv;            // the requester's end, on `host`
  std::optional<uint32_t> peer_send, peer_recv;  // the responder's end, on `peer`
  bool operator==(const QpCompletionQueues&) const = default;
};

struct WorkloadQp {
  size_t host = 0, peer = 0;
  Service service = Service::kRc;
  uint32_t qpn = 0, peer_qpn = 0;  // as captured (0: not known); a replay may renumber
  uint32_t mtu = 1024;
  // The send queue's size in 64-byte blocks, as captured: how many operations may be in flight
  // (none: the replay's --max-outstanding).
  std::optional<uint32_t> sq_wqebbs;
  // The requester's initiator depth (max_rd_atomic, a power of two up to 128), as captured: how
  // many of its READs and atomics may wait for responses at once (none: 16, mlx5's most).
  std::optional<uint32_t> max_rd_atomic;
  // The responder's receive WQE in bytes, as captured: the device reads it whole for every
  // message that takes a receive (none: the replay's 128).
  std::optional<uint32_t> peer_rq_stride;
  QpCompletionQueues cqs;
  // A capture's QP1 datagrams (CM MADs): replayed for the device work they take, left out of the
  // messages and FCT figures (they set connections up; they are not the workload's data).
  bool connection_setup = false;
  std::vector<WorkloadOp> ops;
};

// A CQ a host declares: its size matters to the device (it reads the consumer index from host
// memory when the ring may be full, a PCIe round trip on the completion path).
struct WorkloadCq {
  uint32_t id = 0;
  uint32_t entries = 0;  // a power of two
  bool operator==(const WorkloadCq&) const = default;
};

struct WorkloadHost {
  std::string name;
  Gid gid{};
  Mac mac{};
  std::vector<WorkloadCq> cqs;
  const WorkloadCq* cq(uint32_t id) const;
};

struct Workload {
  std::vector<WorkloadHost> hosts;
  std::vector<WorkloadQp> qps;
};

// Null with `error` naming the place ("qps[1].ops[3].bites: unknown key") when the text is not a
// valid workload.
std::optional<Workload> parse_workload(std::string_view text, std::string* error);
// The workload as the file format (keys in a fixed order: the same workload, the same bytes).
std::string workload_json(const Workload& workload);
// A reconstructed capture as a workload: each message an operation posted at its first packet's
// time, with its think time after the previous completion of its QP where both are known.
Workload lower(const Reconstruction& capture);

std::string gid_text(const Gid& gid);  // 10.0.0.1 for an IPv4-mapped GID, else the IPv6 text
std::string mac_text(const Mac& mac);

}  // namespace hcaemu::replay
