#include "replay/reconstruct.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "replay/capture_reader.h"

namespace hcaemu::replay {

namespace op = transport::opcode;
using transport::hdr::kFirst;
using transport::hdr::kLast;
using transport::hdr::kMiddle;

const char* service_name(Service service) {
  switch (service) {
    case Service::kRc: return "rc";
    case Service::kUc: return "uc";
    case Service::kUd: return "ud";
    case Service::kXrc: return "xrc";
  }
  return "?";
}

namespace {

constexpr const char* kKindNames[] = {"send", "send_imm", "send_inv", "write", "write_imm", "read", "cmp_swap", "fetch_add"};

std::string hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "%#x", value);
  return text;
}

Service service_of(uint8_t opcode) {
  if (opcode >= op::kXrcBase && opcode < op::kDcBase) return Service::kXrc;
  if (opcode >= op::kUdSendOnly) return Service::kUd;
  if (opcode >= op::kUcSendFirst) return Service::kUc;
  return Service::kRc;
}

// The operation of an RC/UC/XRC request opcode (its low five bits).
uint8_t operation(uint8_t opcode) { return uint8_t(opcode & 0x1f); }
bool is_send(uint8_t opcode) {
  const uint8_t o = operation(opcode);
  return o <= 0x05 || o == 0x16 || o == 0x17;
}
bool is_write(uint8_t opcode) { return operation(opcode) >= 0x06 && operation(opcode) <= 0x0b; }

// A message's kind from the packet that ends it (LAST or ONLY carry the immediate or IETH).
MessageKind kind_of(uint8_t opcode) {
  switch (operation(opcode)) {
    case 0x03: case 0x05: return MessageKind::kSendImm;
    case 0x16: case 0x17: return MessageKind::kSendInvalidate;
    case 0x06: case 0x07: case 0x08: case 0x0a: return MessageKind::kWrite;
    case 0x09: case 0x0b: return MessageKind::kWriteImm;
    case 0x0c: return MessageKind::kRead;
    case 0x13: return MessageKind::kCompareSwap;
    case 0x14: return MessageKind::kFetchAdd;
    default: return MessageKind::kSend;
  }
}

// PSNs of one stream unwrapped to 64 bits, so that ordering survives the 24-bit wrap.
struct PsnUnwrapper {
  std::optional<int64_t> last;
  uint32_t last_psn = 0;
  int64_t operator()(uint32_t psn) {
    last = last ? *last + transport::psn_diff(psn, last_psn) : int64_t(psn);
    last_psn = psn;
    return *last;
  }
};

}  // namespace

const char* message_kind_name(MessageKind kind) { return kKindNames[size_t(kind)]; }

std::optional<MessageKind> message_kind_from_name(const std::string& name) {
  for (size_t i = 0; i < std::size(kKindNames); ++i)
    if (name == kKindNames[i]) return MessageKind(i);
  return std::nullopt;
}

size_t Reconstructor::host_of(const Gid& gid, const Mac& mac) {
  for (size_t i = 0; i < r_.hosts.size(); ++i)
    if (r_.hosts[i].gid == gid) return i;
  r_.hosts.push_back({gid, mac, "h" + std::to_string(r_.hosts.size())});
  return r_.hosts.size() - 1;
}

void Reconstructor::unmapped(uint64_t frame, uint64_t time_ns, std::string reason) {
  r_.unmapped.push_back({frame, time_ns, std::move(reason)});
}

void Reconstructor::add(uint64_t index, uint64_t time_ns, std::span<const uint8_t> frame) {
  ++r_.frames;
  const transport::ParseResult parsed = transport::parse_frame(frame);
  if (parsed.error == transport::ParseError::kNotRoce) return unmapped(index, time_ns, "not RoCEv2");
  ++r_.roce_frames;
  if (parsed.error != transport::ParseError::kNone)
    return unmapped(index, time_ns, std::string("malformed RoCEv2: ") + transport::parse_error_name(parsed.error));
  Packet p{.frame = index, .time_ns = time_ns, .header = parsed.packet,
           .payload_bytes = uint32_t(parsed.packet.payload.size())};
  p.header.payload = {};
  const StreamKey key{host_of(p.header.src_gid, p.header.src_mac), host_of(p.header.dst_gid, p.header.dst_mac),
                      p.header.dest_qp};
  if ((p.header.traffic_class & 3) == 3) ++r_.anomalies.ecn_marked;
  // DC (hcaemu's own encoding of Mellanox's transport) has no workload form yet: said so, per packet.
  if (p.header.opcode >= op::kDcBase) return unmapped(index, time_ns, "DC transport (not reconstructed)");
  if (p.header.opcode == transport::opcode::kCnp) {  // DCQCN's notification: answers traffic, is none
    ++r_.anomalies.cnps;
    ++r_.mapped_roce_frames;
    return;
  }
  if (service_of(p.header.opcode) == Service::kUd) {
    if (p.header.dest_qp == 1) {  // QP1: CM MADs set connections up; they are not workload data
      ++r_.anomalies.cm_mads;
      mads_.push_back(p);
      return;
    }
    datagrams_.push_back(p);
  } else if (transport::carries(p.header.opcode, transport::hdr::kResponse)) {
    responses_[key].push_back(p);
  } else {
    requests_[key].push_back(p);
  }
}

