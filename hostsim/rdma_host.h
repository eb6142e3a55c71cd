#pragma once
// Two functions, each with its own simulated host memory, firmware and RdmaEngine, joined by a
// test wire that holds every frame until the test delivers it (so a test can drop, reorder,
// duplicate or corrupt any of them). No SystemC kernel runs: the engine's model time is not
// spent; each node keeps the model time its timers count in, which fire_timers() and
// expire_timers() advance to the deadlines (no wall-clock waits, the same run every time).
//
// The control path goes through the command interface (mlx5-device-bringup.md section 6): PD, CQ,
// MTT MKEY, RC QP with its PAS buffer and doorbell record, RST2INIT/INIT2RTR/RTR2RTS with a RoCEv2
// path, SET_ROCE_ADDRESS, MODIFY_NIC_VPORT_CONTEXT(roce_en). The data path is written as libmlx5
// writes it (section 7): send WQEs segment by segment into the SQ ring, the SQ doorbell record,
// the 8-byte UAR doorbell (ctrl dword0/dword1), receive WQEs ended by MLX5_INVALID_LKEY and the RQ
// doorbell record, CQEs polled by owner bit with the CI published in the CQ doorbell record.
#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>

#include "model/prm/bits.h"
#include "model/objects/memory_protection.h"
#include "model/rdma/engine.h"
#include "model/queues/doorbell_unit.h"
#include "model/queues/send_wqe.h"
#include "model/timing_preset.h"
#include "pcie/model_time.h"
#include "pcie/timed_host_memory.h"
#include "hostsim/host_function.h"
#include "transport/roce_packet.h"

namespace hcaemu::hostsim {

// ---- The wire ----------------------------------------------------------------------------------

struct WireFrame {
  int to = 0;  // node index
  std::vector<uint8_t> bytes;
};

struct Wire {
  std::deque<WireFrame> frames;  // in flight, oldest first
  // Consulted for each frame at delivery: false drops it (the frame may also be changed, or
  // copies pushed onto `frames`).
  std::function<bool(WireFrame&)> filter;
  uint64_t delivered = 0, dropped = 0, unclaimed = 0;
  // Buffers of delivered frames, used again for new ones: a stream keeps hundreds of MTU-sized
  // frames in flight, and allocating each anew made the allocator return and fault in pages.
  std::vector<std::vector<uint8_t>> spare;

  // The node owning each MAC (index = node), for frames a port routes by destination address.
  std::vector<std::array<uint8_t, 6>> macs;

  // Where a frame goes by its destination MAC, as a switch without learning would send it: the
  // node owning it (its sender too: local loopback), every other node for broadcast and
  // multicast, nowhere (counted) for an unknown address.
  void route(int from, std::span<const uint8_t> frame) {
    if (frame.size() < 6) return void(++unclaimed);
    if ((frame[0] & 1) != 0) {
      for (size_t i = 0; i < macs.size(); ++i)
        if (int(i) != from) send(int(i), frame);
      return;
    }
    for (size_t i = 0; i < macs.size(); ++i)
      if (std::equal(macs[i].begin(), macs[i].end(), frame.begin())) return send(int(i), frame);
    ++unclaimed;
  }

  // Keeps the sender's buffer and gives it a spare one (no copy).
  void send_buffer(int to, std::vector<uint8_t>& frame) {
    std::vector<uint8_t> bytes = take_spare();
    bytes.swap(frame);
    frames.push_back({to, std::move(bytes)});
  }

