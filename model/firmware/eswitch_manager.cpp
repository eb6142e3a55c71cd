// What the PF does as the embedded switch's manager (cmd_hca_cap eswitch_manager and
// vport_group_manager, firmware/hca_caps.cpp is_eswitch_manager), in legacy mode without an FDB:
// - QUERY_ESW_VPORT_CONTEXT of its own vport, which rdma-core's DR asks an eswitch manager for
//   before it builds a domain: no VLAN strip or insert, no metadata, no steering ICM addresses
//   (the eswitch caps offer no software-owned FDB).
// - The MPFS L2 table (SET/QUERY/DELETE_L2_TABLE_ENTRY): mlx5_core keeps each unicast address of
//   its netdev there. The embedded switch already delivers by the vport's addresses (its NIC vport
//   context), so the table is kept and checked, read back, and counted against its size.
// The VFs' vports are the host admin's (hcactl), so other_vport is refused; a VF is no manager.
#include <algorithm>

#include "model/firmware/firmware.h"
#include "model/firmware/hca_caps.h"
#include "model/firmware/resource_helpers.h"

namespace hcaemu::model {
namespace {

using namespace fw;

constexpr uint16_t kQueryEswVportContext = 0x752;
constexpr uint16_t kSetL2TableEntry = 0x829, kQueryL2TableEntry = 0x82a, kDeleteL2TableEntry = 0x82b;

constexpr Field kOtherVport{0x08, 31, 31};  // query_esw_vport_context_in
constexpr Field kVportNumber{0x08, 15, 0};
constexpr uint32_t kEswVportContextOutBytes = 0x110;  // header + esw_vport_context

constexpr uint32_t kL2TableInBytes = 0x40;
constexpr Field kTableIndex{0x14, 23, 0};      // {set,query,delete}_l2_table_entry_in
constexpr Field kSilentModeValid{0x1c, 15, 15};
constexpr Field kVlanValid{0x1c, 12, 12};
constexpr Field kVlan{0x1c, 11, 0};
constexpr uint32_t kMacOffset = 0x22;          // mac_address_layout: 16 reserved bits, then the MAC
constexpr uint32_t kQueryOutVlan = 0x1c, kQueryOutMac = 0x22;  // query_l2_table_entry_out, same places

enum Check : uint16_t {
  kNotManager = 0x10,      // a VF: no eswitch to manage
  kOtherVportNamed = 0x11,
  kBadOpMod = 0x12,
  kIndexOutOfTable = 0x13,
  kNotUnicast = 0x14,
  kSilentMode = 0x15,      // silent mode belongs to multi-host (silent_mode cap 0)
  kEmptyEntry = 0x16,
  kAddressTaken = 0x17,    // the same MAC and VLAN at another index
};

bool manages_eswitch(CommandCall& call) {
  return check(call, is_eswitch_manager(call.function().identity), kNotManager);
}

void query_esw_vport_context(CommandCall& call) {
  if (!start(call, 0x10, kEswVportContextOutBytes) || !manages_eswitch(call)) return;
  if (!check(call, call.op_mod() == 0, kBadOpMod)) return;
  if (!check(call, get(call.in(), kOtherVport) == 0 && get(call.in(), kVportNumber) == 0, kOtherVportNamed)) return;
  // The context is all zero: no VLAN strip or insert, no fdb_to_vport_reg_c, and no
  // sw_steering_vport_icm_address_rx/tx, since the FDB is not software-owned.
}

using L2Table = std::vector<std::optional<VportState::L2TableEntry>>;

// The table entry the command's table_index names, within log_max_l2_table.
std::optional<uint32_t> table_index(CommandCall& call) {
  if (!start(call, kL2TableInBytes) || !manages_eswitch(call) || !check(call, call.op_mod() == 0, kBadOpMod))
    return std::nullopt;
  const uint32_t index = get(call.in(), kTableIndex);
  if (!check(call, index < (1u << kLogMaxL2Table), kIndexOutOfTable, CommandStatus::kBadIndex)) return std::nullopt;
  L2Table& table = call.function().vport.l2_table;
  if (table.empty()) table.resize(1u << kLogMaxL2Table);
  return index;
}

void set_l2_table_entry(CommandCall& call) {
  const std::optional<uint32_t> index = table_index(call);
  if (!index) return;
  VportState::L2TableEntry entry;
  std::copy_n(call.in().begin() + kMacOffset, entry.mac.size(), entry.mac.begin());
  entry.vlan_valid = get(call.in(), kVlanValid) != 0;
  entry.vlan = entry.vlan_valid ? uint16_t(get(call.in(), kVlan)) : 0;
  if (!check(call, (entry.mac[0] & 1) == 0, kNotUnicast) ||
      !check(call, get(call.in(), kSilentModeValid) == 0, kSilentMode))
    return;
  L2Table& table = call.function().vport.l2_table;
  for (uint32_t i = 0; i < table.size(); ++i) {
    const bool same = table[i] && table[i]->mac == entry.mac && table[i]->vlan_valid == entry.vlan_valid &&
                      table[i]->vlan == entry.vlan;
    if (!check(call, i == *index || !same, kAddressTaken)) return;
  }
  table[*index] = entry;
}

void query_l2_table_entry(CommandCall& call) {
  const std::optional<uint32_t> index = table_index(call);
  if (!index || !call.need_output(kL2TableInBytes)) return;
  const std::optional<VportState::L2TableEntry>& entry = call.function().vport.l2_table[*index];
  if (!check(call, entry.has_value(), kEmptyEntry, CommandStatus::kBadResource)) return;
  set(call.out(), Field{kQueryOutVlan, 12, 12}, entry->vlan_valid);
  set(call.out(), Field{kQueryOutVlan, 11, 0}, entry->vlan);
  std::copy(entry->mac.begin(), entry->mac.end(), call.out().begin() + kQueryOutMac);
}

void delete_l2_table_entry(CommandCall& call) {
  const std::optional<uint32_t> index = table_index(call);
  if (!index) return;
  std::optional<VportState::L2TableEntry>& entry = call.function().vport.l2_table[*index];
  if (!check(call, entry.has_value(), kEmptyEntry, CommandStatus::kBadResource)) return;
  entry.reset();
}

}  // namespace

void register_eswitch_manager_commands(CommandTable& table) {
  table.add(kQueryEswVportContext, "QUERY_ESW_VPORT_CONTEXT", query_esw_vport_context, Senders::kUserQuery);
  table.add(kSetL2TableEntry, "SET_L2_TABLE_ENTRY", set_l2_table_entry);
  table.add(kQueryL2TableEntry, "QUERY_L2_TABLE_ENTRY", query_l2_table_entry);
  table.add(kDeleteL2TableEntry, "DELETE_L2_TABLE_ENTRY", delete_l2_table_entry);
}

}  // namespace hcaemu::model
