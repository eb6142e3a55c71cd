#pragma once
// A function's RoCE multicast groups (ATTACH_TO_MCG / DETACH_FROM_MCG): which of its UD QPs take a
// datagram sent to a multicast GID. Bounded as the caps say (log_max_mcg groups, max_qp_mcg QPs a
// group), so a guest cannot grow it without end; a destroyed QP leaves every group it was in.
#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace hcaemu::model {

class MulticastGroups {
 public:
  using Gid = std::array<uint8_t, 16>;
  static constexpr uint32_t kLogMaxGroups = 12;   // caps log_max_mcg
  static constexpr uint32_t kMaxQpsPerGroup = 72;  // caps max_qp_mcg
  enum class Result { kOk, kTooManyGroups, kGroupFull, kNotAttached };

  // Attaching a QP twice is harmless (it stays one member).
  Result attach(const Gid& mgid, uint32_t qpn);
  Result detach(const Gid& mgid, uint32_t qpn);
  void forget_qp(uint32_t qpn);
  // The group's QPs in the order they joined; empty when nobody joined.
  std::span<const uint32_t> members(const Gid& mgid) const;
  size_t groups() const { return groups_.size(); }
  void clear() { groups_.clear(); }

 private:
  std::map<Gid, std::vector<uint32_t>> groups_;
};

// A GID a datagram can be multicast to: IPv6 ff00::/8, or IPv4-mapped 224.0.0.0/4 (RoCEv2 over IPv4).
bool is_multicast_gid(const MulticastGroups::Gid& gid);

}  // namespace hcaemu::model
