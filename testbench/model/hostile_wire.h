#pragma once
// Hostile frames from the wire: well-formed RoCEv2 frames (the ICRC is right, so every transport
// check is reached) whose headers say whatever a broken or malicious peer could say. Function B
// has an RC, a UC, a UD and an XRC target QP and a DCT with receives posted and its own work in flight; the
// frames name those QPs or others, with PSNs at or near what B expects, rkeys and addresses inside
// its region or not, lengths that fit or overflow, responses it never asked for. Whatever arrives,
// B must answer with a completion, an error CQE, a NAK or a counted drop, never touch memory
// outside its registered region, keep its QPs in a legal state, and work normally afterwards.
// Driven by a seeded generator (rdma_wire_fuzz_test.cpp) or by libFuzzer (fuzz_rdma_wire.cpp).
#include <cstring>
#include <functional>
#include <string>

#include "hostsim/rdma_host.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace hcaemu::model::test {

using namespace hcaemu::hostsim;

constexpr uint8_t kCqeRespSendInv = 0x4, kCqeReqErr = 0xd, kCqeRespErr = 0xe;
constexpr uint32_t kQkey = 0x22222222;
constexpr uint64_t kDcKey = 0x0badc0de;
constexpr uint64_t kRegion = 16384;
constexpr uint64_t kMemory = 4 << 20;  // each side's host memory: rings, regions, guard pages
constexpr uint8_t kGuardByte = 0x5a;

class HostileWire {
 public:
  // Every choice comes from `next`: a seeded generator (the unit test) or the fuzzer's bytes.
  explicit HostileWire(std::function<uint64_t()> next) : rng(std::move(next)) {
    b.bring_up_ud(ud, kQkey);
    p.bring_up(ini, tgt, {});
    a.bring_up_dci(dci, {.retry_count = 2, .rnr_retry = 1}, 0);
    for (uint64_t page : {guard_before, guard_after}) std::memset(b.memory.at(page), kGuardByte, 4096);
  }

  RdmaPair p{kMemory};
  RdmaNode& a = p.a;
  RdmaNode& b = p.b;
  Connection rc = p.connect({.retry_count = 2, .rnr_retry = 1});
  Connection uc = p.connect({}, qp_st::kUc);
  Cq& b_ud_cq = b.make_cq();
  Qp& ud = b.create_qp(b_ud_cq, b_ud_cq, 0, qp_st::kUd);
  // XRC: A's initiator QP, B's target QP with an XRC SRQ of its domain.
  uint32_t a_xrcd = a.alloc(0x80e), b_xrcd = b.alloc(0x80e);
  Cq& a_xrc_cq = a.make_cq();
  Cq& b_xrc_cq = b.make_cq();
  Srq& a_driver_srq = a.make_srq(a_xrcd, &a_xrc_cq);
  Srq& xsrq = b.make_srq(b_xrcd, &b_xrc_cq);
  Qp& ini = a.create_qp(a_xrc_cq, a_xrc_cq, 0, qp_st::kXrc, &a_driver_srq, a_xrcd);
  Qp& tgt = b.create_qp(b_xrc_cq, b_xrc_cq, 0, qp_st::kXrc, &xsrq, b_xrcd);
  // DC: A's DCI, B's DCT with an SRQ of its own.
  Cq& a_dc_cq = a.make_cq();
  Cq& b_dc_cq = b.make_cq();
  Qp& dci = a.create_qp(a_dc_cq, a_dc_cq, 0, qp_st::kDci);
  Srq& dsrq = b.make_srq();
  uint32_t dctn = b.create_dct(b_dc_cq, dsrq, kDcKey);
  uint64_t guard_before = b.page();  // host pages beside B's region that nothing may write
  Mr region = b.reg_mr(kRegion);
  uint64_t guard_after = b.page();
  Mr a_region = a.reg_mr(kRegion);
  std::function<uint64_t()> rng;

  uint64_t pick(uint64_t n) { return rng() % n; }

  // Mostly an opcode of the target's service (RC 0x00-0x17, UC 0x20-0x2b, UD 0x64-0x65, XRC
  // 0xa0-0xb7), else any.
  uint8_t random_opcode(uint8_t service) {
    static constexpr uint8_t kRc[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
                                      0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17};
    static constexpr uint8_t kUc[] = {0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b};
    static constexpr uint8_t kUd[] = {0x64, 0x65};
    if (pick(5) == 0) {
      const uint8_t services[] = {qp_st::kRc, qp_st::kUc, qp_st::kUd, qp_st::kXrc, qp_st::kDct};
      service = services[pick(5)];
    }
    if (service == qp_st::kRc) return kRc[pick(std::size(kRc))];
    if (service == qp_st::kXrc) return uint8_t(transport::opcode::kXrcBase + kRc[pick(std::size(kRc))]);
    if (service == qp_st::kDct) return uint8_t(transport::opcode::kDcBase + kRc[pick(std::size(kRc))]);
    if (service == qp_st::kUc) return kUc[pick(std::size(kUc))];
    return kUd[pick(std::size(kUd))];
  }

