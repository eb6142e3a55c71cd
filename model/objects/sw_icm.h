#pragma once
// Steering ICM: the device memory mlx5 DR (software steering) keeps its steering entries (STEs)
// and header-modify actions in. The driver places ranges of it, at addresses it picks inside the
// regions device_mem_cap names (general objects of type SW_ICM); a key of access mode SW_ICM lends
// a placed range to the data path, which reads and writes it as it does host memory (DR writes its
// STEs with RDMA WRITE through such a key and reads them back with RDMA READ).
// Bytes read as zero until written and go back to zero when their range goes, so one process never
// sees another's. A page is kept once written: a function costs hcaemu what it wrote, at most the
// three regions (65 MiB).
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>

namespace hcaemu::model {

// Where the data path addresses steering ICM: a DmaChunk at kSwIcmAddress + a is ICM address a
// (device memory's window is at 1 << 63, host memory below it).
inline constexpr uint64_t kSwIcmAddress = uint64_t(3) << 62;

struct SwIcmRegion {
  uint64_t start = 0;
  uint32_t log_size = 0;
  bool contains(uint64_t address, uint64_t length) const {
    return address >= start && length <= (uint64_t(1) << log_size) && address - start <= (uint64_t(1) << log_size) - length;
  }
};
// The regions the caps announce. DR needs 2^(20 + 6) bytes of STEs (a million 64-byte entries in one
// chunk), 2^(12 + 3) of actions and as much of modify-header patterns; addresses stay below 2^40,
// what an STE's next-table field holds.
inline constexpr SwIcmRegion kSteeringIcm{uint64_t(1) << 38, 26};
inline constexpr SwIcmRegion kHeaderModifyIcm{(uint64_t(1) << 38) + (uint64_t(1) << 32), 20};
inline constexpr SwIcmRegion kHeaderModifyPatternIcm{(uint64_t(1) << 38) + (uint64_t(2) << 32), 16};
inline constexpr uint32_t kLogSwIcmBlock = 12;  // log_sw_icm_alloc_granularity: 4 KiB

// A SW_ICM general object: the range it placed.
struct SwIcmObject {
  uint64_t start = 0;
  uint32_t log_size = 0;
};
inline constexpr uint32_t kLogMaxSwIcmObjects = 12;

class SwIcm {
 public:
  static constexpr uint32_t kPageBytes = uint32_t(1) << kLogSwIcmBlock;

  // [start, start + 2^log_size) inside one region, aligned to its size, at least a block, and
  // overlapping no placed range. False (nothing placed) otherwise.
  bool place(uint64_t start, uint32_t log_size);
  // The range placed at `start` goes, its bytes back to zero.
  bool remove(uint64_t start);
  // [address, address + length) lies inside one placed range.
  bool placed(uint64_t address, uint64_t length) const;

  // The data path's accesses. False (nothing touched) when the range is not inside a placed one.
  bool read(uint64_t address, std::span<uint8_t> out) const;
  bool write(uint64_t address, std::span<const uint8_t> in);

  void clear();  // the function reset
  size_t ranges() const { return ranges_.size(); }
  size_t pages_written() const { return pages_.size(); }

 private:
  using Page = std::array<uint8_t, kPageBytes>;
  std::map<uint64_t, uint64_t> ranges_;  // start -> bytes
  std::unordered_map<uint64_t, std::unique_ptr<Page>> pages_;  // page address -> bytes
};

}  // namespace hcaemu::model
