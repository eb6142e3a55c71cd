#include "model/eth/queues.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "common/endian.h"
#include "common/log.h"
#include "model/queues/completion_queue.h"
#include "model/queues/doorbell_unit.h"
#include "model/eth/flow_index.h"
#include "model/eth/frame.h"
#include "model/function_context.h"
#include "model/timing_preset.h"

namespace hcaemu::model {
namespace {

constexpr uint32_t kCounterMask = 0xffff;  // WQE counters in doorbell records and ctrl segments
constexpr uint32_t kSqDbrOffset = 4;       // SQ doorbell record: dword1 = send counter
constexpr uint32_t kEthSegment = 16;       // ctrl is 16 bytes, the Ethernet segment starts here
constexpr uint32_t kInlineStart = 14;      // inline header bytes begin inside the Ethernet segment
constexpr uint32_t kMaxSteeringHops = 16;

uint32_t round_up16(uint32_t n) { return (n + 15) & ~15u; }

}  // namespace

// ---------------------------------------------------------------- address translation

EthQueues::Fault EthQueues::translate(uint32_t lkey, uint64_t va, uint32_t length, bool write, std::vector<Chunk>& out) {
  if (length == 0) return Fault::kNone;
  if (f_.resources.mkeys.empty()) {
    // No MKEY exists at all: take the address as physical (what mlx5e's PA MKEY amounts to).
    if (!physical_reported_) log().warn("eth: lkey {:#x} with no MKEY table; using addresses as physical", lkey);
    physical_reported_ = true;
    ++counters_.tx_physical_lkey;
    out.push_back({va, length});
    return Fault::kNone;
  }
  const Mkey* key = f_.resources.mkeys.find(lkey >> 8);
  if (key == nullptr || key->variant != (lkey & 0xff) || key->free || (write && !key->local_write)) return Fault::kBadLkey;
  const uint64_t end = va + length;
  if (end < va || (!key->length64 && (va < key->start || end > key->start + key->length))) return Fault::kBadLkey;
  if (key->access_mode == Mkey::kAccessPa) {
    out.push_back({va, length});
    return Fault::kNone;
  }
  if (key->access_mode != Mkey::kAccessMtt || key->log_page_size >= 64) return Fault::kBadLkey;
  const uint64_t page = uint64_t(1) << key->log_page_size;
  uint64_t offset = va - (key->start & ~(page - 1));
  uint32_t left = length;
  while (left > 0) {
    const uint64_t index = offset >> key->log_page_size;
    if (index >= key->mtt.size()) return Fault::kBadLkey;
    const uint64_t in_page = offset & (page - 1);
    const uint32_t n = uint32_t(std::min<uint64_t>(left, page - in_page));
    out.push_back({(key->mtt[index] & ~uint64_t(7)) + in_page, n});
    offset += n;
    left -= n;
  }
  return Fault::kNone;
}

// ---------------------------------------------------------------- SQ engine

// The SQN in the doorbell's second dword [31:8]; nullopt for bytes too short to hold one.
std::optional<uint32_t> EthQueues::doorbell_sqn(std::span<const uint8_t> data) {
  if (data.size() < 8) return std::nullopt;
  return load_be32(&data[4]) >> 8;
}

bool EthQueues::doorbell(std::span<const uint8_t> data) {
  const auto sqn = doorbell_sqn(data);
  if (!sqn) return false;
  if (!f_.eth.sqs.contains(*sqn)) {
    ++counters_.doorbell_unknown_sq;
    return false;
  }
  process_sq(*sqn);
  return true;
}

bool EthQueues::names_sq(std::span<const uint8_t> data) const {
  const auto sqn = doorbell_sqn(data);
  return sqn && f_.eth.sqs.contains(*sqn);
}

bool EthQueues::read_ring(const WorkQueueRing& ring, uint32_t first_block, uint32_t bytes, std::vector<uint8_t>& out) {
  out.resize(bytes);
  return f_.memory != nullptr &&
         ring.buffer.read_ring(*f_.memory, 0, ring.bytes(), uint64_t(first_block) * wqe_format::kBasicBlock, out);
}

bool EthQueues::read_ctrl(const WorkQueueRing& ring, uint32_t first_block, SendWqe& ctrl) {
  std::vector<uint8_t>& bytes = ctrl_bytes_;
  return read_ring(ring, first_block, wqe_format::kSegment, bytes) && parse_ctrl_segment(bytes, ctrl);
}

void EthQueues::process_sq(uint32_t sqn) {
  ++counters_.doorbells;
  EthSendQueue* sq = f_.eth.sqs.find(sqn);
  if (sq == nullptr) {
    ++counters_.doorbell_unknown_sq;
    return;
  }
  if (sq->state == WqState::kReset) {
    ++counters_.doorbell_not_ready;
    return;
  }
  uint32_t producer = 0;
  if (!read_doorbell_record(f_.memory, sq->wq.dbr_addr + kSqDbrOffset, producer)) {
    ++counters_.dbr_faults;
    return;
  }
  producer &= kCounterMask;
  if (sq->state == WqState::kError) {
    ++counters_.doorbell_in_error;
    flush(*sq, sqn, producer);
    return;
  }
  if (((producer - sq->consumer) & kCounterMask) > sq->wq.entries()) {
    ++counters_.producer_overrun;
    sq_error(*sq, sqn, uint16_t(sq->consumer), 0, Fault::kDs);
    return;
  }
  std::vector<uint8_t> wqe_bytes;
  while (((producer - sq->consumer) & kCounterMask) != 0) {
    const uint16_t index = uint16_t(sq->consumer & kCounterMask);
    SendWqe ctrl;
    if (!read_ctrl(sq->wq, sq->consumer, ctrl)) {
      ++counters_.tx_dma_faults;
      sq_error(*sq, sqn, index, 0, Fault::kDma);
      return;
    }
    const uint8_t opcode = ctrl.opcode;
    const uint32_t ds = ctrl.ds;
    const uint32_t blocks = ctrl.wqebbs();
    if (ds == 0 || blocks > ((producer - sq->consumer) & kCounterMask)) {
      ++counters_.tx_bad_ds;
      sq_error(*sq, sqn, index, opcode, Fault::kDs);
      return;
    }
    if (!read_ring(sq->wq, sq->consumer, ds * wqe_format::kSegment, wqe_bytes)) {
      ++counters_.tx_dma_faults;
      sq_error(*sq, sqn, index, opcode, Fault::kDma);
      return;
    }
    const Fault fault = execute(*sq, sqn, wqe_bytes);
    if (fault != Fault::kNone) {
      sq_error(*sq, sqn, index, opcode, fault);
      return;
    }
    sq->consumer = (sq->consumer + blocks) & kCounterMask;
    ++sq->wqes;
    ++counters_.tx_wqes;
    if (ctrl.signalled) write_tx_cqe(*sq, sqn, index, opcode, false, 0, ctrl.solicited);
  }
}

EthQueues::Fault EthQueues::execute(EthSendQueue& sq, uint32_t, std::span<const uint8_t> wqe_bytes) {
  switch (wqe_bytes[3]) {
    case wqe::kOpNop:
      ++counters_.tx_nops;
      return Fault::kNone;
    case wqe::kOpSend: {
      std::vector<uint8_t> frame;
      const Fault fault = build_frame(wqe_bytes, frame);
      if (fault != Fault::kNone) return fault;
      ++sq.frames;
      sq.bytes += frame.size();
      ++counters_.tx_frames;
      counters_.tx_bytes += frame.size();
      send_frame(sq, frame);
      return Fault::kNone;
    }
    case wqe::kOpTso: {
      // mlx5e inlines the L2-L4 headers and points at up to 64 KiB of payload; the wire gets
      // MSS-sized segments (max_lso_cap must be non-zero for mlx5e to bind at all).
      std::vector<uint8_t> frame;
      const Fault fault = build_frame(wqe_bytes, frame, kMaxTsoFrame);
      if (fault != Fault::kNone) return fault;
      const uint16_t mss = load_be16(&wqe_bytes[kEthSegment + 6]);
      auto segments = frame::segment_tcp(frame, mss);
      if (segments.empty()) {
        ++counters_.tx_bad_tso;
        return Fault::kLength;
      }
      for (auto& segment : segments) {
        ++sq.frames;
        sq.bytes += segment.size();
        ++counters_.tx_frames;
        counters_.tx_bytes += segment.size();
        send_frame(sq, segment);
      }
      ++counters_.tx_tso_wqes;
      return Fault::kNone;
    }
    default:
      ++counters_.tx_bad_opcode;
      return Fault::kOpcode;  // MPW, UMR... are not offered by the caps
  }
}

void EthQueues::send_frame(EthSendQueue& sq, std::span<const uint8_t> frame) {
  if (port_ == nullptr) return void(++counters_.tx_no_port);
  if (!steer_tx(frame, tx_reformatted_)) return void(++counters_.tx_steering_drop);
  if (!tx_reformatted_.empty()) frame = tx_reformatted_;
  // Preamble, SFD, FCS and the inter-frame gap count on the wire, as for RDMA packets.
  const uint64_t wire_bytes = frame.size() + TimingPreset::kWireOverheadBytes;
  pace(sq, wire_bytes);
  if (port_->shared()) {
    const uint64_t now = clock_.now_ps ? clock_.now_ps() : 0;
    const uint64_t sent = port_->serialised_ps(frame, wire_bytes, now, link_gbps_);
    if (sent > now && clock_.consume_ps) clock_.consume_ps(sent - now);
  }
  port_->transmit_from_domain(frame, transport_domain(sq));
}

bool EthQueues::steer_tx(std::span<const uint8_t> frame, std::vector<uint8_t>& reformatted) {
  using Outcome = steering::SteVerdict::Outcome;
  reformatted.clear();
  uint32_t table_id = root_table(flow_table_type::kNicTx);
  if (table_id == 0) return true;  // no NIC TX tables (mlx5e sets none): frames leave as they are
  auto key = frame::match_key(frame, frame::parse(frame));
  for (uint32_t hop = 0; hop < kMaxSteeringHops && table_id != 0; ++hop) {
    const FlowTable* table = f_.eth.flow_tables.find(table_id);
    if (table == nullptr) break;
    bool rewritten = false;
    if (table->sw_owner) {
      // mlx5 DR's table: allow sends the frame, a firmware table goes on; the rest drop it.
      steering::SteVerdict verdict = walk_software_table(*table, frame);
      if (verdict.rewritten) {
        reformatted = std::move(verdict.frame);
        frame = reformatted;
        rewritten = true;
      }
      if (verdict.outcome != Outcome::kFlowTable) return verdict.outcome == Outcome::kAllow;
      table_id = verdict.id;
    } else {
      const std::optional<uint32_t> hit = match_flow(*table, f_.eth.flow_groups, key);
      if (!hit) {
        table_id = table->miss_action == 1 ? table->miss_table : 0;
        continue;
      }
      const FlowEntry& entry = table->entries.at(*hit);
      count_flow(entry.counters, frame.size());
      if (entry.action & flow_action::kDrop) return false;
      if (!rewrite_tx(entry, frame, reformatted, rewritten)) return false;
      table_id = 0;
      for (const FlowDestination& d : entry.destinations)
        if (d.type == flow_dest::kFlowTable) {
          table_id = d.id;
          break;
        }
    }
    if (rewritten) key = frame::match_key(frame, frame::parse(frame));  // the next table sees the new frame
  }
  return true;  // allowed, or no entry took it: NIC TX lets what it does not drop go
}

// A NIC TX entry's rewrites: header fields first, then a tunnel around the frame. `frame` ends up
// naming `out` when either changed it; false when the frame must be dropped.
bool EthQueues::rewrite_tx(const FlowEntry& entry, std::span<const uint8_t>& frame, std::vector<uint8_t>& out,
                           bool& rewritten) {
  if (!modify_header(entry, frame, out, rewritten)) return false;
  if (rewritten) frame = out;
  const PacketReformat* reformat = reformat_of(entry);
  if (reformat == nullptr) return true;
  // An L3 tunnel carries the IP packet without its Ethernet header. encapsulate writes into `out`,
  // so a frame that is `out` already is copied first.
  const uint32_t skip = reformat->type == reformat_type::kL2ToL3Tunnel ? frame::parse(frame).l3_offset : 0;
  if (frame.data() == out.data()) {
    const std::vector<uint8_t> inner(frame.begin() + skip, frame.end());
    frame::encapsulate(reformat->data, inner, out);
  } else {
    frame::encapsulate(reformat->data, frame.subspan(skip), out);
  }
  frame = out;
  rewritten = true;
  ++counters_.tx_reformatted;
  return true;
}

// The packet reformat context a flow entry's reformat action names; null without that action.
const PacketReformat* EthQueues::reformat_of(const FlowEntry& entry) const {
  return entry.action & flow_action::kPacketReformat ? f_.eth.packet_reformats.find(entry.packet_reformat) : nullptr;
}

// A NIC RX entry's tunnel removal, before its header rewrites: DECAP leaves an L2 tunnel's inner
// frame, an L3_TUNNEL_TO_L2 reformat the inner IP packet behind the context's Ethernet header. The
// result goes to `out` (which `frame` may name: it is read first). A frame without the kind of
// tunnel the action removes is dropped (false), counted.
bool EthQueues::decapsulate_rx(const FlowEntry& entry, std::span<const uint8_t> frame, std::vector<uint8_t>& out,
                               bool& rewritten) {
  const bool decap = entry.action & flow_action::kDecap;
  const PacketReformat* reformat = reformat_of(entry);
  if (!decap && reformat == nullptr) return true;
  const auto payload = frame::tunnel_payload(frame, frame::parse(frame));
  if (!payload || payload->ethernet != decap) {
    ++counters_.rx_not_tunnelled;
    return false;
  }
  std::vector<uint8_t> inner;
  if (reformat != nullptr) inner = reformat->data;
  inner.insert(inner.end(), frame.begin() + payload->offset, frame.end());
  out = std::move(inner);
  rewritten = true;
  ++counters_.rx_decapsulated;
  return true;
}

// A flow entry's modify-header context (with its MOD_HDR action) on `frame`: when the actions
// changed it, the new frame goes to `out` (which `frame` may name: it is read first) and
// `rewritten` is set. False when one could not act (a frame too short for the field).
bool EthQueues::modify_header(const FlowEntry& entry, std::span<const uint8_t> frame, std::vector<uint8_t>& out,
                              bool& rewritten) {
  if ((entry.action & flow_action::kModifyHeader) == 0) return true;
  const ModifyHeader* modify = f_.eth.modify_headers.find(entry.modify_header);
  if (modify == nullptr) return true;  // an entry holds a reference: it cannot go while used
  steering::PacketState state(frame);
  if (steering::apply_modify_actions(state, modify->actions) != nullptr) return false;
  ++counters_.header_modified;
  if (state.rewritten()) {
    out = state.take_rewritten();
    rewritten = true;
  }
  return true;
}

void EthQueues::pace(EthSendQueue& sq, uint64_t wire_bytes) {
  const RateLimitEntry* limit = f_.resources.rate_limits.find(get(sq.context, sqc::kRateLimitIndex));
  const uint32_t group = get(sq.context, sqc::kQosQueueGroupId);
  if ((limit == nullptr && group == 0) || !clock_.now_ps) return;
  // The frame leaves once the SQ's previous frames have had their time at its rate, and the frames
  // through its queue group (and the group's ancestors) at theirs; the next one then waits this
  // frame's bits at each rate (kb/s: bits * 1e9 / rate picoseconds).
  const uint64_t now = clock_.now_ps();
  const uint64_t ready = std::max(limit != nullptr ? sq.paced_until_ps : 0, f_.resources.scheduling.ready_ps(group));
  if (ready > now && clock_.consume_ps) {
    ++counters_.tx_paced;
    clock_.consume_ps(ready - now);
  }
  const uint64_t start = std::max(now, ready);
  if (limit != nullptr) sq.paced_until_ps = start + wire_bytes * 8 * 1'000'000'000ull / limit->rate_kbps;
  if (group != 0) f_.resources.scheduling.charge(group, wire_bytes, start);
}

EthQueues::Fault EthQueues::build_frame(std::span<const uint8_t> w, std::vector<uint8_t>& frame, uint32_t max_size) {
  const uint32_t size = uint32_t(w.size());
  if (size < kEthSegment + wqe_format::kSegment) {
    ++counters_.tx_bad_ds;
    return Fault::kDs;
  }
  const uint8_t* eth = &w[kEthSegment];
  const uint8_t cs_flags = eth[4];
  const uint16_t inline_word = load_be16(eth + 12);
  const bool insert_vlan = (inline_word & wqe::kInsertVlan) != 0;
  const uint32_t inline_size = insert_vlan ? 0 : inline_word;
  const uint32_t eth_size = wqe_format::kSegment + (inline_size > 2 ? round_up16(inline_size - 2) : 0);
  if (kEthSegment + eth_size > size) {
    ++counters_.tx_bad_ds;
    return Fault::kDs;
  }
  frame.assign(eth + kInlineStart, eth + kInlineStart + inline_size);
  for (uint32_t at = kEthSegment + eth_size; at + wqe_format::kSegment <= size;) {
    const uint32_t byte_count = load_be32(&w[at]);
    if (byte_count & wqe_format::kInlineFlag) {
      const uint32_t n = byte_count & ~wqe_format::kInlineFlag;
      if (at + 4 + uint64_t(n) > size) {
        ++counters_.tx_bad_ds;
        return Fault::kDs;
      }
      frame.insert(frame.end(), &w[at + 4], &w[at + 4] + n);
      at += round_up16(4 + n);
      continue;
    }
    const uint32_t lkey = load_be32(&w[at + 4]);
    const uint64_t address = load_be64(&w[at + 8]);
    at += wqe_format::kSegment;
    if (byte_count == 0) continue;
    if (frame.size() + uint64_t(byte_count) > max_size) {
      ++counters_.tx_too_long;
      return Fault::kLength;
    }
    std::vector<Chunk> chunks;
    if (translate(lkey, address, byte_count, false, chunks) != Fault::kNone) {
      ++counters_.tx_bad_lkey;
      return Fault::kBadLkey;
    }
    for (const Chunk& c : chunks) {
      const size_t old = frame.size();
      frame.resize(old + c.length);
      if (!f_.memory->read(c.address, std::span(frame).subspan(old))) {
        ++counters_.tx_dma_faults;
        return Fault::kDma;
      }
    }
  }
  if (frame.size() > max_size || frame.size() < frame::kEthHeaderSize) {
    ++counters_.tx_too_long;
    return Fault::kLength;
  }
  if (insert_vlan) {  // 802.1Q tag after the MAC addresses
    const uint16_t tci = load_be16(eth + 14);
    const uint8_t tag[4] = {0x81, 0x00, uint8_t(tci >> 8), uint8_t(tci)};
    frame.insert(frame.begin() + 2 * frame::kMacSize, tag, tag + 4);
  }
  if (cs_flags & (wqe::kCsumL3 | wqe::kCsumL4)) {
    const frame::Parsed parsed = frame::parse(frame);
    if (cs_flags & wqe::kCsumL3) frame::fill_ipv4_checksum(frame, parsed);
    if (cs_flags & wqe::kCsumL4) frame::fill_l4_checksum(frame, parsed);
  }
  return Fault::kNone;
}

void EthQueues::write_tx_cqe(EthSendQueue& sq, uint32_t sqn, uint16_t wqe_index, uint8_t opcode, bool error,
                             uint8_t syndrome, bool solicited) {
  const CqeResult result = write_cqe(
      f_, sq.cqn,
      [&](std::span<uint8_t> c) {
        store_be32(&c[cqe::kSrqnUserIndex], get(sq.context, kWqUserIndex));
        store_be32(&c[cqe::kSopDropQpn], (uint32_t(opcode) << 24) | (sqn & 0xffffff));
        store_be16(&c[cqe::kWqeCounter], wqe_index);
        if (error) c[cqe::kErrSyndrome] = syndrome;
        c[cqe::kOpOwn] = uint8_t((error ? cqe::kRequesterError : cqe::kRequester) << 4);
      },
      solicited || error);
  if (result != CqeResult::kWritten) {
    ++counters_.tx_cqe_failures;
  } else if (error) {
    ++counters_.tx_error_cqes;
  } else {
    ++counters_.tx_cqes;
  }
}

void EthQueues::sq_error(EthSendQueue& sq, uint32_t sqn, uint16_t wqe_index, uint8_t opcode, Fault fault) {
  uint8_t syndrome = cqe_syndrome::kLocalQpOperation;
  switch (fault) {
    case Fault::kBadLkey:
    case Fault::kDma: syndrome = cqe_syndrome::kLocalProtection; break;
    case Fault::kLength:
    case Fault::kDs: syndrome = cqe_syndrome::kLocalLength; break;
    default: break;
  }
  ++sq.errors;
  if (sq_error_log_.allow())
    log().warn("eth sq {:#x}: WQE {:#x} opcode {:#x} failed (syndrome {:#x}); SQ to ERR", sqn, wqe_index, opcode, syndrome);
  write_tx_cqe(sq, sqn, wqe_index, opcode, true, syndrome, true);
  sq.state = WqState::kError;
  sq.context[1] = uint8_t((sq.context[1] & 0x0f) | (uint8_t(WqState::kError) << 4));  // sqc.state [23:20]
  // The failed WQE is done; the ones behind it are flushed.
  SendWqe ctrl;
  const uint32_t blocks = read_ctrl(sq.wq, sq.consumer, ctrl) ? ctrl.wqebbs() : 0;
  sq.consumer = (sq.consumer + std::max<uint32_t>(1, blocks)) & kCounterMask;
  uint32_t producer = 0;
  if (read_doorbell_record(f_.memory, sq.wq.dbr_addr + kSqDbrOffset, producer)) flush(sq, sqn, producer & kCounterMask);
}

// Completes every WQE up to `producer` with one flush error CQE naming the last of them (a CQE
// completes all WQEs up to its wqe_counter).
void EthQueues::flush(EthSendQueue& sq, uint32_t sqn, uint32_t producer) {
  uint32_t pending = (producer - sq.consumer) & kCounterMask;
  if (pending == 0 || pending > sq.wq.entries()) {
    sq.consumer = producer;
    return;
  }
  uint16_t last = uint16_t(sq.consumer);
  uint8_t last_opcode = 0;
  while (pending > 0) {
    SendWqe ctrl;
    if (!read_ctrl(sq.wq, sq.consumer, ctrl)) break;
    const uint32_t blocks = std::max<uint32_t>(1, ctrl.wqebbs());
    if (blocks > pending) break;
    last = uint16_t(sq.consumer);
    last_opcode = ctrl.opcode;
    sq.consumer = (sq.consumer + blocks) & kCounterMask;
    pending -= blocks;
    ++counters_.tx_flushed_wqes;
  }
  sq.consumer = producer;
  write_tx_cqe(sq, sqn, last, last_opcode, true, cqe_syndrome::kWrFlushed, true);
}

// ---------------------------------------------------------------- RX

void EthQueues::receive(std::span<const uint8_t> frame, std::optional<uint32_t> looped_from) {
  steer_frame(frame, looped_from, steered_);
  for (const Steered& to : steered_)
    deliver(to.rqn, to.rewritten.empty() ? frame : std::span<const uint8_t>(to.rewritten), to.flow_tag);
}

uint32_t EthQueues::transport_domain(const EthSendQueue& sq) const {
  const TransportInterfaceSend* tis = f_.eth.tises.find(sq.tisn);
  return tis != nullptr ? tis->td : 0;
}

bool EthQueues::self_loopback_allowed(uint32_t tirn, std::span<const uint8_t> frame,
                                      std::optional<uint32_t> looped_from) const {
  const TransportInterfaceReceive* tir = f_.eth.tirs.find(tirn);
  if (!looped_from || tir == nullptr || tir->td == 0 || tir->td != *looped_from) return true;
  // tirc.self_lb_block: bit 0 unicast, bit 1 multicast. mlx5e clears both on its TIRs (it must not
  // see its own frames) and sets them for its loopback self-test; mlx5_ib sets them for raw packet
  // QPs created with ALLOW_SELF_LB: a set bit lets the domain's own frames in.
  const uint32_t bits = get(tir->context, kTirSelfLbBlock);
  return (bits & (frame::to_group_address(frame) ? 0x2u : 0x1u)) != 0;
}

namespace {


uint32_t flow_hash(std::span<const uint8_t> frame, const frame::Parsed& p) {
  if (p.ip_version == 0) return 0;
  const uint32_t addresses = p.ip_version == 4 ? 12 : 8, length = p.ip_version == 4 ? 8 : 32;
  uint32_t h = 2166136261u;
  for (uint32_t i = 0; i < length; ++i) h = (h ^ frame[p.l3_offset + addresses + i]) * 16777619u;
  if (p.l4_offset != 0)
    for (uint32_t i = 0; i < 4; ++i) h = (h ^ frame[p.l4_offset + i]) * 16777619u;
  return h;
}

}  // namespace

std::optional<EthQueues::Steered> EthQueues::to_tir(uint32_t tirn, std::span<const uint8_t> frame,
                                                    std::optional<uint32_t> looped_from, uint32_t flow_tag) {
  if (!self_loopback_allowed(tirn, frame, looped_from)) {
    ++counters_.rx_self_loopback_blocked;
    return std::nullopt;
  }
  if (auto rqn = rq_of_tir(tirn, frame)) return Steered{*rqn, flow_tag, {}};
  ++counters_.rx_no_rq;
  return std::nullopt;
}

std::optional<uint32_t> EthQueues::rq_of_tir(uint32_t tirn, std::span<const uint8_t> frame) {
  const TransportInterfaceReceive* tir = f_.eth.tirs.find(tirn);
  if (tir == nullptr) return std::nullopt;
  if (tir->dispatch == TirDispatch::kDirect) return tir->inline_rqn;
  const RqTable* rqt = f_.eth.rqts.find(tir->rqt);
  if (rqt == nullptr || rqt->rqns.empty()) return std::nullopt;
  return rqt->rqns[flow_hash(frame, frame::parse(frame)) % rqt->rqns.size()];
}

uint32_t EthQueues::root_table(uint8_t type) const {
  if (auto root = f_.eth.roots.find(type); root != f_.eth.roots.end() && root->second != 0) return root->second;
  // Only the kernel's tables: a process's (mlx5 DR's) are reached from a root, never one themselves.
  uint32_t table_id = 0;
  int best = 256;
  for (const auto& [id, table] : f_.eth.flow_tables)
    if (table.type == type && table.level < best && f_.eth.flow_tables.owner(id) == kKernelUid)
      best = table.level, table_id = id;
  return table_id;
}

void EthQueues::count_flow(std::span<const uint32_t> counters, size_t bytes) {
  for (uint32_t id : counters)
    if (FlowCounter* counter = f_.eth.flow_counters.find(id)) ++counter->packets, counter->octets += bytes;
}

steering::SteVerdict EthQueues::walk_software_table(const FlowTable& table, std::span<const uint8_t> frame) {
  ++counters_.sw_steering_walks;
  const steering::ReformatData reformats = [this](uint32_t id) {
    const PacketReformat* reformat = f_.eth.packet_reformats.find(id);
    return reformat != nullptr ? std::span<const uint8_t>(reformat->data) : std::span<const uint8_t>{};
  };
  const steering::Definers definers = [this](uint8_t index) { return f_.eth.match_definers.find(index); };
  steering::SteVerdict verdict = steering::walk_ste_v1(f_.sw_icm, table.icm_root, frame, reformats, definers);
  count_flow(verdict.counters, frame.size());
  if (verdict.outcome == steering::SteVerdict::Outcome::kFault) {
    ++counters_.sw_steering_faults;
    uint64_t skipped = 0;
    if (sw_steering_log_.allow(skipped))
      log().warn("function {}: software steering dropped a frame after {} entries: {} (lookup type {:#06x}, entry "
                 "{:#x}: {:02x}; {} similar not logged)",
                 f_.identity.vhca_id, verdict.hops, verdict.fault, verdict.fault_lookup_type, verdict.fault_address,
                 fmt::join(verdict.fault_entry, ""), skipped);
  }
  return verdict;
}

// One frame's way through the NIC RX tables: where it is delivered (a flow entry may name several
// TIRs: each gets a copy), the flow tag it carries, and the frame as software steering rewrote it.
struct EthQueues::RxSteering {
  std::span<const uint8_t> frame;
  std::optional<uint32_t> looped_from;
  uint32_t flow_tag = 0;
  std::vector<uint8_t> rewritten;
  std::vector<Steered>& out;
  uint32_t rewrites = 0;  // times `rewritten` changed: the match key is computed again