  // A frame from A to B with random headers, biased towards what B would accept.
  std::vector<uint8_t> hostile_frame(std::vector<uint8_t>& payload) {
    transport::RocePacket packet;
    packet.src_mac = a.mac;
    packet.dst_mac = b.mac;
    packet.src_gid = a.gid;
    packet.dst_gid = b.gid;
    const Qp* targets[] = {rc.b, uc.b, &ud, &tgt};
    const size_t choice = pick(5);  // 4: the DCT
    const QueuePair& state = choice < 4 ? b.state_of(*targets[choice]) : *b.f.resources.qps.find(dctn);
    packet.opcode = random_opcode(state.st);
    packet.dest_qp = pick(10) == 0 ? uint32_t(pick(2) ? 1 : rng() & 0xffffff) : choice < 4 ? targets[choice]->qpn : dctn;
    // Requests at or near the expected PSN, responses near what B's requester has sent.
    const bool response = packet.opcode >= 0x0d && packet.opcode <= 0x12;
    const uint32_t base = response ? state.rc.req.acked_psn + 1 : state.rc.resp.epsn;
    packet.psn = pick(4) == 0 ? uint32_t(rng()) : transport::psn_add(base & 0xffffff, uint32_t(pick(5)) - 2);
    packet.ack_req = pick(2) == 0;
    packet.solicited = pick(4) == 0;
    const uint64_t inside = region.va(pick(kRegion));
    packet.reth = {.va = pick(4) ? inside : rng(),
                   .rkey = pick(4) ? region.key : uint32_t(rng()),
                   .dma_length = uint32_t(pick(8) ? pick(6000) : rng())};
    packet.atomic = {.va = pick(4) ? inside & ~uint64_t(pick(4) ? 7 : 0) : rng(),
                     .rkey = pick(4) ? region.key : uint32_t(rng()),
                     .swap_add = rng(),
                     .compare = rng()};
    packet.aeth = {.syndrome = uint8_t(rng()), .msn = uint32_t(rng())};
    packet.atomic_ack = rng();
    packet.immediate = uint32_t(rng());
    packet.invalidate_rkey = pick(2) ? region.key : uint32_t(rng());
    packet.deth = {.qkey = pick(4) ? kQkey : uint32_t(rng()), .src_qp = uint32_t(rng())};
    packet.xrc_srqn = pick(6) ? xsrq.srqn : pick(2) ? a_driver_srq.srqn : uint32_t(rng());
    packet.dceth = {.access_key = pick(6) ? kDcKey : rng(), .connect = pick(3) == 0,
                    .initiator = pick(4) ? dci.qpn : uint32_t(rng())};
    payload.resize(pick(3) == 0 ? 0 : pick(4) == 0 ? pick(4400) : 4 * pick(300));
    for (auto& byte : payload) byte = uint8_t(rng());
    packet.payload = payload;
    std::vector<uint8_t> frame = transport::build_frame(packet);
    if (frame.empty()) {  // the opcode carries no payload
      packet.payload = {};
      frame = transport::build_frame(packet);
    }
    return frame;
  }

  // B's own work, so that responses find something outstanding: a READ, a WRITE or a SEND to A.
  void b_sends_something() {
    if (b.state(*rc.b) != QpState::kRts) return;
    const uint8_t ops[] = {wqe_op::kRdmaRead, wqe_op::kRdmaWrite, wqe_op::kSend, wqe_op::kAtomicFa};
    Wr wr{.opcode = ops[pick(4)], .remote_va = a_region.va(8 * pick(kRegion / 16)), .rkey = a_region.key};
    const uint32_t length = wr.opcode == wqe_op::kAtomicFa ? 8 : 1 + uint32_t(pick(3000));
    wr.sges = {{region.va(8 * pick((kRegion - length) / 8)), length, region.key}};
    b.post_send(*rc.b, wr, true);
  }
  // A's XRC initiator sends to B's XRC SRQ, so the target QP has real messages between the hostile ones.
  void a_sends_xrc() {
    if (a.state(ini) != QpState::kRts) return;
    const uint32_t length = 1 + uint32_t(pick(3000));
    a.post_send(ini, {.sges = {{a_region.va(pick(kRegion - length)), length, a_region.key}}, .xrc_srqn = xsrq.srqn});
  }

  // A's DCI sends to B's DCT, so the DCT has real connections between the hostile frames.
  void a_sends_dc() {
    if (a.state(dci) != QpState::kRts) return;
    const uint32_t length = 1 + uint32_t(pick(3000));
    Wr wr{.opcode = pick(2) ? wqe_op::kSend : wqe_op::kRdmaWrite, .sges = {{a_region.va(pick(kRegion - length)), length, a_region.key}},
          .remote_va = region.va(pick(kRegion - length)), .rkey = region.key};
    wr.av = a.dc_address_vector(b, dctn, kDcKey);
    a.post_send(dci, wr);
  }