struct Reconstructor::StreamState {
  size_t qp = 0;
  PsnUnwrapper unwrap;
  std::optional<int64_t> expected;         // the next new request PSN
  std::optional<size_t> open;              // a message whose LAST has not been seen
  bool open_is_send = false;               // ... a SEND (else a WRITE)
  uint32_t mtu_hint = 4096;                // the path MTU as both directions' payloads show it
  std::map<int64_t, size_t> by_first_psn;  // unwrapped first PSN -> message
  std::unordered_set<int64_t> seen;        // request PSNs seen
  std::unordered_set<int64_t> answered;    // response PSNs seen
  std::map<int64_t, size_t>::iterator next_unacked;
  int64_t base = 0;                        // the stream's first unwrapped PSN
  // The message holding unwrapped PSN `u`: the last one starting at or before it (its first PSN
  // and index).
  std::optional<std::pair<int64_t, size_t>> locate(int64_t u) const {
    auto it = by_first_psn.upper_bound(u);
    if (it == by_first_psn.begin()) return std::nullopt;
    return *std::prev(it);
  }
  std::optional<size_t> message_at(int64_t u) const {
    const auto found = locate(u);
    return found ? std::optional<size_t>(found->second) : std::nullopt;
  }
  // PSNs a message takes: one per packet; a READ one per path MTU of its responses.
  int64_t span(const Message& m) const {
    return m.kind == MessageKind::kRead ? int64_t(std::max<uint64_t>(1, (m.bytes + mtu_hint - 1) / mtu_hint)) : 1;
  }
};

std::map<Reconstructor::StreamKey, Reconstructor::StreamKey> Reconstructor::pair_streams() const {
  std::map<StreamKey, std::unordered_set<uint32_t>> psns;
  for (const auto& [key, packets] : requests_)
    for (const Packet& p : packets) psns[key].insert(p.header.psn);
  std::map<StreamKey, StreamKey> pairs;  // request stream -> response stream
  for (const auto& [rkey, packets] : responses_) {
    std::optional<StreamKey> best;
    size_t best_hits = 0;
    for (const auto& entry : psns) {  // (not a structured binding: clang 14 cannot capture one)
      const StreamKey& qkey = entry.first;
      const std::unordered_set<uint32_t>& set = entry.second;
      if (qkey.from != rkey.to || qkey.to != rkey.from || pairs.contains(qkey)) continue;
      const size_t hits = size_t(std::count_if(packets.begin(), packets.end(),
                                               [&](const Packet& p) { return set.contains(p.header.psn); }));
      if (hits > best_hits) best = qkey, best_hits = hits;
    }
    if (best) pairs[*best] = rkey;
  }
  return pairs;
}

