#pragma once
// Per-function object tables (PD, EQ, CQ, MKEY, QP...): IDs handed out from a range, at most
// `limit` objects alive (the caps' 1 << log_max_*), never ID 0, and a freed ID is not handed out
// again until the allocator has gone once around the range, so a stale ID the driver still holds
// finds nothing (or, after a full lap, another object of the same function - never a foreign one:
// each function has its own tables). Every ID that comes from the driver is looked up here.
// Each object also records its owner: the uid of the command that created it (0: the function's
// kernel driver; a DevX user context's uid otherwise), which firmware/resource_helpers.h checks.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>

namespace hcaemu::model {

template <typename T>
class ObjectTable {
 public:
  // IDs in [first, last]; first >= 1.
  ObjectTable(uint32_t first, uint32_t last, uint32_t limit)
      : first_(first == 0 ? 1 : first), last_(last), limit_(limit), next_(first_) {}

  void set_limit(uint32_t limit) { limit_ = limit; }
  void set_range(uint32_t first, uint32_t last) {
    first_ = first == 0 ? 1 : first;
    last_ = last;
    if (next_ < first_ || next_ > last_) next_ = first_;
  }
  uint32_t limit() const { return limit_; }
  uint32_t first() const { return first_; }
  uint32_t last() const { return last_; }

  // Whether `id` could name an object of this table at all (BAD_INDEX when not).
  bool in_range(uint32_t id) const { return id >= first_ && id <= last_; }

  // Stores `object` under a fresh ID, owned by `owner`, and returns the ID; 0 when the table is full.
  uint32_t insert(T object, uint16_t owner = 0) {
    if (objects_.size() >= limit_ || last_ < first_ || objects_.size() + held_ids_ > uint64_t(last_ - first_)) return 0;
    uint32_t id = next_;
    // Next-fit: at most size() + held IDs + 1 probes find a free ID.
    while (objects_.count(id) != 0 || held(id)) id = id == last_ ? first_ : id + 1;
    next_ = id == last_ ? first_ : id + 1;
    objects_.emplace(id, std::move(object));
    if (owner != 0) owners_[id] = owner;
    return id;
  }

  // The uid that created object `id` (0 for the kernel's objects and for IDs not in use).
  uint16_t owner(uint32_t id) const {
    auto it = owners_.find(id);
    return it == owners_.end() ? 0 : it->second;
  }
  size_t owned_by(uint16_t owner) const {
    size_t count = 0;
    for (const auto& [id, uid] : owners_) count += uid == owner ? 1 : 0;
    for (const auto& [first, block] : held_) count += block.owner == owner ? 1 : 0;
    return count;
  }

  // Blocks of IDs held back from insert() for `owner` (reserved QP numbers: a process names them
  // to its peers before any object has them). A block is 2^log_count IDs aligned to its size, free
  // of objects and of other blocks; returns its first ID, or 0 when the range has no such block.
  uint32_t hold_block(uint32_t log_count, uint16_t owner) {
    if (log_count >= 32) return 0;
    const uint64_t count = uint64_t(1) << log_count;
    const uint64_t start = (uint64_t(std::max(first_, hold_next_)) + count - 1) & ~(count - 1);
    const uint64_t lowest = (uint64_t(first_) + count - 1) & ~(count - 1);
    // One lap from the last block handed out; each step passes an object or a held block, so a
    // lap takes at most size() + held blocks + 1 steps past free space.
    for (uint64_t b = start, steps = 0; steps <= (uint64_t(last_) - first_ + 1) / count; ++steps) {
      if (b + count - 1 > last_) b = lowest;
      if (b + count - 1 > last_) return 0;
      if (block_free(uint32_t(b), count)) {
        held_[uint32_t(b)] = HeldBlock{uint32_t(count), owner};
        held_ids_ += count;
        hold_next_ = uint32_t(b + count - 1 == last_ ? first_ : b + count);
        return uint32_t(b);
      }
      b += count;
    }
    return 0;
  }
  bool holds_block(uint32_t first) const { return held_.count(first) != 0; }
  uint16_t block_owner(uint32_t first) const {
    auto it = held_.find(first);
    return it == held_.end() ? 0 : it->second.owner;
  }
  bool release_block(uint32_t first) {
    auto it = held_.find(first);
    if (it == held_.end()) return false;
    held_ids_ -= it->second.count;
    held_.erase(it);
    return true;
  }
  uint64_t held_ids() const { return held_ids_; }
  // Whether `id` lies in a held block.
  bool held(uint32_t id) const {
    auto it = held_.upper_bound(id);
    if (it == held_.begin()) return false;
    --it;
    return uint64_t(id) < uint64_t(it->first) + it->second.count;
  }

  T* find(uint32_t id) {
    auto it = objects_.find(id);
    return it == objects_.end() ? nullptr : &it->second;
  }
  const T* find(uint32_t id) const {
    auto it = objects_.find(id);
    return it == objects_.end() ? nullptr : &it->second;
  }
  bool contains(uint32_t id) const { return objects_.count(id) != 0; }
  bool erase(uint32_t id) {
    owners_.erase(id);
    return objects_.erase(id) != 0;
  }
  void clear() {
    objects_.clear();
    owners_.clear();
    held_.clear();
    held_ids_ = 0;
    hold_next_ = 0;
    next_ = first_;
  }
  size_t size() const { return objects_.size(); }
  bool empty() const { return objects_.empty(); }

  // Iteration in ID order: pairs of (id, object).
  auto begin() { return objects_.begin(); }
  auto end() { return objects_.end(); }
  auto begin() const { return objects_.begin(); }
  auto end() const { return objects_.end(); }

 private:
  struct HeldBlock {
    uint32_t count;
    uint16_t owner;
  };
  // No object and no held ID in [b, b + count).
  bool block_free(uint32_t b, uint64_t count) const {
    auto object = objects_.lower_bound(b);
    if (object != objects_.end() && object->first - uint64_t(b) < count) return false;
    auto after = held_.lower_bound(b);
    if (after != held_.end() && after->first - uint64_t(b) < count) return false;
    return !held(b);
  }

  uint32_t first_;
  uint32_t last_;
  uint32_t limit_;
  uint32_t next_;
  uint32_t hold_next_ = 0;
  uint64_t held_ids_ = 0;
  std::map<uint32_t, T> objects_;
  std::map<uint32_t, uint16_t> owners_;  // only objects a user context created
  std::map<uint32_t, HeldBlock> held_;   // by first ID
};

}  // namespace hcaemu::model
