// Issue 14: steering scanned every entry of a flow table for every frame, on the simulation thread
// all functions share, and a guest may install 2^20 entries. The index finds the same entry (the
// lowest flow index that matches) with one lookup per group; these tests hold it to the scan's
// answers: first match across groups, masks, wildcard groups, modify and delete.
#include "model/eth/flow_index.h"

#include <gtest/gtest.h>

namespace hcaemu::model {
namespace {

constexpr uint32_t kDmacOffset = 0x04;  // six bytes of the outer headers block stand for an address

struct Steering {
  ObjectTable<FlowGroup> groups{1, 0xffffff, 1u << 20};
  FlowTable table;

  // A group over [start, end] matching the outer block under `mask` bytes at kDmacOffset.
  uint32_t group(uint32_t start, uint32_t end, std::vector<uint8_t> mask) {
    FlowGroup g;
    g.start = start, g.end = end;
    g.criteria.assign(kMatchParamSize, 0);
    if (!mask.empty()) g.criteria_enable = 1;
    std::copy(mask.begin(), mask.end(), g.criteria.begin() + kDmacOffset);
    return groups.insert(std::move(g));
  }
  void set(uint32_t group_id, uint32_t index, std::vector<uint8_t> value) {
    FlowEntry e;
    e.group = group_id;
    e.match_value.assign(kMatchParamSize, 0);
    std::copy(value.begin(), value.end(), e.match_value.begin() + kDmacOffset);
    if (auto old = table.entries.find(index); old != table.entries.end())
      unindex_flow_entry(table, *groups.find(old->second.group), index, old->second);
    index_flow_entry(table, *groups.find(group_id), index, e);
    table.entries[index] = std::move(e);
  }
  void erase(uint32_t index) {
    const FlowEntry& e = table.entries.at(index);
    unindex_flow_entry(table, *groups.find(e.group), index, e);
    table.entries.erase(index);
  }
  std::optional<uint32_t> steer(std::vector<uint8_t> dmac) {
    frame::MatchKey key{};
    std::copy(dmac.begin(), dmac.end(), key.begin() + kDmacOffset);
    return match_flow(table, groups, key);
  }
};

TEST(FlowIndex, FindsTheLowestMatchingIndexAmongManyEntries) {
  Steering s;
  const uint32_t exact = s.group(0, (1u << 17) - 1, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  const uint32_t any_multicast = s.group(1u << 17, (1u << 17) + 1, {0x01});
  const uint32_t wildcard = s.group((1u << 17) + 2, (1u << 17) + 2, {});
  for (uint32_t i = 0; i < 100000; ++i)  // a guest's 100,000 unicast rules
    s.set(exact, i, {0x02, 0, 0, uint8_t(i >> 16), uint8_t(i >> 8), uint8_t(i)});
  s.set(any_multicast, 1u << 17, {0x01});
  s.set(wildcard, (1u << 17) + 2, {});
  EXPECT_EQ(s.steer({0x02, 0, 0, 0x01, 0x86, 0x9f}), 99999u);
  EXPECT_EQ(s.steer({0x02, 0, 0, 0, 0, 7}), 7u);
  EXPECT_EQ(s.steer({0x33, 0x33, 0, 0, 0, 1}), 1u << 17) << "the multicast group's entry, before the wildcard";
  EXPECT_EQ(s.steer({0x02, 9, 9, 9, 9, 9}), (1u << 17) + 2) << "only the wildcard matches";
  s.erase((1u << 17) + 2);
  EXPECT_FALSE(s.steer({0x02, 9, 9, 9, 9, 9}));
}

TEST(FlowIndex, DuplicatesModifiesAndDeletesKeepTheScansAnswer) {
  Steering s;
  const uint32_t g = s.group(0, 15, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  s.set(g, 9, {0x02, 0, 0, 0, 0, 1});
  s.set(g, 4, {0x02, 0, 0, 0, 0, 1});  // the same rule at a lower index wins
  EXPECT_EQ(s.steer({0x02, 0, 0, 0, 0, 1}), 4u);
  s.set(g, 4, {0x02, 0, 0, 0, 0, 2});  // modified: index 9 is the one left for :01
  EXPECT_EQ(s.steer({0x02, 0, 0, 0, 0, 1}), 9u);
  EXPECT_EQ(s.steer({0x02, 0, 0, 0, 0, 2}), 4u);
  s.erase(9);
  s.erase(4);
  EXPECT_FALSE(s.steer({0x02, 0, 0, 0, 0, 1}));
  EXPECT_TRUE(s.table.index.empty()) << "nothing left behind";
}

}  // namespace
}  // namespace hcaemu::model
