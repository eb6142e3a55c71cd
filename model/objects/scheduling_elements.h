#pragma once
// NIC scheduling elements (libmlx5's mlx5dv_sched_node / mlx5dv_sched_leaf, general objects of
// type SCHEDULING_ELEMENT): a tree of DWRR TSARs whose leaves are queue groups. An RC, UC or UD QP
// joins a queue group as requester (and an RC QP as responder too) through the extended QP
// context (qpc_ext qos_queue_group_id_*, INIT2INIT or RTS2RTS). An element may carry a maximum
// average rate (max_average_bw, Mb/s): a QP's next message waits until its group and every
// ancestor have had the bytes already sent through them at their rates, in model time, as packet
// pacing does for an Ethernet SQ. bw_share is kept and reported; the port serves ready messages in
// the order they become ready, so the shares between backlogged siblings are not modelled.
#include <cstdint>

#include "model/objects/object_table.h"

namespace hcaemu::model {

namespace sched_element {
inline constexpr uint8_t kTsar = 0x0, kQueueGroup = 0x4;  // sched_context.element_type
inline constexpr uint8_t kTsarDwrr = 0x0;                 // sched_elem_attr_tsar.tsar_type
inline constexpr uint8_t kHierarchyNic = 3;               // sched_elem.scheduling_hierarchy
// Levels below the root: a leaf's walk to the root is bounded by it.
inline constexpr uint32_t kMaxDepth = 8;
// Queue groups a function may have at once (qos_cap.log_max_qos_nic_queue_group; mlx5e takes as
// many HTB leaves, at most 256).
inline constexpr uint32_t kLogMaxQueueGroups = 8;
}  // namespace sched_element

struct SchedulingElement {
  uint8_t type = sched_element::kTsar;
  uint32_t parent = 0;  // 0: the hierarchy's root
  uint32_t depth = 1;   // levels below the root (at most; a parent's destruction moves its children up)
  uint32_t bw_share = 0;
  uint32_t max_average_bw_mbps = 0;  // 0: no limit
  uint64_t next_free_ps = 0;         // when the bytes sent through it so far have left at its rate
};

class SchedulingElements {
 public:
  ObjectTable<SchedulingElement>& table() { return table_; }
  const ObjectTable<SchedulingElement>& table() const { return table_; }

  // When a message of a QP in queue group `group` may start: the latest of the times its group and
  // their ancestors are free (0 for no group, or one without limits).
  uint64_t ready_ps(uint32_t group) const {
    uint64_t ready = 0;
    for (const SchedulingElement* e = table_.find(group); e != nullptr; e = table_.find(e->parent))
      if (e->max_average_bw_mbps != 0 && e->next_free_ps > ready) ready = e->next_free_ps;
    return ready;
  }
  // A message of `wire_bytes` started at start_ps through `group`: each limited element on the way
  // to the root is busy for the bytes' time at its rate.
  void charge(uint32_t group, uint64_t wire_bytes, uint64_t start_ps) {
    for (SchedulingElement* e = table_.find(group); e != nullptr; e = table_.find(e->parent)) {
      if (e->max_average_bw_mbps == 0) continue;
      // bits / (Mb/s) = microseconds: ps = bytes * 8 * 10^6 / rate.
      const uint64_t busy = wire_bytes * 8 * 1'000'000 / e->max_average_bw_mbps;
      e->next_free_ps = (e->next_free_ps > start_ps ? e->next_free_ps : start_ps) + busy;
    }
  }
  // Destroys element `id`; its children move up to its parent.
  void erase(uint32_t id) {
    const SchedulingElement* gone = table_.find(id);
    if (gone == nullptr) return;
    const uint32_t parent = gone->parent;
    for (auto& [child, e] : table_)
      if (e.parent == id) e.parent = parent;
    table_.erase(id);
  }
  uint32_t queue_groups() const {
    uint32_t count = 0;
    for (const auto& [id, e] : table_) count += e.type == sched_element::kQueueGroup ? 1 : 0;
    return count;
  }
  void clear() { table_.clear(); }

 private:
  // IDs from 1 to 0xffff (an SQ names its queue group in 16 bits); at most 2^12 elements a function.
  ObjectTable<SchedulingElement> table_{1, 0xffff, 1u << 12};
};

}  // namespace hcaemu::model