  void send(int to, std::span<const uint8_t> frame) {
    std::vector<uint8_t> bytes = take_spare();
    bytes.assign(frame.begin(), frame.end());
    frames.push_back({to, std::move(bytes)});
  }
  std::vector<uint8_t> take_spare() {
    if (spare.empty()) return {};
    std::vector<uint8_t> bytes = std::move(spare.back());
    spare.pop_back();
    return bytes;
  }
  void recycle(std::vector<uint8_t>&& bytes) {
    if (spare.size() < 4096) spare.push_back(std::move(bytes));
  }
};

// The RoCE packet in a frame (payload points into `frame`).
inline transport::ParseResult parse(const WireFrame& frame) { return transport::parse_frame(frame.bytes); }
inline uint8_t opcode_of(const WireFrame& frame) { return parse(frame).packet.opcode; }
inline uint32_t psn_of(const WireFrame& frame) { return parse(frame).packet.psn; }

// ---- Host-side objects ---------------------------------------------------------------------------

struct Cq {
  uint32_t cqn = 0, log_size = 0;
  uint64_t ring = 0, dbr = 0;
  uint32_t ci = 0;      // consumer index, as libmlx5 keeps it
  uint32_t arm_sn = 0;  // arm sequence number (bumped per completion event handled)
};

// The fields of a CQE libmlx5 reads (mlx5_cqe64 / mlx5_err_cqe).
struct Cqe {
  uint8_t opcode = 0;                  // op_own [7:4]
  uint8_t syndrome = 0, vendor_syndrome = 0;
  uint8_t send_opcode = 0;             // sop_drop_qpn [31:24]
  uint32_t qpn = 0;
  uint32_t byte_cnt = 0;
  uint32_t imm = 0;                    // imm_inval_pkey as a BE32
  uint16_t wqe_counter = 0;
  uint32_t user_index = 0;             // srqn_uidx [23:0]: the QP's (or XRC SRQ's) user index (cqe_version 1)
  uint32_t flags_rqpn = 0;             // datagrams: [29:28] GRH, [25:24] RoCE L3 header type, [23:0] source QP
};

// A memory region: an MTT MKEY over host pages allocated in reverse order, so consecutive virtual
// pages are never physically adjacent.
struct Mr {
  uint32_t key = 0;
  uint64_t iova = 0, length = 0;
  std::vector<uint64_t> pages;  // host address of virtual page k of the region
  uint64_t va(uint64_t offset) const { return iova + offset; }
};

struct Qp {
  uint32_t qpn = 0, pd = 0;
  uint32_t user_index = 0;  // qpc.user_index, as libmlx5 gives each QP one (its CQEs carry it)
  uint8_t service = qp_st::kRc;
  Cq* scq = nullptr;
  Cq* rcq = nullptr;
  uint64_t buffer = 0, dbr = 0;
  uint32_t log_rq_size = 4, log_rq_stride = 3, log_sq_size = 6;  // 16 x 128-byte RQ WQEs, 64 WQEBBs
  uint32_t sq_pi = 0;    // libmlx5 sq.cur_post: WQEBBs posted
  uint32_t rq_head = 0;  // receive WQEs posted
  bool own_rq = true;    // false: receives come from an SRQ, the buffer holds only the SQ
  uint32_t counter_set = 0;  // the queue counter set RST2INIT binds it to (0: none)
  uint64_t rq_bytes() const { return own_rq ? (uint64_t(1) << log_rq_size) << (4 + log_rq_stride) : 0; }
  uint64_t sq_bytes() const { return (uint64_t(1) << log_sq_size) * 64; }
  uint32_t rq_max_sges() const { return (16u << log_rq_stride) / 16; }
};

// A QP's ring sizes (log2): the RQ in receive WQEs, the SQ in 64-byte WQEBBs.
struct QueueSizes {
  uint32_t log_sq_size = 6, log_rq_size = 4;
  uint32_t log_rq_stride = 3;  // 16 << it bytes per receive WQE: 128, a next segment's room and 7 SGEs
};

// A shared receive queue as libmlx5 lays it out: WQEs linked through their next segment, initially
// slot i -> i + 1; the device takes them from the head and follows the links.
struct Srq {
  uint32_t srqn = 0, log_size = 4, log_stride = 3;  // 16 x 128-byte WQEs: next segment + 7 SGEs
  uint32_t user_index = 0;  // XRC SRQs: xrc_srqc.user_index (the CQEs of what lands in it carry it)
  uint64_t buffer = 0, dbr = 0;
  uint32_t posted = 0;  // WQEs posted (the doorbell record counter)
  uint32_t stride() const { return 16u << log_stride; }
};

// A scatter/gather entry as the application gives it.
struct Sg {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

// One send work request.
struct Wr {
  uint8_t opcode = wqe_op::kSend;
  std::vector<Sg> sges;
  std::optional<std::vector<uint8_t>> inline_data;  // an inline segment instead of the SGEs
  uint64_t remote_va = 0;
  uint32_t rkey = 0;
  uint64_t swap_add = 0, compare = 0;
  uint32_t imm = 0;                  // ctrl imm as a BE32 (immediate, or the rkey to invalidate)
  bool signalled = true, solicited = false;
  uint8_t fence = 0;
  uint16_t stream = 0;                        // a DCI's stream channel (ctrl bytes 9-10)
  std::optional<std::array<uint8_t, 48>> av;  // UD/QP1: the datagram segment (RdmaNode::address_vector)
  uint32_t xrc_srqn = 0;                      // XRC initiator QPs: the XRC SRQ at the target
};

// RC connection attributes (what ibv_modify_qp would carry).
struct RcAttributes {
  uint32_t sq_psn_a = 0x000100, sq_psn_b = 0x000200;  // A's first PSN = B's expected PSN, and back
  uint8_t mtu = 3;                                     // IB enum: 1024 bytes
  uint8_t retry_count = 7, rnr_retry = 7;
  uint8_t log_max_rd_atomic = 4;                       // the requester's initiator depth: 16
  uint8_t ack_timeout = 14;                            // 67 ms; the engine waits at least 200 ms
  uint8_t min_rnr_nak = 1;                             // 10 us; the engine waits at least 1 ms
  bool rre = true, rwe = true, rae = true;
};

namespace access_bits {  // mkc a/rw/rr/lw/lr, and umr_en (a fast-register MR or memory window)
inline constexpr uint32_t kLocalRead = 1u << 10, kLocalWrite = 1u << 11, kRemoteRead = 1u << 12,
                          kRemoteWrite = 1u << 13, kAtomic = 1u << 14, kUmrEn = 1u << 15;
inline constexpr uint32_t kAll = kLocalRead | kLocalWrite | kRemoteRead | kRemoteWrite | kAtomic;
}  // namespace access_bits

// ---- One function with its engine ----------------------------------------------------------------

struct RdmaNode : HostFunction {
  struct Port : EthernetPort {
    Wire* wire = nullptr;
    int from = 0;
    int to = 0;  // the node every frame goes to; kByMac: the wire routes by destination MAC
    static constexpr int kByMac = -1;
    // The port's serialisation (e.g. a device's transmit scheduler); empty: the full port rate.
    std::function<uint64_t(std::span<const uint8_t> frame, size_t wire_bytes, uint64_t start_ps)> serialise;
    uint64_t serialised_ps(std::span<const uint8_t> frame, size_t wire_bytes, uint64_t start_ps, double link_gbps) override {
      return serialise ? serialise(frame, wire_bytes, start_ps)
                       : EthernetPort::serialised_ps(frame, wire_bytes, start_ps, link_gbps);
    }
    void transmit(std::span<const uint8_t> frame) override {
      if (to == kByMac)
        wire->route(from, frame);
      else
        wire->send(to, frame);
    }
    void transmit_buffer(std::vector<uint8_t>& frame) override {
      if (to == kByMac)
        wire->route(from, frame);
      else
        wire->send_buffer(to, frame);
    }
  };

  static constexpr uint32_t kGidIndex = 1;
  static constexpr uint32_t kPageSize = 4096;

  int id = 0;
  Port port;
  RdmaEngine engine{f};
  std::array<uint8_t, 6> mac{};
  transport::Gid gid{};
  static constexpr uint32_t kLogEqSize = 6;
  uint32_t uar = 0, pd = 0, eqn = 0;
  uint64_t eq_ring = 0;
  uint32_t eq_ci = 0;      // EQEs consumed
  DoorbellUnit doorbells;  // the function's UAR page, as the BAR decodes it
  uint64_t clock_ps = 0;                      // the model time the engine's timers count in
  std::optional<TimerDeadline> deadline;      // earliest timer the engine announced
  std::deque<Cq> cqs;
  std::deque<Qp> qps;
  std::deque<Srq> srqs;
  uint64_t next_iova = 0;
  uint8_t next_variant = 0;

  // `peer`: the node every frame goes to (a point-to-point wire), or Port::kByMac.
  RdmaNode(int index, Wire& wire, int peer, uint64_t memory_bytes = kDefaultMemory)
      : HostFunction(memory_bytes), id(index) {
    port.wire = &wire;
    port.from = index;
    port.to = peer;
    engine.set_port(&port);
    f.qp_moved_to_error = [this](uint32_t qpn) { engine.qp_moved_to_error(qpn); };
    f.send_queue_resumed = [this](uint32_t qpn) { engine.send_queue_resumed(qpn); };
    f.page_fault_resumed = [this](const PageFault& fault, uint32_t token, bool error) {
      engine.page_fault_resumed(fault, token, error);
    };
    engine.set_timer_clock([this] { return clock_ps; });
    engine.set_timer_hook([this](const TimerDeadline& when) {
      if (!deadline || when.model_ps < deadline->model_ps) deadline = when;
    });
    mac = {0x02, 0x00, 0x00, 0x00, 0x00, uint8_t(0x0a + index)};
    gid = transport::gid_from_ipv4(0x0a000001u + uint32_t(index));  // 10.0.0.1 / 10.0.0.2
    next_iova = 0x7f0000000000ull + (uint64_t(index) << 36);
    next_variant = uint8_t(0xa0 + 0x10 * index);  // keys of up to six functions never coincide
    uar = alloc(0x802);
    pd = alloc(0x800);
    eq_ring = page();
    for (uint32_t i = 0; i < (1u << kLogEqSize); ++i) *memory.at(eq_ring + 64 * i + 0x3f) = 1;  // owner: not yet written
    eqn = create_eq(kLogEqSize, uar, 0, 0, {eq_ring});
    doorbells.set_sq_hook([this](FunctionContext&, uint32_t, uint32_t, std::span<const uint8_t> data, uint64_t) {
      engine.doorbell(data);
    });
    enable_roce();
    set_roce_address(kGidIndex, gid, mac);
    if (wire.macs.size() <= size_t(index)) wire.macs.resize(index + 1);
    wire.macs[index] = mac;
  }

