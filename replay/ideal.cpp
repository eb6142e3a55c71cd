#include "replay/ideal.h"

#include <algorithm>
#include <set>

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
    for (uint64_t bytes : chosen) {
      WorkloadQp qp{.host = kind.host, .peer = kind.peer, .service = kind.service, .mtu = kind.mtu};
      WorkloadOp op{.kind = kind.kind, .bytes = bytes, .inline_data = kind.inline_data};
      if (!out.probes.empty()) op.after.push_back({out.probes.size() - 1, 0});
      qp.ops.push_back(op);
      out.workload.qps.push_back(qp);
      out.probes.emplace_back(kind, bytes);
    }
  }
  return out;
}

uint64_t ideal_fct(const IdealProbes& probes, const std::vector<uint64_t>& probe_fct, const WorkloadQp& qp,
                   const WorkloadOp& op) {
  const ProbeKind kind = kind_of(qp, op);
  const auto sizes = probes.sizes.find(kind);
  if (sizes == probes.sizes.end() || sizes->second.empty()) return 0;
  const auto fct_of = [&](uint64_t bytes) -> uint64_t {
    const auto it = std::find(probes.probes.begin(), probes.probes.end(), std::make_pair(kind, bytes));
    const size_t i = size_t(it - probes.probes.begin());
    return i < probe_fct.size() ? probe_fct[i] : 0;
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
