#pragma once
// Device memory (MEMIC): the on-chip memory a ConnectX lends to verbs users (ibv_alloc_dm). It is
// a window of BAR0 that software reads and writes with loads and stores (mlx5_ib maps pieces of it
// to user space) and that memory keys in MEMIC access mode hand to the data path: a WQE's SGE, an
// RDMA WRITE/READ or an atomic then reads or writes these bytes instead of host memory.
//
// The driver keeps the window's page bitmap and asks ALLOC_MEMIC for `size` bytes inside a range
// of whole pages it chose; the device places them at the alignment asked, or answers NO_RESOURCES
// so the driver tries the next page. Bytes are zeroed when allocated and when freed: one process's
// data never shows through another's allocation.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "model/objects/sw_icm.h"
#include "pcie/host_port.h"

namespace hcaemu::model {

// Where the data path addresses device memory: a DmaChunk at kDeviceMemoryAddress + n is byte n of
// the window. Host addresses never reach this far (a PA-mode key refuses them), so the function's
// DMA router (FunctionMemory) can tell the two apart by the address alone.
inline constexpr uint64_t kDeviceMemoryAddress = uint64_t(1) << 63;

// MEMIC atomic operations (MODIFY_MEMIC): a load or store at an operation address acts on the
// byte of device memory it mirrors. Each operation has its own mirror of the window.
enum class MemicOperation : uint8_t { kIncrement = 0, kTestAndSet = 1 };
inline constexpr uint32_t kMemicOperations = 2;

struct DeviceMemoryWindow {
  uint64_t bar_offset = 0;  // BAR0 offset of byte 0 (device_mem_cap.memic_bar_start_addr)
  uint32_t bytes = 0;       // 0: the function has no device memory
  // BAR0 offset of the operation mirrors: operation k's mirror of window byte n is at
  // ops_offset + k * bytes + n. They sit just below the window.
  uint64_t ops_offset = 0;
  // The first BAR0 byte past the UAR pages: the mirrors, or the window, or the BAR's end.
  uint64_t uar_end(uint64_t bar0_size) const { return bytes == 0 ? bar0_size : ops_offset; }
};

// The window of a BAR0 of `bar0_size` bytes: its last eighth, at most 256 KiB (a ConnectX-6 Dx
// offers 256 KiB of MEMIC), and its operation mirrors below it, so the UAR pages before them keep
// most of the BAR. mlx5_ib tracks at most 256 pages of it (MLX5_MAX_MEMIC_PAGES).
DeviceMemoryWindow device_memory_window(uint64_t bar0_size);

class DeviceMemory {
 public:
  static constexpr uint32_t kAllocationGranule = 64;  // memic_size is a multiple of 64 bytes
  static constexpr uint32_t kLogMinAlignment = 6;     // log_memic_addr_alignment counts from 64 bytes
  static constexpr uint32_t kMaxLogAlignment = 6;     // device_mem_cap.log_max_memic_addr_alignment: 4 KiB

  void configure(DeviceMemoryWindow window);
  const DeviceMemoryWindow& window() const { return window_; }
  bool present() const { return window_.bytes != 0; }
  // [bar_offset, bar_offset + length) lies inside the window.
  bool contains(uint64_t bar_offset, uint64_t length) const;

  enum class AllocError : uint8_t { kNone, kBadParameter, kNoRoom };
  // ALLOC_MEMIC: `size` bytes aligned to 64 << log_alignment inside [range_start, range_start +
  // range_size) (BAR0 offsets), not overlapping an allocation. Returns the BAR0 offset placed.
  AllocError allocate(uint64_t range_start, uint64_t range_size, uint32_t size, uint32_t log_alignment,
                      uint64_t& placed);
  // DEALLOC_MEMIC: exactly an allocation made before (start and size), else false.
  bool release(uint64_t bar_offset, uint32_t size);
  void release_all();  // the function reset: every allocation gone, every byte zero
  size_t allocations() const { return allocations_.size(); }

  // MODIFY_MEMIC: turns an operation on (or off) for the allocation that starts at `bar_offset`.
  // On: returns the operation address of the allocation's first byte (a BAR0 offset); nothing for
  // an unknown operation or a start that is no allocation's. Off: false when it was not on.
  std::optional<uint64_t> enable_operation(uint64_t bar_offset, uint8_t operation);
  bool disable_operation(uint64_t bar_offset, uint8_t operation);
  // [bar_offset, bar_offset + length) lies in the operation mirrors.
  bool in_operations(uint64_t bar_offset, uint64_t length) const;
  // A load or store at an operation address, one byte at a time: an increment adds the byte
  // stored, a test-and-set load returns the byte and leaves 1. An access to a byte whose
  // allocation has not turned the operation on, or of another size, does nothing (a load reads
  // 0) and returns false.
  bool operate(uint64_t bar_offset, bool is_read, std::span<uint8_t> data);

  // Loads and stores through BAR0 and the data path's accesses, by offset inside the window.
  // False (nothing touched) for a range outside it.
  bool read(uint64_t window_offset, std::span<uint8_t> out) const;
  bool write(uint64_t window_offset, std::span<const uint8_t> in);

 private:
  DeviceMemoryWindow window_{};
  std::vector<uint8_t> bytes_;
  std::map<uint64_t, uint32_t> allocations_;  // BAR0 offset -> size
  std::map<uint64_t, uint8_t> operations_;    // allocation's BAR0 offset -> bit per MemicOperation on
};

// The function's DMA as the data path sees it: host memory through the client, device memory at
// kDeviceMemoryAddress, steering ICM at kSwIcmAddress (objects/sw_icm.h). A range that crosses from
// host into device memory is split at the boundary.
class FunctionMemory final : public pcie::HostMemory {
 public:
  FunctionMemory(DeviceMemory& device, SwIcm& icm) : device_(device), icm_(icm) {}
  FunctionMemory(const FunctionMemory&) = delete;
  FunctionMemory& operator=(const FunctionMemory&) = delete;

  void set_host(pcie::HostMemory* host) { host_ = host; }
  pcie::HostMemory* host() const { return host_; }

  bool read(uint64_t addr, std::span<uint8_t> dst) override;
  bool write(uint64_t addr, std::span<const uint8_t> src) override;
  bool read_pipelined(uint64_t addr, std::span<uint8_t> dst, uint64_t issue_ps, uint64_t& ready_ps) override;
  uint64_t host_faults() const override { return host_ != nullptr ? host_->host_faults() : 0; }

 private:
  DeviceMemory& device_;
  SwIcm& icm_;
  pcie::HostMemory* host_ = nullptr;
};

}  // namespace hcaemu::model