  // MODIFY_NIC_VPORT_CONTEXT: field_select.roce_en, nic_vport_context.roce_en (mlx5_nic_vport_enable_roce).
  void enable_roce() {
    auto in = input(0x200);
    store_be32(&in[0x0c], 1u << 1);
    store_be32(&in[0x100], 1);
    check((run(0x755, in)) == (0), "run(0x755, in) == 0");
    check(f.vport.roce_en, "f.vport.roce_en");
  }

  // The node's RoCE address: its GID (an IPv4-mapped one makes IPv4 frames) and MAC, as a guest's
  // network stack would give them; the wire delivers by the new MAC from now on.
  void set_address(const transport::Gid& g, const std::array<uint8_t, 6>& m) {
    gid = g;
    mac = m;
    set_roce_address(kGidIndex, gid, mac);
    port.wire->macs[size_t(id)] = mac;
  }

  // SET_ROCE_ADDRESS: a RoCEv2 entry (roce_addr_layout at 0x10), IPv4 for an IPv4-mapped GID.
  void set_roce_address(uint32_t index, const transport::Gid& g, const std::array<uint8_t, 6>& m) {
    auto in = input(0x30);
    store_be32(&in[0x08], index << 16);
    std::copy(g.begin(), g.end(), &in[0x10]);
    store_be32(&in[0x20], (uint32_t(m[0]) << 8) | m[1]);
    store_be32(&in[0x24], (uint32_t(m[2]) << 24) | (uint32_t(m[3]) << 16) | (uint32_t(m[4]) << 8) | m[5]);
    const uint32_t l3_type = transport::is_ipv4_mapped(g) ? 0 : 1;
    store_be32(&in[0x28], (l3_type << 8) | 2u);  // roce_l3_type (0 IPv4, 1 IPv6), roce_version 2
    check((run(0x761, in)) == (0), "run(0x761, in) == 0");
  }

  uint32_t alloc_pd() { return alloc(0x800); }

  // One call into the engine as the device makes it: a work item whose costs are waited out once,
  // at its end, when the caller is a SystemC thread (pcie/model_time.h).
  template <typename Fn>
  auto work_item(Fn&& fn) {
    pcie::DecoupledScope item;
    auto result = fn();
    item.settle();
    return result;
  }

  // ---- CQ ----
  Cq& make_cq(uint32_t log_size = 8) {
    Cq& cq = cqs.emplace_back();
    cq.log_size = log_size;
    const uint64_t bytes = uint64_t(64) << log_size;
    cq.ring = page(bytes);
    cq.dbr = page();
    std::vector<uint64_t> pages;
    for (uint64_t at = 0; at < bytes; at += kPageSize) pages.push_back(cq.ring + at);
    for (uint64_t i = 0; i < (uint64_t(1) << log_size); ++i) *memory.at(cq.ring + 64 * i + 63) = 0xf0;  // invalid, owner 0
    cq.cqn = create_cq(log_size, uar, eqn, cq.dbr, pages);
    return cq;
  }

  std::optional<Cqe> poll(Cq& cq) {
    const uint64_t at = cq.ring + 64 * (cq.ci & ((1u << cq.log_size) - 1));
    // The owner byte first, as a driver does: most polls find nothing, and need not copy the CQE.
    const uint8_t op_own = *memory.at(at + 63);
    if ((op_own >> 4) == 0xf || (op_own & 1) != ((cq.ci >> cq.log_size) & 1)) return std::nullopt;
    const auto e = read(at, 64);
    Cqe c;
    c.opcode = op_own >> 4;
    c.syndrome = e[0x37];
    c.vendor_syndrome = e[0x36];
    c.send_opcode = e[0x38];
    c.qpn = load_be32(&e[0x38]) & 0xffffff;
    c.byte_cnt = load_be32(&e[0x2c]);
    c.imm = load_be32(&e[0x24]);
    c.wqe_counter = load_be16(&e[0x3c]);
    c.flags_rqpn = load_be32(&e[0x18]);
    c.user_index = load_be32(&e[0x20]) & 0xffffff;
    ++cq.ci;
    put32(cq.dbr, cq.ci & 0xffffff);
    return c;
  }
  std::vector<Cqe> drain(Cq& cq) {
    std::vector<Cqe> all;
    while (auto c = poll(cq)) all.push_back(*c);
    return all;
  }

  // ---- MKEY ----
  // CREATE_MKEY in MTT mode over `length` bytes starting `offset` bytes into its first page.
  Mr reg_mr(uint64_t length, uint32_t access = access_bits::kAll, uint32_t pd_number = 0, uint32_t offset = 0) {
    if (pd_number == 0) pd_number = pd;
    Mr mr;
    mr.iova = next_iova + offset;
    mr.length = length;
    const uint64_t npages = length == 0 ? 1 : ((mr.iova + length - 1) / kPageSize) - (mr.iova / kPageSize) + 1;
    next_iova += (npages + 16) * kPageSize;
    for (uint64_t i = 0; i < npages; ++i) mr.pages.push_back(page());
    std::reverse(mr.pages.begin(), mr.pages.end());
    const uint32_t octwords = uint32_t((npages + 1) / 2);
    auto in = input(0x110 + 16 * octwords);
    const uint8_t variant = next_variant++;
    store_be32(&in[0x10], access | access_bits::kLocalRead | (1u << 8));  // access_mode_1_0 = MTT
    store_be32(&in[0x14], 0xffffff00u | variant);
    store_be32(&in[0x1c], pd_number);
    store_be64(&in[0x20], mr.iova);
    store_be64(&in[0x28], length);
    store_be32(&in[0x44], octwords);
    store_be32(&in[0x48], 12);
    store_be32(&in[0x60], octwords);
    for (uint64_t i = 0; i < npages; ++i) store_be64(&in[0x110 + 8 * i], mr.pages[i] | 3);  // MLX5_IB_MTT_PRESENT
    check((run(0x200, in)) == (0), "run(0x200, in) == 0");
    mr.key = (object() << 8) | variant;
    return mr;
  }

