#pragma once
// Simulated host memory for testbenches and headless hosts: one contiguous RAM window at a base address, every
// access bounds-checked like the vfio-user DMA space does it, with counters of refused accesses.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <vector>

#include "pcie/host_port.h"

namespace hcaemu::hostsim {

class SimHostMemory : public pcie::HostMemory {
 public:
  // Zeroed memory from calloc: large sizes come as fresh zero pages, committed only where touched,
  // so a headless host with a big window costs no memset (replay runs build one per host).
  SimHostMemory(uint64_t base, uint64_t size)
      : base_(base), size_(size), bytes_(static_cast<uint8_t*>(std::calloc(size ? size : 1, 1))) {
    if (!bytes_) throw std::bad_alloc();
  }

  bool read(uint64_t addr, std::span<uint8_t> dst) override {
    if (failing_) return ++host_faults_, false;
    if (!inside(addr, dst.size())) return ++refused_, false;
    std::memcpy(dst.data(), &bytes_[addr - base_], dst.size());
    return true;
  }
  bool write(uint64_t addr, std::span<const uint8_t> src) override {
    if (failing_) return ++host_faults_, false;
    if (!inside(addr, src.size())) return ++refused_, false;
    std::memcpy(&bytes_[addr - base_], src.data(), src.size());
    return true;
  }

  // A test's stand-in for the host failing the function (a client truncating its shared memory):
  // every access fails from now on and counts as a host fault, until heal().
  void fail_accesses() { failing_ = true; }
  void heal() { failing_ = false; }
  uint64_t host_faults() const override { return host_faults_; }

  uint8_t* at(uint64_t addr) {
    if (addr < base_ || addr - base_ >= size_) throw std::out_of_range("SimHostMemory::at: outside the window");
    return &bytes_[addr - base_];
  }
  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }
  uint64_t refused() const { return refused_; }

 private:
  bool inside(uint64_t addr, uint64_t len) const {
    return addr >= base_ && addr - base_ <= size_ && len <= size_ - (addr - base_);
  }
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  uint64_t base_;
  uint64_t size_;
  std::unique_ptr<uint8_t[], Free> bytes_;
  uint64_t refused_ = 0;
  bool failing_ = false;
  uint64_t host_faults_ = 0;
};

// Records MSI-X signals instead of sending them.
class RecordingMsix : public pcie::MsixSender {
 public:
  bool signal(uint32_t vector) override {
    fired.push_back(vector);
    return true;
  }
  std::vector<uint32_t> fired;
};

}  // namespace hcaemu::hostsim
