#pragma once
// Faults a link injects into the frames it carries (issue 15): loss, corruption, duplication and
// reordering, each a probability per frame, drawn from a seeded generator in the order frames cross
// the link, so a closed run with the same seed sees the same faults. A corrupted frame has one bit flipped past
// its headers (Ethernet, IPv6-sized L3, UDP and BTH: 74 bytes), where the RoCE ICRC (or a TCP/UDP
// checksum) covers it, so the receiver drops and counts it as a NIC drops a frame with a bad FCS.
// A reordered frame is held back and delivered right after the next one (it waits for that frame).
// The same settings carry the link's timing (LinkShaper): a rate limit, an added delay and jitter.
// Pure C++: hcaemu's uplink and hcafabric's ports apply both.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hcaemu::fabric {

struct LinkFaultSettings {
  double loss = 0, corrupt = 0, duplicate = 0, reorder = 0;  // probabilities per frame, 0..1
  uint64_t delay_ns = 0, jitter_ns = 0;  // added to every frame: delay + uniform [0, jitter)
  double rate_bps = 0;                   // 0: no limit
  uint64_t seed = 1;
  bool shapes_time() const { return delay_ns != 0 || jitter_ns != 0 || rate_bps != 0; }
  std::string text() const;
};

// "loss=1%,corrupt=0.1%,duplicate=0.5%,reorder=1%,delay=100us,jitter=10us,rate=10gbit,seed=7"
// (a probability with % is a percentage, without a fraction; times in ns/us/ms/s; rates in
// bit/s with an optional kbit/mbit/gbit), applied over `base` (keys not named keep its values);
// nullopt with `error` naming the key or value that is wrong.
std::optional<LinkFaultSettings> parse_link_faults(std::string_view text, std::string& error,
                                                   const LinkFaultSettings& base = {});

struct LinkFaultCounters {
  uint64_t frames = 0, lost = 0, corrupted = 0, duplicated = 0, reordered = 0;
};

class LinkFaults {
 public:
  static constexpr size_t kCorruptFrom = 14 + 40 + 8 + 12;

  explicit LinkFaults(LinkFaultSettings settings);
  // What the link delivers for `frame`: nothing (lost or held back), the frame (maybe corrupted),
  // it twice, and after it a frame held back before.
  std::vector<std::vector<uint8_t>> carry(std::span<const uint8_t> frame);
  // New settings while running (hcactl): the generator restarts from their seed, counts go on.
  void reconfigure(const LinkFaultSettings& settings);
  // What the last carry() did to its frame (for fault logs): a mask of Fault.
  enum Fault : unsigned { kLost = 1, kCorrupted = 2, kDuplicated = 4, kHeldBack = 8 };
  unsigned last_faults() const { return last_; }
  const LinkFaultSettings& settings() const { return settings_; }
  const LinkFaultCounters& counters() const { return counters_; }

 private:
  double draw();  // uniform in [0, 1)
  LinkFaultSettings settings_;
  uint64_t state_;
  LinkFaultCounters counters_;
  std::optional<std::vector<uint8_t>> held_;  // a reordered frame waiting for the next one
  unsigned last_ = 0;
};

// When each frame leaves a link that shapes time: serialised at the rate limit behind the frames
// before it, then delayed by delay + jitter, never before an earlier frame (jitter does not
// reorder; `reorder` does). Times in ns on any clock that only goes forward.
class LinkShaper {
 public:
  explicit LinkShaper(const LinkFaultSettings& settings);
  uint64_t release_ns(uint64_t now_ns, size_t bytes);

 private:
  LinkFaultSettings settings_;
  uint64_t state_;
  uint64_t wire_free_ns_ = 0, last_release_ns_ = 0;
};

}  // namespace hcaemu::fabric