  void keep_receives_posted() {
    for (auto [qp, node] : {std::pair<Qp*, RdmaNode*>{rc.b, &b}, {uc.b, &b}, {&ud, &b}, {rc.a, &a}}) {
      while (node->state(*qp) != QpState::kError && node->state(*qp) != QpState::kReset &&
             ((qp->rq_head - node->state_of(*qp).rq_consumer) & 0xffff) < 4) {
        const Mr& mr = node == &b ? region : a_region;
        node->post_recv(*qp, {{mr.va(0), uint32_t(kRegion), mr.key}});
      }
    }
    while (((xsrq.posted - b.f.resources.srqs.find(xsrq.srqn)->consumed) & 0xffff) < 4)
      b.post_srq_recv(xsrq, {{region.va(0), uint32_t(kRegion), region.key}});
    while (((dsrq.posted - b.f.resources.srqs.find(dsrq.srqn)->consumed) & 0xffff) < 4)
      b.post_srq_recv(dsrq, {{region.va(0), uint32_t(kRegion), region.key}});
  }

  // What an application does with a QP the wire put in ERR (or a send error in SQE).
  void recover() {
    if (a.state(*rc.a) == QpState::kError || b.state(*rc.b) == QpState::kError) {
      const uint32_t psn = uint32_t(rng()) & 0xffffff;
      p.reconnect(rc, {.sq_psn_a = psn, .sq_psn_b = transport::psn_add(psn, 0x400000), .retry_count = 2, .rnr_retry = 1});
    }
    if (a.state(*uc.a) == QpState::kError || b.state(*uc.b) == QpState::kError) p.reconnect(uc, {});
    if (a.state(ini) == QpState::kError || b.state(tgt) == QpState::kError) {
      a.to_reset(ini);
      b.to_reset(tgt);
      p.bring_up(ini, tgt, {});
    }
    for (auto [node, qp] : {std::pair<RdmaNode*, Qp*>{&a, uc.a}, {&b, uc.b}, {&b, &ud}})
      if (node->state(*qp) == QpState::kSqError) node->sqe_to_rts(*qp);
    if (a.state(dci) == QpState::kError) {
      a.to_reset(dci);
      a.bring_up_dci(dci, {.retry_count = 2, .rnr_retry = 1}, uint32_t(rng()) & 0xffffff);
    }
    if (b.state(ud) == QpState::kError) {
      b.to_reset(ud);
      b.bring_up_ud(ud, kQkey);
    }
  }

  // One round: B's and A's own work now and then, one hostile frame to B, the engines run until
  // quiet, completions drained, QPs checked, recovery. Returns what went wrong ("" when nothing):
  // a completion of an unknown kind, a QP in an illegal state, engines that never go quiet.
  std::string step(uint64_t& good, uint64_t& errors) {
    keep_receives_posted();
    if (pick(8) == 0) b_sends_something();
    if (pick(8) == 0) a_sends_xrc();
    if (pick(8) == 0) a_sends_dc();
    std::vector<uint8_t> payload;
    const std::vector<uint8_t> frame = hostile_frame(payload);
    if (frame.empty()) return "no frame built";
    p.inject({.to = 1, .bytes = frame});
    for (int round = 0; round < 8; ++round) {
      if (p.pump(100'000) >= 100'000u) return "the engines keep talking";
      const bool armed_a = p.expire_timers(a);
      const bool armed_b = p.expire_timers(b);
      if (!armed_a && !armed_b) break;
    }
    for (RdmaNode* n : {&a, &b}) {
      for (Cq& cq : n->cqs) {
        for (const Cqe& e : n->drain(cq)) {
          if (!(e.opcode <= kCqeRespSendInv || e.opcode == kCqeReqErr || e.opcode == kCqeRespErr))
            return "completion of opcode " + std::to_string(e.opcode);
          (e.opcode >= kCqeReqErr ? errors : good)++;
        }
      }
    }
    if (b.f.resources.qps.find(dctn)->state != QpState::kRtr) return "the DCT left its state";
    if (b.f.resources.qps.find(dctn)->rc.dct.connections.size() > DcTarget::kMaxConnections)
      return "the DCT holds more connections than its bound";
    for (auto [node, qp] : {std::pair<RdmaNode*, Qp*>{&b, rc.b}, {&b, uc.b}, {&b, &ud}, {&b, &tgt}, {&a, rc.a},
                            {&a, uc.a}, {&a, &ini}, {&a, &dci}}) {
      const QpState state = node->state(*qp);
      if (!(state == QpState::kRts || state == QpState::kError ||
            (state == QpState::kSqError && node->state_of(*qp).st != qp_st::kRc &&
             node->state_of(*qp).st != qp_st::kXrc && node->state_of(*qp).st != qp_st::kDci)))
        return std::string("a QP in ") + qp_state_name(state);
    }
    recover();
    return "";
  }

  // Nothing outside B's region was written and no DMA left the host memory the functions own.
  std::string memory_intact() {
    if (a.memory.refused() != 0 || b.memory.refused() != 0) return "a DMA outside the functions' memory";
    for (uint64_t page : {guard_before, guard_after})
      if (b.read(page, 4096) != std::vector<uint8_t>(4096, kGuardByte)) return "a guard page was written";
    return "";
  }
};

}  // namespace hcaemu::model::test

#pragma GCC diagnostic pop
