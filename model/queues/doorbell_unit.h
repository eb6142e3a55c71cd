#pragma once
// UAR doorbells (mlx5-device-bringup.md section 7.1): BAR0 writes past the init segment. UAR page n
// is BAR0 + n * 4 KiB; only pages the function allocated with ALLOC_UAR are honoured. Within a page:
// +0x20 CQ arm (BE64, or two BE32 halves high first), +0x40 EQ CI + arm, +0x48 EQ CI only (BE32),
// +0x800.. BlueFlame/SQ doorbells, handed to the data path through a hook. Anything else, or a
// doorbell naming an unknown EQ/CQ, is counted and ignored; so are stores to the VARs
// (objects/var_window.h), which have no virtio queue behind them.
#include <cstdint>
#include <functional>
#include <map>
#include <span>

#include "pcie/host_port.h"

namespace hcaemu::model {

struct FunctionContext;

// A doorbell record counter the driver keeps in host memory (RQ/SQ/SRQ/CQ records are big-endian
// dwords). False when the record is not configured (address 0), there is no host memory, or the
// DMA is refused.
bool read_doorbell_record(pcie::HostMemory* memory, uint64_t address, uint32_t& value);

namespace uar {
inline constexpr uint32_t kCqDoorbell = 0x20;
inline constexpr uint32_t kCqDoorbellLow = 0x24;
inline constexpr uint32_t kEqArmDoorbell = 0x40;
inline constexpr uint32_t kEqDoorbell = 0x48;
inline constexpr uint32_t kBlueFlame = 0x800;  // .. 0xfff
}  // namespace uar

struct DoorbellCounters {
  uint64_t writes = 0;
  uint64_t unallocated_uar = 0;  // page the function never allocated (or freed)
  uint64_t var_writes = 0;       // stores to a virtio access region: no virtio queue behind it
  uint64_t malformed = 0;        // unknown offset, wrong size, unknown EQ/CQ, bad CI/command
  uint64_t eq_doorbells = 0;
  uint64_t cq_doorbells = 0;
  uint64_t sq_doorbells = 0;
};

class DoorbellUnit {
 public:
  // SQ/BlueFlame doorbell: UAR index, offset inside the page (>= 0x800), the bytes written (8 for
  // a plain doorbell: ctrl segment dword0/dword1, QPN/SQN = dword1 >> 8) and when they were.
  using SqHook = std::function<void(FunctionContext&, uint32_t uar_index, uint32_t page_offset,
                                    std::span<const uint8_t> data, uint64_t written_ps)>;

  // `bar_offset` is the BAR0 offset of the write (past the init segment), `written_ps` its model
  // time (0: now), which the SQ hook gets.
  void write(FunctionContext& f, uint64_t bar_offset, std::span<const uint8_t> data, uint64_t written_ps = 0);

  void set_sq_hook(SqHook hook) { sq_hook_ = std::move(hook); }
  void reset() { cq_high_.clear(); }
  const DoorbellCounters& counters() const { return counters_; }

 private:
  void cq_doorbell(FunctionContext& f, uint32_t high, uint32_t low);

  SqHook sq_hook_;
  std::map<uint32_t, uint32_t> cq_high_;  // UAR index -> high dword of a split 64-bit CQ doorbell
  DoorbellCounters counters_;
};

}  // namespace hcaemu::model
