#pragma once
// The ideal FCT of an operation: its completion time alone on the empty network, measured by the
// model itself rather than estimated. Before the workload, the replay runs one probe per kind of
// operation the workload holds (same hosts, service, path MTU, opcode, inline or not, and size),
// one after another; an operation's ideal FCT is its probe's, interpolated linearly between the
// measured sizes when a kind comes in more sizes than are worth probing one by one.
#include <compare>
#include <cstdint>
#include <map>
#include <vector>

#include "replay/workload.h"

namespace hcaemu::replay {

struct ProbeKind {
  size_t host = 0, peer = 0;
  Service service = Service::kRc;
  uint32_t mtu = 0;
  MessageKind kind = MessageKind::kSend;
  bool inline_data = false;
  auto operator<=>(const ProbeKind&) const = default;
};

struct IdealProbes {
  // The workload's hosts; one QP per host pair, service and MTU with its probes, each probe after
  // the one before it.
  Workload workload;
  std::map<ProbeKind, std::vector<uint64_t>> sizes;  // per kind: the sizes probed, ascending
  std::vector<std::pair<ProbeKind, uint64_t>> probes;  // probe i: its kind and size, QP by QP, op by op
  std::map<std::pair<ProbeKind, uint64_t>, size_t> index;  // (kind, size) -> i
};

// Exact sizes up to `max_sizes` per kind; beyond, the smallest, the largest and the powers of two between.
IdealProbes plan_probes(const Workload& workload, size_t max_sizes = 64);
// From probe_fct (picoseconds, probe by probe; 0 for a probe that did not complete): 0 when unknown.
uint64_t ideal_fct(const IdealProbes& probes, const std::vector<uint64_t>& probe_fct, const WorkloadQp& qp,
                   const WorkloadOp& op);

}  // namespace hcaemu::replay