  // Bytes of a region through its page list (what the application sees at iova + offset).
  template <typename Fn>
  void walk(const Mr& mr, uint64_t offset, uint64_t size, Fn fn) {
    uint64_t done = 0;
    while (done < size) {
      const uint64_t va = mr.iova + offset + done;
      const uint64_t index = va / kPageSize - mr.iova / kPageSize;
      const uint64_t n = std::min<uint64_t>(size - done, kPageSize - va % kPageSize);
      if (!check((index) < (mr.pages.size()), "index < mr.pages.size()")) return;
      fn(mr.pages[index] + va % kPageSize, done, n);
      done += n;
    }
  }
  void put(const Mr& mr, uint64_t offset, std::span<const uint8_t> bytes) {
    walk(mr, offset, bytes.size(), [&](uint64_t address, uint64_t at, uint64_t n) {
      if (!check(memory.write(address, bytes.subspan(at, n)), "memory.write(address, bytes.subspan(at, n))")) return;
    });
  }
  std::vector<uint8_t> get(const Mr& mr, uint64_t offset, uint64_t size) {
    std::vector<uint8_t> out(size);
    walk(mr, offset, size, [&](uint64_t address, uint64_t at, uint64_t n) {
      if (!check(memory.read(address, std::span(out).subspan(at, n)), "memory.read(address, std::span(out).subspan(at, n))")) return;
    });
    return out;
  }
  void put64(const Mr& mr, uint64_t offset, uint64_t value) {  // host byte order (little-endian)
    std::array<uint8_t, 8> b{};
    store_le64(b.data(), value);
    put(mr, offset, b);
  }
  uint64_t get64(const Mr& mr, uint64_t offset) { return load_le64(get(mr, offset, 8).data()); }

  void put32(uint64_t address, uint32_t value) {  // a BE32 doorbell-record word
    std::array<uint8_t, 4> b{};
    store_be32(b.data(), value);
    if (!check(memory.write(address, b), "memory.write(address, b)")) return;
  }

  // ---- QP ----
  // XRC QPs (xrcd != 0) are created as mlx5_ib creates them: rq_type SRQ naming some SRQ (the
  // driver's own), the XRC domain at 0x98.
  // pd_number kNoPd: qpc.pd 0, as the 6.1 driver creates its UMR QP.
  static constexpr uint32_t kNoPd = 0xffffffffu;
  // `edit_qpc`, if given, sets further qpc fields (a DCI's streams) before the command goes.
  Qp& create_qp(Cq& scq, Cq& rcq, uint32_t pd_number = 0, uint8_t service = qp_st::kRc, const Srq* srq = nullptr,
                uint32_t xrcd = 0, QueueSizes sizes = {}, const std::function<void(std::span<uint8_t>)>& edit_qpc = {}) {
    Qp& qp = qps.emplace_back();
    qp.user_index = 0x100 + uint32_t(qps.size());
    qp.service = service;
    qp.log_sq_size = sizes.log_sq_size;
    qp.log_rq_size = sizes.log_rq_size;
    qp.log_rq_stride = sizes.log_rq_stride;
    qp.own_rq = srq == nullptr;
    qp.pd = pd_number == kNoPd ? 0 : pd_number != 0 ? pd_number : pd;
    qp.scq = &scq;
    qp.rcq = &rcq;
    const uint64_t bytes = qp.rq_bytes() + qp.sq_bytes();
    qp.buffer = page(bytes);
    qp.dbr = page();
    std::vector<uint64_t> pages;
    for (uint64_t at = 0; at < bytes; at += kPageSize) pages.push_back(qp.buffer + at);
    auto in = input(0x110);
    auto qpc = std::span(in).subspan(0x18, 0xe8);
    set(qpc, Field{0x00, 23, 16}, service);  // st
    set(qpc, Field{0x00, 12, 11}, 3);  // pm_state migrated
    set(qpc, Field{0x04, 23, 0}, qp.pd);
    set(qpc, Field{0x08, 22, 19}, qp.log_rq_size);
    set(qpc, Field{0x08, 18, 16}, qp.log_rq_stride);
    set(qpc, Field{0x08, 14, 11}, qp.log_sq_size);
    set(qpc, Field{0x10, 23, 0}, qp.user_index);
    set(qpc, Field{0x0c, 23, 0}, uar);
    set(qpc, Field{0x7c, 23, 0}, scq.cqn);
    set(qpc, Field{0x9c, 23, 0}, rcq.cqn);
    set64(qpc, 0xa0, qp.dbr);
    if (srq != nullptr) {
      set(qpc, Field{0xac, 26, 24}, rq_type::kSrq);
      set(qpc, Field{0xac, 23, 0}, srq->srqn);
    }
    if (xrcd != 0) set(qpc, Field{0x98, 23, 0}, xrcd);
    if (edit_qpc) edit_qpc(qpc);
    put_pas(in, 0x110, pages);
    check((run(0x500, in)) == (0), "run(0x500, in) == 0");
    qp.qpn = object();
    return qp;
  }

  QueuePair& state_of(const Qp& qp) { return *f.resources.qps.find(qp.qpn); }
  QpState state(const Qp& qp) {
    const QueuePair* q = f.resources.qps.find(qp.qpn);
    return q != nullptr ? q->state : QpState::kReset;
  }

  static constexpr uint32_t kOptRre = 1u << 1, kOptRae = 1u << 2, kOptRwe = 1u << 3;  // opt_param_mask bits
  std::vector<uint8_t> modify_input(const Qp& qp) {
    auto in = input(0x100);
    store_be32(&in[0x08], qp.qpn);
    return in;
  }
  static std::span<uint8_t> qpc_of(std::vector<uint8_t>& in) { return std::span(in).subspan(0x18, 0xe8); }

