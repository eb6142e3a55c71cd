#include "model/eth/flow_index.h"

namespace hcaemu::model {
namespace {

constexpr uint32_t kBlock = 0x40, kBlocks = kMatchParamSize / kBlock;

bool indexable(const FlowGroup& group, const FlowEntry& entry) {
  return group.criteria.size() >= kMatchParamSize && entry.match_value.size() >= kMatchParamSize;
}

// The bytes the group's mask keeps, of the blocks its criteria_enable names. `byte(i)` gives byte
// i of the fte_match_param being masked.
template <typename Byte>
std::string masked(const FlowGroup& group, Byte&& byte) {
  std::string key;
  for (uint32_t block = 0; block < kBlocks; ++block) {
    if ((group.criteria_enable & (1u << block)) == 0) continue;
    for (uint32_t i = block * kBlock; i < (block + 1) * kBlock; ++i) key.push_back(char(group.criteria[i] & byte(i)));
  }
  return key;
}

std::string entry_key(const FlowGroup& group, const FlowEntry& entry) {
  return masked(group, [&](uint32_t i) { return entry.match_value[i]; });
}

}  // namespace

void index_flow_entry(FlowTable& table, const FlowGroup& group, uint32_t flow_index, const FlowEntry& entry) {
  if (!indexable(group, entry)) return;
  FlowGroupIndex& g = table.index[group.start];
  g.group = entry.group;
  g.by_value[entry_key(group, entry)].insert(flow_index);
}

void unindex_flow_entry(FlowTable& table, const FlowGroup& group, uint32_t flow_index, const FlowEntry& entry) {
  if (!indexable(group, entry)) return;
  auto g = table.index.find(group.start);
  if (g == table.index.end()) return;
  auto value = g->second.by_value.find(entry_key(group, entry));
  if (value == g->second.by_value.end()) return;
  value->second.erase(flow_index);
  if (value->second.empty()) g->second.by_value.erase(value);
  if (g->second.by_value.empty()) table.index.erase(g);
}

std::optional<uint32_t> match_flow(const FlowTable& table, const ObjectTable<FlowGroup>& groups,
                                   const frame::MatchKey& frame_key) {
  for (const auto& [start, g] : table.index) {
    const FlowGroup* group = groups.find(g.group);
    if (group == nullptr || group->criteria.size() < kMatchParamSize) continue;
    const std::string key = masked(*group, [&](uint32_t i) { return i < frame_key.size() ? frame_key[i] : uint8_t(0); });
    if (auto hit = g.by_value.find(key); hit != g.by_value.end()) return *hit->second.begin();
  }
  return std::nullopt;
}

}  // namespace hcaemu::model
