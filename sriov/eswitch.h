#pragma once
// The embedded switch between the device's functions (PF + enabled VFs): one vport per function,
// each owning its permanent MAC plus the unicast list its driver programs (MODIFY_NIC_VPORT_CONTEXT).
// A frame from one vport goes to the single vport that owns its destination MAC; a broadcast or
// multicast frame goes to every other vport that is up and subscribed to its address (the multicast
// list its driver programs, broadcast included; mlx5e lists it while the netdev is open) or that
// receives all multicast (a trusted vport in allmulti or promiscuous mode). A unicast frame to the sender's own address
// goes back to the sender through its loopback path (a ConnectX loops such traffic inside the NIC:
// two QPs of one function talk this way), or is dropped when the vport has none. Unknown unicast is dropped, not flooded:
// every function's addresses are known to the switch, and flooding would show one VF's traffic to
// the others. A vport whose admin state is down neither sends nor receives. Pure C++, no SystemC.
//
// With an uplink (the physical port, set_uplink), unknown unicast leaves through it instead, and so
// does every group frame of a vport; frames that arrive on it go to the vport that owns their
// destination, group frames to each subscribed vport. An uplink frame whose source is a vport's
// address (a loop, or a host outside posing as a function) is dropped, as is unknown unicast.
#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace hcaemu::sriov {

using Mac = std::array<uint8_t, 6>;

struct VportCounters {
  uint64_t rx_frames = 0, tx_frames = 0;
  uint64_t drop_vport_down = 0;  // frames the vport did not send/receive because it is down
  uint64_t drop_spoofed = 0;     // frames sent with a source MAC that is not the vport's
};

struct EswitchCounters {
  uint64_t forwarded = 0, flooded = 0;
  uint64_t group_unsubscribed = 0;  // copies of group frames not given to a vport that did not subscribe
  uint64_t looped_back = 0;
  uint64_t drop_unknown_unicast = 0, drop_runt = 0, drop_bad_vport = 0, drop_sender_down = 0, drop_to_self = 0;
  uint64_t drop_spoofed = 0;
  uint64_t uplink_tx = 0, uplink_rx = 0;
  uint64_t drop_uplink_down = 0;              // frames for the uplink while its link is down
  uint64_t drop_uplink_unknown = 0;           // unicast from the uplink that no vport owns
  uint64_t drop_uplink_local_source = 0;      // from the uplink with a vport's address as source
  uint64_t drop_uplink_runt = 0;
};

class Eswitch {
 public:
  using Deliver = std::function<void(std::span<const uint8_t> frame)>;
  // A vport's own frame coming back to it, with the transport domain the sender named (0: none).
  using Loopback = std::function<void(std::span<const uint8_t> frame, uint32_t sender_td)>;

  // Adds a vport (PF first, then VF n = vport n + 1 by convention); returns its number.
  uint16_t add_vport(const Mac& permanent_mac, Deliver deliver);
  // Where the vport's own frames come back (its function's local loopback): unicast to one of its
  // addresses, and every broadcast and multicast it sends (the function filters by its loopback
  // switches). Without it, own unicast is dropped and group frames reach only the other vports.
  bool set_loopback(uint16_t vport, Loopback loopback);
  bool set_admin_up(uint16_t vport, bool up);
  bool set_unicast_list(uint16_t vport, std::span<const Mac> macs);  // in addition to the permanent MAC
  // The group addresses the vport receives (broadcast only when listed); `all_groups`: its driver
  // asks for every group address (allmulti or promiscuous), which only a trusted vport gets.
  bool set_group_filter(uint16_t vport, std::span<const Mac> groups, bool all_groups);
  // Whether the vport's ask for all groups is honoured (a VF's `trust`, off for VFs by default).
  bool set_trusted(uint16_t vport, bool on);
  // Source MAC spoof check (a VF's `spoofchk`, on for VFs by default): a frame whose source is not
  // the vport's permanent MAC is dropped and counted, so a VF cannot pose as another function.
  bool set_spoof_check(uint16_t vport, bool on);

  // A frame sent by `vport` (its SQ engine's EthernetPort::transmit), through a TIS of `sender_td`.
  void transmit(uint16_t vport, std::span<const uint8_t> frame, uint32_t sender_td = 0);
  // Sees every frame a vport sends, before forwarding, and every frame the uplink brings (the pcap tap).
  void set_tap(Deliver tap) { tap_ = std::move(tap); }

  // The physical port: where frames for the outside go (null: none, unknown unicast is dropped).
  void set_uplink(Deliver out) { uplink_ = std::move(out); }
  bool has_uplink() const { return bool(uplink_); }
  // Carrier: while down, frames for the uplink are dropped and counted, and none come in.
  void set_uplink_up(bool up) { uplink_up_ = up; }
  // A frame that arrived on the uplink.
  void receive_from_uplink(std::span<const uint8_t> frame);

  size_t vports() const { return vports_.size(); }
  const VportCounters& counters(uint16_t vport) const { return vports_.at(vport).counters; }
  const EswitchCounters& counters() const { return counters_; }

 private:
  struct Vport {
    Mac mac{};
    std::vector<Mac> unicast;
    std::vector<Mac> groups;
    bool asks_all_groups = false;
    bool trusted = true;
    bool up = true;
    bool spoof_check = false;
    Deliver deliver;
    Loopback loopback;
    VportCounters counters;
    bool owns(const Mac& mac) const;
    bool subscribed(const Mac& group) const;
  };
  void deliver(Vport& to, std::span<const uint8_t> frame);
  // Every vport but `except` subscribed to `group` (except = vports(): none left out).
  void deliver_to_group(const Mac& group, std::span<const uint8_t> frame, size_t except);
  size_t owner_of(const Mac& mac) const;  // the vport owning a unicast address; vports() when none
  void to_uplink(std::span<const uint8_t> frame);

  std::vector<Vport> vports_;
  Deliver tap_;
  Deliver uplink_;
  bool uplink_up_ = true;
  EswitchCounters counters_;
};

}  // namespace hcaemu::sriov