  void rst2init(const Qp& qp, const RcAttributes& a) {
    auto in = modify_input(qp);
    auto qpc = qpc_of(in);
    set(qpc, Field{0x18, 15, 0}, 0);   // ads.pkey_index
    set(qpc, Field{0x3c, 23, 16}, 1);  // ads.vhca_port_num
    set(qpc, Field{0x0c, 31, 24}, qp.counter_set);
    set(qpc, Field{0x90, 15, 15}, a.rre);
    set(qpc, Field{0x90, 14, 14}, a.rwe);
    set(qpc, Field{0x90, 13, 13}, a.rae);
    if (!check((run(0x502, in)) == (0), "run(0x502, in) == 0")) return;
  }
  void init2rtr(const Qp& qp, const RcAttributes& a, uint32_t remote_qpn, const RdmaNode& remote, uint32_t rq_psn) {
    auto in = modify_input(qp);
    auto qpc = qpc_of(in);
    set(qpc, Field{0x08, 31, 29}, a.mtu);
    set(qpc, Field{0x08, 28, 24}, 30);  // log_msg_max
    set(qpc, Field{0x14, 23, 0}, remote_qpn);
    set(qpc, Field{0x20, 23, 16}, kGidIndex);  // ads.src_addr_index
    set(qpc, Field{0x20, 7, 0}, 64);           // ads.hop_limit
    std::copy(remote.gid.begin(), remote.gid.end(), &qpc[0x28]);  // ads.rgid_rip
    set(qpc, Field{0x38, 15, 0}, 0xc000u + qp.qpn % 0x3fff);     // ads.udp_sport
    set(qpc, Field{0x3c, 23, 16}, 1);
    set(qpc, Field{0x3c, 15, 0}, (uint32_t(remote.mac[0]) << 8) | remote.mac[1]);
    set(qpc, Field{0x40, 31, 0},
        (uint32_t(remote.mac[2]) << 24) | (uint32_t(remote.mac[3]) << 16) | (uint32_t(remote.mac[4]) << 8) | remote.mac[5]);
    // RC and XRC carry max_dest_rd_atomic at RTR, so mlx5_ib re-sends the access flags with the
    // RRE/RWE/RAE optional bits; UC carries no access flags there (nor the bits).
    if (qp.service != qp_st::kUc) {
      set(qpc, Field{0x90, 23, 21}, 4);  // log_rra_max
      set(qpc, Field{0x90, 15, 15}, a.rre);
      set(qpc, Field{0x90, 14, 14}, a.rwe);
      set(qpc, Field{0x90, 13, 13}, a.rae);
      store_be32(&in[0x10], kOptRre | kOptRwe | kOptRae);  // opt_param_mask
    }
    set(qpc, Field{0x94, 28, 24}, a.min_rnr_nak);
    set(qpc, Field{0x94, 23, 0}, rq_psn);
    if (!check((run(0x503, in)) == (0), "run(0x503, in) == 0")) return;
  }
  void rtr2rts(const Qp& qp, const RcAttributes& a, uint32_t sq_psn) {
    auto in = modify_input(qp);
    auto qpc = qpc_of(in);
    set(qpc, Field{0x20, 31, 27}, a.ack_timeout);
    set(qpc, Field{0x70, 23, 21}, a.log_max_rd_atomic);  // log_sra_max
    set(qpc, Field{0x70, 18, 16}, a.retry_count);
    set(qpc, Field{0x70, 15, 13}, a.rnr_retry);
    set(qpc, Field{0x78, 23, 0}, sq_psn);
    if (!check((run(0x504, in)) == (0), "run(0x504, in) == 0")) return;
  }
  // A UD QP up to RTS as ibv_ud_pingpong brings it: Q_Key at INIT, nothing at RTR, the PSN at RTS.
  void bring_up_ud(const Qp& qp, uint32_t qkey, uint32_t sq_psn = 0) {
    auto in = modify_input(qp);
    set(qpc_of(in), Field{0xa8, 31, 0}, qkey);
    set(qpc_of(in), Field{0x3c, 23, 16}, 1);  // ads.vhca_port_num
    if (!check((run(0x502, in)) == (0), "run(0x502, in) == 0")) return;
    if (!check((run(0x503, modify_input(qp))) == (0), "run(0x503, modify_input(qp)) == 0")) return;
    in = modify_input(qp);
    set(qpc_of(in), Field{0x78, 23, 0}, sq_psn);
    if (!check((run(0x504, in)) == (0), "run(0x504, in) == 0")) return;
  }
  // The 48-byte address vector libmlx5 copies from an AH into a UD WQE (struct mlx5_wqe_av).
  std::array<uint8_t, 48> address_vector(const RdmaNode& remote, uint32_t remote_qpn, uint32_t qkey) const {
    std::array<uint8_t, 48> av{};
    store_be32(&av[0x00], qkey);
    store_be32(&av[0x08], 0x80000000u | remote_qpn);  // MLX5_EXTENDED_UD_AV
    store_be16(&av[0x0e], 0xc123);                    // rlid: the UDP source port on RoCE v2
    std::copy(remote.mac.begin(), remote.mac.end(), &av[0x14]);
    av[0x1b] = 64;                                     // hop limit
    store_be32(&av[0x1c], (1u << 30) | (uint32_t(kGidIndex) << 20));  // GRH, sgid index
    std::copy(remote.gid.begin(), remote.gid.end(), &av[0x20]);
    return av;
  }

  // DC: the address vector libmlx5's mlx5dv_wr_set_dc_addr writes into a DCI's WQE (the access key
  // in place of the Q_Key, the DCT number as the remote QPN).
  std::array<uint8_t, 48> dc_address_vector(const RdmaNode& remote, uint32_t dctn, uint64_t access_key) const {
    std::array<uint8_t, 48> av = address_vector(remote, dctn, 0);
    store_be64(&av[0x00], access_key);
    return av;
  }
  // CREATE_DCT as mlx5_ib sends it at the DCT's INIT2RTR (dctc at 0x10); returns the DCT number.
  uint32_t create_dct(const Cq& cq, const Srq& srq, uint64_t access_key, const RcAttributes& a = {}, uint32_t user_index = 0x900) {
    auto in = input(0x80);
    auto dctc = std::span(in).subspan(0x10, 0x40);
    set(dctc, Field{0x04, 23, 0}, user_index);
    set(dctc, Field{0x08, 23, 0}, cq.cqn);
    set(dctc, Field{0x0c, 23, 20}, a.rae ? 1 : 0);  // atomic_mode IB_COMP
    set(dctc, Field{0x0c, 19, 19}, a.rre);
    set(dctc, Field{0x0c, 18, 18}, a.rwe);
    set(dctc, Field{0x0c, 17, 17}, a.rae);
    set(dctc, Field{0x10, 12, 8}, a.min_rnr_nak);
    set(dctc, Field{0x14, 23, 0}, srq.srqn);
    set(dctc, Field{0x18, 23, 0}, pd);
    set64(dctc, 0x20, access_key);
    set(dctc, Field{0x28, 26, 24}, a.mtu);
    set(dctc, Field{0x28, 23, 16}, 1);  // port
    set(dctc, Field{0x2c, 23, 16}, kGidIndex);
    set(dctc, Field{0x2c, 7, 0}, 64);  // hop limit
    if (!check(run(0x710, in) == 0, "CREATE_DCT")) return 0;
    return object();
  }
  // A DCI up to RTS as libmlx5 brings it (no address: each WQE names its DCT).
  void bring_up_dci(const Qp& dci, const RcAttributes& a, uint32_t sq_psn) {
    auto in = modify_input(dci);
    set(qpc_of(in), Field{0x3c, 23, 16}, 1);  // ads.vhca_port_num
    if (!check(run(0x502, in) == 0, "DCI RST2INIT")) return;
    in = modify_input(dci);
    set(qpc_of(in), Field{0x08, 31, 29}, a.mtu);
    set(qpc_of(in), Field{0x08, 28, 24}, 30);  // log_msg_max
    if (!check(run(0x503, in) == 0, "DCI INIT2RTR")) return;
    rtr2rts(dci, a, sq_psn);
  }

