#pragma once
// Finding a frame's flow entry without scanning every entry of a table: each entry is indexed by
// its group and by its match value under the group's mask (FlowTable::index), kept up to date by
// SET/DELETE_FLOW_TABLE_ENTRY. A frame costs one masked copy and one hash lookup per group of the
// table, walked in flow index order, so the first hit is the lowest-index matching entry, as in a
// scan. (A guest may install 2^20 entries; steering runs on the simulation thread every function
// shares.)
#include <array>
#include <cstdint>
#include <optional>

#include "model/eth/frame.h"
#include "model/eth/objects.h"

namespace hcaemu::model {

void index_flow_entry(FlowTable& table, const FlowGroup& group, uint32_t flow_index, const FlowEntry& entry);
void unindex_flow_entry(FlowTable& table, const FlowGroup& group, uint32_t flow_index, const FlowEntry& entry);

// The lowest flow index of `table` whose entry matches a frame with this key (frame::match_key;
// the fte_match_param's blocks after it are all zero for the frame).
std::optional<uint32_t> match_flow(const FlowTable& table, const ObjectTable<FlowGroup>& groups,
                                   const frame::MatchKey& key);

}  // namespace hcaemu::model
