#pragma once
// Everything the firmware knows about one function (PF or VF): identity, where its DMA and
// interrupts go, its lifecycle state, and its objects. Objects of one function are only ever
// reachable through its own context, which is what isolates functions from each other.
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "common/log_limit.h"
#include "model/eth/objects.h"
#include "model/firmware/hca_caps.h"
#include "model/firmware/port_registers.h"
#include "model/objects/device_memory.h"
#include "model/objects/object_quotas.h"
#include "model/objects/queue_counters.h"
#include "model/objects/resources.h"
#include "model/objects/var_window.h"
#include "pcie/host_port.h"

namespace hcaemu::model {

// Default MAC of a function: 02:c9:00:00:<vhca_id>, locally administered (bit 1 of the first octet)
// and unicast, so it never collides with a real adapter's; 0xc9 echoes Mellanox's 00:02:c9 OUI.
// Two emulated devices on one wire need distinct MACs: whoever builds the device sets `mac`.
constexpr std::array<uint8_t, 6> default_mac(uint16_t vhca_id) {
  return {0x02, 0xc9, 0x00, 0x00, uint8_t(vhca_id >> 8), uint8_t(vhca_id)};
}

struct FunctionIdentity {
  bool is_vf = false;
  uint16_t vhca_id = 0;             // 0 for the PF, 1 + n for VF n
  uint32_t msix_vectors = 64;       // MSI-X table size (pcie FunctionConfig::msix_vectors); sizes max_num_eqs
  std::array<uint8_t, 6> mac = default_mac(vhca_id);  // permanent address in the NIC vport context
  ObjectQuotas quotas{};            // objects it may hold (caps log_max_*; the admin's configuration)
  DeviceMemoryWindow memic{};       // its device memory in BAR0 (device_mem_cap); none when 0 bytes
  VarWindow var{};                  // its virtio access regions in BAR0 (virtio_emulation_cap)
  // Steering ICM for mlx5 DR (objects/sw_icm.h): SW_ICM objects and keys are served, and the caps
  // announce them, only when set. Off until the data path steers by what DR writes there.
  bool sw_icm = false;

  // The BAR0 layout of a function: UAR pages from page 3 on, then the VARs, then the device
  // memory's operation mirrors and its window at the BAR's end. Windows already set are kept.
  void lay_out_bar0(uint64_t bar0_size) {
    if (memic.bytes == 0) memic = device_memory_window(bar0_size);
    if (var.bytes == 0) var = var_window(memic.uar_end(bar0_size));
  }
  // The first BAR0 byte past the UAR pages.
  uint64_t uar_end(uint64_t bar0_size) const { return var.bytes != 0 ? var.bar_offset : memic.uar_end(bar0_size); }
};

struct FunctionContext {
  FunctionIdentity identity;
  // The function's DMA: its host memory (bounds-checked by the client) and, at
  // kDeviceMemoryAddress, its device memory. Set by attach_memory; null while no host is attached.
  pcie::HostMemory* memory = nullptr;
  pcie::MsixSender* msix = nullptr;    // the function's MSI-X vectors

  // Lifecycle (mlx5-device-bringup.md section 4.1).
  bool hca_enabled = false;      // ENABLE_HCA .. DISABLE_HCA
  bool hca_initialized = false;  // INIT_HCA .. TEARDOWN_HCA
  uint16_t issi = 0;             // interface step sequence id chosen by SET_ISSI
  std::vector<uint64_t> pages{};   // MANAGE_PAGES(GIVE) pages we hold (we need none), returned on TAKE

  // --- capabilities, registers, vport (firmware/hca.cpp) ---
  HcaCapSettings caps{};     // the SET_HCA_CAP-settable fields of `cur` (firmware/hca_caps.h)
  PortRegisters port{};      // ACCESS_REG register file and the port state it holds (firmware/port_registers.h)
  VportState vport{};        // NIC vport context, vport admin state, RoCE address (GID) table

  // --- queues and resources (firmware/uar_pd_eq_cq.cpp) ---
  uint64_t bar0_size = 0;  // BAR0 bytes: UAR index * 4 KiB must stay inside it
  Resources resources{};     // UAR, PD, TD, XRCD, EQ, CQ, MKEY, SRQ/RMP, QP tables

  DeviceMemory device_memory{};  // MEMIC (objects/device_memory.h): ALLOC_MEMIC, BAR0 loads and stores
  SwIcm sw_icm{};                // steering ICM (objects/sw_icm.h): SW_ICM objects, SW_ICM keys
  FunctionMemory routed_memory{device_memory, sw_icm};

  // --- Ethernet objects (firmware/eth.cpp, firmware/eth_flow.cpp) ---
  EthObjects eth{};          // TIS, TIR, RQT, RQ, SQ, flow tables/groups/entries, flow counters

  // --- queue counter sets (firmware/counters.cpp; the RDMA engine counts into them) ---
  QueueCounterSets q_counters{};

  // DCQCN's counters as QUERY_CONG_STATISTICS reports them (mlx5_ib's hw_counters of the same
  // names). Set by the owner of the data path; the firmware reports them less what a `clear` took.
  struct CongestionStatistics {
    uint64_t rp_cnp_ignored = 0, rp_cnp_handled = 0, np_ecn_marked_roce_packets = 0, np_cnp_sent = 0;
  };
  std::function<CongestionStatistics()> congestion_statistics{};
  CongestionStatistics congestion_cleared{};

  // Set by the owner of the data path: called after a command moved QP `qpn` to ERR, so its work
  // is flushed (the command runs on the same thread as the data path).
  std::function<void(uint32_t qpn)> qp_moved_to_error{};
  std::function<void(uint32_t qpn)> qp_ready{};  // INIT to RTR, RTR to RTS
  std::function<void(uint32_t qpn)> send_queue_resumed{};  // SQD to RTS: the held WQEs run
  // PAGE_FAULT_RESUME took an ODP fault (objects/page_faults.h) from resources.page_faults: the
  // data path lets the work it held go on, or fail (error).
  std::function<void(const PageFault& fault, uint32_t token, bool error)> page_fault_resumed{};

  // Set by the device that holds the embedded switch: true when another function owns `mac` (its
  // permanent address or one in its unicast list). A unicast address belongs to one vport: a
  // driver's MODIFY_NIC_VPORT_CONTEXT naming another's is refused, so no VF can take over another
  // function's traffic (a macvlan with a stolen address).
  std::function<bool(const std::array<uint8_t, 6>& mac)> unicast_owned_elsewhere{};
  uint64_t unicast_steals_refused = 0;
  LogLimiter cq_overrun_log{};  // a guest can overrun CQ after CQ
  LogLimiter budget_log{};      // or ask past its memory budget again and again

  // The device clock CQE timestamps read: ticks of the internal timer (model-time nanoseconds,
  // init_seg::kInternalTimerKhz). Set by the owner of the data path; unset, CQEs carry 0.
  std::function<uint64_t()> clock_ticks{};

  // DMA goes to `host` (null: no host attached) and to the device memory of identity.memic.
  void attach_memory(pcie::HostMemory* host) {
    routed_memory.set_host(host);
    memory = host != nullptr ? &routed_memory : nullptr;
  }
  void place_device_memory() { device_memory.configure(identity.memic); }

  // Back to the state after power-on: every object released (FLR, DISABLE_HCA).
  void reset_objects();
  // The identity's object quotas into the object tables' limits and the caps' `cur` (reset_objects
  // does it too).
  void apply_quotas();
};

}  // namespace hcaemu::model