  // SQERR2RTS_QP: ibv_modify_qp(IBV_QPS_RTS, cur_qp_state IBV_QPS_SQE), as the MAD layer and IPoIB do.
  void sqe_to_rts(const Qp& qp) { if (!check((run(0x506, modify_input(qp))) == (0), "run(0x506, modify_input(qp)) == 0")) return; }
  // 2ERR_QP, as ibv_modify_qp(IBV_QPS_ERR) sends it.
  void to_error(const Qp& qp) { if (!check((run(0x507, modify_input(qp))) == (0), "run(0x507, modify_input(qp)) == 0")) return; }
  // 2RST: the driver starts its rings again from 0 (libmlx5 mlx5_modify_qp -> mlx5_init_qp_indices).
  void to_reset(Qp& qp) {
    if (!check((run(0x50a, modify_input(qp))) == (0), "run(0x50a, modify_input(qp)) == 0")) return;
    qp.sq_pi = 0;
    qp.rq_head = 0;
    put32(qp.dbr, 0);
    put32(qp.dbr + 4, 0);
  }

  // ---- Send queue ----
  // Builds a WQE as libmlx5's mlx5_post_send does for RC (ctrl, raddr, atomic, data or inline).
  std::vector<uint8_t> build_wqe(const Qp& qp, const Wr& wr) {
    std::vector<uint8_t> w(16, 0);
    store_be32(&w[0], ((qp.sq_pi & 0xffff) << 8) | wr.opcode);
    w[11] = uint8_t((wr.fence << 5) | (wr.signalled ? 0x08 : 0) | (wr.solicited ? 0x02 : 0));
    store_be16(&w[9], wr.stream);
    store_be32(&w[12], wr.imm);
    auto segment = [&]() -> uint8_t* {
      w.resize(w.size() + 16, 0);
      return &w[w.size() - 16];
    };
    if (qp.service == qp_st::kXrc) store_be32(segment(), wr.xrc_srqn);  // mlx5_wqe_xrc_seg
    if (wr.av) std::copy(wr.av->begin(), wr.av->end(), w.insert(w.end(), 48, 0));
    const bool raddr = wr.opcode == wqe_op::kRdmaWrite || wr.opcode == wqe_op::kRdmaWriteImm ||
                       wr.opcode == wqe_op::kRdmaRead || wr.opcode == wqe_op::kAtomicCs || wr.opcode == wqe_op::kAtomicFa;
    if (raddr) {
      uint8_t* s = segment();
      store_be64(s, wr.remote_va);
      store_be32(s + 8, wr.rkey);
    }
    if (wr.opcode == wqe_op::kAtomicCs || wr.opcode == wqe_op::kAtomicFa) {
      uint8_t* s = segment();
      store_be64(s, wr.swap_add);
      store_be64(s + 8, wr.compare);
    }
    if (wr.inline_data) {  // libmlx5 copies the SGEs' bytes behind one inline header
      const std::vector<uint8_t>& data = *wr.inline_data;
      const size_t at = w.size();
      w.resize(at + ((4 + data.size() + 15) & ~size_t(15)), 0);
      store_be32(&w[at], 0x80000000u | uint32_t(data.size()));
      std::copy(data.begin(), data.end(), &w[at + 4]);
    } else {
      for (const Sg& sg : wr.sges) {
        uint8_t* s = segment();
        store_be32(s, sg.length);
        store_be32(s + 4, sg.lkey);
        store_be64(s + 8, sg.addr);
      }
    }
    store_be32(&w[4], (qp.qpn << 8) | uint32_t(w.size() / 16));
    return w;
  }

  // Copies `wqe` into the SQ ring at the producer, 16 bytes at a time with wrap; the producer moves
  // by `wqebbs` (default: what the bytes occupy). Returns the WQE's index.
  uint16_t put_wqe(Qp& qp, std::span<const uint8_t> wqe, std::optional<uint32_t> wqebbs = std::nullopt) {
    const uint16_t index = uint16_t(qp.sq_pi);
    for (size_t at = 0; at < wqe.size(); at += 16) {
      const uint64_t offset = (uint64_t(qp.sq_pi) * 64 + at) % qp.sq_bytes();
      const size_t n = std::min<size_t>(16, wqe.size() - at);
      check(memory.write(qp.buffer + qp.rq_bytes() + offset, wqe.subspan(at, n)), "memory.write(qp.buffer + qp.rq_bytes() + offset, wqe.subspan(at, n))");
    }
    qp.sq_pi += wqebbs.value_or(uint32_t((wqe.size() + 63) / 64));
    last_ctrl_ = {wqe.begin(), wqe.begin() + std::min<size_t>(8, wqe.size())};
    last_ctrl_.resize(8, 0);
    return index;
  }
  // Doorbell record, then the 8-byte UAR write of the last WQE's ctrl dword0/dword1.
  bool ring(Qp& qp) {
    const std::vector<uint8_t> bell = publish(qp);
    return work_item([&] { return engine.doorbell(bell); });
  }
  // ---- UAR doorbells, as the driver writes them into its UAR page ----
  // A UAR write at `offset` in the node's page (the device decodes it: model/queues/doorbell_unit.h).
  void uar_write(uint32_t offset, std::span<const uint8_t> bytes) {
    work_item([&] { return doorbells.write(f, uint64_t(uar) * 4096 + offset, bytes), true; });
  }
  // The SQ doorbell through the BlueFlame register (libmlx5 with BlueFlame on writes the WQE's
  // first 8 bytes, ctrl dword0/dword1, at +0x800 as the doorbell).
  void ring_blueflame(Qp& qp) { uar_write(uar::kBlueFlame, publish(qp)); }
  // Arms a CQ for its next completion (or the next solicited one), as mlx5_arm_cq: the arm
  // doorbell record, then the 64-bit CQ doorbell (arm_sn << 28 | cmd << 24 | ci, then the CQN).
  void arm_cq(Cq& cq, bool solicited_only = false) {
    const uint32_t cmd = solicited_only ? 1 : 0;
    const uint32_t high = (uint32_t(cq.arm_sn & 3) << 28) | (cmd << 24) | (cq.ci & 0xffffff);
    put32(cq.dbr + 4, high);
    std::array<uint8_t, 8> bell{};
    store_be32(&bell[0], high);
    store_be32(&bell[4], cq.cqn);
    uar_write(uar::kCqDoorbell, bell);
  }
  // The EQEs the device has written since the last poll, as (type, data word at 0x18: the CQN of
  // a completion event); the EQ's consumer index then goes back to the device, re-arming it.
  std::vector<std::pair<uint8_t, uint32_t>> poll_eq(bool arm = true) {
    std::vector<std::pair<uint8_t, uint32_t>> events;
    for (;;) {
      const uint64_t at = eq_ring + 64 * (eq_ci & ((1u << kLogEqSize) - 1));
      const auto e = read(at, 64);
      if ((e[0x3f] & 1) != ((eq_ci >> kLogEqSize) & 1)) break;  // not the device's yet
      events.emplace_back(e[0x01], load_be32(&e[0x20 + 0x18]) & 0xffffff);
      ++eq_ci;
    }
    std::array<uint8_t, 4> bell{};
    store_be32(&bell[0], (eqn << 24) | (eq_ci & 0xffffff));
    uar_write(arm ? uar::kEqArmDoorbell : uar::kEqDoorbell, bell);
    return events;
  }

