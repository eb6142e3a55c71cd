#pragma once
// The few statistics inspect and the run summary share: power-of-two size buckets and
// nearest-rank percentiles.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace hcaemu::replay {

// A message size's bucket: the power of two at or above it.
inline uint64_t size_bucket(uint64_t bytes) {
  uint64_t top = 1;
  while (top < bytes) top <<= 1;
  return top;
}
// "64 B", "4 KiB", "1 MiB".
inline std::string size_bucket_name(uint64_t top) {
  if (top >= (uint64_t(1) << 20)) return std::to_string(top >> 20) + " MiB";
  if (top >= 1024) return std::to_string(top >> 10) + " KiB";
  return std::to_string(top) + " B";
}
// Nearest-rank percentile `p` (0-100] of sorted samples; 0 for none.
inline uint64_t nearest_rank(const std::vector<uint64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t rank = size_t(std::max(1.0, std::ceil(p / 100.0 * double(sorted.size()))));
  return sorted[std::min(rank, sorted.size()) - 1];
}

}  // namespace hcaemu::replay
