#pragma once
// An Ethernet learning switch (IEEE 802.1D transparent bridging, without spanning tree): what
// hcafabric runs between the sockets of several hcaemu uplinks and VMs, so they share one L2 segment.
// It learns each source address on the port it arrived by, sends known unicast to its port only,
// and floods unknown unicast, broadcast and multicast to every other port whose link is up.
// Pure C++ (no sockets, no threads, no clock): the caller says which port a frame came in by and
// what time it is, and gets back the ports to send it out of.
//
// Its input comes from peers we do not control, so the address table is bounded (a peer sending
// from a million made-up addresses fills it and no more: new addresses are then not learned and
// their frames are flooded), and every frame the switch does not forward is counted by cause.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace hcaemu::fabric {

using MacAddress = std::array<uint8_t, 6>;

struct LearningSwitchOptions {
  uint64_t ageing_ns = 300'000'000'000;  // 802.1D's default ageing time, 300 s; 0: entries never age
  size_t max_entries = 8192;             // addresses the table holds
};

struct SwitchPortCounters {
  uint64_t rx_frames = 0, rx_bytes = 0;  // every frame handed in by this port, dropped or not
  uint64_t tx_frames = 0, tx_bytes = 0;  // frames the switch sent out of this port
  uint64_t flooded = 0;                  // frames in by this port sent to every other port
  uint64_t dropped_runt = 0;             // shorter than an Ethernet header (14 bytes)
  uint64_t dropped_bad_source = 0;       // a group or all-zero source address: no station sends from it
  uint64_t dropped_same_port = 0;        // for an address learned on the port it came in by
  uint64_t dropped_port_down = 0;        // in by a port whose link is down
};

struct SwitchCounters {
  uint64_t learned = 0;     // addresses entered in the table
  uint64_t moved = 0;       // addresses seen on another port than the one learned on
  uint64_t aged = 0;        // entries removed after the ageing time without a frame from them
  uint64_t forgotten = 0;   // entries removed because their port's link went down
  uint64_t table_full = 0;  // frames whose new source address was not learned: the table was full
};

class LearningSwitch {
 public:
  static constexpr size_t kHeaderBytes = 14;  // destination, source, EtherType

  // `ports` ports, each with its link up until set_port_up says otherwise.
  explicit LearningSwitch(size_t ports, LearningSwitchOptions options = {});

  // The ports to send `frame` out of, having come in by `in_port` at `now_ns` (any clock that
  // does not go back); empty when it is dropped. Throws std::out_of_range for a port it lacks.
  std::vector<size_t> forward(size_t in_port, std::span<const uint8_t> frame, uint64_t now_ns);

  // A link going down forgets the addresses learned on it (the station may come back on another
  // port, and nothing is flooded to a down port meanwhile). Returns how many it forgot.
  size_t set_port_up(size_t port, bool up);
  bool port_up(size_t port) const { return ports_.at(port).up; }

  void set_ageing_ns(uint64_t ageing_ns) { options_.ageing_ns = ageing_ns; }

  // The port `mac` is learned on at `now_ns`; nullopt while unknown (never learned, aged or forgotten).
  std::optional<size_t> port_of(const MacAddress& mac, uint64_t now_ns) const;
  size_t table_size() const { return table_.size(); }

  size_t ports() const { return ports_.size(); }
  const SwitchPortCounters& port_counters(size_t port) const { return ports_.at(port).counters; }
  const SwitchCounters& counters() const { return counters_; }

 private:
  struct Entry {
    size_t port;
    uint64_t seen_ns;  // the last frame from the address
  };
  // The address as a 48-bit number, mixed so that a peer choosing addresses cannot pile them into
  // one bucket of the table as easily as with the raw value.
  struct MixHash {
    size_t operator()(uint64_t mac) const;
  };
  struct Port {
    bool up = true;
    SwitchPortCounters counters;
  };

  bool expired(const Entry& entry, uint64_t now_ns) const;
  void learn(uint64_t source, size_t port, uint64_t now_ns);
  void sweep(uint64_t now_ns);  // removes aged entries, at most once per sweep interval
  void send_to(size_t port, size_t bytes, std::vector<size_t>& out);

  LearningSwitchOptions options_;
  std::vector<Port> ports_;
  std::unordered_map<uint64_t, Entry, MixHash> table_;
  SwitchCounters counters_;
  uint64_t next_sweep_ns_ = 0;
};

}  // namespace hcaemu::fabric
