#include "sriov/eswitch.h"

#include <algorithm>

namespace hcaemu::sriov {
namespace {
constexpr size_t kEthHeader = 14;
bool is_group(const Mac& mac) { return (mac[0] & 0x01) != 0; }  // broadcast or multicast
}  // namespace

bool Eswitch::Vport::owns(const Mac& m) const {
  return m == mac || std::find(unicast.begin(), unicast.end(), m) != unicast.end();
}

bool Eswitch::Vport::subscribed(const Mac& group) const {
  return (trusted && asks_all_groups) || std::find(groups.begin(), groups.end(), group) != groups.end();
}

namespace {
// Called for every frame sent: an unchanged list costs a compare, not an allocation.
void assign_if_changed(std::vector<Mac>& list, std::span<const Mac> macs) {
  if (!std::equal(list.begin(), list.end(), macs.begin(), macs.end())) list.assign(macs.begin(), macs.end());
}
}  // namespace

uint16_t Eswitch::add_vport(const Mac& permanent_mac, Deliver deliver) {
  Vport v;
  v.mac = permanent_mac;
  v.deliver = std::move(deliver);
  vports_.push_back(std::move(v));
  return uint16_t(vports_.size() - 1);
}

bool Eswitch::set_loopback(uint16_t vport, Loopback loopback) {
  if (vport >= vports_.size()) return false;
  vports_[vport].loopback = std::move(loopback);
  return true;
}

bool Eswitch::set_admin_up(uint16_t vport, bool up) {
  if (vport >= vports_.size()) return false;
  vports_[vport].up = up;
  return true;
}

bool Eswitch::set_unicast_list(uint16_t vport, std::span<const Mac> macs) {
  if (vport >= vports_.size()) return false;
  assign_if_changed(vports_[vport].unicast, macs);
  return true;
}

bool Eswitch::set_group_filter(uint16_t vport, std::span<const Mac> groups, bool all_groups) {
  if (vport >= vports_.size()) return false;
  assign_if_changed(vports_[vport].groups, groups);
  vports_[vport].asks_all_groups = all_groups;
  return true;
}

bool Eswitch::set_trusted(uint16_t vport, bool on) {
  if (vport >= vports_.size()) return false;
  vports_[vport].trusted = on;
  return true;
}

bool Eswitch::set_spoof_check(uint16_t vport, bool on) {
  if (vport >= vports_.size()) return false;
  vports_[vport].spoof_check = on;
  return true;
}

void Eswitch::deliver(Vport& to, std::span<const uint8_t> frame) {
  if (!to.up) {
    ++to.counters.drop_vport_down;
    return;
  }
  ++to.counters.rx_frames;
  if (to.deliver) to.deliver(frame);
}

void Eswitch::transmit(uint16_t from, std::span<const uint8_t> frame, uint32_t sender_td) {
  if (from >= vports_.size()) return void(++counters_.drop_bad_vport);
  Vport& sender = vports_[from];
  if (tap_) tap_(frame);
  if (!sender.up) {
    ++sender.counters.drop_vport_down;
    return void(++counters_.drop_sender_down);
  }
  if (frame.size() < kEthHeader) return void(++counters_.drop_runt);
  if (sender.spoof_check && !std::equal(sender.mac.begin(), sender.mac.end(), frame.begin() + 6)) {
    ++sender.counters.drop_spoofed;
    return void(++counters_.drop_spoofed);
  }
  ++sender.counters.tx_frames;
  Mac dst;
  std::copy_n(frame.begin(), dst.size(), dst.begin());
  if (is_group(dst)) {
    ++counters_.flooded;
    deliver_to_group(dst, frame, from);
    if (sender.loopback) {
      ++counters_.looped_back;
      sender.loopback(frame, sender_td);
    }
    if (uplink_) to_uplink(frame);
    return;
  }
  if (const size_t owner = owner_of(dst); owner == from) {
    if (!sender.loopback) return void(++counters_.drop_to_self);
    ++counters_.looped_back;
    return sender.loopback(frame, sender_td);
  } else if (owner < vports_.size()) {
    ++counters_.forwarded;
    return deliver(vports_[owner], frame);
  }
  if (uplink_) return to_uplink(frame);
  ++counters_.drop_unknown_unicast;
}

void Eswitch::to_uplink(std::span<const uint8_t> frame) {
  if (!uplink_up_) return void(++counters_.drop_uplink_down);
  ++counters_.uplink_tx;
  uplink_(frame);
}

void Eswitch::receive_from_uplink(std::span<const uint8_t> frame) {
  if (!uplink_ || !uplink_up_) return void(++counters_.drop_uplink_down);
  if (tap_) tap_(frame);
  if (frame.size() < kEthHeader) return void(++counters_.drop_uplink_runt);
  Mac dst, src;
  std::copy_n(frame.begin(), dst.size(), dst.begin());
  std::copy_n(frame.begin() + 6, src.size(), src.begin());
  if (owner_of(src) < vports_.size()) return void(++counters_.drop_uplink_local_source);
  ++counters_.uplink_rx;
  if (is_group(dst)) return deliver_to_group(dst, frame, vports_.size());
  if (const size_t owner = owner_of(dst); owner < vports_.size()) return deliver(vports_[owner], frame);
  ++counters_.drop_uplink_unknown;
}

size_t Eswitch::owner_of(const Mac& mac) const {
  for (size_t i = 0; i < vports_.size(); ++i)
    if (vports_[i].owns(mac)) return i;
  return vports_.size();
}

void Eswitch::deliver_to_group(const Mac& group, std::span<const uint8_t> frame, size_t except) {
  for (size_t i = 0; i < vports_.size(); ++i) {
    if (i == except) continue;
    if (vports_[i].up && !vports_[i].subscribed(group))
      ++counters_.group_unsubscribed;
    else
      deliver(vports_[i], frame);  // counted as dropped there when the vport is down
  }
}

}  // namespace hcaemu::sriov
