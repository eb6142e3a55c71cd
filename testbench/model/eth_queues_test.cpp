// The Ethernet data path (eth/queues.cpp, eth/frame.cpp): SQ rings with NOP/SEND WQEs incl. wrap,
// frames out of the port, TX CQEs, error CQEs for malformed WQEs; RQ scatter and RX CQEs with
// byte count and checksum flags.
#include "model/eth/frame.h"
#include "model/eth/queues.h"
#include "model/steering/terminals.h"
#include "testbench/model/eth_fixture.h"
#include "testbench/model/ste_builder.h"

namespace hcaemu::model::test {
namespace {

struct RecordingPort : EthernetPort {
  void transmit(std::span<const uint8_t> frame) override { frames.emplace_back(frame.begin(), frame.end()); }
  std::vector<std::vector<uint8_t>> frames;
};

// IPv4/UDP frame with correct checksums and `payload` bytes of data.
std::vector<uint8_t> udp_frame(uint32_t payload) {
  std::vector<uint8_t> f(14 + 20 + 8 + payload, 0);
  const uint8_t dst[6] = {0x02, 0xc9, 0, 0, 0, 1}, src[6] = {0x02, 0xc9, 0, 0, 0, 2};
  std::copy_n(dst, 6, &f[0]);
  std::copy_n(src, 6, &f[6]);
  store_be16(&f[12], 0x0800);
  f[14] = 0x45;
  store_be16(&f[16], uint16_t(20 + 8 + payload));
  f[22] = 64;
  f[23] = 17;
  store_be32(&f[26], 0x0a000001);
  store_be32(&f[30], 0x0a000002);
  store_be16(&f[34], 1234);
  store_be16(&f[36], 4321);
  store_be16(&f[38], uint16_t(8 + payload));
  for (uint32_t i = 0; i < payload; ++i) f[42 + i] = uint8_t(i * 7);
  const frame::Parsed p = frame::parse(f);
  frame::fill_ipv4_checksum(f, p);
  frame::fill_l4_checksum(f, p);
  return f;
}

struct EthPath : EthFunction {
  RecordingPort port;
  EthQueues queues{f};
  uint32_t lkey = 0;
  uint64_t sq_ring = 0, sq_dbr = 0, data = 0;
  uint32_t sqn = 0;
  uint32_t cqes_seen = 0;

  EthPath() {
    queues.set_port(&port);
    Mkey pa;
    pa.length64 = true;
    pa.local_read = pa.local_write = true;
    pa.variant = 0x11;
    lkey = (f.resources.mkeys.insert(pa) << 8) | 0x11;
    sq_ring = page();
    sq_dbr = page();
    data = page(16384);
    sqn = create_sq(sq_dbr, sq_ring, create_tis(), 2);  // 4 WQEBBs: wraps soon
    EXPECT_EQ(modify_state(0x905, sqn, 0, 1), 0);
  }

