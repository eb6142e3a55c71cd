// The register file behind ACCESS_REG. Layouts: mlx5-layouts.md (`ptys_reg`, `paos_reg`,
// `pmtu_reg`); the others (PFCC, PPCNT, PMLP, PPLM, PCMR, MCIA, NODE_DESC, HOST_ENDIANNESS) follow
// Linux 6.1 mlx5_ifc.h, of which the layouts doc has no table. Every register is one row of
// kRegisters (id, name, PRM size, port-scoped, writable, read and write functions).
#include "model/firmware/port_registers.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "common/log.h"
#include "model/prm/bits.h"

namespace hcaemu::model {
namespace {

constexpr uint32_t kLocalPort = 1;  // the driver addresses its single port as local_port 1
constexpr Field kLocalPortField{0x00, 23, 16};  // local_port, same place in every port register

// paos_reg: 0x10 bytes
namespace paos {
constexpr Field kAdminStatus{0x00, 11, 8};  // admin_status
constexpr Field kOperStatus{0x00, 3, 0};    // oper_status
constexpr Field kAse{0x04, 31, 31};         // ase: admin_status update enable
}  // namespace paos

// pmtu_reg: 0x10 bytes
namespace pmtu {
constexpr Field kMaxMtu{0x04, 31, 16};    // max_mtu
constexpr Field kAdminMtu{0x08, 31, 16};  // admin_mtu
constexpr Field kOperMtu{0x0c, 31, 16};   // oper_mtu
}  // namespace pmtu

// ptys_reg: 0x40 bytes
namespace ptys {
constexpr Field kAnDisableAdmin{0x00, 30, 30};       // an_disable_admin
constexpr Field kProtoMask{0x00, 2, 0};              // proto_mask
constexpr Field kExtEthProtoCapability{0x08, 31, 0}; // ext_eth_proto_capability
constexpr Field kEthProtoCapability{0x0c, 31, 0};    // eth_proto_capability
constexpr Field kExtEthProtoAdmin{0x14, 31, 0};      // ext_eth_proto_admin
constexpr Field kEthProtoAdmin{0x18, 31, 0};         // eth_proto_admin
constexpr Field kExtEthProtoOper{0x20, 31, 0};       // ext_eth_proto_oper
constexpr Field kEthProtoOper{0x24, 31, 0};          // eth_proto_oper
constexpr uint32_t kProtoIb = 1u << 0, kProtoEth = 1u << 2;  // MLX5_PTYS_IB / MLX5_PTYS_EN
}  // namespace ptys

// pfcc_reg: 0x20 bytes
namespace pfcc {
constexpr Field kPptx{0x08, 31, 31};    // pptx: global pause tx
constexpr Field kPfctx{0x08, 23, 16};   // pfctx: per-priority tx mask
constexpr Field kPprx{0x0c, 31, 31};    // pprx
constexpr Field kPfcrx{0x0c, 23, 16};   // pfcrx
}  // namespace pfcc

// ppcnt_reg: 0x100 bytes; counter_set (0xf8 bytes) at 0x08 stays zero
namespace ppcnt {
constexpr Field kGrp{0x00, 5, 0};      // grp
constexpr Field kPrioTc{0x04, 2, 0};   // prio_tc
// Counter groups (MLX5_*_COUNTERS_GROUP) a driver may ask for; all read as zeros.
constexpr uint8_t kGroups[] = {0x00, 0x01, 0x02, 0x03, 0x05, 0x06, 0x10, 0x11, 0x12, 0x13, 0x16, 0x20};
}  // namespace ppcnt

// pmlp_reg: 0x40 bytes
namespace pmlp {
constexpr Field kWidth{0x00, 7, 0};                 // width: lanes in use
constexpr Field kLane0ModuleMapping{0x04, 31, 0};   // lane0_module_mapping ([7:0] module)
constexpr uint32_t kLanes = 4;                      // 100GBASE-CR4
}  // namespace pmlp

// pcmr_reg: 0x0c bytes
namespace pcmr {
constexpr Field kFcsCap{0x04, 1, 1};  // fcs_cap
constexpr Field kFcsChk{0x08, 1, 1};  // fcs_chk
}  // namespace pcmr

// mcia_reg: 0x40 bytes. No module EEPROM is modelled: every read answers MODULE_NOT_CONNECTED.
namespace mcia {
constexpr Field kModule{0x00, 23, 16};          // module
constexpr Field kStatus{0x00, 7, 0};            // status
constexpr Field kAddressing{0x04, 31, 0};       // i2c_device_address, page_number, device_address
constexpr Field kSize{0x08, 15, 0};             // size
constexpr uint32_t kModuleNotConnected = 0x3;
}  // namespace mcia

// host_endianness_reg: 0x10 bytes
constexpr Field kHostEndiannessHe{0x00, 31, 24};  // he

constexpr std::string_view kNodeDescription = "hcaemu ConnectX-6 Dx";

// Register-specific checks (syndrome low half); the generic ones are in access().
enum Check : uint16_t {
  kShortInput = 0x10,
  kShortOutput = 0x11,
  kReadOnly = 0x12,
  kBadLocalPort = 0x13,
  kPaosAdminStatus = 0x20,
  kPmtuAdminMtu = 0x21,
  kPtysProtoMask = 0x22,
  kPtysEthProtoAdmin = 0x23,
  kPfccPauseAndPfc = 0x24,
  kPpcntGroup = 0x25,
  kPpcntPrioTc = 0x26,
  kPcmrFcs = 0x27,
};

using ReadFn = void (*)(const PortState&, std::span<const uint8_t> in, std::span<uint8_t> out);
using WriteFn = RegisterResult (*)(PortState&, std::span<const uint8_t> in);

RegisterResult refuse(Check check) { return {CommandStatus::kBadParameter, check}; }

// --- PAOS: admin up/down; oper follows admin --------------------------------------------------
void read_paos(const PortState& s, std::span<const uint8_t>, std::span<uint8_t> out) {
  set(out, paos::kAdminStatus, s.admin_status);
  set(out, paos::kOperStatus, s.oper_status);
}
RegisterResult write_paos(PortState& s, std::span<const uint8_t> in) {
  if (get(in, paos::kAse) == 0) return {};  // no admin change requested (event settings only)
  const uint32_t admin = get(in, paos::kAdminStatus);
  if (admin != kPortUp && admin != kPortDown) return refuse(kPaosAdminStatus);
  s.admin_status = uint8_t(admin);
  s.settle_oper_status();
  return {};
}

// --- PMTU: admin MTU within [min, max]; oper = admin ----------------------------------------------
void read_pmtu(const PortState& s, std::span<const uint8_t>, std::span<uint8_t> out) {
  set(out, pmtu::kMaxMtu, kPortMaxMtu);
  set(out, pmtu::kAdminMtu, s.admin_mtu);
  set(out, pmtu::kOperMtu, s.admin_mtu);
}
RegisterResult write_pmtu(PortState& s, std::span<const uint8_t> in) {
  const uint32_t mtu = get(in, pmtu::kAdminMtu);
  if (mtu < kPortMinMtu || mtu > kPortMaxMtu) return refuse(kPmtuAdminMtu);
  s.admin_mtu = uint16_t(mtu);
  return {};
}

// --- PTYS: one speed, 100GBASE-CR4, capability = admin = oper -----------------------------------
bool valid_proto_mask(uint32_t mask) { return mask != 0 && (mask & ~(ptys::kProtoIb | ptys::kProtoEth)) == 0; }
void read_ptys(const PortState& s, std::span<const uint8_t> in, std::span<uint8_t> out) {
  const uint32_t mask = get(in, ptys::kProtoMask);
  set(out, ptys::kProtoMask, mask);
  set(out, ptys::kAnDisableAdmin, s.an_disable_admin);
  if ((mask & ptys::kProtoEth) == 0) return;  // IB fields stay zero: this is an Ethernet port
  set(out, ptys::kExtEthProtoCapability, 0);
  set(out, ptys::kEthProtoCapability, kEthProto100GBaseCr4);
  set(out, ptys::kEthProtoAdmin, s.eth_proto_admin);
  set(out, ptys::kEthProtoOper, s.eth_proto_admin & kEthProto100GBaseCr4);
  set(out, ptys::kExtEthProtoOper, 0);
}
RegisterResult write_ptys(PortState& s, std::span<const uint8_t> in) {
  const uint32_t mask = get(in, ptys::kProtoMask);
  if (!valid_proto_mask(mask) || (mask & ptys::kProtoEth) == 0) return refuse(kPtysProtoMask);
  const uint32_t admin = get(in, ptys::kEthProtoAdmin);
  if (admin == 0 || (admin & ~kEthProto100GBaseCr4) != 0 || get(in, ptys::kExtEthProtoAdmin) != 0)
    return refuse(kPtysEthProtoAdmin);
  s.eth_proto_admin = admin;
  s.an_disable_admin = get(in, ptys::kAnDisableAdmin);
  return {};
}
RegisterResult check_ptys_read(const std::span<const uint8_t> in) {
  return valid_proto_mask(get(in, ptys::kProtoMask)) ? RegisterResult{} : refuse(kPtysProtoMask);
}

// --- PFCC: global pause or per-priority flow control, not both ------------------------------------
void read_pfcc(const PortState& s, std::span<const uint8_t>, std::span<uint8_t> out) {
  set(out, pfcc::kPptx, s.pause_tx);
  set(out, pfcc::kPprx, s.pause_rx);
  set(out, pfcc::kPfctx, s.pfc_tx);
  set(out, pfcc::kPfcrx, s.pfc_rx);
}
RegisterResult write_pfcc(PortState& s, std::span<const uint8_t> in) {
  const bool ptx = get(in, pfcc::kPptx), prx = get(in, pfcc::kPprx);
  const uint32_t pfc_tx = get(in, pfcc::kPfctx), pfc_rx = get(in, pfcc::kPfcrx);
  if ((ptx || prx) && (pfc_tx || pfc_rx)) return refuse(kPfccPauseAndPfc);
  s.pause_tx = ptx;
  s.pause_rx = prx;
  s.pfc_tx = uint8_t(pfc_tx);
  s.pfc_rx = uint8_t(pfc_rx);
  return {};
}

// --- PPCNT: well-formed, all counters zero; a write (clr) clears nothing there is to clear ---------
RegisterResult check_ppcnt(std::span<const uint8_t> in) {
  const uint32_t grp = get(in, ppcnt::kGrp);
  if (std::find(std::begin(ppcnt::kGroups), std::end(ppcnt::kGroups), grp) == std::end(ppcnt::kGroups))
    return refuse(kPpcntGroup);
  if (get(in, ppcnt::kPrioTc) > 7) return refuse(kPpcntPrioTc);
  return {};
}
void read_ppcnt(const PortState&, std::span<const uint8_t> in, std::span<uint8_t> out) {
  set(out, ppcnt::kGrp, get(in, ppcnt::kGrp));
  set(out, ppcnt::kPrioTc, get(in, ppcnt::kPrioTc));
}
RegisterResult write_ppcnt(PortState&, std::span<const uint8_t> in) { return check_ppcnt(in); }

// --- PMLP / PPLM / MCIA: read-only descriptions of a port without a pluggable module -----------
void read_pmlp(const PortState&, std::span<const uint8_t>, std::span<uint8_t> out) {
  set(out, pmlp::kWidth, pmlp::kLanes);
  for (uint32_t lane = 0; lane < pmlp::kLanes; ++lane)  // every lane on module 0
    set(out, Field{pmlp::kLane0ModuleMapping.offset + 4 * lane, 31, 0}, 0);
}
void read_pplm(const PortState&, std::span<const uint8_t>, std::span<uint8_t>) {}  // no FEC modes
void read_mcia(const PortState&, std::span<const uint8_t> in, std::span<uint8_t> out) {
  set(out, mcia::kModule, get(in, mcia::kModule));
  set(out, mcia::kAddressing, get(in, mcia::kAddressing));
  set(out, mcia::kSize, get(in, mcia::kSize));
  set(out, mcia::kStatus, mcia::kModuleNotConnected);
}

// --- PCMR: FCS check on/off ---------------------------------------------------------------------------
void read_pcmr(const PortState& s, std::span<const uint8_t>, std::span<uint8_t> out) {
  set(out, pcmr::kFcsCap, 1);
  set(out, pcmr::kFcsChk, s.fcs_check);
}
RegisterResult write_pcmr(PortState& s, std::span<const uint8_t> in) {
  s.fcs_check = get(in, pcmr::kFcsChk);
  return {};
}

// --- NODE_DESC: 64-byte string; HOST_ENDIANNESS: accepted and remembered ---------------------------
void read_node_desc(const PortState& s, std::span<const uint8_t>, std::span<uint8_t> out) {
  std::memcpy(out.data(), s.node_description.data(), std::min(out.size(), s.node_description.size()));
}
RegisterResult write_node_desc(PortState& s, std::span<const uint8_t> in) {
  std::memcpy(s.node_description.data(), in.data(), s.node_description.size());
  s.node_description.back() = 0;  // always a terminated string
  return {};
}
void read_host_endianness(const PortState& s, std::span<const uint8_t>, std::span<uint8_t> out) {
  set(out, kHostEndiannessHe, s.host_endianness);
}
RegisterResult write_host_endianness(PortState& s, std::span<const uint8_t> in) {
  s.host_endianness = uint8_t(get(in, kHostEndiannessHe));
  return {};
}

struct RegisterDesc {
  RegisterId id;
  std::string_view name;
  uint32_t bytes;   // the register's PRM size
  bool port_scoped; // carries local_port at 0x00 [23:16]
  ReadFn read;
  WriteFn write;    // null: read-only
};

constexpr RegisterDesc kRegisters[] = {
    {RegisterId::kPmlp, "PMLP", 0x40, true, read_pmlp, nullptr},
    {RegisterId::kPmtu, "PMTU", 0x10, true, read_pmtu, write_pmtu},
    {RegisterId::kPtys, "PTYS", 0x40, true, read_ptys, write_ptys},
    {RegisterId::kPaos, "PAOS", 0x10, true, read_paos, write_paos},
    {RegisterId::kPfcc, "PFCC", 0x20, true, read_pfcc, write_pfcc},
    {RegisterId::kPpcnt, "PPCNT", 0x100, true, read_ppcnt, write_ppcnt},
    {RegisterId::kPplm, "PPLM", 0x50, true, read_pplm, nullptr},
    {RegisterId::kPcmr, "PCMR", 0x0c, true, read_pcmr, write_pcmr},
    {RegisterId::kNodeDesc, "NODE_DESC", kNodeDescriptionBytes, false, read_node_desc, write_node_desc},
    {RegisterId::kHostEndianness, "HOST_ENDIANNESS", 0x10, false, read_host_endianness, write_host_endianness},
    {RegisterId::kMcia, "MCIA", 0x40, false, read_mcia, nullptr},
};

const RegisterDesc* find_register(uint16_t id) {
  for (const RegisterDesc& r : kRegisters)
    if (uint16_t(r.id) == id) return &r;
  return nullptr;
}

}  // namespace

PortState default_port_state() {
  PortState s;
  std::copy(kNodeDescription.begin(), kNodeDescription.end(), s.node_description.begin());
  return s;
}

bool RoceAddress::in_use() const {
  // Word at a time: every packet sent and received asks this of its GID entry.
  uint64_t gid_words[2];
  std::memcpy(gid_words, gid.data(), sizeof gid_words);
  static_assert(sizeof gid_words == sizeof gid);
  uint64_t mac_word = 0;
  std::memcpy(&mac_word, mac.data(), mac.size());
  return (gid_words[0] | gid_words[1] | mac_word) != 0;
}

uint32_t PortRegisters::register_bytes(uint16_t register_id) {
  const RegisterDesc* r = find_register(register_id);
  return r == nullptr ? 0 : r->bytes;
}

RegisterResult PortRegisters::access(uint16_t register_id, bool write, std::span<const uint8_t> data_in,
                                     std::span<uint8_t> data_out) {
  const RegisterDesc* r = find_register(register_id);
  if (r == nullptr) {
    if (reported_.insert(register_id).second)
      log().warn("firmware: ACCESS_REG register {:#06x} is not implemented; answering BAD_PARAM", register_id);
    return {CommandStatus::kBadParameter, register_id};  // the syndrome names the register
  }
  if (data_in.size() < r->bytes) return {CommandStatus::kBadInputLength, kShortInput};
  if (!write && data_out.size() < r->bytes) return {CommandStatus::kBadOutputLength, kShortOutput};
  if (write && r->write == nullptr) return refuse(kReadOnly);
  data_in = data_in.first(r->bytes);
  if (r->port_scoped && get(data_in, kLocalPortField) != kLocalPort) return refuse(kBadLocalPort);
  if (r->id == RegisterId::kPtys && !write) {
    if (RegisterResult c = check_ptys_read(data_in); c.status != CommandStatus::kOk) return c;
  }
  if (r->id == RegisterId::kPpcnt && !write) {
    if (RegisterResult c = check_ppcnt(data_in); c.status != CommandStatus::kOk) return c;
  }
  if (write) {
    if (RegisterResult w = r->write(state_, data_in); w.status != CommandStatus::kOk) return w;
  }
  // The register as it now stands goes back in the output (reads, and writes with room for it).
  data_out = data_out.first(std::min<size_t>(data_out.size(), r->bytes));
  if (r->port_scoped) set(data_out, kLocalPortField, kLocalPort);
  r->read(state_, data_in, data_out);
  return {};
}

}  // namespace hcaemu::model
