#pragma once
// Per-function object tables (PD, EQ, CQ, MKEY, QP...): IDs handed out from a range, at most
// `limit` objects alive (the caps' 1 << log_max_*), never ID 0, and a freed ID is not handed out
// again until the allocator has gone once around the range, so a stale ID the driver still holds
// finds nothing (or, after a full lap, another object of the same function - never a foreign one:
// each function has its own tables). Every ID that comes from the driver is looked up here.
// Each object also records its owner: the uid of the command that created it (0: the function's
// kernel driver; a DevX user context's uid otherwise), which firmware/resource_helpers.h checks.
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
    if (objects_.size() >= limit_ || last_ < first_ || objects_.size() > uint64_t(last_ - first_)) return 0;
    uint32_t id = next_;
    // Next-fit: at most size() + 1 probes find a free ID.
    while (objects_.count(id) != 0) id = id == last_ ? first_ : id + 1;
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
    return count;
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
  uint32_t first_;
  uint32_t last_;
  uint32_t limit_;
  uint32_t next_;
  std::map<uint32_t, T> objects_;
  std::map<uint32_t, uint16_t> owners_;  // only objects a user context created
};

}  // namespace hcaemu::model
