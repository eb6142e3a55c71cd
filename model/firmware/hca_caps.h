#pragma once
// The capability pages QUERY_HCA_CAP returns (mlx5-device-bringup.md section 4.3): general caps
// (type 0), Ethernet offloads (1), RoCE (4) and NIC flow tables (7); one coherent set that switches
// off everything the model does not implement. `max` is fixed per function (it depends only on
// the function's identity); `cur` is `max` overlaid with the few fields SET_HCA_CAP may change,
// which are all that is stored per function (HcaCapSettings).
#include <cstdint>
#include <span>

#include "model/prm/bits.h"

namespace hcaemu::model {

struct FunctionIdentity;

// Capability types: QUERY/SET_HCA_CAP op_mod = (type << 1) | mode (mlx5_cap_type).
enum class CapType : uint16_t {
  kGeneral = 0x0,
  kEthernetOffloads = 0x1,
  kOdp = 0x2,
  kAtomic = 0x3,
  kRoce = 0x4,
  kFlowTable = 0x7,
  kEswitchFlowTable = 0x8,  // flow_table_eswitch_cap, queried when eswitch_manager is set
  kEswitch = 0x9,           // e_switch_cap, likewise
  kQos = 0xc,           // queried when cmd_hca_cap.qos is set
  kDeviceMemory = 0xf,  // queried when cmd_hca_cap.device_memory is set
  kVirtioEmulation = 0x13,  // queried when general_obj_types names virtio net queues (VARs)
  kGeneral2 = 0x20,     // cmd_hca_cap_2, queried when cmd_hca_cap.hca_cap_2 is set
};
enum class CapMode : uint16_t { kMax = 0, kCur = 1 };

inline constexpr uint32_t kCapUnionBytes = 0x1000;  // hca_cap_union: the capability area of the command

// Values other handlers must agree with (they are also reported in the cap pages).
inline constexpr uint32_t kRoceAddressTableSize = 256;  // roce_cap.roce_address_table_size (GID table)
inline constexpr uint32_t kLogMaxCurrentUcList = 12;    // cmd_hca_cap.log_max_current_uc_list
inline constexpr uint32_t kLogMaxCurrentMcList = 12;    // cmd_hca_cap.log_max_current_mc_list
inline constexpr uint32_t kLogMaxVlanList = 12;         // cmd_hca_cap.log_max_vlan_list
inline constexpr uint32_t kPkeyTableEntries = 128;      // pkey_table_size 0 means 128 entries
inline constexpr uint32_t kNumPorts = 1;                // cmd_hca_cap.num_ports

// The fields of `cur` that SET_HCA_CAP may change, with their power-on values (equal to `max`,
// checked by a test, except atomic_req_8B_endianness_mode: see below). Plain data so it can be
// saved and restored with the function.
struct HcaCapSettings {
  // general (type 0)
  uint32_t pkey_table_size = 0;
  uint32_t log_max_qp = 17;
  uint32_t cmdif_checksum = 0;
  uint32_t log_uar_page_sz = 0;
  uint32_t uar_4k = 0;
  uint32_t cache_line_128byte = 0;
  uint32_t dct = 1;
  uint32_t release_all_pages = 0;
  uint32_t mkey_by_name = 0;
  uint32_t num_vhca_ports = 0;
  // ATOMIC (type 3). Powers on in mode 0 (replies in network order), as firmware does; max offers
  // mode 1 (host endianness), which mlx5_core always picks. The requester data path reads this to
  // decide how the original value of an 8-byte atomic lands in the local buffer (firmware/hca_caps.cpp).
  uint32_t atomic_req_8B_endianness_mode = 0;
  // RoCE (type 4)
  uint32_t sw_r_roce_src_udp_port = 0;
};

// NIC scheduling elements, a general object type (firmware/scheduling_elements.cpp).
inline constexpr uint16_t kObjTypeSchedulingElement = 0x26;

// Address-to-QP mappings, a general object type (firmware/av_qp_mappings.cpp).
inline constexpr uint16_t kObjTypeAvQpMapping = 0x3a;

// Steering ICM ranges for mlx5 DR, a general object type (firmware/sw_icm.cpp), offered only with
// FunctionIdentity::sw_icm.
inline constexpr uint16_t kObjTypeSwIcm = 0x08;
inline constexpr uint16_t kObjTypeFlowSampler = 0x20;  // mlx5 DR's flow samplers (firmware/flow_sampler.cpp)
inline constexpr uint16_t kObjTypeMatchDefiner = 0x18;  // mlx5 DR's large matchers (firmware/match_definer.cpp)

// Virtio net queues: the general object type whose general_obj_types bit tells mlx5 that the
// function has virtio access regions (objects/var_window.h). No queue of the type can be created.
inline constexpr uint16_t kObjTypeVirtioNetQueue = 0x0d;

// Reserved QP numbers, a general object type (general_obj_types bit and obj_type;
// firmware/general_objects.cpp). cmd_hca_cap_2 reports the block sizes.
inline constexpr uint16_t kObjTypeReservedQpn = 0x2c;
inline constexpr uint32_t kLogReservedQpnGranularity = 3;  // the smallest block (log_obj_range)
inline constexpr uint32_t kLogReservedQpnMaxAlloc = 10;    // the largest block
inline constexpr uint32_t kLogMaxNumReservedQpn = 16;      // QP numbers a function holds at once

// atomic_caps values other code must agree with (the send/receive paths and the QP context).
inline constexpr uint32_t kAtomicOpsCompareSwap = 1u << 0;  // atomic_operations: MLX5_ATOMIC_OPS_CMP_SWAP
inline constexpr uint32_t kAtomicOpsFetchAdd = 1u << 1;     // MLX5_ATOMIC_OPS_FETCH_ADD
inline constexpr uint32_t kAtomicSize8Bytes = 1u << 3;      // atomic_size_qp bit of the 8-byte operand
inline constexpr uint32_t kAtomicReqModeBigEndian = 0;      // atomic_req_8B_endianness_mode values
inline constexpr uint32_t kAtomicReqModeHostEndianness = 1;
inline constexpr uint32_t kQpcAtomicModeIbCompliant = 1;    // qpc.atomic_mode mlx5_ib sets (IB_COMP)

// The PF manages the embedded switch (vport_group_manager, eswitch_manager); VFs do not.
bool is_eswitch_manager(const FunctionIdentity& identity);
// Entries of the eswitch manager's MPFS L2 table (log_max_l2_table; firmware/eswitch_manager.cpp).
inline constexpr uint32_t kLogMaxL2Table = 5;

// Bytes of the structure of a modelled cap type; 0 for a type the model does not offer `identity`.
uint32_t cap_struct_bytes(const FunctionIdentity& identity, uint16_t type);

// Fills `page` (the capability area at out+0x10, at least cap_struct_bytes(type) long) with the
// cap of `type` in `mode`. Returns false, leaving the page alone, for a type we do not model.
bool build_cap_page(const FunctionIdentity& identity, const HcaCapSettings& cur, uint16_t type, CapMode mode,
                    std::span<uint8_t> page);

// SET_HCA_CAP for `type`: checks every settable field of `page` against `max` (a value above the
// max, or a flag max does not offer, is refused) and only then stores them all in `cur`. Fields
// that are not settable are ignored, as firmware does (the driver sends back a copy of `cur`).
// Returns 0, or a check number naming the refused field (0x100 + its index in the table).
uint16_t apply_set_hca_cap(const FunctionIdentity& identity, HcaCapSettings& cur, uint16_t type,
                           std::span<const uint8_t> page);

// The MSI-X-dependent limits, exposed for tests and for the EQ code.
uint32_t max_num_eqs(const FunctionIdentity& identity);
uint32_t log_max_eq(const FunctionIdentity& identity);

}  // namespace hcaemu::model
