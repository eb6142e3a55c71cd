// The STE v1 walk (model/steering/ste_v1.h): the hash against check values, a table laid out as
// mlx5 DR lays out a matcher on the source MAC (an anchor, a hash table of 32, the end anchor), and
// the ways a driver's entries can fail the walk, each ending in a fault instead of a hang or a read
// outside steering ICM.
#include <gtest/gtest.h>

#include <numeric>

#include "model/steering/ste_v1.h"
#include "model/steering/terminals.h"
#include "testbench/model/ste_builder.h"

namespace hcaemu::model::test {
namespace {

using steering::SteVerdict;
using Outcome = SteVerdict::Outcome;
namespace lu = steering::lookup_type;

constexpr uint64_t kBase = kSteeringIcm.start;  // a 64 KiB range of steering ICM at its start
constexpr uint64_t kAnchor = kBase, kEndAnchor = kBase + 0x40, kHashTable = kBase + 0x800;  // 32 x 64 B, aligned
constexpr uint16_t kSmacBytes = 0x0fc0;  // ETHL2_SRC bytes 4-9

std::vector<uint8_t> frame_from(std::array<uint8_t, 6> smac, bool vlan = false) {
  std::vector<uint8_t> f(64, 0);
  f[0] = 0x01, f[1] = 0x50, f[2] = 0x56, f[3] = 0x19, f[4] = 0x20, f[5] = 0xa7;
  std::copy(smac.begin(), smac.end(), f.begin() + 6);
  uint32_t at = 12;
  if (vlan) {
    store_be16(&f[12], 0x8100);
    store_be16(&f[14], 0xac0c);  // priority 5, CFI, VLAN 0xc0c
    at = 16;
  }
  store_be16(&f[at], 0x0800);
  f[at + 2] = 0x45;
  store_be16(&f[at + 4], 46 - (at - 12));
  f[at + 11] = 17;
  return f;
}

std::array<uint8_t, 16> smac_mask() {
  std::array<uint8_t, 16> m{};
  std::fill_n(m.begin() + 4, 6, 0xff);
  return m;
}
std::array<uint8_t, 16> smac_tag(std::array<uint8_t, 6> smac) {
  std::array<uint8_t, 16> t{};
  std::copy(smac.begin(), smac.end(), t.begin() + 4);
  return t;
}

// DR's layout of one matcher with one rule: anchor -> (always hit) hash table of 32 by smac ->
// the rule's entry at its hash, the other 31 always miss -> end anchor -> (always miss) RX drop.
struct DrTable {
  SwIcm icm;
  uint32_t rule_index = 0;
  DrTable(std::array<uint8_t, 6> smac, uint64_t destination, uint32_t flow_tag = 0, uint32_t counter = 0) {
    EXPECT_TRUE(icm.place(kBase, 16));
    SteImage().lookup(lu::kDontCare).hit(kHashTable, 32, lu::kEthL2Src, kSmacBytes).write(icm, kAnchor);
    SteImage().lookup(lu::kDontCare).always_miss().never_hit().miss(steering::kNicRxDrop).write(icm, kEndAnchor);
    const auto tag = smac_tag(smac);
    std::array<uint8_t, 16> hashed{};
    for (uint32_t i = 4; i < 10; ++i) hashed[i] = tag[i];
    rule_index = steering::ste_hash(hashed) % 32;
    for (uint32_t i = 0; i < 32; ++i)
      SteImage().lookup(lu::kEthL2Src).always_miss().never_hit().miss(kEndAnchor).write(icm, kHashTable + 64 * i);
    SteImage rule;
    rule.lookup(lu::kEthL2Src).match(smac_mask(), tag).miss(kEndAnchor).hit(destination).counter(counter);
    if (flow_tag != 0) rule.action(0, 0x0c000000u | flow_tag);
    rule.write(icm, kHashTable + 64 * rule_index);
  }
};

TEST(SteV1, HashIsByteSwappedCrc32WithZeroSeed) {
  std::array<uint8_t, 16> bytes{};
  std::iota(bytes.begin(), bytes.end(), 0);
  EXPECT_EQ(steering::ste_hash(bytes), 0xdda97522u);
  std::array<uint8_t, 16> smac{};
  std::fill_n(smac.begin() + 4, 6, 0x88);
  EXPECT_EQ(steering::ste_hash(smac), 0x9c1c91b8u);
  EXPECT_EQ(steering::ste_hash(smac) % 32, 24u);
  EXPECT_EQ(steering::ste_hash(std::array<uint8_t, 16>{}), 0u);
}

TEST(SteV1, SourceMacFieldsFollowTheDefinerLayout) {
  const auto f = frame_from({0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8}, true);
  const auto fields = steering::definer_fields(lu::kEthL2Src, steering::PacketState(f));
  ASSERT_TRUE(fields);
  EXPECT_EQ(load_be32(&(*fields)[0]), (1u << 20) | (2u << 18) | (1u << 16) | 0xac0c) << "IPv4, UDP, customer VLAN, its TCI";
  EXPECT_EQ(load_be32(&(*fields)[4]), 0x248a07a5u);
  EXPECT_EQ(load_be32(&(*fields)[8]), 0x28c80800u) << "smac 15:0, the ethertype after the tag";
  EXPECT_FALSE(steering::definer_fields(0x0117, steering::PacketState(f))) << "tunnel header: not parsed";
}

TEST(SteV1, AMatcherOnTheSourceMacSendsItsFramesToTheTirAndOthersToTheDefault) {
  const std::array<uint8_t, 6> smac{0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8};
  DrTable t(smac, steering::tir_address(0x123), 0x321, 7);
  SteVerdict v = steering::walk_ste_v1(t.icm, kAnchor, frame_from(smac));
  EXPECT_EQ(v.outcome, Outcome::kTir);
  EXPECT_EQ(v.id, 0x123u);
  EXPECT_EQ(v.flow_tag, std::optional<uint32_t>(0x321));
  EXPECT_EQ(v.counters, std::vector<uint32_t>{7});
  EXPECT_EQ(v.hops, 2u) << "anchor, rule";
  v = steering::walk_ste_v1(t.icm, kAnchor, frame_from({0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc9}));
  EXPECT_EQ(v.outcome, Outcome::kDrop) << "another source: a slot that misses to the end anchor, then RX drop";
  EXPECT_TRUE(v.counters.empty());
}

TEST(SteV1, ACollisionChainIsFollowedThroughMissAddresses) {
  const std::array<uint8_t, 6> first{0x02, 0, 0, 0, 0, 1};
  DrTable t(first, steering::tir_address(1));
  // A second rule in the same slot: DR chains it from the first one's miss address.
  const std::array<uint8_t, 6> second{0x02, 0, 0, 0, 0, 2};
  const uint64_t chained = kBase + 0x1000;
  SteImage().lookup(lu::kEthL2Src).match(smac_mask(), smac_tag(second)).miss(kEndAnchor).hit(steering::kNicTxAllow)
      .write(t.icm, chained);
  SteImage().lookup(lu::kEthL2Src).match(smac_mask(), smac_tag(first)).miss(chained).hit(steering::tir_address(1))
      .write(t.icm, kHashTable + 64 * t.rule_index);
  auto to_second = frame_from(second);
  // The walk hashes the second source elsewhere unless it collides: put the chain where it hashes.
  std::array<uint8_t, 16> hashed{};
  std::copy(second.begin(), second.end(), hashed.begin() + 4);
  const uint32_t slot = steering::ste_hash(hashed) % 32;
  SteImage().lookup(lu::kEthL2Src).match(smac_mask(), smac_tag(first)).miss(chained).hit(steering::tir_address(1))
      .write(t.icm, kHashTable + 64 * slot);
  EXPECT_EQ(steering::walk_ste_v1(t.icm, kAnchor, to_second).outcome, Outcome::kAllow);
  EXPECT_EQ(steering::walk_ste_v1(t.icm, kAnchor, frame_from(first)).outcome, Outcome::kTir);
}

TEST(SteV1, EntriesTheModelCannotEvaluateEndInAFault) {
  const std::array<uint8_t, 6> smac{0x02, 0, 0, 0, 0, 1};
  DrTable t(smac, steering::tir_address(1));
  const auto frame = frame_from(smac);
  EXPECT_EQ(steering::walk_ste_v1(t.icm, kBase + (uint64_t(1) << 20), frame).outcome, Outcome::kFault)
      << "a root outside every placed range";
  EXPECT_EQ(steering::walk_ste_v1(t.icm, 0, frame).outcome, Outcome::kFault);

  SteImage().lookup(0x0117).match(smac_mask(), smac_tag(smac)).miss(kEndAnchor).hit(steering::kNicTxAllow)
      .write(t.icm, kHashTable + 64 * t.rule_index);
  SteVerdict v = steering::walk_ste_v1(t.icm, kAnchor, frame);
  EXPECT_EQ(v.outcome, Outcome::kFault) << "a lookup type the model does not parse, under a mask";
  EXPECT_NE(std::string(v.fault).find("lookup type"), std::string::npos);

  SteImage().lookup(lu::kEthL2Src).match(smac_mask(), smac_tag(smac)).miss(kEndAnchor).hit(steering::kNicTxAllow)
      .action(0, 0x12000000).write(t.icm, kHashTable + 64 * t.rule_index);
  v = steering::walk_ste_v1(t.icm, kAnchor, frame);
  EXPECT_EQ(v.outcome, Outcome::kFault) << "an action not offered (ASO)";
  EXPECT_NE(std::string(v.fault).find("action"), std::string::npos);

  SteImage().lookup(lu::kDontCare).hit(kAnchor).write(t.icm, kAnchor);  // always hit, to itself
  v = steering::walk_ste_v1(t.icm, kAnchor, frame);
  EXPECT_EQ(v.outcome, Outcome::kFault) << "a loop";
  EXPECT_EQ(v.hops, steering::kMaxSteHops);

  SteImage().lookup(0x0200).hit(steering::kNicTxAllow).write(t.icm, kAnchor);
  EXPECT_EQ(steering::walk_ste_v1(t.icm, kAnchor, frame).outcome, Outcome::kFault) << "match-and-mask format";
}

TEST(SteV1, AMatchFormatContinuationEntryActsAndGoesOn) {
  SwIcm icm;
  ASSERT_TRUE(icm.place(kBase, 16));
  SteImage().lookup(lu::kDontCare).hit(kBase + 0x40, 1, 0x040f).write(icm, kBase);
  SteImage match;
  match.lookup(0x040f).hit(steering::tir_address(9));
  store_be32(&match.bytes[0x14], 0x0c000055);  // FLOW_TAG in the match format's first action slot
  match.write(icm, kBase + 0x40);
  const SteVerdict v = steering::walk_ste_v1(icm, kBase, frame_from({2, 0, 0, 0, 0, 1}));
  EXPECT_EQ(v.outcome, Outcome::kTir);
  EXPECT_EQ(v.id, 9u);
  EXPECT_EQ(v.flow_tag, std::optional<uint32_t>(0x55));
}

// DR's push VLAN (INSERT_INLINE of TPID and TCI after the MACs) and pop VLAN (REMOVE_BY_SIZE of
// 2 words at the first VLAN anchor): the frame comes out rewritten, and later entries see it so.
TEST(SteV1, VlanPushAndPopRewriteTheFrame) {
  const std::array<uint8_t, 6> smac{0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8};
  DrTable t(smac, steering::kNicTxAllow);
  SteImage push;
  push.lookup(lu::kEthL2Src).match(smac_mask(), smac_tag(smac)).miss(kEndAnchor).hit(steering::kNicTxAllow);
  push.action(0, 0x0a000c00).action(1, 0x8100ac0c);  // insert at start + 6 words: TPID 0x8100, TCI 0xac0c
  push.write(t.icm, kHashTable + 64 * t.rule_index);
  const auto plain = frame_from(smac), tagged = frame_from(smac, true);
  SteVerdict v = steering::walk_ste_v1(t.icm, kAnchor, plain);
  ASSERT_EQ(v.outcome, Outcome::kAllow);
  ASSERT_TRUE(v.rewritten);
  EXPECT_EQ(v.frame.size(), plain.size() + 4);
  EXPECT_TRUE(std::equal(v.frame.begin(), v.frame.begin() + 18, tagged.begin())) << "MACs, the tag, the ethertype";

  SteImage pop;
  pop.lookup(lu::kEthL2Src).match(smac_mask(), smac_tag(smac)).miss(kEndAnchor).hit(steering::tir_address(3));
  pop.action(0, 0x08020002);  // remove 2 words at the first VLAN
  pop.write(t.icm, kHashTable + 64 * t.rule_index);
  v = steering::walk_ste_v1(t.icm, kAnchor, tagged);
  ASSERT_EQ(v.outcome, Outcome::kTir);
  ASSERT_TRUE(v.rewritten);
  EXPECT_TRUE(std::equal(v.frame.begin(), v.frame.begin() + 14, plain.begin()));
  EXPECT_EQ(load_be16(&v.frame[12]), 0x0800u);

  pop.action(0, 0x08020000 | 0x3f).write(t.icm, kHashTable + 64 * t.rule_index);  // 126 bytes: past the end
  EXPECT_EQ(steering::walk_ste_v1(t.icm, kAnchor, tagged).outcome, Outcome::kFault);
  pop.action(0, 0x08130002).write(t.icm, kHashTable + 64 * t.rule_index);  // the inner L2 anchor: not placed
  EXPECT_EQ(steering::walk_ste_v1(t.icm, kAnchor, tagged).outcome, Outcome::kFault);
  push.action(0, 0).action(1, 0x0a000c00).write(t.icm, kHashTable + 64 * t.rule_index);  // its data cut off
  EXPECT_EQ(steering::walk_ste_v1(t.icm, kAnchor, plain).outcome, Outcome::kFault);
}

// DR's tunnels: on TX an INSERT_POINTER puts a reformat context's headers (here VXLAN) before the
// frame, lengths set; on RX a REMOVE_HEADER_TO_HEADER up to the inner MAC takes them off again.
TEST(SteV1, EncapsulationByPointerAndDecapsulationToTheInnerFrame) {
  const std::array<uint8_t, 6> smac{0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8};
  DrTable t(smac, steering::kNicTxAllow);
  std::vector<uint8_t> vxlan(14 + 20 + 8 + 8, 0);
  std::copy(smac.begin(), smac.end(), vxlan.begin() + 6);  // the outer source: what RX matches
  store_be16(&vxlan[12], 0x0800);
  vxlan[14] = 0x45;
  vxlan[23] = 17;
  store_be16(&vxlan[36], 4789);
  vxlan[42] = 0x08;
  const steering::ReformatData reformats = [&](uint32_t id) {
    return id == 5 ? std::span<const uint8_t>(vxlan) : std::span<const uint8_t>{};
  };
  SteImage encap;
  encap.lookup(lu::kEthL2Src).match(smac_mask(), smac_tag(smac)).miss(kEndAnchor).hit(steering::kNicTxAllow);
  encap.action(0, 0x0b000000 | (uint32_t(vxlan.size() / 2) << 3) | 1).action(1, 5);
  encap.write(t.icm, kHashTable + 64 * t.rule_index);
  const auto inner = frame_from(smac);
  SteVerdict v = steering::walk_ste_v1(t.icm, kAnchor, inner, reformats);
  ASSERT_EQ(v.outcome, Outcome::kAllow);
  ASSERT_EQ(v.frame.size(), vxlan.size() + inner.size());
  EXPECT_TRUE(std::equal(inner.begin(), inner.end(), v.frame.begin() + vxlan.size()));
  EXPECT_EQ(load_be16(&v.frame[16]), v.frame.size() - 14) << "outer IPv4 total length";
  EXPECT_EQ(load_be16(&v.frame[38]), v.frame.size() - 34) << "outer UDP length";
  EXPECT_EQ(steering::walk_ste_v1(t.icm, kAnchor, inner).outcome, Outcome::kFault) << "no such context";

  SteImage decap;
  decap.lookup(lu::kEthL2Src).match(smac_mask(), smac_tag(smac)).miss(kEndAnchor).hit(steering::tir_address(1));
  decap.action(0, 0x0900130c);  // remove from the start to the inner MAC, decap
  decap.write(t.icm, kHashTable + 64 * t.rule_index);
  const std::vector<uint8_t> tunnelled = v.frame;
  v = steering::walk_ste_v1(t.icm, kAnchor, tunnelled);
  ASSERT_EQ(v.outcome, Outcome::kTir);
  EXPECT_EQ(v.frame, inner);
  EXPECT_EQ(steering::walk_ste_v1(t.icm, kAnchor, inner).outcome, Outcome::kFault) << "nothing tunnelled";
}

// A modify list in header-modify ICM sets reg_c_0; a later entry of lookup type steering registers
// 0 matches it (rdma-core's test_metadata_modify_action_set_copy_match); COPY moves it to reg_c_1.
TEST(SteV1, AModifyListSetsRegistersThatLaterEntriesMatch) {
  const std::array<uint8_t, 6> smac{0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8};
  DrTable t(smac, steering::kNicTxAllow);
  ASSERT_TRUE(t.icm.place(kHeaderModifyIcm.start, 16));
  std::array<uint8_t, 16> list{};
  store_be32(&list[0], 0x06902020);  // SET reg_c_0 [31:0]
  store_be32(&list[4], 0x1234);
  store_be32(&list[8], 0x05912020);  // COPY to reg_c_1 [31:0] from reg_c_0
  store_be32(&list[12], 0x00902000);
  ASSERT_TRUE(t.icm.write(kHeaderModifyIcm.start + 64 * 3, list));
  const uint64_t registers = kBase + 0x2000;
  SteImage rule;
  rule.lookup(lu::kEthL2Src).match(smac_mask(), smac_tag(smac)).miss(kEndAnchor).hit(registers, 1);
  rule.action(0, 0x0f020003);  // 2 actions at header-modify + 64 x 3
  rule.write(t.icm, kHashTable + 64 * t.rule_index);
  std::array<uint8_t, 16> mask{}, tag{};
  std::fill_n(mask.begin(), 8, 0xff);
  store_be32(&tag[0], 0x1234);
  store_be32(&tag[4], 0x1234);
  SteImage().lookup(lu::kSteeringRegisters0).match(mask, tag).miss(steering::kNicTxDrop)
      .hit(steering::tir_address(2)).write(t.icm, registers);
  SteVerdict v = steering::walk_ste_v1(t.icm, kAnchor, frame_from(smac));
  EXPECT_EQ(v.outcome, Outcome::kTir) << v.fault;
  EXPECT_FALSE(v.rewritten) << "registers are no part of the frame";
  rule.action(0, 0x0f020004).write(t.icm, kHashTable + 64 * t.rule_index);  // an empty list: registers stay 0
  EXPECT_EQ(steering::walk_ste_v1(t.icm, kAnchor, frame_from(smac)).outcome, Outcome::kDrop);
  store_be32(&list[0], 0x06900020);  // a shifter below the 0x20 bias: refused, not a shift by 2^32 - 32
  ASSERT_TRUE(t.icm.write(kHeaderModifyIcm.start + 64 * 3, list));
  rule.action(0, 0x0f020003).write(t.icm, kHashTable + 64 * t.rule_index);
  EXPECT_EQ(steering::walk_ste_v1(t.icm, kAnchor, frame_from(smac)).outcome, Outcome::kFault);
  rule.action(0, 0x0f02ffff).write(t.icm, kHashTable + 64 * t.rule_index);  // past the placed range
  EXPECT_EQ(steering::walk_ste_v1(t.icm, kAnchor, frame_from(smac)).outcome, Outcome::kFault);
}

// rdma-core's test_geneve_match_rx/tx: lookup type FLEX_PARSER_TNL_HEADER sees a Geneve header's
// option length, OAM bit, protocol and VNI; a frame without one sees zeros.
TEST(SteV1, TunnelHeaderFieldsAreTheGeneveHeaders) {
  std::vector<uint8_t> f(14 + 20 + 8 + 8 + 14, 0);
  store_be16(&f[12], 0x0800);
  f[14] = 0x45;
  store_be16(&f[16], uint16_t(f.size() - 14));
  f[23] = 17;
  store_be16(&f[36], 6081);
  store_be16(&f[38], uint16_t(f.size() - 34));
  f[43] = 0x80;                // OAM
  store_be16(&f[44], 0x6558);  // an Ethernet frame inside
  store_be32(&f[46], 0x000002u << 8);
  const auto fields = steering::definer_fields(lu::kTunnelHeader, steering::PacketState(f));
  ASSERT_TRUE(fields);
  EXPECT_EQ(load_be32(&(*fields)[0]), 0x00806558u);
  EXPECT_EQ(load_be32(&(*fields)[4]), 0x00000200u);
  const auto plain = steering::definer_fields(lu::kTunnelHeader, steering::PacketState(frame_from({2, 0, 0, 0, 0, 1})));
  EXPECT_EQ(*plain, steering::DefinerFields{});
}

TEST(SteV1, TerminalAddressesDecode) {
  EXPECT_EQ(steering::terminal_at(steering::kNicRxDrop)->kind, steering::TerminalKind::kDrop);
  EXPECT_EQ(steering::terminal_at(steering::kNicTxDrop)->kind, steering::TerminalKind::kDrop);
  EXPECT_EQ(steering::terminal_at(steering::kNicTxAllow)->kind, steering::TerminalKind::kAllow);
  const auto tir = steering::terminal_at(steering::tir_address(0xabcdef));
  EXPECT_EQ(tir->kind, steering::TerminalKind::kTir);
  EXPECT_EQ(tir->id, 0xabcdefu);
  const auto table = steering::terminal_at(steering::flow_table_address(5));
  EXPECT_EQ(table->kind, steering::TerminalKind::kFlowTable);
  EXPECT_EQ(table->id, 5u);
  EXPECT_EQ(steering::terminal_at(steering::sampler_address(7))->kind, steering::TerminalKind::kSampler);
  EXPECT_FALSE(steering::terminal_at(kSteeringIcm.start));
  EXPECT_FALSE(steering::terminal_at(steering::kNicTxAllow + 0x40)) << "nothing there";
  EXPECT_FALSE(steering::terminal_at(steering::tir_address(1) + 8)) << "not 64-byte aligned";
  EXPECT_LT(steering::flow_table_address(0xffffff), uint64_t(1) << 40);
}

// Issue 16 (mlx5dv_dr_matcher_set_layout): a matcher made of a format-0 match definer on the source
// MAC, as DR lays it out once definers are offered: a hash table of 32 match-format entries hashed
// by the whole 32-byte tag under the definer's mask; the rule's entry hits, another source misses to
// the end anchor; an unknown definer, or one whose mask covers a field the model has no value for
// (the port), faults.
TEST(SteV1, AMatchDefinerMatcherHashesAndComparesItsWholeTag) {
  SwIcm icm;
  ASSERT_TRUE(icm.place(kBase, 16));
  steering::MatchDefinerView definer;
  std::fill_n(definer.mask.begin() + 24, 6, 0xff);  // def0 smac_47_16, smac_15_0
  const steering::Definers definers = [&](uint8_t index) { return index == 0x40 ? &definer : nullptr; };
  const std::array<uint8_t, 6> smac{0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8};
  steering::DefinerTag tag{};
  std::copy(smac.begin(), smac.end(), tag.begin() + 24);
  const uint32_t index = steering::ste_hash(tag) % 32;
  constexpr uint16_t kDefinerLookup = 0x0440;  // match format, definer 0x40
  SteImage().lookup(lu::kDontCare).hit(kHashTable, 32, 0x0040).write(icm, kAnchor);
  SteImage().lookup(lu::kDontCare).always_miss().never_hit().miss(steering::kNicRxDrop).write(icm, kEndAnchor);
  steering::DefinerTag empty{};
  empty[0] = 0xdc;
  for (uint32_t i = 0; i < 32; ++i)
    SteImage().lookup(kDefinerLookup).match_tag(empty).never_hit().miss(kEndAnchor).write(icm, kHashTable + 64 * i);
  SteImage().lookup(kDefinerLookup).match_tag(tag).hit(steering::tir_address(7)).miss(kEndAnchor)
      .write(icm, kHashTable + 64 * index);

  SteVerdict v = steering::walk_ste_v1(icm, kAnchor, frame_from(smac), {}, definers);
  EXPECT_EQ(v.outcome, Outcome::kTir) << v.fault;
  EXPECT_EQ(v.id, 7u);
  v = steering::walk_ste_v1(icm, kAnchor, frame_from({0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc9}), {}, definers);
  EXPECT_EQ(v.outcome, Outcome::kDrop) << "another source: the end anchor, then RX drop";
  v = steering::walk_ste_v1(icm, kAnchor, frame_from(smac));
  EXPECT_EQ(v.outcome, Outcome::kFault) << "no such definer";
  definer.mask[17] = 0xc0;  // dword 4 [23:22]: port
  v = steering::walk_ste_v1(icm, kAnchor, frame_from(smac), {}, definers);
  EXPECT_EQ(v.outcome, Outcome::kFault) << "a field the model has no value for";
}

// def0's tag of a frame: registers, MACs, ethertype, L3/L4 type and first VLAN, TCP flags.
TEST(SteV1, DefinerFormatZeroTagCarriesTheFramesFields) {
  steering::MatchDefinerView definer;
  auto frame = frame_from({0x02, 0, 0, 0, 0, 9}, true);
  const auto tag = steering::definer_tag(definer, steering::PacketState(frame));
  ASSERT_TRUE(tag);
  EXPECT_TRUE(std::equal(frame.begin(), frame.begin() + 6, tag->begin() + 8)) << "dmac";
  EXPECT_EQ(load_be16(&(*tag)[14]), 0x0800u) << "ethertype behind the VLAN tag";
  EXPECT_EQ(load_be32(&(*tag)[16]), (1u << 20) | (2u << 18) | (1u << 16) | 0xac0cu) << "IPv4, UDP, C-VLAN, TCI";
  EXPECT_TRUE(std::equal(frame.begin() + 6, frame.begin() + 12, tag->begin() + 24)) << "smac";
  definer.format = 2;
  EXPECT_FALSE(steering::definer_tag(definer, steering::PacketState(frame))) << "format 2: not offered";
}

}  // namespace
}  // namespace hcaemu::model::test