  // Writes a WQE of 16-byte segments at WQEBB `index`, wrapping at the 4-block ring end.
  void put_wqe(uint32_t index, const std::vector<uint8_t>& bytes) {
    for (size_t at = 0; at < bytes.size(); at += 16) {
      const uint64_t offset = (uint64_t(index) * 64 + at) % 256;
      memory.write(sq_ring + offset, std::span(bytes).subspan(at, 16));
    }
  }
  static std::vector<uint8_t> ctrl(uint16_t index, uint8_t opcode, uint32_t sq, uint32_t ds, bool ce = true) {
    std::vector<uint8_t> c(16, 0);
    store_be32(&c[0], (uint32_t(index) << 8) | opcode);
    store_be32(&c[4], (sq << 8) | ds);
    c[11] = ce ? 0x08 : 0;
    return c;
  }
  // ctrl + eth (inline the first 14 bytes of `frame`) + data segments of `split` bytes each.
  std::vector<uint8_t> send_wqe(uint16_t index, const std::vector<uint8_t>& frame, uint32_t split, uint8_t cs = 0) {
    memory.write(data, std::span(frame).subspan(14));
    std::vector<uint8_t> eth(32, 0);
    eth[4] = cs;
    store_be16(&eth[12], 14);
    std::copy_n(frame.begin(), 14, &eth[14]);
    std::vector<uint8_t> segs;
    for (uint32_t at = 14; at < frame.size(); at += split) {
      std::vector<uint8_t> s(16, 0);
      store_be32(&s[0], std::min<uint32_t>(split, uint32_t(frame.size()) - at));
      store_be32(&s[4], lkey);
      store_be64(&s[8], data + at - 14);
      segs.insert(segs.end(), s.begin(), s.end());
    }
    auto w = ctrl(index, 0x0a, sqn, uint32_t(1 + 2 + segs.size() / 16));
    w.insert(w.end(), eth.begin(), eth.end());
    w.insert(w.end(), segs.begin(), segs.end());
    return w;
  }
  void ring(uint32_t producer) {
    std::vector<uint8_t> word(4);
    store_be32(word.data(), producer);
    memory.write(sq_dbr + 4, word);
    std::vector<uint8_t> bell(8);
    store_be32(&bell[4], sqn << 8);
    EXPECT_TRUE(queues.doorbell(bell));
  }
  std::vector<uint8_t> cqe(uint32_t i) { return read(cq_ring + 64 * i, 64); }
};

TEST(EthSq, NopAndSendProduceFramesAndCqesAcrossTheRingEnd) {
  EthPath t;
  const auto frame1 = udp_frame(60);
  t.put_wqe(0, EthPath::ctrl(0, 0x00, t.sqn, 1));
  t.put_wqe(1, t.send_wqe(1, frame1, 128));  // ds 4: one WQEBB
  t.ring(2);
  ASSERT_EQ(t.port.frames.size(), 1u);
  EXPECT_EQ(t.port.frames[0], frame1);
  auto c0 = t.cqe(0), c1 = t.cqe(1);
  EXPECT_EQ(c0[0x3f], 0x00) << "requester CQE, owner 0 on the first lap";
  EXPECT_EQ(load_be16(&c1[0x3c]), 1u);
  EXPECT_EQ(load_be32(&c1[0x38]), (0x0au << 24) | t.sqn);
  // A 2-WQEBB SEND starting at the last block wraps to block 0; an unsignaled NOP follows.
  const auto frame2 = udp_frame(100);
  t.put_wqe(2, EthPath::ctrl(2, 0x00, t.sqn, 1, false));
  t.put_wqe(3, t.send_wqe(3, frame2, 40));
  t.ring(5);
  ASSERT_EQ(t.port.frames.size(), 2u);
  EXPECT_EQ(t.port.frames[1], frame2);
  EXPECT_EQ(load_be16(&t.cqe(2)[0x3c]), 3u) << "no CQE for the unsignaled NOP";
  EXPECT_EQ(t.queues.counters().tx_nops, 2u);
  EXPECT_EQ(t.f.eth.sqs.find(t.sqn)->consumer, 5u);
}

// Issue 15: on a port shared under QoS (per-VF rates, traffic classes) an Ethernet frame asks the
// port's scheduler for its share of the wire before it leaves, as an RDMA packet does; on a port
// that is not shared it leaves at once, as before.
TEST(EthSq, OnASharedPortEachFrameTakesItsShareOfTheWireBeforeItLeaves) {
  struct SharedPort : RecordingPort {
    bool shared() const override { return is_shared; }
    uint64_t serialised_ps(std::span<const uint8_t> frame, size_t wire_bytes, uint64_t start_ps, double) override {
      asked.push_back({frame.size(), wire_bytes, frames.size()});
      return start_ps + 1000;
    }
    struct Ask {
      size_t frame_bytes, wire_bytes, frames_out_before;
    };
    bool is_shared = false;
    std::vector<Ask> asked;
  };
  EthPath t;
  SharedPort port;
  t.queues.set_port(&port);
  const auto frame = udp_frame(200);
  t.put_wqe(0, t.send_wqe(0, frame, 512));
  t.ring(1);
  ASSERT_EQ(port.frames.size(), 1u);
  EXPECT_TRUE(port.asked.empty()) << "a port without QoS is not asked";
  port.is_shared = true;
  t.put_wqe(1, t.send_wqe(1, frame, 512));
  t.ring(2);
  ASSERT_EQ(port.frames.size(), 2u);
  ASSERT_EQ(port.asked.size(), 1u);
  EXPECT_EQ(port.asked[0].frame_bytes, frame.size());
  EXPECT_EQ(port.asked[0].wire_bytes, frame.size() + 24) << "preamble, SFD, FCS and gap on the wire";
  EXPECT_EQ(port.asked[0].frames_out_before, 1u) << "asked before the frame leaves";
}

// SET_PP_RATE_LIMIT as mlx5_set_pp_rate_limit_cmd builds it (rate in kb/s; 0 clears).
uint8_t set_rate(TestFunction& t, uint32_t index, uint32_t rate_kbps, uint16_t uid = 0) {
  auto in = TestFunction::input(0x40);
  store_be16(&in[2], uid);
  store_be32(&in[0x08], index);
  store_be32(&in[0x10], rate_kbps);
  return t.run(0x780, in);
}

// MODIFY_SQ RDY -> RDY naming a packet pacing entry (modify_bitmask bit 0).
uint8_t pace_sq(EthPath& t, uint32_t index, uint16_t uid = 0) {
  auto in = TestFunction::input(0x110);
  store_be16(&in[2], uid);
  store_be32(&in[0x08], (1u << 28) | t.sqn);
  store_be64(&in[0x10], 1);
  store_be32(&in[0x20], 1u << 20);
  store_be32(&in[0x20 + 0x1c], index);
  return t.run(0x905, in);
}

// Packet pacing: an SQ whose context names a rate limit entry sends its frames no faster than the
// entry's rate, in model time; without one (or with entry 0) they leave at once.
TEST(EthSq, APacedSqSendsNoFasterThanItsRate) {
  EthPath t;
  uint64_t now = 0;
  std::vector<uint64_t> waits;
  t.queues.set_clock({.now_ps = [&] { return now; },
                      .consume_ps = [&](uint64_t ps) { waits.push_back(ps); now += ps; }});
  ASSERT_EQ(set_rate(t, 5, 1'000'000), kOk);  // 1 Gb/s
  ASSERT_EQ(pace_sq(t, 5), kOk);
  const auto frame = udp_frame(976);  // 1018 bytes, 1042 on the wire
  for (uint32_t i = 0; i < 3; ++i) t.put_wqe(i, t.send_wqe(uint16_t(i), frame, 2048));
  t.ring(3);
  ASSERT_EQ(t.port.frames.size(), 3u);
  const uint64_t per_frame = (frame.size() + 24) * 8 * 1000;  // ps at 1 Gb/s
  ASSERT_EQ(waits.size(), 2u) << "the first frame leaves at once, each next one after the one before";
  EXPECT_EQ(waits[0], per_frame);
  EXPECT_EQ(waits[1], per_frame);
  EXPECT_EQ(t.queues.counters().tx_paced, 2u);
  // Cleared by the driver: the index names no rate any more, frames leave at once.
  ASSERT_EQ(set_rate(t, 5, 0), kOk);
  now += 10 * per_frame;
  t.put_wqe(3, t.send_wqe(3, frame, 2048));
  t.ring(4);
  EXPECT_EQ(waits.size(), 2u);
}

TEST(EthSq, RateLimitEntriesAreCheckedAndKeptToTheirOwners) {
  EthPath t;
  t.f.resources.limits.log_max_uctx = 4;
  std::vector<uint16_t> uids;
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(t.run(0xa04, TestFunction::input(0x20)), kOk);
    uids.push_back(uint16_t(t.out32(0x08)));
  }
  EXPECT_EQ(set_rate(t, 0, 1000), kBadParameter) << "entry 0 is no limit";
  EXPECT_EQ(set_rate(t, RateLimitTable::kSize, 1000), kBadParameter) << "past the table";
  EXPECT_EQ(set_rate(t, 1, RateLimitTable::kMaxRateKbps + 1), kBadParameter) << "above the port";
  EXPECT_EQ(set_rate(t, 1, 1000, uint16_t(uids[1] + 7)), kBadParameter) << "an unknown uid";
  ASSERT_EQ(set_rate(t, 1, 1000), kOk);                        // the kernel's
  ASSERT_EQ(set_rate(t, 2, 1000, kSharedResourceUid), kOk);    // shared by every process
  ASSERT_EQ(set_rate(t, 3, 1000, uids[0]), kOk);               // process 0's dedicated entry
  EXPECT_EQ(set_rate(t, 1, 5, uids[0]), kBadResource) << "a process changes no kernel entry";
  EXPECT_EQ(set_rate(t, 3, 5, uids[1]), kBadResource) << "nor another process's";
  EXPECT_EQ(set_rate(t, 3, 5, uids[0]), kOk) << "its own";
  EXPECT_EQ(pace_sq(t, 4), kBadParameter) << "an entry not set";
  EXPECT_EQ(pace_sq(t, 3), kOk) << "the kernel may use any";
  EXPECT_EQ(get(t.f.eth.sqs.find(t.sqn)->context, sqc::kRateLimitIndex), 3u);
  EXPECT_EQ(pace_sq(t, 0), kOk) << "back to no limit";
  t.f.resources.rate_limits.clear();
  EXPECT_EQ(pace_sq(t, 1), kBadParameter) << "cleared by the reset";
}

// CREATE_SCHEDULING_ELEMENT as mlx5_core sends it for mlx5e's HTB offload (NIC hierarchy, the
// scheduling context at 0x20; max_average_bw in Mb/s). Returns the element's ID (0: refused).
uint32_t create_element(TestFunction& t, uint8_t type, uint32_t parent, uint32_t max_average_bw_mbps) {
  auto in = TestFunction::input(0x80);
  in[0x08] = 3;  // SCHEDULING_HIERARCHY_NIC
  in[0x20] = type;
  store_be32(&in[0x28], parent);
  store_be32(&in[0x38], max_average_bw_mbps);
  return t.run(0x782, in, 0x40) == kOk ? t.out32(0x10) : 0;
}

// MODIFY_SQ RDY -> RDY naming a queue group (modify_bitmask bit 2), as mlx5e moves an HTB leaf's SQ.
uint8_t group_sq(EthPath& t, uint32_t group) {
  auto in = TestFunction::input(0x110);
  store_be32(&in[0x08], (1u << 28) | t.sqn);
  store_be64(&in[0x10], 1u << 2);
  store_be32(&in[0x20], 1u << 20);
  store_be32(&in[0x20 + 0x20], group);
  return t.run(0x905, in);
}

// An SQ in a queue group sends no faster than the group's rate and its TSAR's, in model time.
TEST(EthSq, AnSqInAQueueGroupSendsNoFasterThanTheGroupAndItsTsar) {
  EthPath t;
  uint64_t now = 0;
  std::vector<uint64_t> waits;
  t.queues.set_clock({.now_ps = [&] { return now; },
                      .consume_ps = [&](uint64_t ps) { waits.push_back(ps); now += ps; }});
  const uint32_t root = create_element(t, sched_element::kTsar, 0, 500);  // Mb/s
  const uint32_t leaf = create_element(t, sched_element::kQueueGroup, root, 1000);
  ASSERT_NE(root, 0u);
  ASSERT_NE(leaf, 0u);
  EXPECT_EQ(group_sq(t, root), kBadParameter) << "a TSAR is no queue group";
  EXPECT_EQ(group_sq(t, 0x4321), kBadParameter) << "no such group";
  ASSERT_EQ(group_sq(t, leaf), kOk);
  const auto frame = udp_frame(976);  // 1042 bytes on the wire
  for (uint32_t i = 0; i < 3; ++i) t.put_wqe(i, t.send_wqe(uint16_t(i), frame, 2048));
  t.ring(3);
  ASSERT_EQ(t.port.frames.size(), 3u);
  const uint64_t at_root_rate = (frame.size() + 24) * 8 * 1'000'000 / 500;  // ps at 500 Mb/s
  ASSERT_EQ(waits.size(), 2u) << "the first frame leaves at once";
  EXPECT_EQ(waits[0], at_root_rate) << "the slower TSAR decides";
  EXPECT_EQ(waits[1], at_root_rate);
  // The group destroyed, the SQ leaves it: no more waits.
  auto destroy = TestFunction::input(0x40);
  destroy[0x08] = 3;
  store_be32(&destroy[0x0c], leaf);
  ASSERT_EQ(t.run(0x783, destroy), kOk);
  EXPECT_EQ(get(t.f.eth.sqs.find(t.sqn)->context, sqc::kQosQueueGroupId), 0u);
  t.put_wqe(3, t.send_wqe(3, frame, 2048));
  t.ring(4);
  EXPECT_EQ(waits.size(), 2u);
}

// ALLOC_PACKET_REFORMAT_CONTEXT as mlx5_core sends it: type and data size at 0x1c, data from 0x22.
uint8_t alloc_reformat(TestFunction& t, uint8_t type, const std::vector<uint8_t>& data) {
  auto in = TestFunction::input(0x22 + data.size());
  in[0x1c] = type;
  store_be16(&in[0x1e], uint16_t(data.size()));
  std::copy(data.begin(), data.end(), &in[0x22]);
  return t.run(0x93d, in);
}

// An entry naming a context (reformat, modify header) by the ID at `field` of its input: refused
// with `missing` for an ID that names none, taken for `id`; the context, in use, cannot be freed
// (DEALLOC_* `dealloc_opcode`, whose input is returned).
std::vector<uint8_t> entry_holds_context(TestFunction& t, std::vector<uint8_t>& fte, uint32_t field, uint32_t id,
                                         uint8_t missing, uint16_t dealloc_opcode) {
  store_be32(&fte[field], id + 1);
  EXPECT_EQ(t.run(0x936, fte), missing) << "no such context";
  store_be32(&fte[field], id);
  EXPECT_EQ(t.run(0x936, fte), kOk);
  auto dealloc = TestFunction::input(0x10);
  store_be32(&dealloc[0x08], id);
  EXPECT_EQ(t.run(dealloc_opcode, dealloc), kBadResourceState) << "in use by the entry";
  return dealloc;
}

// A tunnel's outer Ethernet and IPv4 headers (protocol `ip_protocol`), `bytes` long in all.
std::vector<uint8_t> outer_ipv4(size_t bytes, uint8_t ip_protocol) {
  std::vector<uint8_t> h(bytes, 0);
  const uint8_t dst[6] = {0x02, 0xc9, 0, 0, 0, 9}, src[6] = {0x02, 0xc9, 0, 0, 0, 8};
  std::copy_n(dst, 6, &h[0]);
  std::copy_n(src, 6, &h[6]);
  store_be16(&h[12], 0x0800);
  h[14] = 0x45;
  h[22] = 64;
  h[23] = ip_protocol;
  store_be32(&h[26], 0xc0a80001);
  store_be32(&h[30], 0xc0a80002);
  return h;
}

// A VXLAN tunnel's outer headers, as rdma-core's test builds them, with lengths for no payload.
std::vector<uint8_t> vxlan_outer() {
  std::vector<uint8_t> h = outer_ipv4(14 + 20 + 8 + 8, 17);
  store_be16(&h[34], 50000);
  store_be16(&h[36], 4789);
  h[42] = 0x08;  // VXLAN: VNI valid
  return h;
}

// NIC TX steering: a root NIC TX table whose entry encapsulates every frame (rdma-core's
// test_tx_packet_reformat), counts it, or drops it; without NIC TX tables frames leave untouched.
TEST(EthSq, NicTxStepsEncapsulateCountAndDrop) {
  EthPath t;
  const auto frame = udp_frame(100);
  t.put_wqe(0, t.send_wqe(0, frame, 256));
  t.ring(1);
  ASSERT_EQ(t.port.frames.size(), 1u);
  EXPECT_EQ(t.port.frames[0], frame) << "no NIC TX table";

  const auto outer = vxlan_outer();
  EXPECT_EQ(alloc_reformat(t, 0x3, outer), kBadParameter) << "L3_TUNNEL_TO_L2 puts back an Ethernet header only";
  EXPECT_EQ(alloc_reformat(t, 0x1, outer), kBadParameter) << "L2_TO_NVGRE: not offered";
  EXPECT_EQ(alloc_reformat(t, 0x2, std::vector<uint8_t>(kMaxEncapHeaderSize + 1, 0)), kBadParameter) << "too long";
  EXPECT_EQ(alloc_reformat(t, 0x2, std::vector<uint8_t>(8, 0)), kBadParameter) << "not even an Ethernet header";
  ASSERT_EQ(alloc_reformat(t, 0x2, outer), kOk);
  const uint32_t reformat = t.out32(0x08);
  constexpr uint8_t kNicTx = 1, kNicRx = 0;
  const uint32_t table = t.create_flow_table(kNicTx, 2);
  const uint32_t group = t.create_group(kNicTx, table, 0, 3, false);
  auto fte = t.fte_input(kNicTx, table, 0, group, {});
  store_be32(&fte[0x4c], 0x1 | 0x10);  // allow, packet reformat
  store_be32(&fte[0x58], reformat);
  const uint32_t rx_table = t.create_flow_table(kNicRx, 2);
  const uint32_t rx_group = t.create_group(kNicRx, rx_table, 0, 3, false);
  auto rx_fte = t.fte_input(kNicRx, rx_table, 0, rx_group, {});
  store_be32(&rx_fte[0x4c], 0x1 | 0x10);
  store_be32(&rx_fte[0x58], reformat);
  EXPECT_EQ(t.run(0x936, rx_fte), kBadParameter) << "encapsulation only on the way out";
  const auto dealloc = entry_holds_context(t, fte, 0x58, reformat, kBadParameter, 0x93e);

  t.put_wqe(1, t.send_wqe(1, frame, 256));
  t.ring(2);
  ASSERT_EQ(t.port.frames.size(), 2u);
  const auto& sent = t.port.frames[1];
  ASSERT_EQ(sent.size(), outer.size() + frame.size());
  EXPECT_TRUE(std::equal(frame.begin(), frame.end(), sent.begin() + outer.size())) << "the frame, whole, inside";
  EXPECT_TRUE(std::equal(outer.begin(), outer.begin() + 16, sent.begin())) << "the tunnel's L2 and IP start";
  const auto parsed = frame::parse(sent);
  EXPECT_EQ(load_be16(&sent[16]), sent.size() - 14) << "outer IPv4 total length";
  EXPECT_TRUE(frame::ipv4_header_ok(sent, parsed)) << "outer IPv4 checksum";
  EXPECT_EQ(load_be16(&sent[38]), sent.size() - 34) << "outer UDP length";
  EXPECT_EQ(load_be16(&sent[40]), 0u) << "outer UDP checksum: none";
  EXPECT_EQ(t.queues.counters().tx_reformatted, 1u);

  // The same entry dropping instead: the frame never reaches the port.
  auto drop = t.fte_input(kNicTx, table, 0, group, {});
  store_be32(&drop[0x4c], 0x2);
  ASSERT_EQ(t.run(0x936, drop, 16, 1), kOk);  // op_mod 1: modify the entry
  t.put_wqe(2, t.send_wqe(2, frame, 256));
  t.ring(3);
  EXPECT_EQ(t.port.frames.size(), 2u);
  EXPECT_EQ(t.queues.counters().tx_steering_drop, 1u);
  EXPECT_EQ(t.run(0x93e, dealloc), kOk) << "no entry uses it any more";
}

TEST(EthSq, ChecksumOffloadFillsIpv4AndUdp) {
  EthPath t;
  auto frame = udp_frame(33);
  auto broken = frame;
  store_be16(&broken[24], 0);
  store_be16(&broken[40], 0x1234);
  t.put_wqe(0, t.send_wqe(0, broken, 256, 0xc0));
  t.ring(1);
  ASSERT_EQ(t.port.frames.size(), 1u);
  EXPECT_EQ(t.port.frames[0], frame);
}

TEST(EthSq, MalformedWqesGiveErrorCqesAndErrorState) {
  EthPath t;
  t.put_wqe(0, EthPath::ctrl(0, 0x0a, t.sqn, 0));  // ds 0
  t.ring(1);
  auto c = t.cqe(0);
  EXPECT_EQ(c[0x3f] >> 4, 0xd);
  EXPECT_EQ(c[0x37], 0x01) << "local length";
  EXPECT_EQ(t.f.eth.sqs.find(t.sqn)->state, WqState::kError);
  EXPECT_EQ(t.queues.counters().tx_bad_ds, 1u);
  // Recovery: ERR -> RST -> RDY, counters restart; then a bad lkey.
  ASSERT_EQ(t.modify_state(0x905, t.sqn, 3, 0), 0);
  ASSERT_EQ(t.modify_state(0x905, t.sqn, 0, 1), 0);
  auto bad = t.send_wqe(0, udp_frame(10), 64);
  store_be32(&bad[48 + 4], 0xdead00);
  t.put_wqe(0, bad);
  t.put_wqe(1, EthPath::ctrl(1, 0x00, t.sqn, 1));
  t.ring(2);
  EXPECT_EQ(t.cqe(1)[0x37], 0x04) << "local protection";
  EXPECT_EQ(t.cqe(2)[0x37], 0x05) << "the NOP behind it is flushed";
  EXPECT_EQ(load_be16(&t.cqe(2)[0x3c]), 1u);
  // Buffer outside host memory, unknown opcode.
  ASSERT_EQ(t.modify_state(0x905, t.sqn, 3, 0), 0);
  ASSERT_EQ(t.modify_state(0x905, t.sqn, 0, 1), 0);
  auto outside = t.send_wqe(0, udp_frame(10), 64);
  store_be64(&outside[48 + 8], 0x7000000000ull);
  t.put_wqe(0, outside);
  t.ring(1);
  EXPECT_EQ(t.cqe(3)[0x37], 0x04);
  EXPECT_EQ(t.queues.counters().tx_dma_faults, 1u);
  EXPECT_TRUE(t.port.frames.empty());
  std::vector<uint8_t> bell(8);
  store_be32(&bell[4], 0x123456u << 8);
  EXPECT_FALSE(t.queues.doorbell(bell)) << "not an SQ: left for the QP path";
}

struct RxPath : EthPath {
  uint64_t rq_ring = 0, rq_dbr = 0, rx_buffers = 0;
  uint32_t rqn = 0;
  RxPath() {
    rq_ring = page();
    rq_dbr = page();
    rx_buffers = page(8 * 4096);
    rqn = create_rq(rq_dbr, rq_ring, 3, 5);  // 8 WQEs of 32 bytes: two data segments each
    EXPECT_EQ(modify_state(0x909, rqn, 0, 1), 0);
  }
  void post(uint32_t index, uint32_t first_len, uint32_t second_len) {
    std::vector<uint8_t> w(32, 0);
    store_be32(&w[0], first_len);
    store_be32(&w[4], lkey);
    store_be64(&w[8], rx_buffers + index * 4096);
    store_be32(&w[16], second_len);
    store_be32(&w[20], second_len ? lkey : 0x100);
    store_be64(&w[24], rx_buffers + index * 4096 + 2048);
    memory.write(rq_ring + 32 * (index % 8), w);
  }
  void publish(uint32_t counter) {
    std::vector<uint8_t> word(4);
    store_be32(word.data(), counter);
    memory.write(rq_dbr, word);
  }
};

// ALLOC_MODIFY_HEADER_CONTEXT: `actions` (8 bytes each) for a table type.
uint8_t alloc_modify_header(TestFunction& t, uint8_t type, const std::vector<std::pair<uint32_t, uint32_t>>& actions,
                            uint32_t count_override = ~0u) {
  auto in = TestFunction::input(0x10 + 8 * actions.size());
  in[0x0c] = type;
  in[0x0f] = uint8_t(count_override != ~0u ? count_override : actions.size());
  for (size_t i = 0; i < actions.size(); ++i) {
    store_be32(&in[0x10 + 8 * i], actions[i].first);
    store_be32(&in[0x14 + 8 * i], actions[i].second);
  }
  return t.run(0x940, in);
}
// set_action_in / copy_action_in words (PRM field numbers: 0x1 SMAC_47_16, 0x2 SMAC_15_0,
// 0x3 ETHERTYPE, 0x4 DMAC_47_16, 0x5 DMAC_15_0).
std::pair<uint32_t, uint32_t> set_action(uint32_t field, uint32_t offset, uint32_t length, uint32_t data) {
  return {(0x1u << 28) | (field << 16) | (offset << 8) | length, data};
}
std::pair<uint32_t, uint32_t> copy_action(uint32_t from, uint32_t from_offset, uint32_t length, uint32_t to,
                                          uint32_t to_offset) {
  return {(0x3u << 28) | (from << 16) | (from_offset << 8) | length, (to << 16) | (to_offset << 8)};
}

// Issue 16 (rdma-core's test_root_tbl_modify_header_rule): a root NIC TX entry's modify header sets
// the source MAC and copies the ethertype into the destination MAC's low half before the frame
// leaves; a NIC RX entry's rewrites the destination MAC and the next table matches the new one.
// What cannot be applied is refused when the context is allocated.
TEST(EthRq, ModifyHeaderContextsRewriteMacsOnTxAndRx) {
  RxPath t;
  constexpr uint8_t kNicRx = 0, kNicTx = 1;
  const auto smac_high = set_action(0x1, 0, 0, 0x88888888), smac_low = set_action(0x2, 0, 16, 0x8888);
  EXPECT_EQ(alloc_modify_header(t, 4, {smac_high}), kBadParameter) << "FDB tables: not offered";
  EXPECT_EQ(alloc_modify_header(t, kNicTx, {{(0x2u << 28) | (0x1u << 16), 1}}), kBadParameter) << "ADD";
  EXPECT_EQ(alloc_modify_header(t, kNicTx, {set_action(0x6, 0, 6, 1)}), kBadParameter) << "IP DSCP: not offered";
  EXPECT_EQ(alloc_modify_header(t, kNicTx, {set_action(0x2, 8, 16, 1)}), kBadParameter) << "past the field's end";
  EXPECT_EQ(alloc_modify_header(t, kNicTx, {smac_high}, 0), kBadParameter) << "no action";
  EXPECT_EQ(alloc_modify_header(t, kNicTx, {smac_high}, 2), kBadInputLength) << "more actions than sent";
  EXPECT_EQ(alloc_modify_header(t, kNicTx, std::vector(33, smac_high)), kBadParameter) << "over max_modify_header_actions";
  ASSERT_EQ(alloc_modify_header(t, kNicTx, {smac_high, smac_low, copy_action(0x3, 0, 16, 0x5, 0)}), kOk);
  const uint32_t tx_modify = t.out32(0x08);

  const uint32_t table = t.create_flow_table(kNicTx, 2);
  const uint32_t group = t.create_group(kNicTx, table, 0, 3, false);
  auto fte = t.fte_input(kNicTx, table, 0, group, {});
  store_be32(&fte[0x4c], 0x1 | 0x40);  // allow, modify header
  const auto dealloc = entry_holds_context(t, fte, 0x5c, tx_modify, kBadResource, 0x941);
  const auto frame = udp_frame(100);
  t.put_wqe(0, t.send_wqe(0, frame, 256));
  t.ring(1);
  ASSERT_EQ(t.port.frames.size(), 1u);
  auto expected = frame;
  std::fill_n(expected.begin() + 6, 6, 0x88);
  expected[4] = 0x08, expected[5] = 0x00;  // the ethertype, copied
  EXPECT_EQ(t.port.frames[0], expected);
  EXPECT_EQ(t.queues.counters().header_modified, 1u);

  // NIC RX: the root entry rewrites the destination MAC and forwards to a table that matches it.
  ASSERT_EQ(t.run(0x900, t.tir_input(false, t.rqn)), kOk);
  const uint32_t tir = t.object();
  const uint32_t rx_root = t.create_flow_table(kNicRx, 2);
  const uint32_t rx_next = t.create_flow_table(kNicRx, 2, 1);
  const uint32_t root_group = t.create_group(kNicRx, rx_root, 0, 3, false);
  const uint32_t next_group = t.create_group(kNicRx, rx_next, 0, 3, true);
  const std::array<uint8_t, 6> rewritten_mac{0x02, 0xc9, 0, 0, 0x12, 0x34};
  ASSERT_EQ(t.run(0x936, t.fte_input(kNicRx, rx_next, 0, next_group, {{2, tir}}, &rewritten_mac)), kOk);
  auto rx_fte = t.fte_input(kNicRx, rx_root, 0, root_group, {{1, rx_next}});
  store_be32(&rx_fte[0x4c], 0x4 | 0x40);
  store_be32(&rx_fte[0x5c], tx_modify);
  EXPECT_EQ(t.run(0x936, rx_fte), kBadResource) << "a context made for NIC TX";
  ASSERT_EQ(alloc_modify_header(t, kNicRx, {set_action(0x5, 0, 16, 0x1234)}), kOk);
  store_be32(&rx_fte[0x5c], t.out32(0x08));
  ASSERT_EQ(t.run(0x936, rx_fte), kOk);
  t.post(0, 2048, 0);
  t.publish(1);
  t.queues.receive(frame);
  auto received = frame;
  std::copy(rewritten_mac.begin(), rewritten_mac.end(), received.begin());
  EXPECT_EQ(t.read(t.rx_buffers, frame.size()), received) << "delivered as rewritten, by the rewritten MAC";
  EXPECT_EQ(t.queues.counters().rx_steering_miss, 0u);

  ASSERT_EQ(t.run(0x938, t.flow_input(0x24, kNicTx, table)), kOk);  // DELETE_FLOW_TABLE_ENTRY
  EXPECT_EQ(t.run(0x941, dealloc), kOk) << "no entry uses it any more";
}

// An IPv4 GRE tunnel (protocol 0x0800) around `inner`'s IP packet: an L3 tunnel.
std::vector<uint8_t> gre_l3_frame(const std::vector<uint8_t>& inner) {
  std::vector<uint8_t> f = outer_ipv4(14 + 20 + 4, 47);
  store_be16(&f[36], 0x0800);  // GRE protocol: IPv4
  f.insert(f.end(), inner.begin() + 14, inner.end());
  store_be16(&f[16], uint16_t(f.size() - 14));
  return f;
}

// Firmware (root) NIC RX tables take frames out of tunnels, as rdma-core's root-table reformat
// tests ask through mlx5_ib: DECAP leaves an L2 tunnel's inner frame, an L3_TUNNEL_TO_L2 context
// the inner IP packet behind its Ethernet header. A frame without that tunnel is dropped, counted;
// the actions belong to NIC RX only, and not together.
TEST(EthRq, RxEntriesTakeFramesOutOfL2AndL3Tunnels) {
  RxPath t;
  constexpr uint8_t kNicRx = 0, kNicTx = 1;
  ASSERT_EQ(t.run(0x900, t.tir_input(false, t.rqn)), kOk);
  const uint32_t tir = t.object();
  const uint32_t root = t.create_flow_table(kNicRx, 2);
  const uint32_t group = t.create_group(kNicRx, root, 0, 3, false);
  auto decap = t.fte_input(kNicRx, root, 0, group, {{2, tir}});
  store_be32(&decap[0x4c], 0x4 | 0x20);  // forward, decap
  const uint32_t tx_table = t.create_flow_table(kNicTx, 2);
  const uint32_t tx_group = t.create_group(kNicTx, tx_table, 0, 3, false);
  auto tx_decap = t.fte_input(kNicTx, tx_table, 0, tx_group, {});
  store_be32(&tx_decap[0x4c], 0x1 | 0x20);
  EXPECT_EQ(t.run(0x936, tx_decap), kBadParameter) << "decap on the way out";
  ASSERT_EQ(t.run(0x936, decap), kOk);

  const auto inner = udp_frame(100);
  std::vector<uint8_t> vxlan;
  frame::encapsulate(vxlan_outer(), inner, vxlan);
  t.post(0, 2048, 0);
  t.post(1, 2048, 0);
  t.publish(2);
  t.queues.receive(vxlan);
  EXPECT_EQ(t.read(t.rx_buffers, inner.size()), inner) << "the inner frame, without the tunnel";
  t.queues.receive(inner);
  EXPECT_EQ(t.queues.counters().rx_not_tunnelled, 1u) << "nothing to take out: dropped";
  EXPECT_EQ(t.queues.counters().rx_decapsulated, 1u);

  // L3: the inner IP packet behind the context's Ethernet header (with a VLAN tag: 18 bytes).
  std::vector<uint8_t> l2(18);
  const uint8_t mac[6] = {0x02, 0xc9, 0, 0, 0, 0x77};
  std::copy_n(mac, 6, &l2[0]);
  std::copy_n(mac, 6, &l2[6]);
  store_be16(&l2[12], 0x8100);
  store_be16(&l2[14], 5);
  store_be16(&l2[16], 0x0800);
  EXPECT_EQ(alloc_reformat(t, 0x3, std::vector<uint8_t>(16, 0)), kBadParameter) << "neither 14 nor 18 bytes";
  ASSERT_EQ(alloc_reformat(t, 0x3, l2), kOk);
  const uint32_t l3_to_l2 = t.out32(0x08);
  auto reformat = t.fte_input(kNicRx, root, 0, group, {{2, tir}});
  store_be32(&reformat[0x4c], 0x4 | 0x10 | 0x20);
  store_be32(&reformat[0x58], l3_to_l2);
  EXPECT_EQ(t.run(0x936, reformat, 16, 1), kBadParameter) << "decap and an L3 reformat together";
  store_be32(&reformat[0x4c], 0x4 | 0x10);
  store_be32(&tx_decap[0x4c], 0x1 | 0x10);
  store_be32(&tx_decap[0x58], l3_to_l2);
  EXPECT_EQ(t.run(0x936, tx_decap), kBadParameter) << "an L3 tunnel's removal on the way out";
  ASSERT_EQ(t.run(0x936, reformat, 16, 1), kOk) << "modify the entry";
  t.queues.receive(gre_l3_frame(inner));
  std::vector<uint8_t> expected = l2;
  expected.erase(expected.begin() + 12, expected.begin() + 16);  // the RQ strips the tag into the CQE
  expected.insert(expected.end(), inner.begin() + 14, inner.end());
  EXPECT_EQ(t.read(t.rx_buffers + 4096, expected.size()), expected) << "the inner IP packet behind the new header";
  t.queues.receive(vxlan);
  EXPECT_EQ(t.queues.counters().rx_not_tunnelled, 2u) << "an L2 tunnel is no L3 tunnel";
  EXPECT_EQ(t.queues.counters().rx_decapsulated, 2u);
}

// mlx5e binds its RQs to a queue counter set; a frame that finds no WQE counts in its
// out_of_buffer (the driver's rx_out_of_buffer). A set the function does not have is refused.
TEST(EthRq, OutOfBufferCountsIntoTheRqsCounterSet) {
  RxPath t;
  ASSERT_EQ(t.run(0x771), 0);
  const uint32_t set_id = t.out32(0x08) & 0xff;
  auto in = t.input(0x110);
  store_be32(&in[0x08], (1u << 28) | t.rqn);  // from RDY
  store_be64(&in[0x10], 0x8);                 // modify_bitmask: counter_set_id
  store_be32(&in[0x20], 1u << 20);            // rqc.state: stays RDY
  store_be32(&in[0x2c], set_id << 24);        // rqc.counter_set_id
  ASSERT_EQ(t.run(0x909, in), 0);
  EXPECT_FALSE(t.queues.deliver(t.rqn, udp_frame(100)));
  EXPECT_FALSE(t.queues.deliver(t.rqn, udp_frame(100)));
  std::vector<uint8_t> query(0x20, 0);
  store_be32(&query[0x1c], set_id);
  ASSERT_EQ(t.run(0x773, query, 0x100), 0);
  EXPECT_EQ(t.out32(0x30), 2u) << "out_of_buffer";
  store_be32(&in[0x2c], (set_id + 1) << 24);
  EXPECT_EQ(t.run(0x909, in), 0x03) << "no such counter set";
}

TEST(EthRq, ScatterAndRxCqeWithChecksumFlags) {
  RxPath t;
  const auto frame = udp_frame(100);
  EXPECT_FALSE(t.queues.deliver(t.rqn, frame)) << "nothing posted";
  EXPECT_EQ(t.queues.counters().rx_no_wqe, 1u);
  t.post(0, 64, 1024);
  t.post(1, 64, 0);
  t.publish(2);
  ASSERT_TRUE(t.queues.deliver(t.rqn, frame));
  auto got = t.read(t.rx_buffers, 64);
  auto rest = t.read(t.rx_buffers + 2048, frame.size() - 64);
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(got, frame);
  auto c = t.cqe(0);
  EXPECT_EQ(c[0x3f] >> 4, 0x2);
  EXPECT_EQ(load_be32(&c[0x2c]), frame.size());
  EXPECT_EQ(c[0x1c], 0x7) << "L2, L3 and L4 ok";
  EXPECT_EQ(c[0x1d], (2 << 4) | (2 << 2)) << "UDP over IPv4";
  EXPECT_EQ(load_be16(&c[0x14]), frame::fold(frame::sum16(std::span(frame).subspan(14))));
  // A corrupted UDP checksum: L4 not ok. The second WQE holds only 64 bytes: too big first.
  auto bad = udp_frame(20);
  bad[45] ^= 0xff;
  EXPECT_FALSE(t.queues.deliver(t.rqn, udp_frame(100)));
  EXPECT_EQ(t.queues.counters().rx_too_big, 1u);
  ASSERT_TRUE(t.queues.deliver(t.rqn, bad));
  EXPECT_EQ(t.cqe(1)[0x1c], 0x3);
  EXPECT_EQ(load_be16(&t.cqe(1)[0x3c]), 1u);
}

TEST(EthRq, SteeringByDestinationMacToTirRq) {
  RxPath t;
  ASSERT_EQ(t.run(0x900, t.tir_input(false, t.rqn)), 0);
  const uint32_t tir = t.object();
  const uint32_t ft = t.create_flow_table(0, 2);
  const uint32_t g = t.create_group(0, ft, 0, 3, true);
  const std::array<uint8_t, 6> mac{0x02, 0xc9, 0, 0, 0, 1};
  ASSERT_EQ(t.run(0x936, t.fte_input(0, ft, 0, g, {{2, tir}}, &mac)), 0);
  auto frame = udp_frame(10);
  EXPECT_EQ(t.queues.steer(frame), std::optional<uint32_t>(t.rqn));
  frame[5] = 9;
  EXPECT_FALSE(t.queues.steer(frame).has_value());
  EXPECT_EQ(t.queues.counters().rx_steering_miss, 1u);
}

// Issue 16: a function's own frame, turned back inside the NIC, reaches a TIR of the transport
// domain that sent it only where the TIR's self_lb_block bits let it in (bit 0 unicast, bit 1
// multicast: mlx5e clears both, so it never sees its own frames; raw packet QPs of another process,
// another domain, always get them).
TEST(EthRq, OwnFramesReachATirOfTheSendingDomainOnlyWhereItsSelfLoopbackBitsAllow) {
  RxPath t;
  ASSERT_EQ(t.run(0x900, t.tir_input(false, t.rqn)), 0);
  const uint32_t tir = t.object();
  const uint32_t ft = t.create_flow_table(0, 2);
  const uint32_t g = t.create_group(0, ft, 0, 3, false);  // matches every frame
  ASSERT_EQ(t.run(0x936, t.fte_input(0, ft, 0, g, {{2, tir}})), 0);
  auto unicast = udp_frame(10);
  auto broadcast = udp_frame(10);
  std::fill_n(broadcast.begin(), 6, 0xff);
  EXPECT_EQ(t.queues.steer(unicast), std::optional<uint32_t>(t.rqn)) << "from another vport";
  EXPECT_EQ(t.queues.steer(unicast, t.td + 1), std::optional<uint32_t>(t.rqn)) << "another domain";
  EXPECT_EQ(t.queues.steer(unicast, 0u), std::optional<uint32_t>(t.rqn)) << "no domain (RDMA engine)";
  EXPECT_FALSE(t.queues.steer(unicast, t.td).has_value());
  EXPECT_FALSE(t.queues.steer(broadcast, t.td).has_value());
  EXPECT_EQ(t.queues.counters().rx_self_loopback_blocked, 2u);
  // MODIFY_TIR with the self_lb_en bitmask bit: unicast self-loopback allowed.
  auto modify = t.input(0x110);
  store_be32(&modify[0x08], tir);
  store_be32(&modify[0x14], 1u << 4);  // modify_bitmask, low dword
  store_be32(&modify[0x44], 0x1u << 24);
  ASSERT_EQ(t.run(0x901, modify), 0);
  EXPECT_EQ(t.queues.steer(unicast, t.td), std::optional<uint32_t>(t.rqn));
  EXPECT_FALSE(t.queues.steer(broadcast, t.td).has_value());
  store_be32(&modify[0x44], 0x2u << 24);
  ASSERT_EQ(t.run(0x901, modify), 0);
  EXPECT_FALSE(t.queues.steer(unicast, t.td).has_value());
  EXPECT_EQ(t.queues.steer(broadcast, t.td), std::optional<uint32_t>(t.rqn));
}

// Issue 16 (rdma-core's test_flow): an IPv6 header whose payload length claims more than the frame
// holds is still walked for steering (addresses, next header, TCP ports match), as a NIC's parser
// does; only the checksum verdicts and TSO, which need true lengths, refuse it.
TEST(EthFrame, HeadersOfAFrameWithAnOverlongIpLengthStillMatch) {
  std::vector<uint8_t> f(14 + 40 + 20 + 10, 0);
  store_be16(&f[12], 0x86dd);
  f[14] = 0x60;
  store_be16(&f[18], uint16_t(f.size() - 14));  // counts the IPv6 header too: 40 bytes too many
  f[20] = 6;                                    // next header TCP
  f[21] = 64;
  f[22] = 0xa0, f[38] = 0xb0;                   // source and destination addresses
  store_be16(&f[54], 1234);
  store_be16(&f[56], 4321);
  f[66] = 5 << 4;                               // data offset 5 words
  const frame::Parsed p = frame::parse(f);
  EXPECT_EQ(p.ip_version, 6);
  EXPECT_TRUE(p.truncated);
  EXPECT_EQ(p.l4_protocol, frame::kProtoTcp);
  ASSERT_EQ(p.l4_offset, 54u);
  EXPECT_EQ(p.l4_length, 30u) << "cut to the frame";
  const auto key = frame::outer_match_key(f, p);
  EXPECT_EQ(key[0x10], 6) << "ip_protocol";
  EXPECT_EQ(key[0x20], 0xa0) << "src_ipv6";
  EXPECT_EQ(key[0x30], 0xb0) << "dst_ipv6";
  EXPECT_EQ(load_be16(&key[0x14]), 1234) << "tcp_sport";
  EXPECT_EQ(load_be16(&key[0x16]), 4321) << "tcp_dport";
  EXPECT_FALSE(frame::l4_checksum_ok(f, p));
  EXPECT_TRUE(frame::segment_tcp(f, 4).empty()) << "no TSO on a frame whose lengths lie";
  store_be16(&f[18], uint16_t(f.size() - 54));  // the true payload length
  EXPECT_FALSE(frame::parse(f).truncated);
}

TEST(EthRq, BadLkeyPutsTheRqInError) {
  RxPath t;
  t.post(0, 2048, 0);
  std::vector<uint8_t> w(4);
  store_be32(w.data(), 0xbad00);
  t.memory.write(t.rq_ring + 4, w);
  t.publish(1);
  EXPECT_FALSE(t.queues.deliver(t.rqn, udp_frame(10)));
  EXPECT_EQ(t.cqe(0)[0x3f] >> 4, 0xe);
  EXPECT_EQ(t.f.eth.rqs.find(t.rqn)->state, WqState::kError);
  EXPECT_FALSE(t.queues.deliver(t.rqn, udp_frame(10)));
  EXPECT_EQ(t.queues.counters().rx_rq_not_ready, 1u);
}

}  // namespace
}  // namespace hcaemu::model::test

