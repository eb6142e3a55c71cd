#include "replay/trace_timing.h"

#include <algorithm>

#include <fstream>
#include <map>
#include <set>

#include "traces/trace_summary.h"

namespace hcaemu::replay {

std::optional<TraceTiming> read_trace_timing(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    if (error) *error = path + ": cannot read";
    return std::nullopt;
  }
  std::map<std::pair<uint16_t, uint64_t>, TraceTiming::Times> seen;
  const auto sink = [&](const traces::TraceEvent& e) {
    if (e.message >> 63) return;  // a datagram's id is a counter: nothing in a capture names it
    if (e.stage != traces::Stage::kDoorbell && e.stage != traces::Stage::kCqeWrite &&
        e.stage != traces::Stage::kPayloadDma)
      return;
    TraceTiming::Times& times = seen[{e.function, e.message}];
    if (e.stage == traces::Stage::kDoorbell && times.doorbell_ps == 0) times.doorbell_ps = std::max<uint64_t>(e.time_ps, 1);
    if (e.stage == traces::Stage::kCqeWrite) times.cqe_ps = e.time_ps;
    if (e.stage == traces::Stage::kPayloadDma) times.payload_dma = true;
  };
  if (!traces::read_csv_trace(in, path, sink, error)) return std::nullopt;
  TraceTiming out;
  std::map<uint64_t, std::set<uint16_t>> functions;
  for (const auto& [key, times] : seen) {
    if (times.doorbell_ps == 0 || (times.cqe_ps != 0 && times.cqe_ps < times.doorbell_ps)) continue;
    out.by_function_id[key] = times;
    functions[key.second].insert(key.first);
    ++out.messages;
  }
  for (const auto& [id, of] : functions) {
    if (of.size() == 1) out.sole_function[id] = *of.begin();
    else ++out.ambiguous;
  }
  return out;
}

size_t apply_trace_timing(Reconstruction& capture, const TraceTiming& timing) {
  size_t applied = 0;
  for (Message& m : capture.messages) {
    const QueuePair& qp = capture.queue_pairs[m.qp];
    if (qp.qpn == 0 || !m.complete) continue;
    const uint64_t id = (uint64_t(qp.device_qpn != 0 ? qp.device_qpn : qp.qpn) << 24) | m.last_psn;
    std::optional<uint16_t> function = qp.function;
    if (!function)
      if (const auto sole = timing.sole_function.find(id); sole != timing.sole_function.end()) function = sole->second;
    if (!function) continue;
    const auto it = timing.by_function_id.find({*function, id});
    if (it == timing.by_function_id.end()) continue;
    m.doorbell_ps = it->second.doorbell_ps;
    m.cqe_ps = it->second.cqe_ps;
    m.payload_dma = it->second.payload_dma;
    ++applied;
  }
  return applied;
}

size_t apply_qp_table(Reconstruction& capture, const std::vector<traces::QpRecord>& table) {
  std::vector<uint64_t> first_ps(capture.queue_pairs.size(), UINT64_MAX);
  for (const Message& m : capture.messages) first_ps[m.qp] = std::min(first_ps[m.qp], m.first_ns * 1000);
  // The record a QP end had when its traffic began (QPNs are used again by later QPs). A datagram
  // QP names its source address per WQE: its function's MAC finds it. Records by QPN, once: a
  // capture's QP ends each look at their own number's few.
  std::multimap<uint32_t, const traces::QpRecord*> by_qpn;
  for (const traces::QpRecord& r : table) by_qpn.emplace(r.qpn, &r);
  // Of the records that match, the latest one not after `before_ps`.
  const auto latest = [](const traces::QpRecord* found, const traces::QpRecord& r, uint64_t before_ps) {
    return r.time_ps <= before_ps && (!found || r.time_ps >= found->time_ps) ? &r : found;
  };
  const auto find = [&](const Host& host, uint32_t qpn, uint64_t before_ps) -> const traces::QpRecord* {
    const traces::QpRecord* found = nullptr;
    for (auto [it, end] = by_qpn.equal_range(qpn); it != end; ++it) {
      const traces::QpRecord& r = *it->second;
      if (r.address == host.gid || (r.service == "ud" && r.mac == host.mac)) found = latest(found, r, before_ps);
    }
    return found;
  };
  // A host's GSI QP (QP1 on the wire, its own number in the function): by its function's MAC, as a
  // host's GIDs (link-local, IPv4-mapped) share it.
  const auto find_gsi = [&](const Host& host, uint64_t before_ps) -> const traces::QpRecord* {
    const traces::QpRecord* found = nullptr;
    for (const traces::QpRecord& r : table)
      if (r.service == "qp1" && r.mac == host.mac) found = latest(found, r, before_ps);
    return found;
  };
  const auto cq = [](uint32_t number, uint32_t entries) -> std::optional<QueuePair::Cq> {
    if (entries == 0) return std::nullopt;
    return QueuePair::Cq{number, entries};
  };
  size_t found = 0;
  for (size_t q = 0; q < capture.queue_pairs.size(); ++q) {
    QueuePair& qp = capture.queue_pairs[q];
    const Host &host = capture.hosts[qp.host], &peer_host = capture.hosts[qp.peer_host];
    const traces::QpRecord* peer = qp.connection_setup ? find_gsi(peer_host, first_ps[q])
                                   : qp.peer_qpn != 0  ? find(peer_host, qp.peer_qpn, first_ps[q])
                                                       : nullptr;
    if (peer != nullptr) {
      qp.peer_send_cq = cq(peer->send_cq, peer->send_cq_entries);
      // An XRC target's receive completions go to the CQ of the XRC SRQ each message names, not
      // to the QP's own (mlx5_ib gives it a 2-entry placeholder, whose "may be full" read would
      // cost every replayed message 500 ns the live run never paid): the host's default CQ.
      if (peer->service != "xrc") qp.peer_recv_cq = cq(peer->recv_cq, peer->recv_cq_entries);
      qp.peer_rq_stride = peer->rq_stride;
      if (qp.qpn == 0) qp.qpn = peer->remote_qpn;  // a UC requester: only its responder names it
      ++found;
    }
    const traces::QpRecord* own = qp.connection_setup ? find_gsi(host, first_ps[q])
                                  : qp.qpn != 0       ? find(host, qp.qpn, first_ps[q])
                                                      : nullptr;
    if (own != nullptr) {
      qp.send_cq = cq(own->send_cq, own->send_cq_entries);
      qp.recv_cq = cq(own->recv_cq, own->recv_cq_entries);
      qp.sq_wqebbs = own->sq_wqebbs;
      qp.max_rd_atomic = own->max_rd_atomic;
      qp.function = own->function;
      if (qp.connection_setup) qp.device_qpn = own->qpn;  // QP1 on the wire
      ++found;
    }
  }
  return found;
}

}  // namespace hcaemu::replay