  std::span<const uint8_t> current() const { return rewritten.empty() ? frame : std::span<const uint8_t>(rewritten); }
};

void EthQueues::steer_to_tir(RxSteering& s, uint32_t tirn) {
  if (auto steered = to_tir(tirn, s.current(), s.looped_from, s.flow_tag)) {
    steered->rewritten = s.rewritten;
    s.out.push_back(std::move(*steered));
  }
}

// A software-owned table: the next table to look in (0: none, the walk ended).
uint32_t EthQueues::steer_software(RxSteering& s, const FlowTable& table) {
  using Outcome = steering::SteVerdict::Outcome;
  steering::SteVerdict verdict = walk_software_table(table, s.current());
  if (verdict.flow_tag) s.flow_tag = *verdict.flow_tag;
  if (verdict.rewritten) {
    s.rewritten = std::move(verdict.frame);
    ++s.rewrites;
  }
  if (verdict.outcome == Outcome::kFlowTable) return verdict.id;
  if (verdict.outcome == Outcome::kSampler) return through_sampler(s, verdict.id);
  if (verdict.outcome == Outcome::kTir) steer_to_tir(s, verdict.id);
  else ++counters_.rx_steering_drop;  // drop, a fault, or "allow", which means nothing on RX
  return 0;
}

// A flow sampler: every ratio-th frame also goes through the sample table (its entry's counters
// and TIRs); every frame goes on to the default table, which is returned (0: none, dropped).
uint32_t EthQueues::through_sampler(RxSteering& s, uint32_t id) {
  FlowSampler* sampler = f_.eth.flow_samplers.find(id);
  if (sampler == nullptr) {
    ++counters_.rx_steering_drop;
    return 0;
  }
  const FlowTable* sample = f_.eth.flow_tables.find(sampler->sample_table);
  if (sampler->seen++ % sampler->ratio == 0 && sample != nullptr) {
    const auto frame = s.current();
    bool dropped = false;
    steer_firmware(s, *sample, frame::match_key(frame, frame::parse(frame)), dropped);
  }
  return sampler->default_table;
}

// A firmware table: counts, drops, or delivers to its entry's TIRs and goes on to its first table
// destination (or the table's miss table). The next table, 0 when the frame goes no further.
uint32_t EthQueues::steer_firmware(RxSteering& s, const FlowTable& table, const frame::MatchKey& key, bool& dropped) {
  const std::optional<uint32_t> hit = match_flow(table, f_.eth.flow_groups, key);
  if (!hit) return table.miss_action == 1 ? table.miss_table : 0;
  const FlowEntry& entry = table.entries.at(*hit);
  log().trace("steer:   entry {} group {} action {:#x} dests {}", *hit, entry.group, entry.action,
              entry.destinations.size());
  if (entry.flow_tag != 0) s.flow_tag = entry.flow_tag;
  count_flow(entry.counters, s.frame.size());
  bool modified = false;
  if ((entry.action & flow_action::kDrop) || !decapsulate_rx(entry, s.current(), s.rewritten, modified) ||
      !modify_header(entry, s.current(), s.rewritten, modified)) {
    ++counters_.rx_steering_drop;
    dropped = true;
    return 0;
  }
  if (modified) ++s.rewrites;
  uint32_t next = 0;
  for (const FlowDestination& d : entry.destinations) {
    if (d.type == flow_dest::kTir) steer_to_tir(s, d.id);
    else if (d.type == flow_dest::kFlowTable && next == 0) next = d.id;
  }
  return next;
}

void EthQueues::steer_frame(std::span<const uint8_t> frame, std::optional<uint32_t> looped_from,
                            std::vector<Steered>& out) {
  out.clear();
  RxSteering s{frame, looped_from, 0, {}, out, 0};
  const frame::Parsed parsed = frame::parse(frame);
  auto key = frame::match_key(frame, parsed);
  uint32_t key_rewrites = 0;
  bool dropped = false;
  uint32_t table_id = root_table(flow_table_type::kNicRx);
  for (uint32_t hop = 0; hop < kMaxSteeringHops && table_id != 0 && !dropped; ++hop) {
    const FlowTable* table = f_.eth.flow_tables.find(table_id);
    if (table == nullptr) break;
    if (key_rewrites != s.rewrites) {  // the next table sees the frame as the last one left it
      key = frame::match_key(s.current(), frame::parse(s.current()));
      key_rewrites = s.rewrites;
    }
    log().trace("steer: table {:#x} level {} entries {} miss_action {} miss_table {:#x}", table_id, table->level,
                table->entries.size(), table->miss_action, table->miss_table);
    if (table->sw_owner) {
      table_id = steer_software(s, *table);
      dropped = table_id == 0;
    } else {
      table_id = steer_firmware(s, *table, key, dropped);
    }
  }
  if (dropped || !out.empty()) return;
  ++counters_.rx_steering_miss;
  log().debug("steer: miss for ethertype {:#06x} ip_version {} proto {} dst {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
              parsed.ethertype, parsed.ip_version, parsed.l4_protocol, frame[0], frame[1], frame[2], frame[3], frame[4],
              frame[5]);
}

// One frame on its way into a receive queue.
struct EthQueues::Arrival {
  uint32_t rqn = 0;
  uint32_t flow_tag = 0;  // from steering: CQE sop_drop_qpn [23:0] (mlx5e's skb->mark, libmlx5's flow tag)
  EthReceiveQueue* rq = nullptr;
  std::vector<uint8_t> frame;
  frame::Parsed parsed;
  bool stripped = false;  // the VLAN tag went into the CQE
  uint16_t index = 0;     // the receive WQE
  std::vector<uint8_t> wqe;
  uint32_t segments = 0;  // its data segments before the terminator
};

bool EthQueues::deliver(uint32_t rqn, std::span<const uint8_t> frame_in, uint32_t flow_tag) {
  Arrival a;
  a.rqn = rqn;
  a.flow_tag = flow_tag;
  a.rq = f_.eth.rqs.find(rqn);
  return admit(a, frame_in) && take_receive_wqe(a) && scatter(a) && complete_receive(a);
}

bool EthQueues::admit(Arrival& a, std::span<const uint8_t> frame_in) {
  EthReceiveQueue* rq = a.rq;
  if (rq == nullptr) return ++counters_.rx_no_rq, false;
  if (rq->state != WqState::kReady) return ++counters_.rx_rq_not_ready, false;
  if (rq->wq.type != wq_type::kCyclic) return ++counters_.rx_unsupported_rq, false;
  if (frame_in.size() < frame::kEthHeaderSize) return ++counters_.rx_runt, false;
  if (f_.memory == nullptr) return ++counters_.rx_dma_faults, false;
  // VLAN stripping unless the RQ has vsd (vlan strip disable) set: the tag goes into the CQE.
  a.frame.assign(frame_in.begin(), frame_in.end());
  a.parsed = frame::parse(a.frame);
  a.stripped = a.parsed.vlan && (rq->context[0] & 0x10) == 0;  // rqc.vsd = bit 28
  if (a.stripped) {
    a.frame.erase(a.frame.begin() + 2 * frame::kMacSize, a.frame.begin() + 2 * frame::kMacSize + 4);
    const uint16_t tci = a.parsed.vlan_tci;
    a.parsed = frame::parse(a.frame);
    a.parsed.vlan_tci = tci;
  }
  return true;
}

bool EthQueues::take_receive_wqe(Arrival& a) {
  EthReceiveQueue* rq = a.rq;
  uint32_t posted = 0;
  if (!read_doorbell_record(f_.memory, rq->wq.dbr_addr, posted)) return ++counters_.rx_dbr_faults, false;
  const uint32_t available = (posted - rq->consumer) & kCounterMask;
  if (available == 0 || available > rq->wq.entries()) {
    ++rq->no_wqe;
    // mlx5e's rx_out_of_buffer: the queue counter set the RQ is bound to.
    count_into(f_.q_counters, get(rq->context, rqc::kCounterSetId), q_counter::kOutOfBuffer);
    return ++counters_.rx_no_wqe, false;
  }
  a.index = uint16_t(rq->consumer & kCounterMask);
  const uint32_t stride = 1u << rq->wq.log_stride;
  a.wqe.resize(stride);
  const uint64_t slot = uint64_t(rq->consumer & (rq->wq.entries() - 1)) << rq->wq.log_stride;
  if (!rq->wq.buffer.read(*f_.memory, slot, a.wqe)) return ++counters_.rx_dma_faults, false;
  // Capacity first: a frame that does not fit is dropped and the WQE stays posted.
  uint64_t capacity = 0;
  for (a.segments = 0; a.segments * wqe_format::kSegment < stride; ++a.segments) {
    const uint8_t* seg = &a.wqe[a.segments * wqe_format::kSegment];
    if (load_be32(seg + 4) == wqe_format::kInvalidLkey) break;
    capacity += load_be32(seg) & ~wqe_format::kInlineFlag;
  }
  if (a.frame.size() <= capacity) return true;
  ++rq->too_big;
  return ++counters_.rx_too_big, false;
}

bool EthQueues::scatter(Arrival& a) {
  uint32_t written = 0;
  for (uint32_t s = 0; s < a.segments && written < a.frame.size(); ++s) {
    const uint8_t* seg = &a.wqe[s * wqe_format::kSegment];
    const uint32_t n = std::min<uint32_t>(load_be32(seg) & ~wqe_format::kInlineFlag, uint32_t(a.frame.size()) - written);
    std::vector<Chunk> chunks;
    if (translate(load_be32(seg + 4), load_be64(seg + 8), n, true, chunks) != Fault::kNone) {
      ++counters_.rx_bad_lkey;
      return fail_receive(a, cqe_syndrome::kLocalProtection);
    }
    for (const Chunk& c : chunks) {
      if (!f_.memory->write(c.address, std::span<const uint8_t>(a.frame).subspan(written, c.length))) {
        ++counters_.rx_dma_faults;
        return fail_receive(a, cqe_syndrome::kLocalProtection);
      }
      written += c.length;
    }
  }
  a.rq->consumer = (a.rq->consumer + 1) & kCounterMask;
  return true;
}

bool EthQueues::fail_receive(Arrival& a, uint8_t syndrome) {
  EthReceiveQueue* rq = a.rq;
  write_cqe(f_, rq->cqn, [&](std::span<uint8_t> c) {
    store_be32(&c[cqe::kSrqnUserIndex], get(rq->context, kWqUserIndex));
    store_be32(&c[cqe::kSopDropQpn], a.rqn & 0xffffff);
    store_be16(&c[cqe::kWqeCounter], a.index);
    c[cqe::kErrSyndrome] = syndrome;
    c[cqe::kOpOwn] = uint8_t(cqe::kResponderError << 4);
  }, true);
  ++counters_.rx_error_cqes;
  rq->consumer = (rq->consumer + 1) & kCounterMask;
  rq->state = WqState::kError;
  rq->context[1] = uint8_t((rq->context[1] & 0x0f) | (uint8_t(WqState::kError) << 4));  // rqc.state [23:20]
  return false;
}

bool EthQueues::complete_receive(Arrival& a) {
  // Checksums as the hardware reports them: the sum of everything after the L2 header, and the
  // L3/L4 verdicts for IPv4/IPv6 TCP/UDP.
  const std::span<const uint8_t> bytes(a.frame);
  const frame::Parsed& parsed = a.parsed;
  uint8_t flags = cqe_eth::kL2Ok;
  uint8_t types = a.stripped ? 0x1 : 0;
  if (parsed.ip_version == 4) {
    types |= cqe_eth::kL3Ipv4 << 2;
    if (frame::ipv4_header_ok(bytes, parsed)) flags |= cqe_eth::kL3Ok;
  } else if (parsed.ip_version == 6) {
    types |= cqe_eth::kL3Ipv6 << 2;
    if (!parsed.truncated) flags |= cqe_eth::kL3Ok;  // IPv6 has no header checksum; its length must hold
  }
  if (parsed.l4_offset != 0) {
    types |= (parsed.l4_protocol == frame::kProtoTcp ? cqe_eth::kL4Tcp : cqe_eth::kL4Udp) << 4;
    if (frame::l4_checksum_ok(bytes, parsed)) flags |= cqe_eth::kL4Ok;
  }
  const uint16_t checksum = frame::fold(frame::sum16(bytes.subspan(frame::kEthHeaderSize)));
  const CqeResult result = write_cqe(f_, a.rq->cqn, [&](std::span<uint8_t> c) {
    store_be16(&c[cqe_eth::kChecksum], checksum);
    c[cqe_eth::kHdsIpExt] = flags;
    c[cqe_eth::kL4L3HdrType] = types;
    if (a.stripped) store_be16(&c[cqe_eth::kVlanInfo], parsed.vlan_tci);
    store_be32(&c[cqe::kByteCount], uint32_t(bytes.size()));
    store_be32(&c[cqe::kSrqnUserIndex], get(a.rq->context, kWqUserIndex));
    store_be32(&c[cqe::kSopDropQpn], a.flow_tag & 0xffffff);
    store_be16(&c[cqe::kWqeCounter], a.index);
    c[cqe::kOpOwn] = uint8_t(cqe::kRespSend << 4);
  });
  if (result != CqeResult::kWritten) return ++counters_.rx_cqe_failures, false;
  ++a.rq->frames;
  a.rq->bytes += bytes.size();
  ++counters_.rx_frames;
  ++counters_.rx_cqes;
  counters_.rx_bytes += bytes.size();
  return true;
}

}  // namespace hcaemu::model
