#pragma once
// Faults a link injects into the frames it carries (issue 15): loss, corruption and duplication,
// each a probability per frame, drawn from a seeded generator in the order frames cross the link, so
// a closed run with the same seed sees the same faults. A corrupted frame has one bit flipped past
// its headers (Ethernet, IPv6-sized L3, UDP and BTH: 74 bytes), where the RoCE ICRC (or a TCP/UDP
// checksum) covers it, so the receiver drops and counts it as a NIC drops a frame with a bad FCS.
// Pure C++: hcaemu's uplink applies it today, hcafabric's links will.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hcaemu::fabric {

struct LinkFaultSettings {
  double loss = 0, corrupt = 0, duplicate = 0;  // probabilities per frame, 0..1
  uint64_t seed = 1;
  std::string text() const;
};

// "loss=1%,corrupt=0.1%,duplicate=0.5%,seed=7" (a value with % is a percentage, without a fraction);
// nullopt with `error` naming the key or value that is wrong.
std::optional<LinkFaultSettings> parse_link_faults(std::string_view text, std::string& error);

struct LinkFaultCounters {
  uint64_t frames = 0, lost = 0, corrupted = 0, duplicated = 0;
};

class LinkFaults {
 public:
  static constexpr size_t kCorruptFrom = 14 + 40 + 8 + 12;

  explicit LinkFaults(LinkFaultSettings settings);
  // What the link delivers for `frame`: nothing (lost), the frame (maybe corrupted), or it twice.
  std::vector<std::vector<uint8_t>> carry(std::span<const uint8_t> frame);
  const LinkFaultCounters& counters() const { return counters_; }

 private:
  double draw();  // uniform in [0, 1)
  LinkFaultSettings settings_;
  uint64_t state_;
  LinkFaultCounters counters_;
};

}  // namespace hcaemu::fabric