  // The doorbell record written; the UAR bytes returned for a caller that rings later (a host
  // whose device runs on a thread of its own).
  std::vector<uint8_t> publish(Qp& qp) {
    put32(qp.dbr + 4, qp.sq_pi & 0xffff);
    return last_ctrl_;
  }
  // The device's DMA through a PCIe link model: the host's own writes (WQEs, doorbell records)
  // do not cross it. The returned memory must outlive the node's use of it.
  std::unique_ptr<pcie::TimedHostMemory> attach_timed_dma(const model::TimingPreset& preset) {
    auto dma = std::make_unique<pcie::TimedHostMemory>(preset.link_config());
    dma->attach(&memory);
    f.attach_memory(dma.get());
    engine.set_timing(model::RdmaTiming::from_preset(preset));
    engine.set_timer_clock({});  // timers count in the SystemC kernel's model time
    return dma;
  }
  uint16_t post_send(Qp& qp, const Wr& wr, bool ring_now = true) {
    const auto wqe = build_wqe(qp, wr);
    const uint16_t index = put_wqe(qp, wqe);
    if (ring_now) {
      check(ring(qp), "ring(qp)");
    }
    return index;
  }

  // ---- Shared receive queue ----
  // CREATE_SRQ as mlx5_ib sends it for ibv_create_srq (srqc at 0x10, one page of WQEs); with an
  // XRC domain CREATE_XRC_SRQ (xrc_srqc: the domain and the CQ its completions go to).
  Srq& make_srq(uint32_t xrcd = 0, const Cq* cq = nullptr, uint32_t pd_number = 0) {
    Srq& srq = srqs.emplace_back();
    srq.buffer = page(uint64_t(srq.stride()) << srq.log_size);
    srq.dbr = page();
    for (uint32_t i = 0; i < (1u << srq.log_size); ++i) {  // the free list, as mlx5_alloc_srq_buf links it
      std::array<uint8_t, 4> next{};
      store_be16(&next[2], uint16_t((i + 1) & ((1u << srq.log_size) - 1)));
      check(memory.write(srq.buffer + uint64_t(i) * srq.stride(), next), "memory.write(srq.buffer + uint64_t(i) * srq.stride(), next)");
    }
    auto in = input(0x110);
    store_be32(&in[0x10], srq.log_size << 24);
    store_be32(&in[0x14], (srq.log_stride << 24) | xrcd);
    if (cq != nullptr) store_be32(&in[0x18], cq->cqn);
    store_be32(&in[0x28], pd_number != 0 ? pd_number : pd);
    store_be64(&in[0x38], srq.dbr);
    if (xrcd != 0) {
      srq.user_index = 0x800 + uint32_t(srqs.size());
      store_be32(&in[0x10 + 0x10], srq.user_index);  // xrc_srqc.user_index
    }
    put_pas(in, 0x110, {srq.buffer});
    check((run(xrcd != 0 ? 0x705 : 0x700, in)) == (0), "run(xrcd != 0 ? 0x705 : 0x700, in) == 0");
    srq.srqn = object();
    return srq;
  }
  // Fills the WQE at the producer (keeping its link) and moves the doorbell record. Returns its index.
  uint16_t post_srq_recv(Srq& srq, const std::vector<Sg>& sges) {
    const uint32_t slot = srq.posted & ((1u << srq.log_size) - 1);
    const uint64_t at = srq.buffer + uint64_t(slot) * srq.stride();
    std::vector<uint8_t> w = read(at, srq.stride());
    std::fill(w.begin() + 16, w.end(), 0);
    check((sges.size()) <= (srq.stride() / 16 - 1), "sges.size() <= srq.stride() / 16 - 1");
    for (size_t i = 0; i < sges.size(); ++i) {
      store_be32(&w[16 + 16 * i], sges[i].length);
      store_be32(&w[16 + 16 * i + 4], sges[i].lkey);
      store_be64(&w[16 + 16 * i + 8], sges[i].addr);
    }
    if (16 * (sges.size() + 1) < srq.stride()) store_be32(&w[16 + 16 * sges.size() + 4], wqe_format::kInvalidLkey);
    check(memory.write(at, w), "memory.write(at, w)");
    ++srq.posted;
    put32(srq.dbr, srq.posted & 0xffff);
    return uint16_t(slot);
  }

  // ---- Receive queue ----
  uint16_t post_recv(Qp& qp, const std::vector<Sg>& sges) {
    const uint32_t stride = 16u << qp.log_rq_stride;
    const uint16_t index = uint16_t(qp.rq_head);
    std::vector<uint8_t> w(stride, 0);
    check((sges.size()) <= (qp.rq_max_sges()), "sges.size() <= qp.rq_max_sges()");
    for (size_t i = 0; i < sges.size(); ++i) {
      store_be32(&w[16 * i], sges[i].length);
      store_be32(&w[16 * i + 4], sges[i].lkey);
      store_be64(&w[16 * i + 8], sges[i].addr);
    }
    if (sges.size() < qp.rq_max_sges()) store_be32(&w[16 * sges.size() + 4], wqe_format::kInvalidLkey);
    const uint64_t slot = qp.rq_head & ((1u << qp.log_rq_size) - 1);
    check(memory.write(qp.buffer + slot * stride, w), "memory.write(qp.buffer + slot * stride, w)");
    ++qp.rq_head;
    put32(qp.dbr, qp.rq_head & 0xffff);
    return index;
  }