void Reconstructor::request_packet(const Packet& p, StreamState& s) {
  const uint8_t opcode = p.header.opcode;
  const int64_t u = s.unwrap(p.header.psn);
  // Sent again (go-back-N, a timeout, a duplicate on the wire), or a READ resent from its first
  // missing response, which starts inside the PSNs of the READ it repeats.
  const auto at = s.locate(u);
  const bool repeats_read = at && r_.messages[at->second].kind == MessageKind::kRead &&
                            operation(opcode) == op::kRcRdmaReadRequest && u < at->first + s.span(r_.messages[at->second]);
  if (s.seen.contains(u) || repeats_read) {
    ++r_.anomalies.retransmitted_packets;
    ++r_.mapped_roce_frames;
    if (at) ++r_.messages[at->second].retransmitted;
    return;
  }
  s.seen.insert(u);
  if (s.expected && u != *s.expected) ++r_.anomalies.psn_gaps;
  const uint16_t place = transport::headers_of(opcode);
  const bool first = place & kFirst, last = place & kLast;
  if (!first && (!s.open || s.open_is_send != is_send(opcode))) {
    s.expected = u + 1;
    return unmapped(p.frame, p.time_ns, "RoCEv2 " + std::string(transport::opcode_name(opcode)) + " PSN " +
                                            hex(p.header.psn) + " without the FIRST packet of its message");
  }
  if (first) {  // an open message before it never ended: it stays incomplete
    Message m;
    m.qp = s.qp;
    m.kind = kind_of(opcode);
    m.first_psn = p.header.psn;
    m.first_ns = p.time_ns;
    if (transport::carries(opcode, transport::hdr::kReth)) m.bytes = m.kind == MessageKind::kRead ? p.header.reth.dma_length : 0;
    if (transport::carries(opcode, transport::hdr::kAtomicEth)) m.bytes = 8;
    r_.messages.push_back(m);
    s.open = r_.messages.size() - 1;
    s.open_is_send = is_send(opcode);
    s.by_first_psn[u] = *s.open;
  }
  Message& m = r_.messages[*s.open];
  ++m.packets;
  ++r_.mapped_roce_frames;
  m.last_ns = p.time_ns;
  if (is_send(opcode) || is_write(opcode)) m.bytes += p.payload_bytes;
  if (!last) r_.queue_pairs[s.qp].mtu = std::max(r_.queue_pairs[s.qp].mtu, p.payload_bytes);
  if (last) {
    m.kind = kind_of(opcode);
    m.last_psn = uint32_t((u + s.span(m) - 1) & 0xffffff);
    if (transport::carries(opcode, transport::hdr::kImmDt)) m.immediate = p.header.immediate;
    if (transport::carries(opcode, transport::hdr::kIeth)) m.immediate = p.header.invalidate_rkey;
    m.complete = true;
    s.open.reset();
  }
  s.expected = u + s.span(m);
}

void Reconstructor::build_messages(const StreamKey& key, const std::vector<Packet>& packets, uint32_t requester_qpn,
                                   StreamState& s) {
  QueuePair qp;
  qp.host = key.from;
  qp.peer_host = key.to;
  qp.qpn = requester_qpn;
  qp.peer_qpn = key.dest_qp;
  qp.service = service_of(packets.front().header.opcode);
  qp.first_psn = packets.front().header.psn;
  r_.queue_pairs.push_back(qp);
  s.qp = r_.queue_pairs.size() - 1;
  s.base = int64_t(packets.front().header.psn);
  const size_t first_message = r_.messages.size();
  for (const Packet& p : packets) request_packet(p, s);
  // UC has no answers: a message is done, for its sender, once its last packet has left.
  if (qp.service == Service::kUc)
    for (size_t i = first_message; i < r_.messages.size(); ++i)
      if (r_.messages[i].complete) r_.messages[i].done_ns = r_.messages[i].last_ns;
}

void Reconstructor::response_packet(const Packet& p, int64_t u, StreamState& s) {
  const uint8_t opcode = uint8_t(p.header.opcode & 0x1f);
  if (opcode == op::kRcAcknowledge) {
    ++r_.mapped_roce_frames;
    switch (transport::aeth_type(p.header.aeth.syndrome)) {
      case transport::AethType::kAck: break;
      case transport::AethType::kRnrNak:
        ++r_.anomalies.rnr_naks;
        if (const auto at = s.message_at(u)) ++r_.messages[*at].rnr_naks;  // the request it turned away
        return;
      default:
        ++(transport::aeth_value(p.header.aeth.syndrome) == 0 ? r_.anomalies.sequence_naks : r_.anomalies.other_naks);
        if (const auto at = s.message_at(u)) ++r_.messages[*at].naks;  // the request expected, or refused
        return;
    }
    ++r_.anomalies.acks;
    // Coalesced: an ACK answers every message up to its PSN.
    for (; s.next_unacked != s.by_first_psn.end(); ++s.next_unacked) {
      Message& m = r_.messages[s.next_unacked->second];
      const int64_t last = s.next_unacked->first + (m.kind == MessageKind::kRead ? 0 : int64_t(std::max<uint32_t>(m.packets, 1)) - 1);
      if (last > u) break;
      if (m.done_ns == 0) m.done_ns = p.time_ns;
    }
    return;
  }
  const std::optional<size_t> at = s.message_at(u);
  const bool read_response = opcode >= op::kRcRdmaReadResponseFirst && opcode <= op::kRcRdmaReadResponseOnly;
  const MessageKind want = read_response ? MessageKind::kRead : MessageKind::kFetchAdd;
  if (!at || (r_.messages[*at].kind != want && !(want == MessageKind::kFetchAdd && r_.messages[*at].kind == MessageKind::kCompareSwap)))
    return unmapped(p.frame, p.time_ns, std::string(transport::opcode_name(p.header.opcode)) + " PSN " + hex(p.header.psn) +
                                            " answers no request in the capture");
  ++r_.mapped_roce_frames;
  if (s.answered.contains(u)) {
    ++r_.anomalies.duplicate_responses;
    return;
  }
  s.answered.insert(u);
  Message& m = r_.messages[*at];
  if ((transport::headers_of(p.header.opcode) & kLast) && m.done_ns == 0) m.done_ns = p.time_ns;
}

