#include "fabric/network.h"

#include <algorithm>
#include <cmath>

#include "fabric/frame_fields.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"  // aggregates name only what they set

namespace hcaemu::fabric {

namespace {
constexpr uint64_t kWireOverheadBytes = 24;  // preamble, SFD, FCS, inter-frame gap
constexpr uint32_t kUnreached = UINT32_MAX;

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

Network::Network(const Topology& topology, std::vector<Mac> host_macs, uint64_t seed, uint64_t bin_ps, Hooks hooks)
    : topology_(topology), host_macs_(std::move(host_macs)), bin_ps_(std::max<uint64_t>(bin_ps, 1)),
      hooks_(std::move(hooks)), rng_(seed), tiebreak_(mix(seed ^ 0x7469656272656b)) {
  build(topology_);
}

void Network::build(const Topology& t) {
  nodes_.resize(t.hosts + t.switch_names.size());
  for (size_t s = 0; s < t.switch_names.size(); ++s) nodes_[t.hosts + s].is_host = false;
  const auto id = [&](const Endpoint& e) { return e.is_host ? e.index : t.hosts + e.index; };
  const auto name = [&](uint32_t n) { return n < t.hosts ? "host" + std::to_string(n) : t.switch_names[n - t.hosts]; };
  for (const Link& link : t.links) {
    const uint32_t a = id(link.a), b = id(link.b);
    const uint32_t ab = uint32_t(tx_.size()), ba = ab + 1;
    const uint64_t propagation = uint64_t(std::llround(link.propagation_ns * 1000.0));
    tx_.push_back({.node = a, .peer = b, .peer_port = uint32_t(nodes_[b].ports.size()), .gbps = link.gbps,
                   .propagation_ps = propagation});
    tx_.push_back({.node = b, .peer = a, .peer_port = uint32_t(nodes_[a].ports.size()), .gbps = link.gbps,
                   .propagation_ps = propagation});
    nodes_[a].ports.push_back(ab);
    nodes_[b].ports.push_back(ba);
    stats_.push_back({.name = name(a) + "->" + name(b)});
    stats_.push_back({.name = name(b) + "->" + name(a)});
  }
  last_bin_.assign(stats_.size(), {0, nullptr});
  // A host's frame first shows where its first link ends: at a switch, one more link on.
  handed_in_grace_ = UINT64_MAX;
  for (const Transmitter& tx : tx_) {
    if (!nodes_[tx.node].is_host) continue;
    handed_in_grace_ = nodes_[tx.peer].is_host ? 0 : std::min(handed_in_grace_, tx.propagation_ps);
    if (handed_in_grace_ == 0) break;
  }
  if (handed_in_grace_ == UINT64_MAX) handed_in_grace_ = 0;
  for (Node& n : nodes_) {
    n.ingress_bytes.assign(n.ports.size(), {});
    n.pausing.assign(n.ports.size(), {});
    n.refresh_due.assign(n.ports.size(), {});
    n.routes.assign(t.hosts, {});
  }
  // Shortest paths toward each host; hosts other than the destination carry nothing on.
  for (uint32_t dst = 0; dst < t.hosts; ++dst) {
    std::vector<uint32_t> dist(nodes_.size(), kUnreached);
    std::deque<uint32_t> todo{dst};
    dist[dst] = 0;
    while (!todo.empty()) {
      const uint32_t u = todo.front();
      todo.pop_front();
      if (nodes_[u].is_host && u != dst) continue;
      for (uint32_t p : nodes_[u].ports)
        if (dist[tx_[p].peer] == kUnreached) dist[tx_[p].peer] = dist[u] + 1, todo.push_back(tx_[p].peer);
    }
    for (uint32_t n = 0; n < nodes_.size(); ++n)
      if (n != dst && dist[n] != kUnreached)
        for (uint32_t p : nodes_[n].ports)
          if (dist[tx_[p].peer] + 1 == dist[n]) nodes_[n].routes[dst].push_back(p);
  }
}

uint64_t Network::serialise_ps(const Transmitter& t, uint64_t bytes) const {
  return uint64_t(std::llround(double(bytes + kWireOverheadBytes) * 8000.0 / t.gbps));
}

double Network::draw() {
  rng_ = mix(rng_);
  return double(rng_ >> 11) * 0x1.0p-53;
}

void Network::schedule(uint64_t at, EventKind kind, uint32_t a, uint32_t b, uint32_t frame) {
  // Frames that reach a node at the same picosecond (from different links: one link serialises its
  // own) take their turns in a seeded random order, behind the node's other events of that time. In
  // order of the sending hosts' numbers, synchronised senders would always find the same queue
  // ahead of them: host 0's packets the shortest, the last host's the longest, so the last is
  // ECN-marked more often, every time. A frame's turn is drawn from the seed, its time and the
  // link it comes in by, so it does not depend on the order the hosts handed their frames in.
  uint64_t order = next_order_++ & 0xffffffffu;
  if (kind == EventKind::kArrive) {
    const uint64_t turn = mix(tiebreak_ ^ mix(at ^ (uint64_t(a) << 40) ^ (uint64_t(b) << 20)));
    order |= (uint64_t(1) << 63) | ((turn >> 33) << 32);
    // Nothing can change a frame's way to a host once it is on the last link: it goes to the host
    // now, stamped with its arrival, and costs the network no event of its own.
    if (nodes_[a].is_host) return arrive(a, b, frame, at);
  }
  events_.push_back({at, order, kind, a, b, frame});
  std::push_heap(events_.begin(), events_.end(), std::greater<>());
}

uint32_t Network::store(std::vector<uint8_t>&& frame) {
  if (!free_slots_.empty()) {
    const uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    frames_[slot] = std::move(frame);
    return slot;
  }
  frames_.push_back(std::move(frame));
  return uint32_t(frames_.size() - 1);
}

std::optional<uint64_t> Network::next_event_ps() const {
  const std::optional<uint64_t> own = next_own_event_ps(), handed = next_handed_in_ps();
  if (!own || !handed) return own ? own : handed;
  return std::min(*own, *handed);
}

std::optional<uint64_t> Network::next_own_event_ps() const {
  if (events_.empty()) return std::nullopt;
  return events_.front().at;
}

std::optional<uint64_t> Network::next_handed_in_ps() const {
  if (handed_in_.empty()) return std::nullopt;
  return handed_in_.front().at;
}

uint64_t Network::host_blocked_until(uint32_t host, uint64_t now_ps) const {
  uint64_t until = 0;
  for (uint32_t p : nodes_[host].ports) {
    const Transmitter& t = tx_[p];
    for (uint64_t paused : t.paused_until)
      if (paused > now_ps) until = std::max(until, paused);
    if (t.queued_frames != 0) until = std::max(until, now_ps + serialise_ps(t, t.queued_bytes));
  }
  return until;
}

LinkStats::Bin& Network::bin(uint32_t t) {
  const uint64_t key = (now_ - std::min(now_, origin_)) / bin_ps_;
  auto& [last_key, last] = last_bin_[t];
  if (last == nullptr || key != last_key) {
    last = &stats_[t].timeline[key];
    last_key = key;
  }
  return *last;
}

void Network::restart_statistics(uint64_t origin_ps) {
  origin_ = origin_ps;
  for (LinkStats& s : stats_) s = {.name = s.name};
  last_bin_.assign(stats_.size(), {0, nullptr});
  totals_ = {};
  for (Transmitter& t : tx_)
    if (t.waiting_paused) t.pause_started_ps = origin_ps;
}

void Network::note_queue(uint32_t t) {
  LinkStats& s = stats_[t];
  s.max_queue_bytes = std::max(s.max_queue_bytes, tx_[t].queued_bytes);
  s.max_queue_frames = std::max<uint64_t>(s.max_queue_frames, tx_[t].queued_frames);
  LinkStats::Bin& b = bin(t);
  b.max_queue_bytes = std::max(b.max_queue_bytes, tx_[t].queued_bytes);
}

void Network::run_until(uint64_t now_ps) {
  for (;;) {
    const bool own = !events_.empty() && events_.front().at <= now_ps;
    const bool handed = !handed_in_.empty() && handed_in_.front().at <= now_ps;
    if (!own && !handed) break;
    // A frame handed in goes after the network's own events of its time, as send() then would.
    if (handed && (!own || handed_in_.front().at < events_.front().at)) {
      std::pop_heap(handed_in_.begin(), handed_in_.end(), std::greater<>());
      const HandedIn h = handed_in_.back();
      handed_in_.pop_back();
      now_ = h.at;
      if (hooks_.taken) hooks_.taken(h.host, frames_[h.slot], h.at);
      take_from_host(h.host, h.slot);
      continue;
    }
    std::pop_heap(events_.begin(), events_.end(), std::greater<>());
    const Event e = events_.back();
    events_.pop_back();
    now_ = e.at;
    run_event(e);
  }
  now_ = std::max(now_, now_ps);
}

void Network::run_event(const Event& e) {
  switch (e.kind) {
    case EventKind::kArrive: arrive(e.a, e.b, e.frame, e.at); break;
    case EventKind::kTxDone: tx_done(e.a); break;
    case EventKind::kPause: pause_arrived(e.a, uint8_t(e.b), uint16_t(e.frame)); break;
    case EventKind::kWake: start(e.a); break;
    case EventKind::kRefresh: {
      const uint32_t in_port = e.b / 8;
      const uint8_t priority = uint8_t(e.b % 8);
      Node& n = nodes_[e.a];
      if (n.pausing[in_port][priority] && n.refresh_due[in_port][priority] == e.at) send_pause(e.a, in_port, priority, true);
      break;
    }
  }
}

void Network::send(uint32_t host, std::vector<uint8_t>&& frame, uint64_t at_ps) {
  run_until(at_ps);
  take_from_host(host, store(std::move(frame)));
}

void Network::send_at(uint32_t host, std::vector<uint8_t>&& frame, uint64_t at_ps) {
  const uint32_t slot = store(std::move(frame));
  // Frames of one time go in host by host (the hosts' threads run in no order the model defines),
  // one host's in the order it sent them.
  handed_in_.push_back({std::max(at_ps, now_), (uint64_t(host) << 40) | (next_handed_in_++ & 0xffffffffffu), host, slot});
  std::push_heap(handed_in_.begin(), handed_in_.end(), std::greater<>());
}

void Network::take_from_host(uint32_t host, uint32_t slot) {
  ++totals_.frames_in;
  const std::optional<uint32_t> t = route(host, slot);
  if (!t) {
    ++totals_.unroutable;
    free_slots_.push_back(slot);
    return;
  }
  Transmitter& tx = tx_[*t];
  const uint8_t priority = read_fields(frames_[slot]).priority;
  if (!tx.busy && tx.queued_frames == 0 && tx.paused_until[priority] <= now_) {
    // The NIC serialised it at the port rate already: it is on the link now.
    const uint64_t bytes = frames_[slot].size();
    LinkStats& s = stats_[*t];
    s.frames += 1;
    s.bytes += bytes;
    s.busy_ps += serialise_ps(tx, bytes);
    bin(*t).bytes += bytes;
    schedule(now_ + tx.propagation_ps, EventKind::kArrive, tx.peer, tx.peer_port, slot);
    return;
  }
  enqueue(*t, slot, -1);  // paused, or behind frames a pause held back: the link's own pace
  start(*t);
}

std::optional<uint32_t> Network::route(uint32_t node, uint32_t slot) {
  const std::vector<uint8_t>& f = frames_[slot];
  if (f.size() < 14) return std::nullopt;
  uint32_t dst = 0;
  while (dst < host_macs_.size() && !std::equal(host_macs_[dst].begin(), host_macs_[dst].end(), f.begin())) ++dst;
  if (dst >= host_macs_.size() || dst >= nodes_[node].routes.size()) return std::nullopt;
  const std::vector<uint32_t>& candidates = nodes_[node].routes[dst];
  if (candidates.empty()) return std::nullopt;
  if (candidates.size() == 1 || !topology_.ecmp) return candidates.front();
  const uint64_t h = mix((uint64_t(read_fields(f).udp_source) << 32) ^ (uint64_t(node) << 16) ^ dst);
  return candidates[h % candidates.size()];
}

void Network::arrive(uint32_t node, uint32_t in_port, uint32_t slot, uint64_t at) {
  if (nodes_[node].is_host) {
    ++totals_.frames_delivered;
    if (hooks_.deliver) hooks_.deliver(node, frames_[slot], at);
    frames_[slot].clear();
    free_slots_.push_back(slot);
    return;
  }
  const std::optional<uint32_t> t = route(node, slot);
  if (!t) {
    ++totals_.unroutable;
    free_slots_.push_back(slot);
    return;
  }
  enqueue(*t, slot, int32_t(in_port));
  start(*t);
}

void Network::enqueue(uint32_t t, uint32_t slot, int32_t in_port) {
  Transmitter& tx = tx_[t];
  Node& n = nodes_[tx.node];
  std::vector<uint8_t>& f = frames_[slot];
  const uint32_t bytes = uint32_t(f.size());
  const FrameFields fields = read_fields(f);
  if (!n.is_host) {
    const SwitchConfig& c = topology_.switch_config;
    const uint64_t used = c.shared_buffer ? n.buffer_used : tx.queued_bytes;
    if (used + bytes > c.buffer_bytes) {
      ++stats_[t].drops;
      ++bin(t).drops;
      ++totals_.drops;
      free_slots_.push_back(slot);
      return;
    }
    if (c.ecn.enabled && fields.ecn_capable()) {
      const uint64_t q = tx.queued_bytes;
      const double p = q <= c.ecn.kmin_bytes   ? 0.0
                       : q >= c.ecn.kmax_bytes ? 1.0
                                               : c.ecn.pmax * double(q - c.ecn.kmin_bytes) /
                                                     double(c.ecn.kmax_bytes - c.ecn.kmin_bytes);
      if (p > 0 && draw() < p) {
        mark_congestion(f, fields);
        ++stats_[t].ecn_marks;
        ++bin(t).ecn_marks;
        ++totals_.ecn_marks;
      }
    }
    n.buffer_used += bytes;
    if (in_port >= 0) {
      uint64_t& held = n.ingress_bytes[size_t(in_port)][fields.priority];
      held += bytes;
      const PfcConfig& pfc = c.pfc;
      if (pfc.enabled && (pfc.priorities >> fields.priority & 1) && held > pfc.xoff_bytes &&
          !n.pausing[size_t(in_port)][fields.priority])
        send_pause(tx.node, uint32_t(in_port), fields.priority, true);
    }
  }
  tx.queues[fields.priority].push_back({slot, bytes, in_port, fields.priority});
  tx.queued_bytes += bytes;
  ++tx.queued_frames;
  note_queue(t);
}

void Network::start(uint32_t t) {
  Transmitter& tx = tx_[t];
  if (tx.busy || tx.queued_frames == 0) return;
  std::optional<uint64_t> earliest_resume;
  for (int p = 7; p >= 0; --p) {
    std::deque<Queued>& q = tx.queues[size_t(p)];
    if (q.empty()) continue;
    if (tx.paused_until[size_t(p)] > now_) {
      earliest_resume = std::min(earliest_resume.value_or(UINT64_MAX), tx.paused_until[size_t(p)]);
      continue;
    }
    if (tx.waiting_paused) {
      stats_[t].paused_ps += now_ - tx.pause_started_ps;
      tx.waiting_paused = false;
    }
    tx.current = q.front();
    q.pop_front();
    tx.busy = true;
    schedule(now_ + serialise_ps(tx, tx.current.bytes), EventKind::kTxDone, t, 0, 0);
    return;
  }
  if (!tx.waiting_paused) {
    tx.waiting_paused = true;
    tx.pause_started_ps = now_;
  }
  if (earliest_resume) schedule(*earliest_resume, EventKind::kWake, t, 0, 0);
}

void Network::tx_done(uint32_t t) {
  Transmitter& tx = tx_[t];
  const Queued q = tx.current;
  tx.busy = false;
  tx.queued_bytes -= q.bytes;
  --tx.queued_frames;
  LinkStats& s = stats_[t];
  s.frames += 1;
  s.bytes += q.bytes;
  s.busy_ps += serialise_ps(tx, q.bytes);
  bin(t).bytes += q.bytes;
  note_queue(t);  // a bin with only departures still shows what waits
  Node& n = nodes_[tx.node];
  if (!n.is_host) release(n, tx.node, q);
  schedule(now_ + tx.propagation_ps, EventKind::kArrive, tx.peer, tx.peer_port, q.frame);
  start(t);
}

void Network::release(Node& n, uint32_t node, const Queued& q) {
  n.buffer_used -= q.bytes;
  if (q.in_port < 0) return;
  uint64_t& held = n.ingress_bytes[size_t(q.in_port)][q.priority];
  held -= q.bytes;
  if (n.pausing[size_t(q.in_port)][q.priority] && held <= topology_.switch_config.pfc.xon_bytes)
    send_pause(node, uint32_t(q.in_port), q.priority, false);
}

void Network::send_pause(uint32_t node, uint32_t in_port, uint8_t priority, bool pause) {
  Node& n = nodes_[node];
  n.pausing[in_port][priority] = pause;
  const uint32_t back = n.ports[in_port];  // this switch -> the upstream sender
  const Transmitter& out = tx_[back];
  const uint16_t quanta = pause ? topology_.switch_config.pfc.pause_quanta : 0;
  const Mac source = {0x02, 0x5a, 0x00, 0x00, uint8_t(node >> 8), uint8_t(node)};
  const std::vector<uint8_t> frame = pfc_frame(source, priority, quanta);
  ++stats_[back].pause_frames;
  ++bin(back).pause_frames;
  ++totals_.pause_frames;
  if (hooks_.capture) hooks_.capture(now_, frame);
  // A MAC control frame goes ahead of the queues; it takes effect when it is in at the upstream.
  const uint32_t upstream = nodes_[out.peer].ports[out.peer_port];
  schedule(now_ + serialise_ps(out, frame.size()) + out.propagation_ps, EventKind::kPause, upstream, priority, quanta);
  if (pause) {
    // Refreshed at half its length while the port stays above xon, as switches do.
    const uint64_t length = uint64_t(std::llround(double(quanta) * 512.0 * 1000.0 / out.gbps));
    n.refresh_due[in_port][priority] = now_ + std::max<uint64_t>(length / 2, 1);
    schedule(n.refresh_due[in_port][priority], EventKind::kRefresh, node, in_port * 8 + priority, 0);
  }
}

void Network::pause_arrived(uint32_t t, uint8_t priority, uint16_t quanta) {
  Transmitter& tx = tx_[t];
  if (quanta == 0) {
    tx.paused_until[priority] = 0;
  } else {
    tx.paused_until[priority] = now_ + uint64_t(std::llround(double(quanta) * 512.0 * 1000.0 / tx.gbps));
    schedule(tx.paused_until[priority], EventKind::kWake, t, 0, 0);
  }
  start(t);
}

}  // namespace hcaemu::fabric
