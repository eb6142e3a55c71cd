#pragma once
// One PCIe function's face: config space (header + caps), BARs and the MSI-X table, composed
// from a FunctionConfig. Knows nothing of RDMA: the model learns about resets and enables through
// callbacks and queries. Not thread-safe: call it from the SystemC kernel thread only.
#include <cstdint>
#include <functional>
#include <span>

#include "pcie/bars.h"
#include "pcie/capabilities.h"
#include "pcie/config_space.h"
#include "pcie/function_config.h"
#include "pcie/msix.h"

namespace hcaemu::pcie {

struct MsixLayout {
  uint16_t vectors;
  uint8_t table_bar;
  uint32_t table_offset;
  uint8_t pba_bar;
  uint32_t pba_offset;
};

class PciFunction {
 public:
  explicit PciFunction(FunctionConfig cfg);  // throws std::invalid_argument on a bad config
  PciFunction(const PciFunction&) = delete;
  PciFunction& operator=(const PciFunction&) = delete;

  // ---- Config space, as the host sees it ----
  uint32_t config_read(uint16_t offset, unsigned size) const;
  void config_write(uint16_t offset, unsigned size, uint32_t value);
  // vfio-user REGION_READ/WRITE on the config region (any count; split inside).
  void config_read_block(uint16_t offset, std::span<uint8_t> out) const;
  void config_write_block(uint16_t offset, std::span<const uint8_t> in);

  // ---- Layout and state queries ----
  const FunctionConfig& config() const { return cfg_; }
  BarInfo bar(unsigned index) const { return bars_.info(index); }
  const BarSet& bars() const { return bars_; }
  MsixLayout msix_layout() const;
  bool memory_space_enabled() const;
  bool bus_master_enabled() const;
  bool msix_enabled() const;
  bool msix_function_masked() const;
  uint8_t power_state() const;             // 0 = D0, 3 = D3hot
  uint16_t max_payload_size() const;       // bytes, from Device Control
  uint16_t max_read_request_size() const;  // bytes
  uint64_t reset_count() const { return reset_count_; }

  // ---- Extension points ----
  ConfigSpace& config_space() { return cs_; }
  const ConfigSpace& config_space() const { return cs_; }
  MsixTable& msix_table() { return msix_; }
  // Appends an extended capability (header written, body RO 0 until the caller defines it).
  uint16_t append_extended_capability(uint16_t id, uint8_t version, uint16_t size);

  // Called after an FLR (Initiate FLR written as 1) *and* after reset(), once config space and
  // the MSI-X table hold their post-reset values: the model resets its function state here.
  void on_function_level_reset(std::function<void(ResetKind)> fn) { flr_cb_ = std::move(fn); }
  // Command register changes (memory space / bus master), e.g. to stop DMA when BME drops.
  void on_command_change(std::function<void(uint16_t old_cmd, uint16_t new_cmd)> fn) { cmd_cb_ = std::move(fn); }

  // DEVICE_RESET (vfio-user) = FLR by default; kHot/kCold for conventional resets.
  void reset(ResetKind kind = ResetKind::kFlr);

 private:
  void wire_observers();

  FunctionConfig cfg_;
  ConfigSpace cs_;
  ExtCapChain ext_;
  BarSet bars_;
  MsixTable msix_;
  std::function<void(ResetKind)> flr_cb_;
  std::function<void(uint16_t, uint16_t)> cmd_cb_;
  uint64_t reset_count_ = 0;
};

}  // namespace hcaemu::pcie
