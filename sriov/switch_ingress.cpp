#include "sriov/switch_ingress.h"

namespace hcaemu::sriov {

SwitchIngress::SwitchIngress(sc_core::sc_module_name name, Forward forward)
    : sc_module(name), forward_(std::move(forward)) {
  SC_METHOD(forward_due);
  sensitive << due_;
  dont_initialize();
}

void SwitchIngress::submit(uint16_t vport, std::span<const uint8_t> frame, const sc_core::sc_time& at,
                           uint32_t sender_td) {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  if (at <= now && queue_.empty()) {
    due_now_.assign(frame.begin(), frame.end());
    return forward_(vport, due_now_, sender_td);
  }
  queue_.push({.at = std::max(at, now), .order = next_order_++, .vport = vport, .sender_td = sender_td,
               .frame = std::vector<uint8_t>(frame.begin(), frame.end())});
  due_.notify(queue_.top().at - now);  // an earlier notification stands; a later one is replaced
}

void SwitchIngress::forward_due() {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  while (!queue_.empty() && queue_.top().at <= now) {
    // The queue's top is const: its frame moves out through a copy of the entry's handle.
    Pending next = std::move(const_cast<Pending&>(queue_.top()));
    queue_.pop();
    forward_(next.vport, next.frame, next.sender_td);
  }
  if (!queue_.empty()) due_.notify(queue_.top().at - now);
}

}  // namespace hcaemu::sriov
