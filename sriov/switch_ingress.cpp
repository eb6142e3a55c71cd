#include "sriov/switch_ingress.h"

#include <utility>

namespace hcaemu::sriov {

SwitchIngress::SwitchIngress(sc_core::sc_module_name name, Forward forward)
    : sc_module(name), forward_(std::move(forward)) {
  SC_METHOD(forward_due);
  sensitive << due_;
  dont_initialize();
}

bool SwitchIngress::due_at_once(const sc_core::sc_time& at) const {
  return at <= sc_core::sc_time_stamp() && queue_.empty();
}

void SwitchIngress::enqueue(uint16_t vport, std::vector<uint8_t>&& frame, const sc_core::sc_time& at,
                            uint32_t sender_td) {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  queue_.push({.at = std::max(at, now).value(), .order = next_order_++, .vport = vport, .sender_td = sender_td,
               .frame = std::move(frame)});
  // An earlier notification stands; a later one is replaced.
  due_.notify(sc_core::sc_time::from_value(queue_.top().at) - now);
}

void SwitchIngress::submit(uint16_t vport, std::span<const uint8_t> frame, const sc_core::sc_time& at,
                           uint32_t sender_td) {
  if (!due_at_once(at)) return enqueue(vport, std::vector<uint8_t>(frame.begin(), frame.end()), at, sender_td);
  due_now_.assign(frame.begin(), frame.end());
  forward_(vport, due_now_, sender_td);
}

void SwitchIngress::submit_buffer(uint16_t vport, std::vector<uint8_t>& frame, const sc_core::sc_time& at,
                                  uint32_t sender_td) {
  if (!due_at_once(at)) return enqueue(vport, std::exchange(frame, {}), at, sender_td);
  due_now_.swap(frame);
  frame.clear();  // what the last receiver left in the ingress's buffer is not the sender's
  forward_(vport, due_now_, sender_td);
}

void SwitchIngress::forward_due() {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  while (!queue_.empty() && queue_.top().at <= now.value()) {
    // The queue's top is const: its frame moves out through a copy of the entry's handle.
    Pending next = std::move(const_cast<Pending&>(queue_.top()));
    queue_.pop();
    forward_(next.vport, next.frame, next.sender_td);
  }
  if (!queue_.empty()) due_.notify(sc_core::sc_time::from_value(queue_.top().at) - now);
}

}  // namespace hcaemu::sriov
