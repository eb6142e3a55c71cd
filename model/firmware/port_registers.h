#pragma once
// The port as one function sees it: the register file behind ACCESS_REG (PAOS, PMTU, PTYS, PFCC,
// PPCNT, ... ; mlx5-device-bringup.md sections 4.2 and 4.4) and the function's NIC vport (vport
// context, vport admin state, RoCE address table) that firmware/hca.cpp's vport commands read and write.
// Each function has its own copy: a VF's `ip link set down` changes only its own view.
#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "model/firmware/command_queue.h"
#include "model/firmware/hca_caps.h"

namespace hcaemu::model {

using MacAddress = std::array<uint8_t, 6>;

// Register ids (ACCESS_REG register_id, MLX5_REG_*).
enum class RegisterId : uint16_t {
  kPmlp = 0x5002,
  kPmtu = 0x5003,
  kPtys = 0x5004,
  kPaos = 0x5006,
  kPfcc = 0x5007,
  kPpcnt = 0x5008,
  kPplm = 0x5023,
  kPcmr = 0x5041,
  kNodeDesc = 0x6001,
  kHostEndianness = 0x7004,
  kMcia = 0x9014,
};

inline constexpr uint8_t kPortUp = 1, kPortDown = 2;  // PAOS admin/oper status
inline constexpr uint32_t kEthProto100GBaseCr4 = 1u << 20;
inline constexpr uint16_t kPortMaxMtu = 9978;     // PMTU max_mtu (hardware MTU, L2 headers included)
inline constexpr uint16_t kPortMinMtu = 68 + 22;  // ETH_MIN_MTU + the 22 B mlx5e adds (hardware MTU)
inline constexpr uint16_t kDefaultHwMtu = 1500 + 22;
inline constexpr size_t kNodeDescriptionBytes = 64;

// State behind the port registers. Plain data (snapshots); reset() puts it back to power-on.
struct PortState {
  uint8_t admin_status = kPortUp;  // PAOS; the link is up from power-on, as on real boards
  uint8_t oper_status = kPortUp;   // up when admin_status is up and the physical link is
  bool link_up = true;             // the physical link (the uplink's carrier; up without an uplink)
  uint16_t admin_mtu = kDefaultHwMtu;  // PMTU; oper_mtu = admin_mtu
  uint32_t eth_proto_admin = kEthProto100GBaseCr4;  // PTYS
  bool an_disable_admin = false;
  bool pause_tx = true, pause_rx = true;  // PFCC global pause
  uint8_t pfc_tx = 0, pfc_rx = 0;         // PFCC per-priority masks
  bool fcs_check = true;                  // PCMR fcs_chk
  uint8_t host_endianness = 0;            // HOST_ENDIANNESS he (written once by the PF driver)
  std::array<char, kNodeDescriptionBytes> node_description{};  // NODE_DESC
  uint64_t oper_changes = 0;  // oper_status transitions: each one deserves a PORT_CHANGE EQE

  bool up() const { return oper_status == kPortUp; }
  // oper_status from admin_status and the link; true when it changed (a PORT_CHANGE EQE is due).
  bool settle_oper_status() {
    const uint8_t oper = admin_status == kPortUp && link_up ? kPortUp : kPortDown;
    if (oper == oper_status) return false;
    oper_status = oper;
    ++oper_changes;
    return true;
  }
};

PortState default_port_state();

// Result of one register access: status kOk, or a failure with the check that refused it.
struct RegisterResult {
  CommandStatus status = CommandStatus::kOk;
  uint16_t check = 0;
};

class PortRegisters {
 public:
  PortRegisters() : state_(default_port_state()) {}

  // ACCESS_REG: `data_in` is the register image the driver sent (in+0x10), `data_out` receives
  // the register after the access (out+0x10). A write stores the settable fields, a read only
  // fills data_out. Unknown register ids fail with BAD_PARAM, logged once per id.
  RegisterResult access(uint16_t register_id, bool write, std::span<const uint8_t> data_in,
                        std::span<uint8_t> data_out);

  // Bytes of a register's image we require (its PRM size); 0 for an id we do not implement.
  static uint32_t register_bytes(uint16_t register_id);

  PortState& state() { return state_; }
  const PortState& state() const { return state_; }
  // FLR / DISABLE_HCA: registers back to power-on; the physical link stays as it is (a cable).
  void reset() {
    const bool link = state_.link_up;
    state_ = default_port_state();
    set_link(link);
  }
  // The physical link came up or went down; true when that changed oper_status (a PORT_CHANGE EQE is due).
  bool set_link(bool up) {
    state_.link_up = up;
    return state_.settle_oper_status();
  }

 private:
  PortState state_;
  std::set<uint16_t> reported_;  // unknown register ids already logged (not device state)
};

// One entry of the RoCE address (GID) table, as SET_ROCE_ADDRESS writes it (roce_addr_layout).
struct RoceAddress {
  std::array<uint8_t, 16> gid{};  // source_l3_address
  MacAddress mac{};
  bool vlan_valid = false;
  uint16_t vlan_id = 0;
  uint8_t l3_type = 0;       // 0 IPv4, 1 IPv6
  uint8_t roce_version = 0;  // 0 RoCEv1, 2 RoCEv2
  bool in_use() const;       // an all-zero entry is a deleted one
};

inline constexpr uint8_t kVportAdminDown = 0, kVportAdminUp = 1, kVportAdminFollow = 2;

// The function's NIC vport: what QUERY/MODIFY_NIC_VPORT_CONTEXT and MODIFY_VPORT_STATE see. The
// unicast/multicast lists are what a switch forwards by.
struct VportState {
  bool roce_en = false;
  uint16_t mtu = kDefaultHwMtu;
  uint8_t min_wqe_inline_mode = 0;
  bool promisc_uc = false, promisc_mc = false, promisc_all = false;
  // Local loopback: the function's own frames turned back to it. On after reset, as on a ConnectX;
  // mlx5_core turns it off at load and mlx5_ib back on for two user transport domains or a raw
  // packet QP that allows self-loopback.
  bool disable_uc_local_lb = false, disable_mc_local_lb = false;
  bool arm_change_event = false;
  uint8_t event_on = 0;            // event_on_{mtu,promisc_change,vlan_change,mc,uc} bits [4:0]
  bool permanent_address_set = false;  // false: the identity's MAC is the permanent address
  MacAddress permanent_address{};
  std::vector<MacAddress> uc_addresses;
  std::vector<MacAddress> mc_addresses;
  std::vector<uint16_t> vlans;
  uint8_t admin_state = kVportAdminFollow;  // MODIFY_VPORT_STATE: follow the port
  std::vector<RoceAddress> roce_addresses = std::vector<RoceAddress>(kRoceAddressTableSize);
  // The eswitch manager's MPFS L2 table (SET/DELETE_L2_TABLE_ENTRY): the unicast addresses the
  // driver claims for its function, by table index; empty until the first SET.
  struct L2TableEntry {
    MacAddress mac{};
    bool vlan_valid = false;
    uint16_t vlan = 0;
  };
  std::vector<std::optional<L2TableEntry>> l2_table;

  bool up(const PortState& port) const { return port.up() && admin_state != kVportAdminDown; }
};

}  // namespace hcaemu::model
