#pragma once
// The DMA map table of one vfio-user connection: which guest IOVA ranges the client mapped
// (DMA_MAP), and the one API through which the device reaches them (pcie::HostMemory).
//
// * Maps with an fd are mmap(MAP_SHARED)ed at map time; the fd is closed right after mmap (the
//   mapping keeps the memory alive, and QEMU sends a fresh dup'd fd with every DMA_MAP, so keeping
//   them would only pile fds up). Accesses to them are bounds-checked copies that survive the
//   client truncating the file afterwards (guarded_copy.h): such an access fails and is counted.
// * Maps without an fd (anonymous guest RAM, firmware ROM) are reached through DMA_READ/DMA_WRITE
//   messages, via a DmaMessenger (the server), with no lock of this class held while waiting.
// * An access may span several maps only when they are adjacent and together cover the whole
//   range contiguously, each with the needed permission; anything less is refused whole before a
//   byte is copied.
// * Thread safety: accesses take a shared lock for their memcpy, map/unmap take it exclusively,
//   so an unmap returns only after every in-flight memcpy into any map has finished; after that
//   nothing touches the unmapped memory. (A message-based access that already resolved its
//   ranges may still send its DMA_READ/WRITE after a racing unmap: QEMU performs and bounds-checks
//   that access itself, so our memory safety does not depend on the map.)
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <span>

#include "pcie/host_port.h"
#include "qemu-bridge/unique_fd.h"

namespace hcaemu::vfio_user {

// Message-based DMA for fd-less maps. Implemented by the server; returns 0 or a positive errno.
// Called on the accessing thread, without any DmaSpace lock held.
class DmaMessenger {
 public:
  virtual ~DmaMessenger() = default;
  virtual int dma_read(uint64_t addr, std::span<uint8_t> dst) = 0;
  virtual int dma_write(uint64_t addr, std::span<const uint8_t> src) = 0;
};

class DmaSpace final : public pcie::HostMemory {
 public:
  // Permission bits, equal to the DMA_MAP wire flags.
  static constexpr uint32_t kRead = 1u << 0;
  static constexpr uint32_t kWrite = 1u << 1;

  // max_mapped_bytes: the address space the fd-backed maps may take together (one client's budget).
  explicit DmaSpace(size_t max_maps = 4096, DmaMessenger* messenger = nullptr,
                    uint64_t max_mapped_bytes = uint64_t(1) << 40);
  ~DmaSpace() override;
  DmaSpace(const DmaSpace&) = delete;
  DmaSpace& operator=(const DmaSpace&) = delete;

  // Adds [iova, iova + size). With a valid fd, maps fd at fd_offset (the fd is consumed: closed on
  // return, success or not). Returns 0, or EINVAL (size 0, overflow, bad flags, fd too small),
  // EEXIST (overlaps an existing map), ENOSPC (max_maps reached, or the map would take the
  // mapped size past max_mapped_bytes) or the mmap errno.
  int map(uint64_t iova, uint64_t size, uint32_t flags, UniqueFd fd, uint64_t fd_offset);
  // Removes the map that starts at iova with exactly this size. ENOENT when no map starts at
  // iova, EINVAL when one does but with another size. Waits for in-flight memcpy accesses.
  int unmap(uint64_t iova, uint64_t size);
  // Drops every map (UNMAP ALL, disconnect).
  void unmap_all();

  // pcie::HostMemory. Any thread. A zero-length access succeeds.
  bool read(uint64_t addr, std::span<uint8_t> dst) override;
  bool write(uint64_t addr, std::span<const uint8_t> src) override;

  void set_messenger(DmaMessenger* messenger);
  size_t map_count() const;
  uint64_t mapped_bytes() const;
  // Accesses that faulted because the client's file behind a map shrank (SIGBUS caught).
  uint64_t faults() const { return faults_.load(); }
  // Those and the DMA messages the client left unanswered (ETIMEDOUT): the function fails on them.
  uint64_t host_faults() const override { return faults_.load() + unanswered_.load(); }

 private:
  struct Map {
    uint64_t iova = 0, size = 0;
    uint32_t flags = 0;
    void* mapping = nullptr;  // mmap base (page aligned), null for an fd-less map
    size_t mapping_len = 0;
    uint8_t* host = nullptr;  // address of iova inside the mapping
  };
  struct Segment {
    const Map* map;
    uint64_t iova;
    size_t buf_offset, len;
  };
  template <typename Copy, typename Send>
  bool access(uint64_t addr, size_t len, uint32_t need, Copy&& copy, Send&& send);
  static void release(Map& m);

  const size_t max_maps_;
  const uint64_t max_mapped_bytes_;
  uint64_t mapped_bytes_ = 0;  // of the fd-backed maps, guarded by mu_
  mutable std::shared_mutex mu_;
  std::map<uint64_t, Map> maps_;  // keyed by iova; entries never overlap
  DmaMessenger* messenger_ = nullptr;
  std::atomic<uint64_t> faults_{0};
  std::atomic<uint64_t> unanswered_{0};
};

}  // namespace hcaemu::vfio_user
