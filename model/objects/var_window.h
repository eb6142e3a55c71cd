#pragma once
// Virtio access regions (VARs, mlx5dv_alloc_var): doorbell pages of BAR0 that mlx5_ib hands out to
// user space for emulated virtio queues, one per 4 KiB stride. The model has the area, so
// allocating and mapping a VAR works as on a ConnectX-6 Dx, but it offers no virtio queue type and
// no event mode (virtio_emulation_cap): no virtio queue can exist behind a VAR (mlx5_core creates
// no vDPA device, CREATE_GENERAL_OBJECT of a virtio queue is refused), and a store to a VAR is
// counted and dropped (DoorbellCounters::var_writes).
#include <cstdint>

namespace hcaemu::model {

inline constexpr uint32_t kLogVarStride = 12;  // one VAR per 4 KiB page (log_doorbell_stride)
inline constexpr uint32_t kLogVarPages = 4;    // 16 VARs (log_doorbell_bar_size, in 4 KiB pages)
inline constexpr uint64_t kVarPageBytes = 4096;

struct VarWindow {
  uint64_t bar_offset = 0;  // BAR0 offset of VAR 0 (virtio_emulation_cap.doorbell_bar_offset)
  uint64_t bytes = 0;       // 0: the function has no VARs
  bool contains(uint64_t offset) const { return bytes != 0 && offset >= bar_offset && offset - bar_offset < bytes; }
};

// The window just below BAR0 offset `end` (where the UAR pages would otherwise end), when what lies
// below `end` is at least eight times its size; none otherwise.
constexpr VarWindow var_window(uint64_t end) {
  constexpr uint64_t bytes = kVarPageBytes << kLogVarPages;
  if (end / 8 < bytes) return {};
  return {.bar_offset = end - bytes, .bytes = bytes};
}

}  // namespace hcaemu::model