namespace hcaemu::model::test {
namespace {

// mlx5 DR (issue 16): a process creates a software-owned NIC table through DevX, naming the ICM
// address of its start anchor; the kernel's root rule forwards to it; the device then steers by
// the entries DR wrote into steering ICM (model/steering/ste_v1.h).
struct SoftwareSteering : RxPath {
  static constexpr uint64_t kIcm = kSteeringIcm.start;
  uint16_t uid = 0;
  uint32_t tir = 0, counter = 0;
  SoftwareSteering() {
    f.identity.sw_icm = true;
    f.resources.limits.log_max_uctx = 4;
    EXPECT_EQ(run(0xa04, TestFunction::input(0x20)), kOk);
    uid = uint16_t(out32(0x08));
    tir = devx_tir();
    EXPECT_EQ((uint64_t(out32(0x08) >> 24) << 32) | out32(0x0c), steering::tir_address(tir)) << "its ICM address";
    EXPECT_EQ(run(0x939, as_user(TestFunction::input(0x10))), kOk);
    counter = out32(0x08);
    EXPECT_TRUE(f.sw_icm.place(kIcm, 16));
  }
  std::vector<uint8_t> as_user(std::vector<uint8_t> in) const {
    store_be16(&in[2], uid);
    return in;
  }
  // The process's TIR on the RQ (DevX: no transport domain).
  uint32_t devx_tir() {
    auto in = as_user(tir_input(false, rqn));
    store_be32(&in[0x44], 0);
    EXPECT_EQ(run(0x900, in), kOk);
    return object();
  }
  // The process's firmware NIC RX table of 2^log_size entries, with one group over all of them.
  struct Table {
    uint32_t id = 0, group = 0;
  };
  Table firmware_table(uint32_t log_size) {
    auto table = as_user(flow_input(0x40, 0, 0));
    store_be32(&table[0x18], (63u << 16) | log_size);
    EXPECT_EQ(run(0x930, table), kOk);
    const uint32_t id = object();
    auto group = as_user(flow_input(0x400, 0, id));
    store_be32(&group[0x24], (1u << log_size) - 1);
    EXPECT_EQ(run(0x933, group), kOk);
    return {id, object()};
  }
  std::vector<uint8_t> sw_table_input(uint8_t type, uint64_t root) {
    auto in = as_user(flow_input(0x40, type, 0));
    store_be32(&in[0x18], (1u << 29) | (62u << 16));  // sw_owner, level max_ft_level - 1
    store_be64(&in[0x38], root);                      // sw_owner_icm_root_0
    return in;
  }
  // The anchor at kIcm always hits the rule at kIcm + 64: this source MAC to `hit`, others to `miss`.
  void rule(std::array<uint8_t, 6> smac, uint64_t hit, uint64_t miss, uint32_t action = 0, uint32_t second = 0) {
    SteImage().lookup(steering::lookup_type::kDontCare).hit(kIcm + 64).write(f.sw_icm, kIcm);
    std::array<uint8_t, 16> mask{}, tag{};
    std::fill_n(mask.begin() + 4, 6, 0xff);
    std::copy(smac.begin(), smac.end(), tag.begin() + 4);
    SteImage().lookup(steering::lookup_type::kEthL2Src).match(mask, tag).hit(hit).miss(miss).counter(counter)
        .action(0, action).action(1, second).write(f.sw_icm, kIcm + 64);
  }
  // The kernel's root table of `type`, forwarding every frame to `table`.
  void root_to(uint8_t type, uint32_t table) {
    const uint32_t root = create_flow_table(type, 2);
    const uint32_t group = create_group(type, root, 0, 3, false);
    EXPECT_EQ(run(0x936, fte_input(type, root, 0, group, {{1, table}})), kOk);
  }
};

const std::array<uint8_t, 6> kSource{0x02, 0xc9, 0, 0, 0, 2};  // udp_frame's

TEST(SoftwareSteering, TablesNeedTheFeatureAnAnchorAndStayTheirOwners) {
  SoftwareSteering t;
  auto in = t.sw_table_input(0, SoftwareSteering::kIcm);
  t.f.identity.sw_icm = false;
  EXPECT_EQ(t.run(0x930, in), kBadParameter) << "a function without software steering";
  t.f.identity.sw_icm = true;
  store_be64(&in[0x38], SoftwareSteering::kIcm + 8);
  EXPECT_EQ(t.run(0x930, in), kBadParameter) << "an anchor not 64-byte aligned";
  auto fdb = t.sw_table_input(4, SoftwareSteering::kIcm);
  EXPECT_EQ(t.run(0x930, fdb), kBadParameter) << "a process creates NIC tables only";
  ASSERT_EQ(t.run(0x930, t.sw_table_input(0, SoftwareSteering::kIcm)), kOk);
  const uint32_t sw = t.object();
  auto group = t.as_user(t.flow_input(0x400, 0, sw));
  EXPECT_EQ(t.run(0x933, group), kBadParameter) << "a software-owned table has no groups";
  EXPECT_FALSE(t.queues.steer(udp_frame(10)).has_value()) << "a process's table is never a root by itself";
  EXPECT_EQ(t.queues.counters().sw_steering_walks, 0u);
  const uint32_t kernel_table = t.create_flow_table(0, 2);
  EXPECT_EQ(t.run(0x931, t.as_user(t.flow_input(0x18, 0, kernel_table))), kBadResource) << "the kernel's table";
  auto query = t.flow_input(0x18, 0, kernel_table);
  ASSERT_EQ(t.run(0x932, query, 0x40), kOk);
  EXPECT_EQ(load_be64(&t.out[0x18 + 0x20]), steering::flow_table_address(kernel_table)) << "a firmware table's root";
  EXPECT_EQ(load_be64(&t.out[0x18 + 0x18]), steering::flow_table_address(kernel_table));
  ASSERT_EQ(t.run(0x932, t.as_user(t.flow_input(0x18, 0, sw)), 0x40), kOk);
  EXPECT_EQ(load_be64(&t.out[0x18 + 0x20]), SoftwareSteering::kIcm) << "a software table's root, as created";
  EXPECT_EQ(t.run(0xb00, t.as_user(TestFunction::input(0x10))), kOk) << "SYNC_STEERING";
  EXPECT_EQ(alloc_reformat(t, 0x4, vxlan_outer()), kOk) << "an L3 tunnel (L2_TO_L3_TUNNEL)";
  t.f.identity.sw_icm = false;
  EXPECT_EQ(alloc_reformat(t, 0x4, vxlan_outer()), kOk) << "root tables encapsulate L3 tunnels too";
  EXPECT_EQ(t.run(0xb00, t.as_user(TestFunction::input(0x10))), uint8_t(CommandStatus::kBadOpcode));
  t.f.identity.sw_icm = true;
  auto destroy_uctx = TestFunction::input(0x10);
  store_be32(&destroy_uctx[0x08], t.uid);
  EXPECT_EQ(t.run(0xa06, destroy_uctx), kBadResourceState) << "the process still owns a table";
  EXPECT_EQ(t.run(0x931, t.as_user(t.flow_input(0x18, 0, sw))), kOk);
}

// The kernel's root rule forwards to the process's table; its entries send the frame to the TIR
// with a flow tag (in the CQE) and count it; another source falls to the RX drop terminal.
TEST(SoftwareSteering, RxFramesFollowTheEntriesToATirWithTheirFlowTag) {
  SoftwareSteering t;
  t.rule(kSource, steering::tir_address(t.tir), steering::kNicRxDrop, 0x0c000123);
  ASSERT_EQ(t.run(0x930, t.sw_table_input(0, SoftwareSteering::kIcm)), kOk);
  t.root_to(0, t.object());
  t.post(0, 2048, 0);
  t.publish(1);
  const auto frame = udp_frame(10);
  t.queues.receive(frame);
  EXPECT_EQ(load_be32(&t.cqe(0)[0x38]), 0x123u) << "sop_drop_qpn carries the flow tag";
  EXPECT_EQ(t.read(t.rx_buffers, frame.size()), frame);
  EXPECT_EQ(t.f.eth.flow_counters.find(t.counter)->packets, 1u);
  auto other = frame;
  other[11] = 9;
  EXPECT_FALSE(t.queues.steer(other).has_value());
  EXPECT_EQ(t.queues.counters().rx_steering_drop, 1u);
  // An action the model does not perform: the frame is dropped and the fault counted.
  t.rule(kSource, steering::tir_address(t.tir), steering::kNicRxDrop, 0x0b000000);
  EXPECT_FALSE(t.queues.steer(frame).has_value());
  EXPECT_EQ(t.queues.counters().sw_steering_faults, 1u);
  EXPECT_EQ(t.queues.counters().sw_steering_walks, 3u);
}

// Without steering the RX CQE's sop_drop_qpn holds 0 (mlx5e makes it the skb's mark); a root
// entry's flow tag goes there.
TEST(SoftwareSteering, AFirmwareEntrysFlowTagReachesTheCqe) {
  RxPath t;
  ASSERT_EQ(t.run(0x900, t.tir_input(false, t.rqn)), kOk);
  const uint32_t tir = t.object();
  const uint32_t table = t.create_flow_table(0, 2);
  const uint32_t group = t.create_group(0, table, 0, 3, false);
  auto fte = t.fte_input(0, table, 0, group, {{2, tir}});
  store_be32(&fte[0x48], 0x77);
  ASSERT_EQ(t.run(0x936, fte), kOk);
  t.post(0, 2048, 0);
  t.post(1, 2048, 0);
  t.publish(2);
  t.queues.receive(udp_frame(10));
  EXPECT_EQ(load_be32(&t.cqe(0)[0x38]), 0x77u);
  ASSERT_TRUE(t.queues.deliver(t.rqn, udp_frame(10)));
  EXPECT_EQ(load_be32(&t.cqe(1)[0x38]), 0u);
}

// NIC TX: the process's entries allow a frame to the wire or drop it (rdma-core's
// test_tx_def_miss_action: DEFAULT_MISS is the allow terminal).
TEST(SoftwareSteering, TxFramesLeaveOnAllowAndNotOnDrop) {
  SoftwareSteering t;
  t.rule(kSource, steering::kNicTxAllow, steering::kNicTxDrop);
  ASSERT_EQ(t.run(0x930, t.sw_table_input(1, SoftwareSteering::kIcm)), kOk);
  t.root_to(1, t.object());
  auto frame = udp_frame(100);
  t.put_wqe(0, t.send_wqe(0, frame, 256));
  t.ring(1);
  ASSERT_EQ(t.port.frames.size(), 1u);
  EXPECT_EQ(t.port.frames[0], frame);
  frame[11] = 9;
  t.put_wqe(1, t.send_wqe(1, frame, 256));
  t.ring(2);
  EXPECT_EQ(t.port.frames.size(), 1u);
  EXPECT_EQ(t.queues.counters().tx_steering_drop, 1u);
}

// rdma-core's test_dest_array: the process's entry ends in a firmware table of its own (by the ICM
// address QUERY_FLOW_TABLE gave) whose entry names two TIRs and another software table; each TIR
// gets a copy, and the other table's walk delivers a third.
TEST(SoftwareSteering, ADestinationArrayCopiesTheFrameToEveryTir) {
  SoftwareSteering t;
  const uint32_t second_tir = t.devx_tir();
  // The second software table: its anchor at kIcm + 0x1000 always hits the first TIR.
  SteImage().lookup(steering::lookup_type::kDontCare).hit(steering::tir_address(t.tir))
      .write(t.f.sw_icm, SoftwareSteering::kIcm + 0x1000);
  ASSERT_EQ(t.run(0x930, t.sw_table_input(0, SoftwareSteering::kIcm + 0x1000)), kOk);
  const uint32_t last = t.object();
  const auto [array, group_id] = t.firmware_table(2);
  const uint32_t kernel_table = t.create_flow_table(0, 2, 5);
  EXPECT_EQ(t.run(0x936, t.as_user(t.fte_input(0, array, 0, group_id, {{2, t.tir}, {1, kernel_table}}))),
            kBadResource)
      << "a table that is not its own";
  ASSERT_EQ(t.run(0x936, t.as_user(t.fte_input(0, array, 0, group_id, {{2, t.tir}, {2, second_tir}, {1, last}}))),
            kOk);
  t.rule(kSource, steering::flow_table_address(array), steering::kNicRxDrop);
  ASSERT_EQ(t.run(0x930, t.sw_table_input(0, SoftwareSteering::kIcm)), kOk);
  t.root_to(0, t.object());
  for (uint32_t i = 0; i < 3; ++i) t.post(i, 2048, 0);
  t.publish(3);
  const auto frame = udp_frame(10);
  t.queues.receive(frame);
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(t.read(t.rx_buffers + 4096 * i, frame.size()), frame) << i;
  EXPECT_EQ(t.queues.counters().rx_frames, 3u);
  EXPECT_EQ(t.queues.counters().sw_steering_walks, 2u);
}

// rdma-core's test_flow_sampler: the entry ends in a flow sampler (general object FLOW_SAMPLER,
// named by the ICM address QUERY gives): every ratio-th frame also reaches the sample table's TIR,
// every frame the default table's.
TEST(SoftwareSteering, AFlowSamplerCopiesEveryRatioThFrameToItsSampleTable) {
  SoftwareSteering t;
  const uint32_t sample_tir = t.devx_tir();
  // A firmware table of the process's forwarding every frame to `tir`.
  auto fw_table_to = [&](uint32_t tir) {
    const auto table = t.firmware_table(1);
    EXPECT_EQ(t.run(0x936, t.as_user(t.fte_input(0, table.id, 0, table.group, {{2, tir}}))), kOk);
    return table.id;
  };
  const uint32_t sample = fw_table_to(sample_tir), fallback = fw_table_to(t.tir);
  auto create = t.as_user(TestFunction::input(0x38));  // create_flow_sampler_in, as DR sizes it
  store_be32(&create[0x18], 0);  // NIC RX
  store_be32(&create[0x1c], 3);  // every third frame
  store_be32(&create[0x20], sample);
  store_be32(&create[0x24], fallback);
  constexpr uint16_t kFlowSampler = 0x20;
  ASSERT_EQ(t.run(0xa00, create, 0x10, kFlowSampler), kOk);
  const uint32_t sampler = t.out32(0x08);
  auto query = t.as_user(TestFunction::input(0x10));
  store_be32(&query[0x08], sampler);
  ASSERT_EQ(t.run(0xa02, query, 0x38, kFlowSampler), kOk);
  EXPECT_EQ(load_be64(&t.out[0x28]), steering::sampler_address(sampler));
  auto bad = create;
  store_be32(&bad[0x20], t.create_flow_table(0, 1, 7));  // the kernel's table
  EXPECT_EQ(t.run(0xa00, bad, 0x10, kFlowSampler), kBadResource);
  EXPECT_EQ(t.run(0x931, t.as_user(t.flow_input(0x18, 0, sample))), kBadResourceState) << "the sampler uses it";
  ASSERT_EQ(t.run(0x930, t.sw_table_input(0, SoftwareSteering::kIcm + 0x1000)), kOk);
  const uint32_t software = t.object();
  store_be32(&bad[0x20], software);
  EXPECT_EQ(t.run(0xa00, bad, 0x10, kFlowSampler), kBadResource) << "a software table samples nothing";
  auto to_software = create;
  store_be32(&to_software[0x24], software);
  EXPECT_EQ(t.run(0xa00, to_software, 0x10, kFlowSampler), kOk) << "DR's default table is a software one";

  t.rule(kSource, steering::sampler_address(sampler), steering::kNicRxDrop);
  ASSERT_EQ(t.run(0x930, t.sw_table_input(0, SoftwareSteering::kIcm)), kOk);
  t.root_to(0, t.object());
  for (uint32_t i = 0; i < 8; ++i) t.post(i, 2048, 0);
  t.publish(8);
  for (int i = 0; i < 4; ++i) t.queues.receive(udp_frame(10));
  EXPECT_EQ(t.queues.counters().rx_frames, 6u) << "4 frames, frames 0 and 3 sampled";
  EXPECT_EQ(t.f.eth.flow_samplers.find(sampler)->seen, 4u);
}

// rdma-core's test_push_vlan: the entry puts a VLAN tag after the MACs of what leaves.
// MATCH_DEFINER objects: only with software steering, format 0 only and no mask beyond its 32
// bytes; an ID above the fixed lookup types, which QUERY reads back; the process's own.
TEST(SoftwareSteering, MatchDefinersAreFormatZeroAndTheirOwners) {
  SoftwareSteering t;
  constexpr uint16_t kMatchDefiner = 0x18;
  auto create = t.as_user(TestFunction::input(0x90));
  std::fill_n(&create[0x70 + 24], 6, 0xff);
  t.f.identity.sw_icm = false;
  EXPECT_EQ(t.run(0xa00, create, 0x10, kMatchDefiner), kBadParameter) << "without software steering";
  t.f.identity.sw_icm = true;
  store_be32(&create[0x20], 2);
  EXPECT_EQ(t.run(0xa00, create, 0x10, kMatchDefiner), kBadParameter) << "format 2: not offered";
  store_be32(&create[0x20], 0);
  create[0x64] = 1;
  EXPECT_EQ(t.run(0xa00, create, 0x10, kMatchDefiner), kBadParameter) << "mask dwords 8-11: not in format 0";
  create[0x64] = 0;
  ASSERT_EQ(t.run(0xa00, create, 0x10, kMatchDefiner), kOk);
  const uint32_t id = t.out32(0x08);
  EXPECT_GE(id, 0x40u);
  EXPECT_LE(id, 0xfeu);
  auto named = t.as_user(TestFunction::input(0x10));
  store_be32(&named[0x08], id);
  ASSERT_EQ(t.run(0xa02, named, 0x90, kMatchDefiner), kOk);
  EXPECT_EQ(t.out[0x70 + 24], 0xff);
  EXPECT_EQ(t.out[0x70 + 30], 0x00);
  auto stranger = named;
  store_be16(&stranger[2], uint16_t(t.uid + 1));
  EXPECT_NE(t.run(0xa03, stranger, 0x10, kMatchDefiner), kOk) << "another process's";
  EXPECT_EQ(t.run(0xa03, named, 0x10, kMatchDefiner), kOk);
  EXPECT_NE(t.run(0xa02, named, 0x90, kMatchDefiner), kOk) << "gone";
}

TEST(SoftwareSteering, TxPushVlanRewritesWhatLeaves) {
  SoftwareSteering t;
  t.rule(kSource, steering::kNicTxAllow, steering::kNicTxDrop, 0x0a000c00, 0x8100ac0c);
  ASSERT_EQ(t.run(0x930, t.sw_table_input(1, SoftwareSteering::kIcm)), kOk);
  t.root_to(1, t.object());
  const auto frame = udp_frame(100);
  t.put_wqe(0, t.send_wqe(0, frame, 256));
  t.ring(1);
  ASSERT_EQ(t.port.frames.size(), 1u);
  const auto& sent = t.port.frames[0];
  ASSERT_EQ(sent.size(), frame.size() + 4);
  EXPECT_EQ(load_be32(&sent[12]), 0x8100ac0cu);
  EXPECT_TRUE(std::equal(frame.begin() + 12, frame.end(), sent.begin() + 16));
}

}  // namespace
}  // namespace hcaemu::model::test