  std::vector<uint8_t> last_ctrl_;  // the 8 doorbell bytes of the last WQE put (the fuzz test rewrites them)
};

// ---- The pair ------------------------------------------------------------------------------------

// A connected RC QP pair: `a` on node A, `b` on node B, each with its own send and receive CQ.
struct Connection {
  Qp* a = nullptr;
  Qp* b = nullptr;
  RcAttributes attributes;
};

// N functions, each on its own host, on one wire. Frames are routed by destination MAC (the nodes'
// MACs 02:00:00:00:00:0a.., GIDs 10.0.0.1..), or, for a pair, simply to the other node.
struct RdmaCluster {
  Wire wire;
  std::deque<RdmaNode> nodes;  // a deque: nodes never move (the engines hold their ports)

  // Each node with `memory_bytes` of host memory (rings, buffers and MRs come out of it).
  explicit RdmaCluster(int count, uint64_t memory_bytes = HostFunction::kDefaultMemory) {
    for (int i = 0; i < count; ++i) nodes.emplace_back(i, wire, RdmaNode::Port::kByMac, memory_bytes);
  }
  RdmaNode& node(int index) { return nodes.at(size_t(index)); }
  size_t size() const { return nodes.size(); }

 protected:
  struct PointToPoint {};
  explicit RdmaCluster(PointToPoint, uint64_t memory_bytes = HostFunction::kDefaultMemory) {
    nodes.emplace_back(0, wire, 1, memory_bytes);
    nodes.emplace_back(1, wire, 0, memory_bytes);
  }

 public:

  // Delivers one frame from the head of the wire (through the filter).
  void deliver_one() {
    WireFrame frame = std::move(wire.frames.front());
    wire.frames.pop_front();
    if (wire.filter && !wire.filter(frame)) {
      ++wire.dropped;
      return;
    }
    ++wire.delivered;
    RdmaNode& to = node(frame.to);
    if (!to.work_item([&] { return to.engine.receive(frame.bytes); })) ++wire.unclaimed;
    wire.recycle(std::move(frame.bytes));
  }
  // Delivers until the wire is empty (frames sent in answer included); returns the count.
  size_t pump(size_t limit = 1'000'000) {
    size_t n = 0;
    while (!wire.frames.empty() && n < limit) {
      deliver_one();
      ++n;
    }
    return n;
  }
  // Takes the frames in flight off the wire (to deliver them in another order, or not at all).
  std::vector<WireFrame> take() {
    std::vector<WireFrame> all(std::make_move_iterator(wire.frames.begin()), std::make_move_iterator(wire.frames.end()));
    wire.frames.clear();
    return all;
  }
  void inject(WireFrame frame) { wire.frames.push_back(std::move(frame)); }

  // Advances a node's model time to the earliest deadline its engine announced, then runs its
  // timers (model time: nothing waits on the wall clock).
  bool fire_timers(RdmaNode& n) {
    if (!n.deadline) return false;
    n.clock_ps = std::max(n.clock_ps, n.deadline->model_ps);
    n.deadline.reset();
    n.work_item([&] { return n.engine.on_timer(), true; });
    return true;
  }

  // Advances a node's model time past every armed timer and runs them. True when one was armed.
  bool expire_timers(RdmaNode& n) {
    bool armed = false;
    for (auto& [qpn, qp] : n.f.resources.qps) {
      if (!qp.rc.req.timer_armed) continue;
      n.clock_ps = std::max(n.clock_ps, qp.rc.req.deadline.model_ps);
      armed = true;
    }
    n.deadline.reset();
    n.work_item([&] { return n.engine.on_timer(), true; });
    return armed;
  }

  // Two QPs of any nodes (the same node too: local loopback) RST -> RTS, pointing at each other.
  static void bring_up(RdmaNode& na, Qp& qa, RdmaNode& nb, Qp& qb, const RcAttributes& attr) {
    na.rst2init(qa, attr);
    nb.rst2init(qb, attr);
    na.init2rtr(qa, attr, qb.qpn, nb, attr.sq_psn_b);
    nb.init2rtr(qb, attr, qa.qpn, na, attr.sq_psn_a);
    na.rtr2rts(qa, attr, attr.sq_psn_a);
    nb.rtr2rts(qb, attr, attr.sq_psn_b);
  }
  // CQs and an RC (or `service`) QP on each of two nodes, RST -> RTS, pointing at each other.
  static Connection connect(RdmaNode& na, RdmaNode& nb, const RcAttributes& attr = {}, uint8_t service = qp_st::kRc) {
    Connection c;
    c.attributes = attr;
    Cq& sa = na.make_cq();
    Cq& ra = na.make_cq();
    Cq& sb = nb.make_cq();
    Cq& rb = nb.make_cq();
    c.a = &na.create_qp(sa, ra, 0, service);
    c.b = &nb.create_qp(sb, rb, 0, service);
    bring_up(na, *c.a, nb, *c.b, attr);
    return c;
  }
};

// Two functions on a point-to-point wire: what A sends reaches B and back, whatever its address.
struct RdmaPair : RdmaCluster {
  RdmaNode& a;
  RdmaNode& b;
  explicit RdmaPair(uint64_t memory_bytes = HostFunction::kDefaultMemory)
      : RdmaCluster(PointToPoint{}, memory_bytes), a(nodes[0]), b(nodes[1]) {}

  using RdmaCluster::bring_up;
  using RdmaCluster::connect;
  void bring_up(Qp& qa, Qp& qb, const RcAttributes& attr) { bring_up(a, qa, b, qb, attr); }
  // CQs and a QP on each side, RST -> RTS, pointing at each other.
  Connection connect(const RcAttributes& attr = {}, uint8_t service = qp_st::kRc) { return connect(a, b, attr, service); }
  // Both QPs through 2RST and up again (fresh rings, the PSNs of `attr`).
  void reconnect(Connection& c, const RcAttributes& attr) {
    a.to_reset(*c.a);
    b.to_reset(*c.b);
    c.attributes = attr;
    bring_up(*c.a, *c.b, attr);
  }
};

// Deterministic test data.
inline std::vector<uint8_t> pattern(size_t size, uint32_t seed) {
  std::vector<uint8_t> bytes(size);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : bytes) {
    x = x * 1664525u + 1013904223u;
    b = uint8_t(x >> 24);
  }
  return bytes;
}

}  // namespace hcaemu::hostsim