void Reconstructor::apply_responses(const std::vector<Packet>& packets, StreamState& s) {
  s.next_unacked = s.by_first_psn.begin();
  PsnUnwrapper unwrap;
  unwrap(uint32_t(s.base) & transport::kPsnMask);  // responses unwrap from where the requests began
  for (const Packet& p : packets) response_packet(p, unwrap(p.header.psn), s);
}

void Reconstructor::add_datagrams(const std::vector<Packet>& datagrams, bool connection_setup) {
  std::map<std::tuple<size_t, uint32_t, size_t, uint32_t>, size_t> qps;  // (host, qpn, peer, peer qpn) -> QP
  for (const Packet& p : datagrams) {
    const size_t from = host_of(p.header.src_gid, p.header.src_mac), to = host_of(p.header.dst_gid, p.header.dst_mac);
    const auto key = std::make_tuple(from, p.header.deth.src_qp, to, p.header.dest_qp);
    auto [it, added] = qps.try_emplace(key, r_.queue_pairs.size());
    if (added) {
      QueuePair& ud = r_.queue_pairs.emplace_back();
      ud.host = from;
      ud.peer_host = to;
      ud.qpn = p.header.deth.src_qp;
      ud.peer_qpn = p.header.dest_qp;
      ud.service = Service::kUd;
      ud.first_psn = p.header.psn;
      ud.connection_setup = connection_setup;
    }
    QueuePair& qp = r_.queue_pairs[it->second];
    qp.mtu = std::max(qp.mtu, p.payload_bytes);
    Message m;
    m.qp = it->second;
    m.kind = p.header.opcode == op::kUdSendOnlyImm ? MessageKind::kSendImm : MessageKind::kSend;
    m.bytes = p.payload_bytes;
    m.first_psn = m.last_psn = p.header.psn;
    m.packets = 1;
    if (m.kind == MessageKind::kSendImm) m.immediate = p.header.immediate;
    m.first_ns = m.last_ns = m.done_ns = p.time_ns;  // a datagram completes once it is sent
    m.complete = true;
    r_.messages.push_back(m);
    ++r_.mapped_roce_frames;
  }
}

Reconstruction Reconstructor::finish() {
  const auto pairs = pair_streams();
  std::set<StreamKey> paired_responses;
  for (const auto& [request, packets] : requests_) {
    StreamState state;
    const auto pair = pairs.find(request);
    uint32_t mtu = 0;  // the largest payload of a packet that is not the last of its message
    auto look = [&](const std::vector<Packet>& packets) {
      for (const Packet& p : packets)
        if (!(transport::headers_of(p.header.opcode) & kLast)) mtu = std::max(mtu, p.payload_bytes);
    };
    look(packets);
    if (pair != pairs.end()) look(responses_.at(pair->second));
    if (mtu >= 256) state.mtu_hint = mtu;
    build_messages(request, packets, pair != pairs.end() ? pair->second.dest_qp : 0, state);
    if (pair == pairs.end()) continue;
    paired_responses.insert(pair->second);
    apply_responses(responses_.at(pair->second), state);
  }
  for (const auto& [key, packets] : responses_) {
    if (paired_responses.contains(key)) continue;
    for (const Packet& p : packets)
      unmapped(p.frame, p.time_ns, std::string(transport::opcode_name(p.header.opcode)) + " to QP " + hex(key.dest_qp) +
                                       ", whose requests are not in the capture");
  }
  add_datagrams(datagrams_, false);
  add_datagrams(mads_, true);
  std::stable_sort(r_.messages.begin(), r_.messages.end(),
                   [](const Message& a, const Message& b) { return a.first_ns < b.first_ns; });
  std::sort(r_.unmapped.begin(), r_.unmapped.end(), [](const Unmapped& a, const Unmapped& b) { return a.frame < b.frame; });
  Reconstruction out = std::move(r_);
  r_ = {};
  requests_.clear();
  responses_.clear();
  datagrams_.clear();
  mads_.clear();
  return out;
}

std::optional<Reconstruction> reconstruct_capture(const std::string& path, std::string* error) {
  auto reader = CaptureReader::open(path, error);
  if (!reader) return std::nullopt;
  Reconstructor builder;
  CapturedFrame frame;
  while (reader->next(frame)) builder.add(frame.index, frame.time_ns, frame.bytes);
  if (!reader->error().empty()) {
    if (error) *error = reader->error();
    return std::nullopt;
  }
  return builder.finish();
}

}  // namespace hcaemu::replay
