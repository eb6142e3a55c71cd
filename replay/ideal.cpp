#include "replay/ideal.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"  // aggregates name only what they set

namespace hcaemu::replay {

namespace {
ProbeKind kind_of(const WorkloadQp& qp, const WorkloadOp& op) {
  return {qp.host, qp.peer, qp.service, qp.mtu, op.kind, op.inline_data};
}
}  // namespace

IdealProbes plan_probes(const Workload& w, size_t max_sizes) {
  std::map<ProbeKind, std::set<uint64_t>> seen;
  for (const WorkloadQp& qp : w.qps)
    for (const WorkloadOp& op : qp.ops) seen[kind_of(qp, op)].insert(op.bytes);
  IdealProbes out;
  out.workload.hosts = w.hosts;
  // One QP per host pair, service and MTU carries all its kinds' probes (hosts' memory is finite),
  // each probe after the one before it, across QPs too: one at a time on the empty network.
  std::map<std::tuple<size_t, size_t, Service, uint32_t>, size_t> qp_of;
  std::optional<OpRef> previous;
  for (auto& [kind, sizes] : seen) {
    std::vector<uint64_t> chosen(sizes.begin(), sizes.end());
    if (chosen.size() > max_sizes) {
      const uint64_t low = chosen.front(), high = chosen.back();
      chosen = {low};
      for (uint64_t p = 1; p < high; p <<= 1)
        if (p > low) chosen.push_back(p);
      chosen.push_back(high);
    }
    out.sizes[kind] = chosen;
    const auto key = std::make_tuple(kind.host, kind.peer, kind.service, kind.mtu);
    auto [it, added] = qp_of.emplace(key, out.workload.qps.size());
    if (added) out.workload.qps.push_back({.host = kind.host, .peer = kind.peer, .service = kind.service, .mtu = kind.mtu});
    WorkloadQp& qp = out.workload.qps[it->second];
    for (uint64_t bytes : chosen) {
      WorkloadOp op{.kind = kind.kind, .bytes = bytes, .inline_data = kind.inline_data};
      if (previous) op.after.push_back(*previous);
      previous = OpRef{it->second, qp.ops.size()};
      qp.ops.push_back(op);
    }
  }
  // Probe i is the i-th operation QP by QP (the order results come in).
  for (const WorkloadQp& qp : out.workload.qps)
    for (const WorkloadOp& op : qp.ops) out.probes.emplace_back(kind_of(qp, op), op.bytes);
  for (size_t i = 0; i < out.probes.size(); ++i) out.index.emplace(out.probes[i], i);
  return out;
}

uint64_t ideal_fct(const IdealProbes& probes, const std::vector<uint64_t>& probe_fct, const WorkloadQp& qp,
                   const WorkloadOp& op) {
  const ProbeKind kind = kind_of(qp, op);
  const auto sizes = probes.sizes.find(kind);
  if (sizes == probes.sizes.end() || sizes->second.empty()) return 0;
  const auto fct_of = [&](uint64_t bytes) -> uint64_t {
    const auto it = probes.index.find({kind, bytes});
    return it != probes.index.end() && it->second < probe_fct.size() ? probe_fct[it->second] : 0;
  };
  const std::vector<uint64_t>& s = sizes->second;
  const auto hi = std::lower_bound(s.begin(), s.end(), op.bytes);
  if (hi != s.end() && *hi == op.bytes) return fct_of(op.bytes);
  if (hi == s.begin() || hi == s.end()) return fct_of(hi == s.end() ? s.back() : s.front());
  const uint64_t b0 = *(hi - 1), b1 = *hi, f0 = fct_of(b0), f1 = fct_of(b1);
  if (f0 == 0 || f1 == 0) return 0;
  return uint64_t(double(f0) + (double(f1) - double(f0)) * double(op.bytes - b0) / double(b1 - b0));
}

}  // namespace hcaemu::replay
