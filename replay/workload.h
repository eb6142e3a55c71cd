#pragma once
// The one workload format every replay input is lowered to (docs/replay.md): hosts, queue pairs
// with their service and path MTU, and per QP an ordered list of operations, each with its opcode,
// length, flags, immediate, when it is posted (an absolute time, or a think time after the previous
// operation of its QP completes) and the completions it waits for. Users write it by hand or
// generate it; hcareplay lowers captures to it. Parsing is strict: an unknown key, a wrong type, a
// reference to nothing or a cycle in the dependencies is an error naming its place in the file.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "replay/reconstruct.h"

namespace hcaemu::replay {

inline constexpr const char* kWorkloadFormat = "hcareplay-workload/1";

struct OpRef {
  size_t qp = 0, op = 0;  // "QP:OP" in the file
  bool operator==(const OpRef&) const = default;
};

struct WorkloadOp {
  MessageKind kind = MessageKind::kSend;
  uint64_t bytes = 0;
  // When it is posted: at post_ns (timing "asis", a captured time), or think_ns after the QP's
  // previous operation completed (timing "think"); an operation may give both, the run's timing
  // mode picks (docs/replay.md).
  std::optional<uint64_t> post_ns;
  std::optional<uint64_t> think_ns;
  bool signalled = true;
  bool inline_data = false;
  std::optional<uint32_t> immediate;
  std::vector<OpRef> after;         // completions it waits for
  // The FCT the captured run saw (doorbell to CQE, from its latency trace): the replay reports its
  // own against it.
  std::optional<uint64_t> captured_fct_ns;
};

struct WorkloadQp {
  size_t host = 0, peer = 0;
  Service service = Service::kRc;
  uint32_t qpn = 0, peer_qpn = 0;  // as captured (0: not known); a replay may renumber
  uint32_t mtu = 1024;
  std::vector<WorkloadOp> ops;
};

struct WorkloadHost {
  std::string name;
  Gid gid{};
  Mac mac{};
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
