// HCA-level commands (mlx5-device-bringup.md sections 4.1-4.4 and 8): capabilities
// (QUERY/SET_HCA_CAP), INIT/TEARDOWN_HCA, QUERY_ADAPTER, SET_DRIVER_VERSION, ACCESS_REG (the
// register file is firmware/port_registers.cpp), vport state and NIC/HCA vport contexts, and the RoCE
// address (GID) table. The PF is the eswitch manager (legacy mode, no FDB; firmware/eswitch_manager.cpp),
// but the VFs' vports are the host admin's (hcactl), not a guest's: a command naming another
// function or vport (other_function / other_vport) is refused from every function.
#include <algorithm>
#include <cstring>
#include <string_view>

#include "common/log.h"
#include "model/queues/event_queue.h"
#include "model/firmware/firmware.h"
#include "model/firmware/hca_caps.h"
#include "model/firmware/port_registers.h"

namespace hcaemu::model {
namespace {

constexpr uint16_t kQueryHcaCap = 0x100, kQueryAdapter = 0x101, kInitHca = 0x102, kTeardownHca = 0x103;
constexpr uint16_t kSetHcaCap = 0x109, kSetDriverVersion = 0x10d;
constexpr uint16_t kQueryVportState = 0x750, kModifyVportState = 0x751;
constexpr uint16_t kQueryNicVportContext = 0x754, kModifyNicVportContext = 0x755;
constexpr uint16_t kQueryRoceAddress = 0x760, kSetRoceAddress = 0x761;
constexpr uint16_t kQueryHcaVportContext = 0x762, kQueryHcaVportGid = 0x764, kQueryHcaVportPkey = 0x765;
constexpr uint16_t kAccessRegister = 0x805;

// Checks shared by the handlers (syndrome low half); handler-specific ones start at 0x10.
enum CommonCheck : uint16_t {
  kOtherFunction = 0x01,  // other_function / other_vport / function_id: we manage no one else
  kBadOpMod = 0x02,
  kBadState = 0x03,
  kBadPort = 0x04,
};

bool fail(CommandCall& call, CommandStatus status, uint16_t check) {
  call.fail(status, syndrome(call.opcode(), check));
  return false;
}
bool op_mod_is(CommandCall& call, uint16_t expected) {
  return call.op_mod() == expected || fail(call, CommandStatus::kBadParameter, kBadOpMod);
}

// --- capabilities: query_hca_cap_in / set_hca_cap_in ---------------------------------------------
constexpr Field kCapOtherFunction{0x08, 31, 31};  // other_function
constexpr Field kCapFunctionId{0x08, 15, 0};      // function_id
constexpr uint32_t kCapOffset = 0x10;             // capability

bool cap_targets_self(CommandCall& call) {
  return (get(call.in(), kCapOtherFunction) == 0 && get(call.in(), kCapFunctionId) == 0) ||
         fail(call, CommandStatus::kBadParameter, kOtherFunction);
}

enum CapCheck : uint16_t { kUnknownCapType = 0x10, kSetModeBit = 0x11 };

void query_hca_cap(CommandCall& call) {
  if (!call.need_input(0x10) || !cap_targets_self(call)) return;
  const uint16_t type = call.op_mod() >> 1;
  const uint32_t bytes = cap_struct_bytes(call.function().identity, type);
  if (bytes == 0) {
    fail(call, CommandStatus::kBadParameter, kUnknownCapType);
    return;
  }
  if (!call.need_output(kCapOffset + bytes)) return;
  const CapMode mode = (call.op_mod() & 1) ? CapMode::kCur : CapMode::kMax;
  build_cap_page(call.function().identity, call.function().caps, type, mode, sub(call.out(), kCapOffset, bytes));
}

void set_hca_cap(CommandCall& call) {
  if (!call.need_input(0x10) || !cap_targets_self(call)) return;
  if (call.op_mod() & 1) {
    fail(call, CommandStatus::kBadParameter, kSetModeBit);  // SET carries the type only
    return;
  }
  const uint16_t type = call.op_mod() >> 1;
  const uint32_t bytes = cap_struct_bytes(call.function().identity, type);
  if (bytes == 0) {
    fail(call, CommandStatus::kBadParameter, kUnknownCapType);
    return;
  }
  if (!call.need_input(kCapOffset + bytes)) return;
  FunctionContext& f = call.function();
  if (f.hca_initialized) {  // caps are fixed once INIT_HCA ran
    fail(call, CommandStatus::kBadSystemState, kBadState);
    return;
  }
  if (uint16_t check = apply_set_hca_cap(f.identity, f.caps, type, sub(call.in(), kCapOffset, bytes)); check != 0)
    fail(call, CommandStatus::kBadParameter, check);
}

// --- INIT_HCA / TEARDOWN_HCA ----------------------------------------------------------------------
constexpr Field kTeardownProfile{0x08, 15, 0};  // teardown_hca_in.profile
enum TeardownProfile : uint32_t { kGracefulClose = 0, kForceClose = 1 };  // 2 (fast teardown): cap off
enum LifecycleCheck : uint16_t { kNotEnabled = 0x10, kAlreadyInitialized = 0x11, kNotInitialized = 0x12,
                                 kBadProfile = 0x13 };

void init_hca(CommandCall& call) {
  if (!call.need_input(0x10) || !op_mod_is(call, 0)) return;
  FunctionContext& f = call.function();
  if (!f.hca_enabled) {
    fail(call, CommandStatus::kBadSystemState, kNotEnabled);
    return;
  }
  if (f.hca_initialized) {
    fail(call, CommandStatus::kBadSystemState, kAlreadyInitialized);
    return;
  }
  f.hca_initialized = true;  // sw_owner_id / sw_vhca_id are only sent with caps we do not offer
}

void teardown_hca(CommandCall& call) {
  if (!call.need_input(0x10) || !op_mod_is(call, 0)) return;
  const uint32_t profile = get(call.in(), kTeardownProfile);
  if (profile != kGracefulClose && profile != kForceClose) {
    fail(call, CommandStatus::kBadParameter, kBadProfile);
    return;
  }
  FunctionContext& f = call.function();
  if (!f.hca_initialized) {
    fail(call, CommandStatus::kBadSystemState, kNotInitialized);
    return;
  }
  // Back to "enabled, not initialised": the next modprobe runs SET_HCA_CAP and INIT_HCA again.
  // Pages stay (the driver takes them back next); a force close always succeeds (state 0).
  f.hca_initialized = false;
}

// --- QUERY_ADAPTER / SET_DRIVER_VERSION -----------------------------------------------------------
constexpr uint32_t kQueryAdapterOutBytes = 0x110;
constexpr Field kIeeeVendorId{0x28, 23, 0};  // query_adapter_struct.ieee_vendor_id
constexpr Field kVsdVendorId{0x2c, 15, 0};   // query_adapter_struct.vsd_vendor_id
constexpr uint32_t kPsidOffset = 0x100;      // query_adapter_struct.vsd_contd_psid (16 bytes)
constexpr uint32_t kPsidBytes = 16;
constexpr uint32_t kMellanoxIeeeVendorId = 0x02c9, kMellanoxPciVendorId = 0x15b3;
constexpr std::string_view kBoardId = "MT_0000000000";  // PSID: what `devlink dev info` shows as board.id

void query_adapter(CommandCall& call) {
  if (!call.need_input(0x10) || !call.need_output(kQueryAdapterOutBytes) || !op_mod_is(call, 0)) return;
  set(call.out(), kIeeeVendorId, kMellanoxIeeeVendorId);
  set(call.out(), kVsdVendorId, kMellanoxPciVendorId);
  std::span<uint8_t> psid = sub(call.out(), kPsidOffset, kPsidBytes);
  std::copy(kBoardId.begin(), kBoardId.end(), psid.begin());  // a byte string, not BE dwords
}

constexpr uint32_t kDriverVersionOffset = 0x10, kDriverVersionBytes = 64;

void set_driver_version(CommandCall& call) {
  if (!call.need_input(0x10) || !op_mod_is(call, 0)) return;
  std::span<const uint8_t> text = sub(call.in(), kDriverVersionOffset, kDriverVersionBytes);
  if (!text.empty()) {
    const auto end = std::find(text.begin(), text.end(), uint8_t(0));
    log().debug("firmware: driver version \"{}\"", std::string(text.begin(), end));
  }
}

// A PORT_CHANGE EQE (bring-up section 4.4) on the async EQ: mlx5e re-reads the vport state and
// sets its carrier from it.
constexpr uint8_t kPortChangeActive = 4, kPortChangeDown = 1;
constexpr uint32_t kPortChangePortByte = 8;  // data byte 8, bits 7:4 = port number


// --- ACCESS_REG: access_register_in -------------------------------------------------------------
constexpr Field kRegisterId{0x08, 15, 0};  // register_id
constexpr uint32_t kRegisterDataOffset = 0x10;
enum AccessRegOpMod : uint16_t { kRegWrite = 0, kRegRead = 1 };

void access_register(CommandCall& call) {
  if (!call.need_input(kRegisterDataOffset) || !call.need_output(kRegisterDataOffset)) return;
  if (call.op_mod() != kRegWrite && call.op_mod() != kRegRead) {
    fail(call, CommandStatus::kBadParameter, kBadOpMod);
    return;
  }
  const uint16_t id = uint16_t(get(call.in(), kRegisterId));
  PortRegisters& port = call.function().port;
  const uint64_t changes_before = port.state().oper_changes;
  const RegisterResult r = port.access(id, call.op_mod() == kRegWrite, call.in().subspan(kRegisterDataOffset),
                                       call.out().subspan(kRegisterDataOffset));
  if (r.status != CommandStatus::kOk) {
    fail(call, r.status, r.check);
    return;
  }
  if (port.state().oper_changes != changes_before) post_port_change(call.function());
}

// --- vport state: query_vport_state_in/out, modify_vport_state_in ------------------------------------
constexpr Field kOtherVport{0x08, 31, 31};           // other_vport (every vport command)
constexpr Field kVportStateAdmin{0x0c, 7, 4};        // query_vport_state_out.admin_state
constexpr Field kVportStateState{0x0c, 3, 0};        // query_vport_state_out.state
constexpr Field kModifyVportAdminState{0x0c, 7, 4};  // modify_vport_state_in.admin_state
enum VportStateOpMod : uint16_t { kVnicVport = 0, kEswVport = 1, kUplink = 2 };
constexpr uint32_t kVportDown = 0, kVportUp = 1;
enum VportCheck : uint16_t { kBadAdminState = 0x10 };

bool own_vport(CommandCall& call) {
  return get(call.in(), kOtherVport) == 0 || fail(call, CommandStatus::kBadParameter, kOtherFunction);
}

// op_mod: the function's own vNIC vport always; the uplink only from the PF; eswitch vports never.
bool vport_state_op_mod(CommandCall& call) {
  const uint16_t op = call.op_mod();
  if (op == kVnicVport || (op == kUplink && !call.function().identity.is_vf)) return true;
  return fail(call, CommandStatus::kBadParameter, kBadOpMod);
}

void query_vport_state(CommandCall& call) {
  if (!call.need_input(0x10) || !call.need_output(0x10) || !own_vport(call) || !vport_state_op_mod(call)) return;
  const FunctionContext& f = call.function();
  const bool up = call.op_mod() == kUplink ? f.port.state().up() : f.vport.up(f.port.state());
  set(call.out(), kVportStateAdmin, f.vport.admin_state);
  set(call.out(), kVportStateState, up ? kVportUp : kVportDown);
}

void modify_vport_state(CommandCall& call) {
  if (!call.need_input(0x10) || !own_vport(call) || !vport_state_op_mod(call)) return;
  const uint32_t admin = get(call.in(), kModifyVportAdminState);
  if (admin != kVportAdminDown && admin != kVportAdminUp && admin != kVportAdminFollow) {
    fail(call, CommandStatus::kBadParameter, kBadAdminState);
    return;
  }
  if (call.op_mod() == kVnicVport) call.function().vport.admin_state = uint8_t(admin);
  // The uplink's admin state is PAOS's business; accepting it here changes nothing.
}

// --- NIC vport context ----------------------------------------------------------------------------
// Offsets inside nic_vport_context (at out+0x10 in QUERY, in+0x100 in MODIFY).
namespace nvc {
constexpr Field kMinWqeInlineMode{0x00, 26, 24};  // min_wqe_inline_mode
constexpr Field kDisableMcLocalLb{0x00, 2, 2};    // disable_mc_local_lb
constexpr Field kDisableUcLocalLb{0x00, 1, 1};    // disable_uc_local_lb
constexpr Field kRoceEn{0x00, 0, 0};              // roce_en
constexpr Field kArmChangeEvent{0x04, 31, 31};    // arm_change_event
constexpr Field kEventOn{0x04, 4, 0};             // event_on_{mtu,promisc_change,vlan_change,mc,uc}
constexpr Field kMtu{0x24, 15, 0};                // mtu
constexpr uint32_t kSystemImageGuid = 0x28;       // system_image_guid (64 bits)
constexpr uint32_t kPortGuid = 0x30;              // port_guid
constexpr uint32_t kNodeGuid = 0x38;              // node_guid
constexpr Field kPromiscUc{0xf0, 31, 31};         // promisc_uc
constexpr Field kPromiscMc{0xf0, 30, 30};         // promisc_mc
constexpr Field kPromiscAll{0xf0, 29, 29};        // promisc_all
constexpr Field kAllowedListType{0xf0, 26, 24};   // allowed_list_type
constexpr Field kAllowedListSize{0xf0, 11, 0};    // allowed_list_size
constexpr Field kPermanentMac47_32{0xf4, 15, 0};  // permanent_address.mac_addr_47_32
constexpr Field kPermanentMac31_0{0xf8, 31, 0};   // permanent_address.mac_addr_31_0
constexpr uint32_t kBytes = 0x100;                // the list (current_uc_mac_address[]...) follows
// One list entry: mac_address_layout or vlan_layout, 8 bytes.
constexpr uint32_t kEntryBytes = 8;
constexpr Field kEntryMac47_32{0x00, 15, 0};
constexpr Field kEntryMac31_0{0x04, 31, 0};
constexpr Field kEntryVlan{0x00, 11, 0};
}  // namespace nvc
constexpr Field kQueryNicAllowedListType{0x0c, 26, 24};  // query_nic_vport_context_in.allowed_list_type
constexpr uint32_t kQueryNicContext = 0x10;              // query_nic_vport_context_out.nic_vport_context
constexpr Field kFieldSelect{0x0c, 31, 0};               // modify_nic_vport_context_in.field_select
constexpr uint32_t kModifyNicContext = 0x100;            // modify_nic_vport_context_in.nic_vport_context
enum ListType : uint32_t { kListUc = 0, kListMc = 1, kListVlan = 2 };

// modify_nic_vport_field_select bits.
enum FieldSelect : uint32_t {
  kSelRoceEn = 1u << 1,
  kSelAddressesList = 1u << 2,
  kSelPermanentAddress = 1u << 3,
  kSelPromisc = 1u << 4,
  kSelChangeEvent = 1u << 5,
  kSelMtu = 1u << 6,
  kSelMinInline = 1u << 7,
  kSelPortGuid = 1u << 8,
  kSelNodeGuid = 1u << 9,
  kSelDisableMcLocalLb = 1u << 10,
  kSelDisableUcLocalLb = 1u << 11,
  kSelAffiliation = 1u << 13,
};
constexpr uint32_t kSelSupported = kSelRoceEn | kSelAddressesList | kSelPermanentAddress | kSelPromisc |
                                   kSelChangeEvent | kSelMtu | kSelMinInline | kSelDisableMcLocalLb |
                                   kSelDisableUcLocalLb;
constexpr uint32_t kMaxInlineMode = 3;  // MLX5_INLINE_MODE_TCP_UDP

enum NicVportCheck : uint16_t {
  kBadListType = 0x10,
  kUnsupportedField = 0x11,  // guids, affiliation: manager-only or cap off
  kPermanentAddressFromVf = 0x12,
  kBadPermanentAddress = 0x13,
  kBadMtu = 0x14,
  kBadMinInline = 0x15,
  kListTooLong = 0x16,
  kBadListEntry = 0x17,
  kUnicastOwnedElsewhere = 0x18,  // a unicast address another vport owns
};

MacAddress mac_from(uint32_t hi16, uint32_t lo32) {
  return {uint8_t(hi16 >> 8), uint8_t(hi16), uint8_t(lo32 >> 24), uint8_t(lo32 >> 16), uint8_t(lo32 >> 8),
          uint8_t(lo32)};
}
uint32_t mac_hi16(const MacAddress& m) { return (uint32_t(m[0]) << 8) | m[1]; }
uint32_t mac_lo32(const MacAddress& m) {
  return (uint32_t(m[2]) << 24) | (uint32_t(m[3]) << 16) | (uint32_t(m[4]) << 8) | m[5];
}
bool is_multicast(const MacAddress& m) { return m[0] & 0x01; }
bool is_zero(const MacAddress& m) { return std::all_of(m.begin(), m.end(), [](uint8_t b) { return b == 0; }); }

const MacAddress& permanent_address(const FunctionContext& f) {
  return f.vport.permanent_address_set ? f.vport.permanent_address : f.identity.mac;
}

// GUIDs derived from the permanent MAC (EUI-64: flip the U/L bit, insert ff:fe). The system image
// GUID drops the vhca bytes so every function of one device reports the same one.
uint64_t eui64(const MacAddress& m) {
  return (uint64_t(m[0] ^ 0x02) << 56) | (uint64_t(m[1]) << 48) | (uint64_t(m[2]) << 40) | (0xfffeull << 24) |
         (uint64_t(m[3]) << 16) | (uint64_t(m[4]) << 8) | m[5];
}
uint64_t node_guid(const FunctionContext& f) { return eui64(f.identity.mac); }
uint64_t system_image_guid(const FunctionContext& f) { return eui64(f.identity.mac) & ~0xffffull; }

size_t list_capacity(uint32_t type) {
  switch (type) {
    case kListUc: return size_t(1) << kLogMaxCurrentUcList;
    case kListMc: return size_t(1) << kLogMaxCurrentMcList;
    default: return size_t(1) << kLogMaxVlanList;
  }
}

void fill_nic_vport_context(const FunctionContext& f, uint32_t list_type, std::span<uint8_t> ctx,
                            std::span<uint8_t> list_area) {
  const VportState& v = f.vport;
  set(ctx, nvc::kMinWqeInlineMode, v.min_wqe_inline_mode);
  set(ctx, nvc::kRoceEn, v.roce_en);
  set(ctx, nvc::kDisableMcLocalLb, v.disable_mc_local_lb);
  set(ctx, nvc::kDisableUcLocalLb, v.disable_uc_local_lb);
  set(ctx, nvc::kArmChangeEvent, v.arm_change_event);
  set(ctx, nvc::kEventOn, v.event_on);
  set(ctx, nvc::kMtu, v.mtu);
  set64(ctx, nvc::kSystemImageGuid, system_image_guid(f));
  set64(ctx, nvc::kPortGuid, node_guid(f));
  set64(ctx, nvc::kNodeGuid, node_guid(f));
  set(ctx, nvc::kPromiscUc, v.promisc_uc);
  set(ctx, nvc::kPromiscMc, v.promisc_mc);
  set(ctx, nvc::kPromiscAll, v.promisc_all);
  const MacAddress& mac = permanent_address(f);
  set(ctx, nvc::kPermanentMac47_32, mac_hi16(mac));
  set(ctx, nvc::kPermanentMac31_0, mac_lo32(mac));
  // The requested address list, as much of it as the driver's output holds.
  const size_t room = list_area.size() / nvc::kEntryBytes;
  const size_t stored = list_type == kListUc ? v.uc_addresses.size()
                        : list_type == kListMc ? v.mc_addresses.size() : v.vlans.size();
  const size_t n = std::min(room, stored);
  set(ctx, nvc::kAllowedListType, list_type);
  set(ctx, nvc::kAllowedListSize, uint32_t(n));
  for (size_t i = 0; i < n; ++i) {
    std::span<uint8_t> e = list_area.subspan(i * nvc::kEntryBytes, nvc::kEntryBytes);
    if (list_type == kListVlan) {
      set(e, nvc::kEntryVlan, v.vlans[i]);
    } else {
      const MacAddress& m = list_type == kListUc ? v.uc_addresses[i] : v.mc_addresses[i];
      set(e, nvc::kEntryMac47_32, mac_hi16(m));
      set(e, nvc::kEntryMac31_0, mac_lo32(m));
    }
  }
}

void query_nic_vport_context(CommandCall& call) {
  if (!call.need_input(0x10) || !call.need_output(kQueryNicContext + nvc::kBytes) || !own_vport(call) ||
      !op_mod_is(call, 0))
    return;
  const uint32_t list_type = get(call.in(), kQueryNicAllowedListType);
  if (list_type > kListVlan) {
    fail(call, CommandStatus::kBadParameter, kBadListType);
    return;
  }
  fill_nic_vport_context(call.function(), list_type, sub(call.out(), kQueryNicContext, nvc::kBytes),
                         call.out().subspan(kQueryNicContext + nvc::kBytes));
}

// The permanent address a MODIFY_NIC_VPORT_CONTEXT sets: the PF's own, a unicast nobody else owns.
bool check_permanent_address(CommandCall& call, std::span<const uint8_t> ctx, MacAddress& permanent) {
  FunctionContext& f = call.function();
  if (f.identity.is_vf) {  // a VF's MAC is the PF's (eswitch manager's) to set
    fail(call, CommandStatus::kBadParameter, kPermanentAddressFromVf);
    return false;
  }
  permanent = mac_from(get(ctx, nvc::kPermanentMac47_32), get(ctx, nvc::kPermanentMac31_0));
  if (is_zero(permanent) || is_multicast(permanent)) {
    fail(call, CommandStatus::kBadParameter, kBadPermanentAddress);
    return false;
  }
  if (f.unicast_owned_elsewhere && f.unicast_owned_elsewhere(permanent)) {
    ++f.unicast_steals_refused;
    fail(call, CommandStatus::kBadParameter, kUnicastOwnedElsewhere);
    return false;
  }
  return true;
}

// An allowed list: its type and length, group addresses only in the MC list and unicast ones only
// in the UC list, and no unicast address another function owns (a real eswitch refuses it too).
bool check_address_list(CommandCall& call, uint32_t list_type, uint32_t list_size, std::span<const uint8_t> list) {
  FunctionContext& f = call.function();
  if (list_type > kListVlan) {
    fail(call, CommandStatus::kBadParameter, kBadListType);
    return false;
  }
  if (list_size > list_capacity(list_type)) {
    fail(call, CommandStatus::kBadParameter, kListTooLong);
    return false;
  }
  if (list.size() < size_t(list_size) * nvc::kEntryBytes) {
    fail(call, CommandStatus::kBadInputLength, kListTooLong);
    return false;
  }
  for (uint32_t i = 0; list_type != kListVlan && i < list_size; ++i) {
    std::span<const uint8_t> e = list.subspan(i * nvc::kEntryBytes, nvc::kEntryBytes);
    const MacAddress m = mac_from(get(e, nvc::kEntryMac47_32), get(e, nvc::kEntryMac31_0));
    if (is_multicast(m) != (list_type == kListMc)) {
      fail(call, CommandStatus::kBadParameter, kBadListEntry);
      return false;
    }
    if (list_type == kListUc && f.unicast_owned_elsewhere && f.unicast_owned_elsewhere(m)) {
      if (f.unicast_steals_refused++ < 8)
        log().warn("function {}: unicast address {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x} belongs to another "
                   "function: refused", f.identity.vhca_id, m[0], m[1], m[2], m[3], m[4], m[5]);
      fail(call, CommandStatus::kBadParameter, kUnicastOwnedElsewhere);
      return false;
    }
  }
  return true;
}

void store_address_list(VportState& v, uint32_t list_type, uint32_t list_size, std::span<const uint8_t> list) {
  std::vector<MacAddress> macs;
  std::vector<uint16_t> vlans;
  for (uint32_t i = 0; i < list_size; ++i) {
    std::span<const uint8_t> e = list.subspan(i * nvc::kEntryBytes, nvc::kEntryBytes);
    if (list_type == kListVlan)
      vlans.push_back(uint16_t(get(e, nvc::kEntryVlan)));
    else
      macs.push_back(mac_from(get(e, nvc::kEntryMac47_32), get(e, nvc::kEntryMac31_0)));
  }
  if (list_type == kListUc) v.uc_addresses = std::move(macs);
  if (list_type == kListMc) v.mc_addresses = std::move(macs);
  if (list_type == kListVlan) v.vlans = std::move(vlans);
}

void modify_nic_vport_context(CommandCall& call) {
  if (!call.need_input(kModifyNicContext + nvc::kBytes) || !own_vport(call) || !op_mod_is(call, 0)) return;
  const uint32_t select = get(call.in(), kFieldSelect);
  const std::span<const uint8_t> ctx = sub(call.in(), kModifyNicContext, nvc::kBytes);
  const std::span<const uint8_t> list = call.in().subspan(kModifyNicContext + nvc::kBytes);
  const uint32_t mtu = get(ctx, nvc::kMtu);
  const uint32_t list_type = get(ctx, nvc::kAllowedListType);
  const uint32_t list_size = get(ctx, nvc::kAllowedListSize);

  // Every selected field is checked before any changes.
  MacAddress permanent{};
  if (select & ~kSelSupported) {
    fail(call, CommandStatus::kBadParameter, kUnsupportedField);
    return;
  }
  if ((select & kSelPermanentAddress) && !check_permanent_address(call, ctx, permanent)) return;
  if ((select & kSelMtu) && (mtu < kPortMinMtu || mtu > kPortMaxMtu)) {
    fail(call, CommandStatus::kBadParameter, kBadMtu);
    return;
  }
  if ((select & kSelMinInline) && get(ctx, nvc::kMinWqeInlineMode) > kMaxInlineMode) {
    fail(call, CommandStatus::kBadParameter, kBadMinInline);
    return;
  }
  if ((select & kSelAddressesList) && !check_address_list(call, list_type, list_size, list)) return;

  VportState& v = call.function().vport;
  if (select & kSelRoceEn) v.roce_en = get(ctx, nvc::kRoceEn);
  if (select & kSelPermanentAddress) {
    v.permanent_address = permanent;
    v.permanent_address_set = true;
  }
  if (select & kSelPromisc) {
    v.promisc_uc = get(ctx, nvc::kPromiscUc);
    v.promisc_mc = get(ctx, nvc::kPromiscMc);
    v.promisc_all = get(ctx, nvc::kPromiscAll);
  }
  if (select & kSelChangeEvent) {
    v.arm_change_event = get(ctx, nvc::kArmChangeEvent);
    v.event_on = uint8_t(get(ctx, nvc::kEventOn));
  }
  if (select & kSelMtu) v.mtu = uint16_t(mtu);
  if (select & kSelMinInline) v.min_wqe_inline_mode = uint8_t(get(ctx, nvc::kMinWqeInlineMode));
  if (select & kSelDisableMcLocalLb) v.disable_mc_local_lb = get(ctx, nvc::kDisableMcLocalLb);
  if (select & kSelDisableUcLocalLb) v.disable_uc_local_lb = get(ctx, nvc::kDisableUcLocalLb);
  if (select & kSelAddressesList) store_address_list(v, list_type, list_size, list);
}

// --- HCA vport context, GIDs and P_Keys (query_hca_vport_*_in) ------------------------------------
constexpr Field kHcaVportPortNum{0x08, 19, 16};  // port_num (0: the function's native port)
constexpr Field kHcaVportIndex{0x0c, 15, 0};     // gid_index / pkey_index
constexpr uint32_t kAllEntries = 0xffff;
constexpr uint32_t kHcaVportOut = 0x10;          // hca_vport_context / gid[] / pkey[] in the output
namespace hvc {
constexpr Field kPortPhysicalState{0x20, 15, 12};  // port_physical_state
constexpr Field kPortState{0x20, 7, 4};            // port_state
constexpr Field kVportState{0x20, 3, 0};           // vport_state
constexpr uint32_t kSystemImageGuid = 0x28, kPortGuid = 0x30, kNodeGuid = 0x38;
constexpr uint32_t kBytes = 0x100;
}  // namespace hvc
constexpr Field kGidsNum{0x0c, 31, 16};    // query_hca_vport_gid_out.gids_num
constexpr Field kPkeyEntry{0x00, 15, 0};   // pkey_bits.pkey (4-byte entries)
constexpr uint32_t kGidBytes = 16, kPkeyEntryBytes = 4;
constexpr uint32_t kDefaultPkey = 0xffff;
constexpr uint32_t kIbPortDown = 1, kIbPortActive = 4;          // port_state / vport_state
constexpr uint32_t kPhysDisabled = 3, kPhysLinkUp = 5;          // port_physical_state
enum HcaVportCheck : uint16_t { kBadIndex = 0x10 };

bool native_port(CommandCall& call, Field port_field) {
  const uint32_t port = get(call.in(), port_field);
  return port == 0 || port == kNumPorts || fail(call, CommandStatus::kBadParameter, kBadPort);
}

void query_hca_vport_context(CommandCall& call) {
  if (!call.need_input(0x10) || !call.need_output(kHcaVportOut + hvc::kBytes) || !own_vport(call) ||
      !op_mod_is(call, 0) || !native_port(call, kHcaVportPortNum))
    return;
  const FunctionContext& f = call.function();
  std::span<uint8_t> ctx = sub(call.out(), kHcaVportOut, hvc::kBytes);
  const bool up = f.vport.up(f.port.state());
  set(ctx, hvc::kPortPhysicalState, f.port.state().up() ? kPhysLinkUp : kPhysDisabled);
  set(ctx, hvc::kPortState, f.port.state().up() ? kIbPortActive : kIbPortDown);
  set(ctx, hvc::kVportState, up ? kIbPortActive : kIbPortDown);
  set64(ctx, hvc::kSystemImageGuid, system_image_guid(f));
  set64(ctx, hvc::kPortGuid, node_guid(f));
  set64(ctx, hvc::kNodeGuid, node_guid(f));
}

// Entries [first, first + count) of a table of `size`; index 0xffff means all of them.
bool table_range(CommandCall& call, uint32_t size, uint32_t entry_bytes, uint32_t& first, uint32_t& count) {
  const uint32_t index = get(call.in(), kHcaVportIndex);
  first = index == kAllEntries ? 0 : index;
  count = index == kAllEntries ? size : 1;
  if (index != kAllEntries && index >= size) return fail(call, CommandStatus::kBadParameter, kBadIndex);
  return call.need_output(kHcaVportOut + count * entry_bytes);
}

void query_hca_vport_gid(CommandCall& call) {
  uint32_t first = 0, count = 0;
  if (!call.need_input(0x10) || !own_vport(call) || !op_mod_is(call, 0) || !native_port(call, kHcaVportPortNum) ||
      !table_range(call, kRoceAddressTableSize, kGidBytes, first, count))
    return;
  const auto& table = call.function().vport.roce_addresses;
  set(call.out(), kGidsNum, count);
  for (uint32_t i = 0; i < count; ++i) {
    std::span<uint8_t> gid = sub(call.out(), kHcaVportOut + i * kGidBytes, kGidBytes);
    std::copy(table[first + i].gid.begin(), table[first + i].gid.end(), gid.begin());
  }
}

void query_hca_vport_pkey(CommandCall& call) {
  uint32_t first = 0, count = 0;
  if (!call.need_input(0x10) || !own_vport(call) || !op_mod_is(call, 0) || !native_port(call, kHcaVportPortNum) ||
      !table_range(call, kPkeyTableEntries, kPkeyEntryBytes, first, count))
    return;
  for (uint32_t i = 0; i < count; ++i)  // one full-member default P_Key at index 0, the rest empty
    set(sub(call.out(), kHcaVportOut + i * kPkeyEntryBytes, kPkeyEntryBytes), kPkeyEntry,
        first + i == 0 ? kDefaultPkey : 0);
}

// --- RoCE addresses: set_roce_address_in / query_roce_address_in, roce_addr_layout --------------
constexpr Field kRoceAddressIndex{0x08, 31, 16};  // roce_address_index
constexpr Field kRoceVhcaPortNum{0x08, 3, 0};     // vhca_port_num (0 unless num_vhca_ports)
constexpr uint32_t kRoceAddressOffset = 0x10;     // roce_address (in SET's input, QUERY's output)
namespace ral {
constexpr uint32_t kSourceL3Address = 0x00;       // source_l3_address (16 bytes)
constexpr Field kVlanValid{0x10, 28, 28};          // vlan_valid
constexpr Field kVlanId{0x10, 27, 16};             // vlan_id
constexpr Field kSourceMac47_32{0x10, 15, 0};      // source_mac_47_32
constexpr Field kSourceMac31_0{0x14, 31, 0};       // source_mac_31_0
constexpr Field kRoceL3Type{0x18, 11, 8};          // roce_l3_type
constexpr Field kRoceVersion{0x18, 7, 0};          // roce_version
constexpr uint32_t kBytes = 0x20;
}  // namespace ral
constexpr uint32_t kL3Ipv4 = 0, kL3Ipv6 = 1;
constexpr uint32_t kRoceVersion1 = 0, kRoceVersion2 = 2;
enum RoceCheck : uint16_t { kRoceIndex = 0x10, kRoceL3Type = 0x11, kRoceVersion = 0x12 };

bool roce_index(CommandCall& call, uint32_t& index) {
  index = get(call.in(), kRoceAddressIndex);
  if (!native_port(call, kRoceVhcaPortNum)) return false;
  return index < kRoceAddressTableSize || fail(call, CommandStatus::kBadParameter, kRoceIndex);
}

void set_roce_address(CommandCall& call) {
  uint32_t index = 0;
  if (!call.need_input(kRoceAddressOffset + ral::kBytes) || !op_mod_is(call, 0) || !roce_index(call, index)) return;
  std::span<const uint8_t> a = sub(call.in(), kRoceAddressOffset, ral::kBytes);
  const uint32_t l3 = get(a, ral::kRoceL3Type), version = get(a, ral::kRoceVersion);
  if (l3 != kL3Ipv4 && l3 != kL3Ipv6) {
    fail(call, CommandStatus::kBadParameter, kRoceL3Type);
    return;
  }
  if (version != kRoceVersion1 && version != kRoceVersion2) {
    fail(call, CommandStatus::kBadParameter, kRoceVersion);
    return;
  }
  RoceAddress& e = call.function().vport.roce_addresses[index];  // an all-zero address deletes
  std::copy_n(a.begin() + ral::kSourceL3Address, e.gid.size(), e.gid.begin());
  e.mac = mac_from(get(a, ral::kSourceMac47_32), get(a, ral::kSourceMac31_0));
  e.vlan_valid = get(a, ral::kVlanValid);
  e.vlan_id = uint16_t(get(a, ral::kVlanId));
  e.l3_type = uint8_t(l3);
  e.roce_version = uint8_t(version);
}

void query_roce_address(CommandCall& call) {
  uint32_t index = 0;
  if (!call.need_input(0x10) || !call.need_output(kRoceAddressOffset + ral::kBytes) || !op_mod_is(call, 0) ||
      !roce_index(call, index))
    return;
  const RoceAddress& e = call.function().vport.roce_addresses[index];
  std::span<uint8_t> a = sub(call.out(), kRoceAddressOffset, ral::kBytes);
  std::copy(e.gid.begin(), e.gid.end(), a.begin() + ral::kSourceL3Address);
  set(a, ral::kVlanValid, e.vlan_valid);
  set(a, ral::kVlanId, e.vlan_id);
  set(a, ral::kSourceMac47_32, mac_hi16(e.mac));
  set(a, ral::kSourceMac31_0, mac_lo32(e.mac));
  set(a, ral::kRoceL3Type, e.l3_type);
  set(a, ral::kRoceVersion, e.roce_version);
}

}  // namespace

void post_port_change(FunctionContext& f) {
  std::array<uint8_t, eqe::kDataSize> data{};
  data[kPortChangePortByte] = uint8_t(1 << 4);
  eq_post(f, eqe::kPortChange, f.port.state().up() ? kPortChangeActive : kPortChangeDown, data);
}

void register_hca_commands(CommandTable& table) {
  table.add(kQueryHcaCap, "QUERY_HCA_CAP", query_hca_cap, Senders::kUserQuery);
  table.add(kQueryAdapter, "QUERY_ADAPTER", query_adapter, Senders::kUser);
  table.add(kInitHca, "INIT_HCA", init_hca);
  table.add(kTeardownHca, "TEARDOWN_HCA", teardown_hca);
  table.add(kSetHcaCap, "SET_HCA_CAP", set_hca_cap);
  table.add(kSetDriverVersion, "SET_DRIVER_VERSION", set_driver_version);
  table.add(kAccessRegister, "ACCESS_REG", access_register);
  table.add(kQueryVportState, "QUERY_VPORT_STATE", query_vport_state, Senders::kUserQuery);
  table.add(kModifyVportState, "MODIFY_VPORT_STATE", modify_vport_state);
  table.add(kQueryNicVportContext, "QUERY_NIC_VPORT_CONTEXT", query_nic_vport_context, Senders::kUserQuery);
  table.add(kModifyNicVportContext, "MODIFY_NIC_VPORT_CONTEXT", modify_nic_vport_context);
  table.add(kQueryRoceAddress, "QUERY_ROCE_ADDRESS", query_roce_address, Senders::kUser);
  table.add(kSetRoceAddress, "SET_ROCE_ADDRESS", set_roce_address);
  table.add(kQueryHcaVportContext, "QUERY_HCA_VPORT_CONTEXT", query_hca_vport_context, Senders::kUserQuery);
  table.add(kQueryHcaVportGid, "QUERY_HCA_VPORT_GID", query_hca_vport_gid);
  table.add(kQueryHcaVportPkey, "QUERY_HCA_VPORT_PKEY", query_hca_vport_pkey);
}

}  // namespace hcaemu::model
