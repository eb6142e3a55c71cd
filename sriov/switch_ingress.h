#pragma once
// The embedded switch's ingress in model time. A function's work item runs ahead of the kernel
// (pcie/model_time.h) and hands over its frames stamped with its own time; the switch must see
// the frames of all functions in the order they reach it, so each waits here until the kernel's
// time is its own, and frames of one time leave in the order they came. A frame already due goes
// through at once.
#include <systemc>

#include <cstdint>
#include <functional>
#include <queue>
#include <span>
#include <vector>

namespace hcaemu::sriov {

class SwitchIngress : public sc_core::sc_module {
 public:
  // The frame is the ingress's buffer: the receiver may take it (swap it out) instead of copying.
  using Forward = std::function<void(uint16_t vport, std::vector<uint8_t>& frame, uint32_t sender_td)>;
  SC_HAS_PROCESS(SwitchIngress);
  SwitchIngress(sc_core::sc_module_name name, Forward forward);

  // A frame sent by `vport` at model time `at` (not before the kernel's time), through a TIS of
  // transport domain `sender_td` (0: none).
  void submit(uint16_t vport, std::span<const uint8_t> frame, const sc_core::sc_time& at, uint32_t sender_td = 0);
  // The same, taking the sender's buffer (an empty one is left in its place): no copy.
  void submit_buffer(uint16_t vport, std::vector<uint8_t>& frame, const sc_core::sc_time& at, uint32_t sender_td = 0);
  size_t waiting() const { return queue_.size(); }

 private:
  // Plain data, so a reallocating queue moves its frames rather than copying them (sc_time's copy
  // is not noexcept, which made the whole entry's move throwing).
  struct Pending {
    sc_core::sc_time::value_type at;  // kernel ticks
    uint64_t order;
    uint16_t vport;
    uint32_t sender_td;
    std::vector<uint8_t> frame;
    bool operator>(const Pending& other) const { return at != other.at ? at > other.at : order > other.order; }
  };
  void forward_due();  // SC_METHOD
  bool due_at_once(const sc_core::sc_time& at) const;
  void enqueue(uint16_t vport, std::vector<uint8_t>&& frame, const sc_core::sc_time& at, uint32_t sender_td);

  Forward forward_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> queue_;
  uint64_t next_order_ = 0;
  std::vector<uint8_t> due_now_;  // a frame forwarded at once
  sc_core::sc_event due_;
};

}  // namespace hcaemu::sriov
