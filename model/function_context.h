#pragma once
// Everything the firmware knows about one function (PF or VF): identity, where its DMA and
// interrupts go, its lifecycle state, and its objects. Objects of one function are only ever
// reachable through its own context, which is what isolates functions from each other.
#include <cstdint>
#include <vector>

#include "pcie/host_port.h"

namespace hcaemu::model {

struct FunctionIdentity {
  bool is_vf = false;
  uint16_t vhca_id = 0;  // 0 for the PF, 1 + n for VF n
};

struct FunctionContext {
  FunctionIdentity identity;
  pcie::HostMemory* memory = nullptr;  // DMA into the function's host memory (bounds-checked)
  pcie::MsixSender* msix = nullptr;    // the function's MSI-X vectors

  // Lifecycle (mlx5-device-bringup.md section 4.1).
  bool hca_enabled = false;      // ENABLE_HCA .. DISABLE_HCA
  bool hca_initialized = false;  // INIT_HCA .. TEARDOWN_HCA
  uint16_t issi = 0;             // interface step sequence id chosen by SET_ISSI
  std::vector<uint64_t> pages;   // MANAGE_PAGES(GIVE) pages we hold (we need none), returned on TAKE

  // --- capabilities, registers, vport (fw_hca.cpp) ---

  // --- queues and resources (fw_resources.cpp) ---

  // Back to the state after power-on: every object released (FLR, DISABLE_HCA).
  void reset_objects();
};

}  // namespace hcaemu::model
