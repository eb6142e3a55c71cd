#include "replay/trace_timing.h"

#include <fstream>
#include <set>

#include "traces/trace_summary.h"

namespace hcaemu::replay {

std::optional<TraceTiming> read_trace_timing(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    if (error) *error = path + ": cannot read";
    return std::nullopt;
  }
  // Per id, the functions that have it and the times of the first one.
  std::map<uint64_t, std::pair<std::set<uint16_t>, TraceTiming::Times>> seen;
  const auto sink = [&](const traces::TraceEvent& e) {
    if (e.message >> 63) return;  // a datagram's id is a counter: nothing in a capture names it
    if (e.stage != traces::Stage::kDoorbell && e.stage != traces::Stage::kCqeWrite &&
        e.stage != traces::Stage::kPayloadDma)
      return;
    auto& [functions, times] = seen[e.message];
    functions.insert(e.function);
    if (functions.size() > 1) return;
    if (e.stage == traces::Stage::kDoorbell && times.doorbell_ps == 0) times.doorbell_ps = std::max<uint64_t>(e.time_ps, 1);
    if (e.stage == traces::Stage::kCqeWrite) times.cqe_ps = e.time_ps;
    if (e.stage == traces::Stage::kPayloadDma) times.payload_dma = true;
  };
  if (!traces::read_csv_trace(in, path, sink, error)) return std::nullopt;
  TraceTiming out;
  for (const auto& [id, entry] : seen) {
    const auto& [functions, times] = entry;
    if (functions.size() > 1) {
      ++out.ambiguous;
      continue;
    }
    if (times.doorbell_ps == 0 || (times.cqe_ps != 0 && times.cqe_ps < times.doorbell_ps)) continue;
    out.by_id[id] = times;
    ++out.messages;
  }
  return out;
}

size_t apply_trace_timing(Reconstruction& capture, const TraceTiming& timing) {
  size_t applied = 0;
  for (Message& m : capture.messages) {
    const uint32_t qpn = capture.queue_pairs[m.qp].qpn;
    if (qpn == 0 || !m.complete) continue;
    const auto it = timing.by_id.find((uint64_t(qpn) << 24) | m.last_psn);
    if (it == timing.by_id.end()) continue;
    m.doorbell_ps = it->second.doorbell_ps;
    m.cqe_ps = it->second.cqe_ps;
    m.payload_dma = it->second.payload_dma;
    ++applied;
  }
  return applied;
}

}  // namespace hcaemu::replay
