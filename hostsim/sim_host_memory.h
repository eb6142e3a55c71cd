#pragma once
// Simulated host memory for testbenches and headless hosts: one contiguous RAM window at a base address, every
// access bounds-checked like the vfio-user DMA space does it, with counters of refused accesses.
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "pcie/host_port.h"

namespace hcaemu::hostsim {

class SimHostMemory : public pcie::HostMemory {
 public:
  SimHostMemory(uint64_t base, uint64_t size) : base_(base), bytes_(size) {}

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

  uint8_t* at(uint64_t addr) { return &bytes_.at(addr - base_); }
  uint64_t base() const { return base_; }
  uint64_t size() const { return bytes_.size(); }
  uint64_t refused() const { return refused_; }

 private:
  bool inside(uint64_t addr, uint64_t len) const {
    return addr >= base_ && addr - base_ <= bytes_.size() && len <= bytes_.size() - (addr - base_);
  }
  uint64_t base_;
  std::vector<uint8_t> bytes_;
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
