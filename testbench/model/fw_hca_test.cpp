// HCA-level commands through the firmware's dispatch: the mlx5_core probe sequence of
// mlx5-device-bringup.md section 4.1 as the driver issues it, the caps mlx5e/mlx5_ib gate on, PF vs
// VF, vport/MTU/RoCE address round trips, and hostile input for every command. Offsets are written
// out from the docs here (not taken from the model's constants) so the test checks the layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "common/endian.h"
#include "model/firmware/firmware.h"

namespace hcaemu::model {
namespace {

constexpr uint8_t kOk = 0;
constexpr uint8_t kBadParam = uint8_t(CommandStatus::kBadParameter);
constexpr uint8_t kBadState = uint8_t(CommandStatus::kBadSystemState);
constexpr uint8_t kBadInLen = uint8_t(CommandStatus::kBadInputLength);
constexpr uint8_t kBadOutLen = uint8_t(CommandStatus::kBadOutputLength);

constexpr uint32_t kCapOut = 0x1010;  // sizeof(query_hca_cap_out), what the driver allows
constexpr uint16_t kGeneral = 0, kEth = 1, kAtomic = 3, kRoce = 4, kFlowTable = 7;
constexpr uint16_t kMax = 0, kCur = 1;

// One function and its firmware, driven the way the driver drives them.
struct Function {
  explicit Function(FunctionIdentity id = {}) : fw(context) {
    context.identity = id;
    context.apply_quotas();
  }
  FunctionContext context;
  Firmware fw;
  std::vector<uint8_t> out;

  uint8_t run(uint16_t opcode, uint16_t op_mod, std::vector<uint8_t> input = {}, uint32_t outlen = 16) {
    input.resize(std::max<size_t>(input.size(), 16), 0);
    store_be16(&input[0], opcode);
    store_be16(&input[6], op_mod);
    CommandRequest r{opcode, op_mod, input, outlen};
    fw.execute(r, out);
    return out[0];
  }
  // Input exactly as given (no padding to the 16-byte header): for short-input checks.
  uint8_t run_raw(uint16_t opcode, uint16_t op_mod, size_t inlen, uint32_t outlen = 16) {
    CommandRequest r{opcode, op_mod, std::vector<uint8_t>(inlen, 0), outlen};
    fw.execute(r, out);
    return out[0];
  }
  uint32_t syndrome() const { return load_be32(&out[4]); }
  // A field of the output: BE dword at `offset`, bits hi..lo.
  uint32_t at(uint32_t offset, int hi, int lo) const {
    const uint32_t dw = load_be32(&out[offset]);
    const uint32_t width = uint32_t(hi - lo + 1);
    return width == 32 ? dw : (dw >> lo) & ((1u << width) - 1);
  }
  // A cap field: offset inside the capability, which starts at out+0x10.
  uint32_t cap(uint32_t offset, int hi, int lo) const { return at(0x10 + offset, hi, lo); }

  uint8_t query_cap(uint16_t type, uint16_t mode) { return run(0x100, uint16_t(type << 1 | mode), {}, kCapOut); }

  uint8_t access_reg(uint16_t reg, bool write, std::vector<uint8_t> data, uint32_t data_bytes) {
    data.resize(data_bytes, 0);
    std::vector<uint8_t> in(0x10);
    store_be16(&in[0x0a], reg);
    in.insert(in.end(), data.begin(), data.end());
    return run(0x805, write ? 0 : 1, in, 0x10 + data_bytes);
  }
  uint8_t enable_and_init() {
    if (run(0x104, 0) != kOk) return out[0];
    return run(0x102, 0, std::vector<uint8_t>(0x20));
  }
};

// Register data helpers: a register image with local_port = 1 and one field set.
std::vector<uint8_t> reg_image(uint32_t bytes, uint32_t dword_offset = 0, uint32_t value = 0) {
  std::vector<uint8_t> d(bytes, 0);
  d[1] = 1;  // local_port (0x00 [23:16])
  if (dword_offset + 4 <= bytes) store_be32(&d[dword_offset], load_be32(&d[dword_offset]) | value);
  return d;
}

// --- the probe sequence (section 4.1, items 1-18) -----------------------------------------------

void run_probe(Function& f, bool is_pf) {
  ASSERT_EQ(f.run(0x104, 0), kOk) << "1 ENABLE_HCA";
  ASSERT_EQ(f.run(0x10a, 0, {}, 0x70), kOk) << "2 QUERY_ISSI";
  std::vector<uint8_t> issi(16);
  store_be16(&issi[0x0a], 1);
  ASSERT_EQ(f.run(0x10b, 0, issi), kOk) << "3 SET_ISSI(1)";
  ASSERT_EQ(f.run(0x107, 1), kOk) << "4 QUERY_PAGES boot";
  ASSERT_EQ(f.run(0x108, 1), kOk) << "5 MANAGE_PAGES give 0";
  if (is_pf) {
    std::vector<uint8_t> he(0x10);
    ASSERT_EQ(f.access_reg(0x7004, true, he, 0x10), kOk) << "6 ACCESS_REG HOST_ENDIANNESS (PF only)";
  }
  ASSERT_EQ(f.query_cap(kGeneral, kCur), kOk) << "7 QUERY_HCA_CAP general cur";
  std::vector<uint8_t> cur(f.out.begin(), f.out.end());
  ASSERT_EQ(f.query_cap(kGeneral, kMax), kOk) << "7 QUERY_HCA_CAP general max";
  EXPECT_EQ(std::vector<uint8_t>(cur.begin() + 0x10, cur.begin() + 0x110),
            std::vector<uint8_t>(f.out.begin() + 0x10, f.out.begin() + 0x110))
      << "cur == max at power-on";
  // 8 SET_HCA_CAP: the driver's copy of cur with its changes (handle_hca_cap).
  std::vector<uint8_t> set(0x1010);
  std::copy(cur.begin() + 0x10, cur.begin() + 0x110, set.begin() + 0x10);
  const uint32_t max_log_max_qp = f.cap(0x10, 4, 0);
  store_be32(&set[0x10 + 0x30], load_be32(&set[0x10 + 0x30]) & 0xffff0000u);  // pkey_table_size = 0 (128)
  if (max_log_max_qp > 18) store_be32(&set[0x10 + 0x10], (load_be32(&set[0x10 + 0x10]) & ~0x1fu) | 18);
  store_be32(&set[0x10 + 0x40], load_be32(&set[0x10 + 0x40]) & ~(3u << 14));  // cmdif_checksum = 0
  store_be32(&set[0x10 + 0x90], load_be32(&set[0x10 + 0x90]) & 0xffff0000u);  // log_uar_page_sz = 0
  ASSERT_EQ(f.run(0x109, 0, set), kOk) << "8 SET_HCA_CAP general";
  // 9 handle_hca_cap_atomic: gated on `atomic`; a zeroed page with only the endianness mode set.
  ASSERT_EQ(f.cap(0x40, 1, 1), 1u) << "atomic (general max)";
  ASSERT_EQ(f.query_cap(kAtomic, kCur), kOk) << "9 QUERY_HCA_CAP ATOMIC cur";
  ASSERT_EQ(f.query_cap(kAtomic, kMax), kOk) << "9 QUERY_HCA_CAP ATOMIC max";
  ASSERT_EQ(f.cap(0x08, 25, 25), 1u) << "supported_atomic_req_8B_endianness_mode_1";
  std::vector<uint8_t> atomic_set(0x1010);
  store_be32(&atomic_set[0x10 + 0x08], 1u << 30);  // atomic_req_8B_endianness_mode = host
  ASSERT_EQ(f.run(0x109, kAtomic << 1, atomic_set), kOk) << "9 SET_HCA_CAP ATOMIC";
  ASSERT_EQ(f.query_cap(kRoce, kCur), kOk) << "11 QUERY_HCA_CAP ROCE cur";
  const uint32_t src_port_cur = f.cap(0x00, 27, 27);
  ASSERT_EQ(f.query_cap(kRoce, kMax), kOk) << "11 QUERY_HCA_CAP ROCE max";
  EXPECT_EQ(f.cap(0x00, 27, 27), src_port_cur) << "sw_r_roce_src_udp_port equal: no SET_HCA_CAP(ROCE)";
  ASSERT_EQ(f.run(0x107, 2), kOk) << "14 QUERY_PAGES init";
  EXPECT_EQ(f.at(0x0c, 31, 0), 0u);
  ASSERT_EQ(f.run(0x108, 1), kOk) << "14 MANAGE_PAGES";
  ASSERT_EQ(f.run(0x102, 0, std::vector<uint8_t>(0x20)), kOk) << "15 INIT_HCA";
  EXPECT_TRUE(f.context.hca_initialized);
  // 17: general again, then each type whose gate bit is set.
  ASSERT_EQ(f.query_cap(kGeneral, kCur), kOk);
  ASSERT_EQ(f.query_cap(kGeneral, kMax), kOk);
  for (uint16_t type : {kEth, kAtomic, kRoce, kFlowTable})
    for (uint16_t mode : {kCur, kMax}) ASSERT_EQ(f.query_cap(type, mode), kOk) << "17 cap type " << type;
  ASSERT_EQ(f.query_cap(kAtomic, kCur), kOk);
  EXPECT_EQ(f.cap(0x08, 31, 30), 1u) << "host endianness still in cur after INIT_HCA";
  ASSERT_EQ(f.run(0x101, 0, {}, 0x110), kOk) << "18 QUERY_ADAPTER";
}

TEST(FwHcaProbe, PfProbeSequenceSucceeds) {
  Function pf;
  run_probe(pf, true);
  EXPECT_EQ(pf.fw.unsupported_commands(), 0u);
  EXPECT_EQ(pf.fw.failed_commands(), 0u);
}

TEST(FwHcaProbe, VfProbeSequenceSucceedsWithoutHostEndianness) {
  Function vf({.is_vf = true, .vhca_id = 3});
  run_probe(vf, false);
  EXPECT_EQ(vf.fw.failed_commands(), 0u);
}

TEST(FwHcaProbe, GeneralCapsAreTheSection43Set) {
  Function f({.is_vf = false, .vhca_id = 0, .msix_vectors = 9});
  for (uint16_t mode : {kCur, kMax}) {
    ASSERT_EQ(f.query_cap(kGeneral, mode), kOk);
    EXPECT_EQ(f.cap(0x04, 31, 31), 1u) << "hca_cap_2: reserved QP number blocks";
    EXPECT_EQ(f.cap(0x04, 15, 0), 0u) << "vhca_id of the PF";
    EXPECT_EQ(f.cap(0x10, 31, 24), 15u) << "log_max_srq_sz";
    EXPECT_EQ(f.cap(0x10, 23, 16), 15u) << "log_max_qp_sz";
    EXPECT_EQ(f.cap(0x10, 4, 0), 17u) << "log_max_qp";
    EXPECT_EQ(f.cap(0x14, 20, 16), 16u) << "log_max_srq";
    EXPECT_EQ(f.cap(0x18, 23, 16), 22u) << "log_max_cq_sz";
    EXPECT_EQ(f.cap(0x18, 4, 0), 16u) << "log_max_cq";
    EXPECT_EQ(f.cap(0x1c, 31, 24), 22u) << "log_max_eq_sz";
    EXPECT_EQ(f.cap(0x1c, 21, 16), 16u) << "log_max_mkey";
    EXPECT_GE(f.cap(0x1c, 3, 0), 6u) << "log_max_eq";
    EXPECT_EQ(f.cap(0x20, 22, 16), 64u) << "log_max_mrw_sz";
    EXPECT_EQ(f.cap(0x28, 21, 16), 4u) << "log_max_ra_req_qp";
    EXPECT_EQ(f.cap(0x28, 5, 0), 4u) << "log_max_ra_res_qp";
    EXPECT_EQ(f.cap(0x30, 25, 16), 64u) << "max_qp_cnt";
    EXPECT_EQ(f.cap(0x30, 31, 31), 1u) << "out_of_seq_cnt";
    EXPECT_EQ(f.cap(0x30, 29, 29), 1u) << "retransmission_q_counters";
    EXPECT_EQ(f.cap(0x34, 14, 14), 1u) << "enhanced_error_q_counters";
    EXPECT_EQ(f.cap(0x30, 15, 0), 0u) << "pkey_table_size";
    EXPECT_EQ(f.cap(0x34, 31, 31), 1u) << "vport_group_manager: the PF";
    EXPECT_EQ(f.cap(0x34, 25, 25), 1u) << "nic_flow_table";
    EXPECT_EQ(f.cap(0x34, 24, 24), 1u) << "eswitch_manager: the PF";
    EXPECT_EQ(f.cap(0x90, 28, 24), 5u) << "log_max_l2_table: the MPFS table of 32";
    EXPECT_EQ(f.cap(0x34, 22, 21), 0u) << "mcam_reg / pcam_reg";
    EXPECT_EQ(f.cap(0x34, 9, 8), 1u) << "port_type Ethernet";
    EXPECT_EQ(f.cap(0x34, 7, 0), 1u) << "num_ports";
    EXPECT_EQ(f.cap(0x38, 28, 24), 30u) << "log_max_msg";
    EXPECT_EQ(f.cap(0x3c, 3, 0), 1u) << "cqe_version: CQEs carry the user index";
    EXPECT_EQ(f.cap(0x40, 30, 30), 0u) << "striding_rq";
    EXPECT_EQ(f.cap(0x40, 24, 24), 0u) << "umr_modify_entity_size_disabled: MTTs load by UMR (the MKEY cache)";
    EXPECT_EQ(f.cap(0x40, 15, 14), 0u) << "cmdif_checksum";
    EXPECT_EQ(f.cap(0x40, 4, 4), 1u) << "qos: packet pacing";
    EXPECT_EQ(f.cap(0x40, 3, 3), 1u) << "eth_net_offloads";
    EXPECT_EQ(f.cap(0x40, 2, 2), 1u) << "roce";
    EXPECT_EQ(f.cap(0x40, 1, 1), 1u) << "atomic";
    EXPECT_EQ(f.cap(0x44, 24, 24), 1u) << "pg (ODP)";
    EXPECT_EQ(f.cap(0x44, 3, 0), 0xfu) << "xrc / ud / uc / rc";
    EXPECT_EQ(f.cap(0x48, 31, 31), 0u) << "uar_4k";
    EXPECT_EQ(f.cap(0x48, 7, 0), 12u) << "log_pg_sz";
    EXPECT_EQ(f.cap(0x4c, 31, 31), 0u) << "bf";
    EXPECT_EQ(f.cap(0x4c, 30, 30), 0u) << "driver_version";
    EXPECT_EQ(f.cap(0x4c, 20, 16), 9u) << "log_bf_reg_size";
    EXPECT_EQ(f.cap(0x4c, 4, 4), 0u) << "lag_master";
    EXPECT_EQ(f.cap(0x50, 15, 0), 1024u) << "max_wqe_sz_sq";
    EXPECT_EQ(f.cap(0x54, 15, 0), 512u) << "max_wqe_sz_rq";
    EXPECT_EQ(f.cap(0x64, 28, 24), 16u) << "log_max_transport_domain";
    EXPECT_EQ(f.cap(0x64, 20, 16), 18u) << "log_max_pd";
    EXPECT_EQ(f.cap(0x64, 4, 0), 16u) << "log_max_xrcd";
    EXPECT_EQ(f.at(0x10 + 0x6c, 31, 0), 0x11111010u) << "log_max_rq/sq 17, tir/tis 16";
    EXPECT_EQ(f.cap(0x70, 20, 16), 16u) << "log_max_rqt";
    EXPECT_EQ(f.cap(0x70, 12, 8), 11u) << "log_max_rqt_size";
    EXPECT_EQ(f.cap(0x78, 4, 0), 17u) << "log_max_wq_sz";
    EXPECT_EQ(f.cap(0x44, 23, 23), 1u) << "block_lb_mc";
    EXPECT_EQ(f.cap(0x7c, 30, 29), 3u) << "disable_local_lb_uc/mc: the driver may turn local loopback off";
    EXPECT_EQ(load_be64(&f.out[0x10 + 0x80]), uint64_t(1) << 0x2c | uint64_t(1) << 0x26 | uint64_t(1) << 0x3a)
        << "general_obj_types: RESERVED_QPN, SCHEDULING_ELEMENT and AV_QP_MAPPING only";
    EXPECT_EQ(f.cap(0x24, 29, 29), 1u) << "qpc_extension";
    EXPECT_EQ(f.cap(0x8c, 28, 24), 10u) << "log_max_uctx: DevX user contexts";
    EXPECT_EQ(f.cap(0xd4, 31, 0), 1u) << "uctx_cap: RAW_TX only";
    EXPECT_EQ(f.cap(0x8c, 15, 0), 9u + 4u) << "max_num_eqs: the MSI-X vectors plus the control EQs";
    EXPECT_GE(1u << f.cap(0x1c, 3, 0), f.cap(0x8c, 15, 0));
    EXPECT_EQ(f.cap(0x90, 15, 0), 0u) << "log_uar_page_sz";
    EXPECT_EQ(f.cap(0x9c, 31, 0), 1000000u) << "device_frequency_khz: the internal timer counts model ns";
    EXPECT_EQ(f.cap(0xc0, 1, 1), 0u) << "sw_owner_id";
    EXPECT_EQ(f.cap(0xd0, 31, 31), 0u) << "sf";
    EXPECT_EQ(f.cap(0xb4, 2, 2), 1u) << "cqe_128_always: padded 128-byte CQEs";
    EXPECT_EQ(f.cap(0xb4, 1, 0), 3u) << "cqe_compression_128, cqe_compression (taken; every CQE written whole)";
    EXPECT_EQ(f.cap(0xb4, 3, 3), 1u) << "mini_cqe_resp_stride_index";
    EXPECT_EQ(f.cap(0xb4, 15, 15), 0u) << "enhanced_cqe_compression";
    EXPECT_EQ(f.cap(0xb8, 15, 0), 64u) << "cqe_compression_max_num";
  }
}

TEST(FwHcaProbe, MaxNumEqsFollowsTheMsixTable) {
  Function big({.is_vf = true, .vhca_id = 2, .msix_vectors = 200});
  ASSERT_EQ(big.query_cap(kGeneral, kMax), kOk);
  EXPECT_EQ(big.cap(0x8c, 15, 0), 204u);
  EXPECT_GE(1u << big.cap(0x1c, 3, 0), 204u) << "log_max_eq covers max_num_eqs";
  EXPECT_EQ(big.cap(0x04, 15, 0), 2u) << "vhca_id of the VF";
}

// Issue 14: the admin's per-function object quotas (hcaemu's configuration, pf/vf.log_max_*) are
// what the caps report, max and cur, and what the object tables hold to: one CQ past log_max_cq
// fails with the exceeded-limit status.
TEST(FwHcaProbe, ObjectQuotasAreTheCapsAndTheLimits) {
  model::ObjectQuotas quotas;
  quotas.log_max_qp = 12, quotas.log_max_cq = 8, quotas.log_max_mkey = 10, quotas.log_max_srq = 9;
  Function vf({.is_vf = true, .vhca_id = 1, .msix_vectors = 16, .quotas = quotas});
  ASSERT_EQ(vf.query_cap(kGeneral, kMax), kOk);
  EXPECT_EQ(vf.cap(0x10, 4, 0), 12u) << "log_max_qp";
  EXPECT_EQ(vf.cap(0x18, 4, 0), 8u) << "log_max_cq";
  EXPECT_EQ(vf.cap(0x1c, 21, 16), 10u) << "log_max_mkey";
  EXPECT_EQ(vf.cap(0x14, 20, 16), 9u) << "log_max_srq";
  ASSERT_EQ(vf.query_cap(kGeneral, kCur), kOk);
  EXPECT_EQ(vf.cap(0x10, 4, 0), 12u) << "cur never above max";
  EXPECT_EQ(vf.context.resources.limits.log_max_cq, 8u);
  EXPECT_EQ(vf.context.resources.limits.log_max_qp, 12u);
  vf.context.reset_objects();
  EXPECT_EQ(vf.context.resources.limits.log_max_mkey, 10u) << "a reset keeps the quotas";
  EXPECT_EQ(vf.context.caps.log_max_qp, 12u);
}

TEST(FwHcaProbe, Mlx5eAndRoceCaps) {
  Function f;
  for (uint16_t mode : {kCur, kMax}) {
    ASSERT_EQ(f.query_cap(kEth, mode), kOk);
    EXPECT_EQ(f.cap(0x00, 31, 31), 1u) << "csum_cap";
    EXPECT_EQ(f.cap(0x00, 30, 30), 1u) << "vlan_cap";
    EXPECT_EQ(f.cap(0x00, 29, 29), 0u) << "lro_cap";
    EXPECT_NE(f.cap(0x00, 20, 16), 0u) << "max_lso_cap";
    EXPECT_EQ(f.cap(0x00, 13, 12), 2u) << "wqe_inline_mode NOT_REQUIRED";
    EXPECT_NE(f.cap(0x00, 11, 8), 0u) << "rss_ind_tbl_cap";

    ASSERT_EQ(f.query_cap(kRoce, mode), kOk);
    EXPECT_EQ(f.cap(0x10, 19, 16), 0x6u) << "l3_type: IPv4 and IPv6 caps both";
    EXPECT_EQ(f.cap(0x10, 7, 0), 0x5u) << "roce_version v1 | v2";
    EXPECT_EQ(f.cap(0x14, 15, 0), 4791u) << "r_roce_dest_udp_port";
    EXPECT_EQ(f.cap(0x18, 31, 16), 0xffffu);
    EXPECT_EQ(f.cap(0x18, 15, 0), 0xc000u);
    EXPECT_EQ(f.cap(0x1c, 15, 0), 256u) << "roce_address_table_size";

    ASSERT_EQ(f.query_cap(kFlowTable, mode), kOk);
    EXPECT_EQ(f.cap(0x40, 31, 31), 1u) << "nic_receive.ft_support";
    EXPECT_EQ(f.cap(0x40, 28, 25), 0xfu) << "the four chaining caps";
    EXPECT_EQ(f.cap(0x44, 29, 24), 20u) << "log_max_ft_size";
    EXPECT_GE(f.cap(0x44, 7, 0), 3u) << "max_ft_level";
    // ft_field_support: the fields frame::match_key fills, nothing it cannot see in a frame.
    EXPECT_EQ(f.cap(0x60, 31, 31), 1u) << "outer_dmac";
    EXPECT_EQ(f.cap(0x60, 23, 21), 0u) << "outer second VLAN";
    EXPECT_EQ(f.cap(0x60, 6, 2), 0x1fu) << "VXLAN VNI, Geneve VNI, OAM, protocol type, option length";
    EXPECT_EQ(f.cap(0x60, 1, 0), 0u) << "the eswitch's source port";
    EXPECT_EQ(f.cap(0x64, 28, 28), 1u) << "inner_ip_version (mlx5e's inner TTC tables)";
    EXPECT_EQ(f.cap(0x68, 5, 5), 1u) << "bth_dst_qp";
    EXPECT_EQ(f.cap(0x6c, 7, 0), 0u) << "metadata registers";
    EXPECT_EQ(f.cap(0x70, 31, 0), f.cap(0x60, 31, 0)) << "the bitmask support says the same";
    EXPECT_EQ(f.cap(0x80, 31, 31), 0u) << "nic_transmit.ft_support";
  }
}

TEST(FwHcaProbe, QueryAdapterBoardIdAndVendor) {
  Function f;
  ASSERT_EQ(f.run(0x101, 0, {}, 0x110), kOk);
  EXPECT_EQ(f.at(0x28, 23, 0), 0x02c9u) << "ieee_vendor_id";
  const std::string psid(reinterpret_cast<const char*>(&f.out[0x100]));
  EXPECT_EQ(psid.substr(0, 3), "MT_");
  EXPECT_LE(psid.size(), 16u);
  EXPECT_EQ(f.run(0x101, 0, {}, 0x100), kBadOutLen);
}

// --- SET_HCA_CAP ----------------------------------------------------------------------------------

std::vector<uint8_t> set_cap_input(Function& f, uint16_t type) {
  EXPECT_EQ(f.query_cap(type, kCur), kOk);
  std::vector<uint8_t> in(f.out.begin(), f.out.end());
  std::fill(in.begin(), in.begin() + 0x10, 0);
  return in;
}

TEST(FwHcaCaps, SetStoresSettableFieldsAndRefusesAboveMax) {
  Function f;
  f.run(0x104, 0);
  auto in = set_cap_input(f, kGeneral);
  store_be32(&in[0x10 + 0x10], (load_be32(&in[0x10 + 0x10]) & ~0x1fu) | 12);  // log_max_qp 12 (<= 17)
  ASSERT_EQ(f.run(0x109, 0, in), kOk);
  ASSERT_EQ(f.query_cap(kGeneral, kCur), kOk);
  EXPECT_EQ(f.cap(0x10, 4, 0), 12u) << "cur reflects SET";
  ASSERT_EQ(f.query_cap(kGeneral, kMax), kOk);
  EXPECT_EQ(f.cap(0x10, 4, 0), 17u) << "max unchanged";

  in = set_cap_input(f, kGeneral);
  store_be32(&in[0x10 + 0x10], (load_be32(&in[0x10 + 0x10]) & ~0x1fu) | 20);  // above max 17
  EXPECT_EQ(f.run(0x109, 0, in), kBadParam);
  EXPECT_EQ(f.syndrome() >> 16, 0x109u);
  in = set_cap_input(f, kGeneral);
  store_be32(&in[0x10 + 0x48], load_be32(&in[0x10 + 0x48]) | 0x80000000u);  // uar_4k: max says no
  EXPECT_EQ(f.run(0x109, 0, in), kBadParam);
  in = set_cap_input(f, kGeneral);
  store_be32(&in[0x10 + 0x40], load_be32(&in[0x10 + 0x40]) | (1u << 14));  // cmdif_checksum 1 > max 0
  EXPECT_EQ(f.run(0x109, 0, in), kBadParam);
  ASSERT_EQ(f.query_cap(kGeneral, kCur), kOk);
  EXPECT_EQ(f.cap(0x10, 4, 0), 12u) << "refused SETs changed nothing";
  EXPECT_EQ(f.cap(0x48, 31, 31), 0u);

  // Read-only fields in the copy are ignored, as firmware does.
  in = set_cap_input(f, kGeneral);
  store_be32(&in[0x10 + 0x34], load_be32(&in[0x10 + 0x34]) & ~0x80000000u);  // vport_group_manager
  EXPECT_EQ(f.run(0x109, 0, in), kOk);
  ASSERT_EQ(f.query_cap(kGeneral, kCur), kOk);
  EXPECT_EQ(f.cap(0x34, 31, 31), 1u) << "the PF stays the vport group manager";
}

TEST(FwHcaCaps, SetAfterInitAndBadTypesAreRefused) {
  Function f;
  auto roce = set_cap_input(f, kRoce);
  EXPECT_EQ(f.run(0x109, kRoce << 1, roce), kOk) << "ROCE caps SET with the same values";
  store_be32(&roce[0x10], load_be32(&roce[0x10]) | (1u << 27));  // sw_r_roce_src_udp_port, max 0
  EXPECT_EQ(f.run(0x109, kRoce << 1, roce), kBadParam);
  auto in = set_cap_input(f, kGeneral);
  EXPECT_EQ(f.run(0x109, 1, in), kBadParam) << "SET with the mode bit";
  EXPECT_EQ(f.run(0x109, 0, std::vector<uint8_t>(0x40)), kBadInLen) << "short SET";
  ASSERT_EQ(f.enable_and_init(), kOk);
  EXPECT_EQ(f.run(0x109, 0, in), kBadState) << "caps are fixed after INIT_HCA";
}

// mlx5_core 6.1 (handle_hca_cap_odp) copies ODP `cur` and sets every srq_receive and xrc bit `max`
// has; mlx5_ib reads rc/ud/xrc/dc from `cur`. UC is not offered.
TEST(FwHcaCaps, OdpCapsOfferExplicitOdpOnRcUdXrcDcAndTheDriversSetChangesNothing) {
  constexpr uint16_t kOdp = 2;
  Function f;
  for (const bool cur : {false, true}) {
    ASSERT_EQ(f.query_cap(kOdp, cur ? kCur : kMax), kOk);
    EXPECT_EQ(f.cap(0x10, 31, 26), 0x3fu) << "rc: send receive write read atomic srq_receive";
    EXPECT_EQ(f.cap(0x14, 31, 26), 0u) << "uc";
    EXPECT_EQ(f.cap(0x18, 31, 26), 0x20u) << "ud: send";
    EXPECT_EQ(f.cap(0x1c, 31, 26), 0x2fu) << "xrc: send write read atomic srq_receive";
    EXPECT_EQ(f.cap(0x20, 31, 26), 0x2fu) << "dc: send write read atomic srq_receive";
  }
  auto odp = set_cap_input(f, kOdp);
  EXPECT_EQ(f.run(0x109, kOdp << 1, odp), kOk) << "the driver's SET: cur with max's bits";
  store_be32(&odp[0x10 + 0x20], load_be32(&odp[0x10 + 0x20]) | (1u << 30));  // dc receive: not in max
  EXPECT_EQ(f.run(0x109, kOdp << 1, odp), kBadParam);
  ASSERT_EQ(f.query_cap(kGeneral, kMax), kOk);
  EXPECT_EQ(f.cap(0x44, 24, 24), 1u) << "pg";
  EXPECT_EQ(f.cap(0x40, 24, 24), 0u) << "umr_modify_entity_size_disabled: mlx5_ib loads ODP MRs by UMR";
  // Implicit ODP (mlx5_ib internal_fill_odp_caps): KSM keys, a null MKEY, UMR offsets past 16 bits,
  // indirect UMRs allowed.
  EXPECT_EQ(f.cap(0x20, 23, 23), 1u) << "fixed_buffer_size";
  EXPECT_EQ(f.cap(0x20, 7, 7), 1u) << "umr_extended_translation_offset";
  EXPECT_EQ(f.cap(0x20, 6, 6), 1u) << "null_mkey";
  EXPECT_EQ(f.cap(0x40, 22, 22), 0u) << "umr_indirect_mkey_disabled";
  ASSERT_EQ(f.run(0x203, 0, {}, 0x20), kOk) << "QUERY_SPECIAL_CONTEXTS";
  EXPECT_EQ(f.at(0x10, 31, 0), kNullMkey);
  EXPECT_EQ(f.at(0x08, 31, 0), 0u) << "no dump fill MKEY (dump_fill_mkey = 0)";
}

TEST(FwHcaCaps, QueryRefusesUnknownTypesOtherFunctionsAndShortOutput) {
  Function f;
  for (uint16_t type : {5, 0x21, 0x7fff}) {
    EXPECT_EQ(f.run(0x100, uint16_t(type << 1 | 1), {}, kCapOut), kBadParam) << "type " << type;
    EXPECT_EQ(f.syndrome() >> 16, 0x100u);
  }
  std::vector<uint8_t> other(16);
  other[8] = 0x80;  // other_function
  EXPECT_EQ(f.run(0x100, 1, other, kCapOut), kBadParam);
  store_be16(&other[0x0a], 2);
  other[8] = 0;  // function_id of someone else
  EXPECT_EQ(f.run(0x100, 1, other, kCapOut), kBadParam);
  EXPECT_EQ(f.run(0x100, 1, {}, 0x100), kBadOutLen) << "general caps need 0x110 bytes";
  EXPECT_EQ(f.run(0x100, kFlowTable << 1, {}, 0x110), kBadOutLen) << "flow table caps need 0x1010";
  EXPECT_EQ(f.run_raw(0x100, 1, 8, kCapOut), kBadInLen);
}

// --- ATOMIC caps (type 3) -------------------------------------------------------------------------------

TEST(FwHcaAtomic, CapsOfferStandard8ByteAtomicsOnly) {
  Function f;
  for (uint16_t mode : {kCur, kMax}) {
    ASSERT_EQ(f.query_cap(kAtomic, mode), kOk);
    EXPECT_EQ(f.cap(0x08, 25, 25), 1u) << "supported_atomic_req_8B_endianness_mode_1";
    EXPECT_EQ(f.cap(0x10, 15, 0), 0x3u) << "atomic_operations: compare-swap | fetch-add, no masked";
    EXPECT_EQ(f.cap(0x14, 15, 0), 0x8u) << "atomic_size_qp: 8 bytes";
    EXPECT_EQ(f.cap(0x18, 15, 0), 0x8u) << "atomic_size_dc: 8 bytes, as on QPs";
    EXPECT_EQ(f.at(0x10 + 0x50, 31, 0), 0u) << "no PCI atomics";
    EXPECT_EQ(f.at(0x10 + 0x54, 31, 16), 0u);
  }
  ASSERT_EQ(f.query_cap(kAtomic, kMax), kOk);
  EXPECT_EQ(f.cap(0x08, 31, 30), 1u) << "max: host endianness available";
  ASSERT_EQ(f.query_cap(kAtomic, kCur), kOk);
  EXPECT_EQ(f.cap(0x08, 31, 30), 0u) << "cur powers on big-endian, until the driver's SET";
  EXPECT_EQ(f.run(0x100, kAtomic << 1, {}, 0x100), kBadOutLen) << "the atomic page needs 0x110 bytes";
  EXPECT_EQ(f.run(0x100, kAtomic << 1, {}, 0x110), kOk);
}

TEST(FwHcaAtomic, DriverSetOfHostEndiannessSticks) {
  Function f;
  ASSERT_EQ(f.run(0x104, 0), kOk);
  std::vector<uint8_t> in(0x1010);  // mlx5_core: zeroed page, mode 1
  store_be32(&in[0x10 + 0x08], 1u << 30);
  ASSERT_EQ(f.run(0x109, kAtomic << 1, in), kOk);
  ASSERT_EQ(f.query_cap(kAtomic, kCur), kOk);
  EXPECT_EQ(f.cap(0x08, 31, 30), 1u) << "cur reflects the SET";
  EXPECT_EQ(f.cap(0x10, 15, 0), 0x3u) << "the zeroed ops and sizes in the SET changed nothing";
  EXPECT_EQ(f.cap(0x14, 15, 0), 0x8u);
  EXPECT_EQ(f.context.caps.atomic_req_8B_endianness_mode, 1u);
  ASSERT_EQ(f.query_cap(kAtomic, kMax), kOk);
  EXPECT_EQ(f.cap(0x08, 31, 30), 1u);

  // A copy of cur back with mode 0 is accepted too (big-endian replies).
  in = set_cap_input(f, kAtomic);
  store_be32(&in[0x10 + 0x08], 0);
  ASSERT_EQ(f.run(0x109, kAtomic << 1, in), kOk);
  ASSERT_EQ(f.query_cap(kAtomic, kCur), kOk);
  EXPECT_EQ(f.cap(0x08, 31, 30), 0u);
  // mlx5_core after a DISABLE_HCA / reload: SET again, then INIT_HCA fixes it.
  in.assign(0x1010, 0);
  store_be32(&in[0x10 + 0x08], 1u << 30);
  ASSERT_EQ(f.run(0x109, kAtomic << 1, in), kOk);
  ASSERT_EQ(f.run(0x102, 0, std::vector<uint8_t>(0x20)), kOk);
  EXPECT_EQ(f.run(0x109, kAtomic << 1, in), kBadState) << "caps are fixed after INIT_HCA";
  ASSERT_EQ(f.run(0x105, 0), kOk) << "DISABLE_HCA";
  ASSERT_EQ(f.query_cap(kAtomic, kCur), kOk);
  EXPECT_EQ(f.cap(0x08, 31, 30), 0u) << "back to the power-on mode";
}

TEST(FwHcaAtomic, SetOfUnsupportedOpsSizesOrModesIsRefused) {
  Function f;
  ASSERT_EQ(f.run(0x104, 0), kOk);
  auto with = [&](uint32_t offset, uint32_t value) {
    std::vector<uint8_t> in(0x1010);
    store_be32(&in[0x10 + 0x08], 1u << 30);
    store_be32(&in[0x10 + offset], load_be32(&in[0x10 + offset]) | value);
    return f.run(0x109, kAtomic << 1, in);
  };
  EXPECT_EQ(with(0x10, 0x4), kBadParam) << "masked compare-swap";
  EXPECT_EQ(f.syndrome() >> 16, 0x109u);
  EXPECT_EQ(with(0x10, 0x8), kBadParam) << "masked fetch-add";
  EXPECT_EQ(with(0x14, 0x10), kBadParam) << "16-byte operands on QPs";
  EXPECT_EQ(with(0x18, 0x10), kBadParam) << "16-byte operands on DC";
  EXPECT_EQ(with(0x08, 2u << 30), kBadParam) << "endianness mode 3 (above max)";
  ASSERT_EQ(f.query_cap(kAtomic, kCur), kOk);
  EXPECT_EQ(f.cap(0x08, 31, 30), 0u) << "refused SETs changed nothing";
  EXPECT_EQ(with(0x10, 0x3), kOk) << "naming the offered ops is fine";
  EXPECT_EQ(with(0x14, 0x8), kOk);
  ASSERT_EQ(f.query_cap(kAtomic, kCur), kOk);
  EXPECT_EQ(f.cap(0x08, 31, 30), 1u);
  EXPECT_EQ(f.run(0x109, (kAtomic << 1) | 1, std::vector<uint8_t>(0x1010)), kBadParam) << "SET with the mode bit";
  EXPECT_EQ(f.run(0x109, kAtomic << 1, std::vector<uint8_t>(0x80)), kBadInLen) << "short SET";
}

// --- INIT / TEARDOWN ----------------------------------------------------------------------------------

TEST(FwHcaLifecycle, TeardownLeavesTheFunctionReinitialisable) {
  Function f;
  EXPECT_EQ(f.run(0x102, 0), kBadState) << "INIT_HCA before ENABLE_HCA";
  ASSERT_EQ(f.enable_and_init(), kOk);
  EXPECT_EQ(f.run(0x102, 0), kBadState) << "INIT_HCA twice";
  ASSERT_EQ(f.run(0x103, 0), kOk) << "graceful TEARDOWN_HCA";
  EXPECT_EQ(f.run(0x103, 0), kBadState) << "TEARDOWN_HCA twice";
  ASSERT_EQ(f.run(0x105, 0), kOk) << "DISABLE_HCA";
  // rmmod + modprobe: the whole sequence again.
  run_probe(f, true);
  std::vector<uint8_t> force(16);
  store_be16(&force[0x0a], 1);  // profile FORCE_CLOSE
  EXPECT_EQ(f.run(0x103, 0, force), kOk);
  ASSERT_EQ(f.run(0x102, 0), kOk) << "INIT after a force teardown";
  store_be16(&force[0x0a], 2);  // PREPARE_FAST_TEARDOWN: fast_teardown cap is 0
  EXPECT_EQ(f.run(0x103, 0, force), kBadParam);
  EXPECT_EQ(f.run(0x103, 1), kBadParam) << "bad op_mod";
  EXPECT_EQ(f.run(0x102, 5), kBadParam) << "bad op_mod";
  EXPECT_EQ(f.run_raw(0x103, 0, 4), kBadInLen);
}

TEST(FwHcaLifecycle, SetDriverVersionAccepted) {
  Function f;
  std::vector<uint8_t> in(0x50);
  std::memcpy(&in[0x10], "Linux,mlx5_core,6.1", 19);
  EXPECT_EQ(f.run(0x10d, 0, in), kOk);
  EXPECT_EQ(f.run(0x10d, 3, in), kBadParam);
}

// --- ACCESS_REG ---------------------------------------------------------------------------------------

TEST(FwHcaRegisters, NodeDescPtysPaosPmtu) {
  Function f;
  ASSERT_EQ(f.access_reg(0x6001, false, {}, 64), kOk);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&f.out[0x10])), "hcaemu ConnectX-6 Dx");

  ASSERT_EQ(f.access_reg(0x5004, false, reg_image(0x40, 0, 4), 0x40), kOk) << "PTYS read, proto_mask Ethernet";
  EXPECT_EQ(f.at(0x10, 2, 0), 4u) << "proto_mask echoed";
  EXPECT_EQ(f.at(0x10 + 0x08, 31, 0), 0u) << "ext_eth_proto_capability";
  EXPECT_EQ(f.at(0x10 + 0x0c, 31, 0), 1u << 20) << "eth_proto_capability 100GBASE-CR4";
  EXPECT_EQ(f.at(0x10 + 0x18, 31, 0), 1u << 20) << "eth_proto_admin";
  EXPECT_EQ(f.at(0x10 + 0x24, 31, 0), 1u << 20) << "eth_proto_oper";

  ASSERT_EQ(f.access_reg(0x5006, false, reg_image(0x10), 0x10), kOk);
  EXPECT_EQ(f.at(0x10, 11, 8), 1u) << "PAOS admin up at power-on";
  EXPECT_EQ(f.at(0x10, 3, 0), 1u) << "PAOS oper up";

  ASSERT_EQ(f.access_reg(0x5003, false, reg_image(0x10), 0x10), kOk);
  EXPECT_EQ(f.at(0x10 + 0x04, 31, 16), 9978u) << "PMTU max_mtu";
  EXPECT_EQ(f.at(0x10 + 0x0c, 31, 16), f.at(0x10 + 0x08, 31, 16)) << "oper = admin";

  for (uint16_t reg : {0x5007, 0x5002, 0x5023, 0x5041}) {  // PFCC, PMLP, PPLM, PCMR read
    const uint32_t bytes = PortRegisters::register_bytes(reg);
    ASSERT_NE(bytes, 0u);
    EXPECT_EQ(f.access_reg(reg, false, reg_image(bytes), bytes), kOk) << std::hex << reg;
  }
  ASSERT_EQ(f.access_reg(0x5008, false, reg_image(0x100, 0, 0x12), 0x100), kOk) << "PPCNT phys layer group";
  EXPECT_EQ(f.at(0x10, 5, 0), 0x12u);
  EXPECT_EQ(f.at(0x10 + 0x08, 31, 0), 0u) << "counters read as zero";
  std::vector<uint8_t> mcia(0x40);
  mcia[1] = 0;  // module 0
  ASSERT_EQ(f.access_reg(0x9014, false, mcia, 0x40), kOk);
  EXPECT_NE(f.at(0x10, 7, 0), 0u) << "MCIA: no module EEPROM, status says so";
}

TEST(FwHcaRegisters, PaosDrivesVportState) {
  Function f;
  ASSERT_EQ(f.run(0x750, 0), kOk);
  EXPECT_EQ(f.at(0x0c, 3, 0), 1u) << "vport UP at power-on";
  auto down = reg_image(0x10, 0, 2u << 8);
  store_be32(&down[4], 0x80000000u);  // ase
  ASSERT_EQ(f.access_reg(0x5006, true, down, 0x10), kOk);
  ASSERT_EQ(f.access_reg(0x5006, false, reg_image(0x10), 0x10), kOk);
  EXPECT_EQ(f.at(0x10, 3, 0), 2u) << "oper follows admin down";
  ASSERT_EQ(f.run(0x750, 0), kOk);
  EXPECT_EQ(f.at(0x0c, 3, 0), 0u) << "vport DOWN";
  EXPECT_EQ(f.context.port.state().oper_changes, 1u);
  auto up = reg_image(0x10, 0, 1u << 8);
  store_be32(&up[4], 0x80000000u);
  ASSERT_EQ(f.access_reg(0x5006, true, up, 0x10), kOk);
  ASSERT_EQ(f.run(0x750, 0), kOk);
  EXPECT_EQ(f.at(0x0c, 3, 0), 1u);
  // Vport admin state down hides an up port; follow (2) shows it again.
  std::vector<uint8_t> modify(16);
  store_be32(&modify[0x0c], 0u << 4);
  ASSERT_EQ(f.run(0x751, 0, modify), kOk);
  ASSERT_EQ(f.run(0x750, 0), kOk);
  EXPECT_EQ(f.at(0x0c, 7, 4), 0u);
  EXPECT_EQ(f.at(0x0c, 3, 0), 0u);
  store_be32(&modify[0x0c], 2u << 4);
  ASSERT_EQ(f.run(0x751, 0, modify), kOk);
  ASSERT_EQ(f.run(0x750, 0), kOk);
  EXPECT_EQ(f.at(0x0c, 3, 0), 1u);
}

TEST(FwHcaRegisters, BadRegisterAccessesAreRefused) {
  Function f;
  EXPECT_EQ(f.access_reg(0x1234, false, {}, 0x10), kBadParam) << "unknown register";
  EXPECT_EQ(f.syndrome(), 0x08051234u) << "syndrome names the register";
  EXPECT_EQ(f.access_reg(0x1234, false, {}, 0x10), kBadParam) << "again (logged once)";
  std::vector<uint8_t> in(0x10 + 0x10);
  store_be16(&in[0x0a], 0x5006);
  EXPECT_EQ(f.run(0x805, 2, in, 0x20), kBadParam) << "op_mod neither read nor write";
  EXPECT_EQ(f.access_reg(0x5004, false, reg_image(0x40, 0, 4), 0x20), kBadInLen) << "PTYS image too short";
  in.resize(0x10 + 0x40);
  store_be16(&in[0x0a], 0x5004);
  in[0x10 + 1] = 1;
  in[0x10 + 3] = 4;
  EXPECT_EQ(f.run(0x805, 1, in, 0x20), kBadOutLen) << "PTYS read without room";
  EXPECT_EQ(f.access_reg(0x5004, false, reg_image(0x40, 0, 0), 0x40), kBadParam) << "PTYS proto_mask 0";
  EXPECT_EQ(f.access_reg(0x5006, false, std::vector<uint8_t>(0x10), 0x10), kBadParam) << "local_port 0";
  auto pmtu = reg_image(0x10, 0x08, 9979u << 16);
  EXPECT_EQ(f.access_reg(0x5003, true, pmtu, 0x10), kBadParam) << "admin_mtu above max";
  pmtu = reg_image(0x10, 0x08, 10u << 16);
  EXPECT_EQ(f.access_reg(0x5003, true, pmtu, 0x10), kBadParam) << "admin_mtu below min";
  EXPECT_EQ(f.access_reg(0x5002, true, reg_image(0x40), 0x40), kBadParam) << "PMLP is read-only";
  EXPECT_EQ(f.access_reg(0x5008, false, reg_image(0x100, 0, 0x3f), 0x100), kBadParam) << "PPCNT unknown group";
  auto paos = reg_image(0x10, 0, 7u << 8);
  store_be32(&paos[4], 0x80000000u);
  EXPECT_EQ(f.access_reg(0x5006, true, paos, 0x10), kBadParam) << "PAOS admin_status 7";
  auto ptys = reg_image(0x40, 0, 4);
  store_be32(&ptys[0x18], 1u << 3);  // a speed we do not have
  EXPECT_EQ(f.access_reg(0x5004, true, ptys, 0x40), kBadParam);
  auto pfcc = reg_image(0x20, 0x08, 0x80000000u | (1u << 16));  // pause and PFC together
  EXPECT_EQ(f.access_reg(0x5007, true, pfcc, 0x20), kBadParam);
  EXPECT_EQ(f.run_raw(0x805, 1, 8, 0x20), kBadInLen) << "short ACCESS_REG";
}

// --- vport context --------------------------------------------------------------------------------

TEST(FwHcaVport, MtuRoundTrip) {
  Function f;
  ASSERT_EQ(f.enable_and_init(), kOk);
  const uint32_t hw_mtu = 9000 + 22;
  ASSERT_EQ(f.access_reg(0x5003, true, reg_image(0x10, 0x08, hw_mtu << 16), 0x10), kOk) << "PMTU admin";
  std::vector<uint8_t> modify(0x200);
  store_be32(&modify[0x0c], 1u << 6);             // field_select.mtu
  store_be32(&modify[0x100 + 0x24], hw_mtu);      // nic_vport_context.mtu
  ASSERT_EQ(f.run(0x755, 0, modify), kOk);
  ASSERT_EQ(f.run(0x754, 0, {}, 0x110), kOk);
  EXPECT_EQ(f.at(0x10 + 0x24, 15, 0), hw_mtu) << "vport mtu";
  ASSERT_EQ(f.access_reg(0x5003, false, reg_image(0x10), 0x10), kOk);
  EXPECT_EQ(f.at(0x10 + 0x0c, 31, 16), hw_mtu) << "PMTU oper_mtu";
  store_be32(&modify[0x100 + 0x24], 9979);
  EXPECT_EQ(f.run(0x755, 0, modify), kBadParam) << "vport mtu above max_mtu";
}

TEST(FwHcaVport, ContextGuidsMacRoceEnAndLists) {
  Function pf;
  ASSERT_EQ(pf.run(0x754, 0, {}, 0x110), kOk);
  const uint64_t node_guid = load_be64(&pf.out[0x10 + 0x38]);
  EXPECT_NE(node_guid, 0u);
  EXPECT_NE(load_be64(&pf.out[0x10 + 0x28]), 0u) << "system_image_guid";
  EXPECT_EQ(pf.at(0x10 + 0xf4, 15, 0), 0x02c9u) << "permanent_address 47..32";
  EXPECT_EQ(pf.at(0x10 + 0xf8, 31, 0), 0x00000000u) << "permanent_address 31..0 (vhca 0)";
  EXPECT_EQ(pf.at(0x10, 0, 0), 0u) << "roce_en off at power-on";

  std::vector<uint8_t> roce(0x200);
  store_be32(&roce[0x0c], 1u << 1);
  store_be32(&roce[0x100], 1);
  ASSERT_EQ(pf.run(0x755, 0, roce), kOk) << "mlx5_nic_vport_enable_roce";
  ASSERT_EQ(pf.run(0x754, 0, {}, 0x110), kOk);
  EXPECT_EQ(pf.at(0x10, 0, 0), 1u);

  // UC list of two addresses, MC list with broadcast; read back the UC list.
  std::vector<uint8_t> uc(0x200 + 2 * 8);
  store_be32(&uc[0x0c], 1u << 2);
  store_be32(&uc[0x100 + 0xf0], (0u << 24) | 2);
  store_be32(&uc[0x200 + 0], 0x02c9);
  store_be32(&uc[0x200 + 4], 0x00000000);
  store_be32(&uc[0x208 + 0], 0x0211);
  store_be32(&uc[0x208 + 4], 0x22334455);
  ASSERT_EQ(pf.run(0x755, 0, uc), kOk);
  std::vector<uint8_t> mc(0x200 + 8);
  store_be32(&mc[0x0c], 1u << 2);
  store_be32(&mc[0x100 + 0xf0], (1u << 24) | 1);
  store_be32(&mc[0x200 + 0], 0xffff);
  store_be32(&mc[0x200 + 4], 0xffffffff);
  ASSERT_EQ(pf.run(0x755, 0, mc), kOk);
  EXPECT_EQ(pf.context.vport.uc_addresses.size(), 2u);
  EXPECT_EQ(pf.context.vport.mc_addresses.size(), 1u);
  std::vector<uint8_t> q(16);
  store_be32(&q[0x0c], 0u << 24);
  ASSERT_EQ(pf.run(0x754, 0, q, 0x110 + 4096 * 8), kOk);
  EXPECT_EQ(pf.at(0x10 + 0xf0, 11, 0), 2u) << "allowed_list_size";
  EXPECT_EQ(pf.at(0x110 + 8 + 4, 31, 0), 0x22334455u) << "second UC address";
  uc[0x200 + 1] = 0x01;  // a group address in the UC list
  store_be32(&uc[0x200], 0x0100);
  EXPECT_EQ(pf.run(0x755, 0, uc), kBadParam);
  store_be32(&uc[0x100 + 0xf0], 3);
  uc.resize(0x200 + 8);  // claims 3 entries, carries 1
  EXPECT_EQ(pf.run(0x755, 0, uc), kBadInLen);

  // Permanent address: PF may set its own, a VF may not.
  std::vector<uint8_t> perm(0x200);
  store_be32(&perm[0x0c], 1u << 3);
  store_be32(&perm[0x100 + 0xf4], 0x0200);
  store_be32(&perm[0x100 + 0xf8], 0xaabbccdd);
  ASSERT_EQ(pf.run(0x755, 0, perm), kOk);
  ASSERT_EQ(pf.run(0x754, 0, {}, 0x110), kOk);
  EXPECT_EQ(pf.at(0x10 + 0xf8, 31, 0), 0xaabbccddu);
  Function vf({.is_vf = true, .vhca_id = 5});
  EXPECT_EQ(vf.run(0x755, 0, perm), kBadParam);
  ASSERT_EQ(vf.run(0x754, 0, {}, 0x110), kOk);
  EXPECT_EQ(vf.at(0x10 + 0xf8, 31, 0), 0x00000005u) << "VF MAC from its identity";
  EXPECT_NE(load_be64(&vf.out[0x10 + 0x38]), node_guid) << "each function its own node GUID";
}

// Issue 14: a VF's driver (a macvlan in the guest) may not claim another function's unicast
// address; the switch would deliver that function's traffic to it. Its own addresses stay fine.
TEST(FwHcaVport, UnicastAddressOfAnotherFunctionIsRefused) {
  Function vf({.is_vf = true, .vhca_id = 2});
  const std::array<uint8_t, 6> victim{0x02, 0xc9, 0x00, 0x00, 0x00, 0x01};
  vf.context.unicast_owned_elsewhere = [&](const std::array<uint8_t, 6>& mac) { return mac == victim; };
  auto uc_list = [](std::initializer_list<std::pair<uint32_t, uint32_t>> macs) {
    std::vector<uint8_t> in(0x200 + 8 * macs.size());
    store_be32(&in[0x0c], 1u << 2);
    store_be32(&in[0x100 + 0xf0], (0u << 24) | uint32_t(macs.size()));
    size_t at = 0x200;
    for (auto [hi, lo] : macs) {
      store_be32(&in[at], hi);
      store_be32(&in[at + 4], lo);
      at += 8;
    }
    return in;
  };
  ASSERT_EQ(vf.run(0x755, 0, uc_list({{0x02c9, 0x00000002}, {0x0211, 0x22334455}})), kOk) << "its own and a new one";
  EXPECT_EQ(vf.run(0x755, 0, uc_list({{0x02c9, 0x00000002}, {0x02c9, 0x00000001}})), kBadParam) << "the PF's";
  EXPECT_EQ(vf.context.vport.uc_addresses.size(), 2u) << "the refused list changed nothing";
  EXPECT_EQ(vf.context.vport.uc_addresses[1][5], 0x55);
  EXPECT_EQ(vf.context.unicast_steals_refused, 1u);
}

TEST(FwHcaVport, OtherVportAndUnsupportedFieldsAreRefused) {
  for (bool is_vf : {false, true}) {
    Function f({.is_vf = is_vf, .vhca_id = uint16_t(is_vf ? 1 : 0)});
    std::vector<uint8_t> other(0x200);
    other[8] = 0x80;  // other_vport
    store_be16(&other[0x0a], 1);
    for (uint16_t op : {0x750, 0x751, 0x754, 0x755, 0x762, 0x764, 0x765}) {
      EXPECT_EQ(f.run(op, 0, other, 0x1000), kBadParam) << std::hex << op << (is_vf ? " from VF" : " from PF");
      EXPECT_EQ(f.syndrome(), (uint32_t(op) << 16) | 1u);
    }
    EXPECT_EQ(f.run(0x750, 1, {}, 16), kBadParam) << "eswitch vport state: no eswitch";
    EXPECT_EQ(f.run(0x750, 2, {}, 16), is_vf ? kBadParam : kOk) << "uplink state: PF only";
    std::vector<uint8_t> bad_admin(16);
    store_be32(&bad_admin[0x0c], 5u << 4);
    EXPECT_EQ(f.run(0x751, 0, bad_admin), kBadParam);
    for (uint32_t sel : {1u << 8, 1u << 9, 1u << 13, 1u << 0, 1u << 20}) {
      std::vector<uint8_t> m(0x200);
      store_be32(&m[0x0c], sel);
      EXPECT_EQ(f.run(0x755, 0, m), kBadParam) << "field_select " << std::hex << sel;
    }
    EXPECT_EQ(f.run(0x755, 0, std::vector<uint8_t>(0x100)), kBadInLen) << "short MODIFY";
    EXPECT_EQ(f.run(0x754, 0, {}, 0x100), kBadOutLen) << "short QUERY output";
    std::vector<uint8_t> list_type(16);
    store_be32(&list_type[0x0c], 5u << 24);
    EXPECT_EQ(f.run(0x754, 0, list_type, 0x110), kBadParam) << "allowed_list_type 5";
    EXPECT_EQ(f.run(0x754, 1, {}, 0x110), kBadParam) << "bad op_mod";
    EXPECT_EQ(f.run_raw(0x750, 0, 4), kBadInLen);
  }
}

// Issue 16: mlx5_core turns the vport's local loopback off at load, mlx5_ib back on for a second
// user context; the switches are kept per direction and read back.
TEST(FwHcaVport, LocalLoopbackSwitchesAreKeptAndQueried) {
  Function f;
  EXPECT_FALSE(f.context.vport.disable_uc_local_lb) << "on after reset";
  auto modify = [&](uint32_t select, uint32_t bits) {
    std::vector<uint8_t> m(0x200);
    store_be32(&m[0x0c], select);
    store_be32(&m[0x100], bits);  // nic_vport_context dword 0: bit 2 mc, bit 1 uc
    return f.run(0x755, 0, m);
  };
  ASSERT_EQ(modify((1u << 10) | (1u << 11), 0x6), kOk);
  EXPECT_TRUE(f.context.vport.disable_uc_local_lb);
  EXPECT_TRUE(f.context.vport.disable_mc_local_lb);
  ASSERT_EQ(modify(1u << 11, 0x0), kOk) << "unicast only";
  EXPECT_FALSE(f.context.vport.disable_uc_local_lb);
  EXPECT_TRUE(f.context.vport.disable_mc_local_lb) << "not selected: kept";
  ASSERT_EQ(f.run(0x754, 0, {}, 0x110), kOk);
  EXPECT_EQ(f.at(0x10, 2, 1), 0x2u) << "QUERY: disable_mc_local_lb 1, disable_uc_local_lb 0";
}

TEST(FwHcaVport, HcaVportContextGidsAndPkeys) {
  Function f;
  ASSERT_EQ(f.run(0x762, 0, {}, 0x110), kOk);
  EXPECT_EQ(f.at(0x10 + 0x20, 7, 4), 4u) << "port_state ACTIVE";
  EXPECT_EQ(f.at(0x10 + 0x20, 3, 0), 4u) << "vport_state ACTIVE";
  EXPECT_NE(load_be64(&f.out[0x10 + 0x38]), 0u) << "node_guid";
  std::vector<uint8_t> all(16);
  store_be16(&all[0x0e], 0xffff);
  ASSERT_EQ(f.run(0x765, 0, all, 0x10 + 128 * 4), kOk);
  EXPECT_EQ(f.at(0x10, 15, 0), 0xffffu) << "default P_Key";
  EXPECT_EQ(f.run(0x765, 0, all, 0x10 + 4), kBadOutLen);
  std::vector<uint8_t> idx(16);
  store_be16(&idx[0x0e], 128);
  EXPECT_EQ(f.run(0x765, 0, idx, 0x14), kBadParam) << "pkey index out of range";
  store_be16(&idx[0x0e], 256);
  EXPECT_EQ(f.run(0x764, 0, idx, 0x20), kBadParam) << "gid index out of range";
  store_be16(&idx[0x0e], 0);
  ASSERT_EQ(f.run(0x764, 0, idx, 0x20), kOk);
  EXPECT_EQ(f.at(0x0c, 31, 16), 1u) << "gids_num";
  store_be32(&idx[0x08], 2u << 16);  // port_num 2
  EXPECT_EQ(f.run(0x764, 0, idx, 0x20), kBadParam);
}

// --- RoCE addresses -----------------------------------------------------------------------------------

std::vector<uint8_t> roce_address(uint16_t index, uint8_t last_gid_byte, uint32_t version, uint32_t l3) {
  std::vector<uint8_t> in(0x30);
  store_be32(&in[0x08], uint32_t(index) << 16);
  if (last_gid_byte != 0) {
    in[0x10] = 0xfe;
    in[0x11] = 0x80;
    in[0x1f] = last_gid_byte;
    store_be32(&in[0x20], (1u << 28) | (100u << 16) | 0x02c9);  // vlan 100, mac 02:c9:...
    store_be32(&in[0x24], 0x00000007);
  }
  store_be32(&in[0x28], (l3 << 8) | version);
  return in;
}

TEST(FwHcaRoce, SetQueryAndDeleteGids) {
  Function f;
  ASSERT_EQ(f.run(0x761, 0, roce_address(0, 0x11, 0, 1)), kOk) << "GID 0, RoCEv1, IPv6";
  ASSERT_EQ(f.run(0x761, 0, roce_address(1, 0x11, 2, 1)), kOk) << "GID 1, RoCEv2";
  std::vector<uint8_t> q(16);
  store_be32(&q[0x08], 1u << 16);
  ASSERT_EQ(f.run(0x760, 0, q, 0x30), kOk);
  EXPECT_EQ(f.out[0x10], 0xfe);
  EXPECT_EQ(f.out[0x1f], 0x11);
  EXPECT_EQ(f.at(0x20, 28, 28), 1u) << "vlan_valid";
  EXPECT_EQ(f.at(0x20, 27, 16), 100u) << "vlan_id";
  EXPECT_EQ(f.at(0x20, 15, 0), 0x02c9u);
  EXPECT_EQ(f.at(0x24, 31, 0), 7u);
  EXPECT_EQ(f.at(0x28, 11, 8), 1u) << "l3_type IPv6";
  EXPECT_EQ(f.at(0x28, 7, 0), 2u) << "roce_version 2";
  EXPECT_TRUE(f.context.vport.roce_addresses[1].in_use());
  // Delete: an all-zero address.
  ASSERT_EQ(f.run(0x761, 0, roce_address(1, 0, 0, 0)), kOk);
  EXPECT_FALSE(f.context.vport.roce_addresses[1].in_use());
  ASSERT_EQ(f.run(0x760, 0, q, 0x30), kOk);
  EXPECT_EQ(f.out[0x1f], 0);
  EXPECT_TRUE(f.context.vport.roce_addresses[0].in_use()) << "other entries untouched";
  // GID visible through QUERY_HCA_VPORT_GID as well.
  std::vector<uint8_t> g(16);
  ASSERT_EQ(f.run(0x764, 0, g, 0x20), kOk);
  EXPECT_EQ(f.out[0x10 + 15], 0x11);
}

TEST(FwHcaRoce, BadRoceAddressesAreRefused) {
  Function f;
  EXPECT_EQ(f.run(0x761, 0, roce_address(256, 0x11, 0, 1)), kBadParam) << "index out of range";
  EXPECT_EQ(f.run(0x761, 0, roce_address(3, 0x11, 1, 1)), kBadParam) << "roce_version 1";
  EXPECT_EQ(f.run(0x761, 0, roce_address(3, 0x11, 0, 4)), kBadParam) << "l3_type 4";
  auto port = roce_address(3, 0x11, 0, 1);
  port[0x0b] = 2;  // vhca_port_num 2
  EXPECT_EQ(f.run(0x761, 0, port), kBadParam);
  EXPECT_EQ(f.run(0x761, 0, std::vector<uint8_t>(0x20)), kBadInLen) << "short SET_ROCE_ADDRESS";
  EXPECT_EQ(f.run(0x761, 1, roce_address(3, 0x11, 0, 1)), kBadParam) << "bad op_mod";
  std::vector<uint8_t> q(16);
  store_be32(&q[0x08], 300u << 16);
  EXPECT_EQ(f.run(0x760, 0, q, 0x30), kBadParam) << "query index out of range";
  EXPECT_EQ(f.run(0x760, 0, {}, 0x20), kBadOutLen);
  EXPECT_FALSE(f.context.vport.roce_addresses[3].in_use());
}

// --- reset ----------------------------------------------------------------------------------------------

TEST(FwHcaReset, DisableHcaBringsCapsRegistersAndVportBackToDefaults) {
  Function f;
  f.run(0x104, 0);
  auto in = set_cap_input(f, kGeneral);
  store_be32(&in[0x10 + 0x10], (load_be32(&in[0x10 + 0x10]) & ~0x1fu) | 10);
  ASSERT_EQ(f.run(0x109, 0, in), kOk);
  auto down = reg_image(0x10, 0, 2u << 8);
  store_be32(&down[4], 0x80000000u);
  ASSERT_EQ(f.access_reg(0x5006, true, down, 0x10), kOk);
  ASSERT_EQ(f.access_reg(0x5003, true, reg_image(0x10, 0x08, 4000u << 16), 0x10), kOk);
  std::vector<uint8_t> nd(64, 'x');
  ASSERT_EQ(f.access_reg(0x6001, true, nd, 64), kOk);
  ASSERT_EQ(f.run(0x761, 0, roce_address(0, 0x11, 2, 1)), kOk);
  std::vector<uint8_t> roce(0x200);
  store_be32(&roce[0x0c], (1u << 1) | (1u << 6));
  store_be32(&roce[0x100], 1);
  store_be32(&roce[0x100 + 0x24], 4000);
  ASSERT_EQ(f.run(0x755, 0, roce), kOk);

  ASSERT_EQ(f.run(0x105, 0), kOk) << "DISABLE_HCA";
  ASSERT_EQ(f.query_cap(kGeneral, kCur), kOk);
  EXPECT_EQ(f.cap(0x10, 4, 0), 17u) << "cur back to max";
  ASSERT_EQ(f.access_reg(0x5006, false, reg_image(0x10), 0x10), kOk);
  EXPECT_EQ(f.at(0x10, 11, 8), 1u) << "PAOS admin back up";
  ASSERT_EQ(f.access_reg(0x5003, false, reg_image(0x10), 0x10), kOk);
  EXPECT_EQ(f.at(0x10 + 0x08, 31, 16), 1522u) << "PMTU admin back to default";
  ASSERT_EQ(f.access_reg(0x6001, false, {}, 64), kOk);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&f.out[0x10])), "hcaemu ConnectX-6 Dx");
  ASSERT_EQ(f.run(0x754, 0, {}, 0x110), kOk);
  EXPECT_EQ(f.at(0x10, 0, 0), 0u) << "roce_en off";
  EXPECT_EQ(f.at(0x10 + 0x24, 15, 0), 1522u) << "vport mtu default";
  EXPECT_FALSE(f.context.vport.roce_addresses[0].in_use()) << "GID table empty";

  // The same through Firmware::reset (FLR).
  ASSERT_EQ(f.access_reg(0x5006, true, down, 0x10), kOk);
  f.fw.reset();
  EXPECT_TRUE(f.context.port.state().up());
}

// --- the PF as eswitch manager (firmware/eswitch_manager.cpp) ------------------------------------------

// mlx5_core builds its eswitch in legacy mode when both bits are set (devlink dev eswitch show);
// 6.1 oopses on a manager without vport_group_manager, so they come together, on the PF only. The
// eswitch caps it then queries offer no FDB: no software-owned FDB, encap mode none, no metadata.
TEST(FwHcaEswitch, ThePfManagesTheEswitchWithoutAnFdbAndVfsDoNot) {
  Function pf;
  Function vf({.is_vf = true, .vhca_id = 1});
  constexpr uint16_t kEswitchFlowTable = 8, kEswitch = 9;
  for (uint16_t type : {kEswitchFlowTable, kEswitch}) {
    for (uint16_t mode : {kCur, kMax}) {
      ASSERT_EQ(pf.query_cap(type, mode), kOk) << "type " << type;
      EXPECT_TRUE(std::all_of(pf.out.begin() + 0x10, pf.out.end(), [](uint8_t b) { return b == 0; }))
          << "type " << type << ": nothing offered";
      EXPECT_EQ(vf.query_cap(type, mode), kBadParam) << "a VF has no eswitch caps, type " << type;
    }
  }
  ASSERT_EQ(vf.query_cap(kGeneral, kMax), kOk);
  EXPECT_EQ(vf.cap(0x34, 31, 31), 0u) << "vport_group_manager";
  EXPECT_EQ(vf.cap(0x34, 24, 24), 0u) << "eswitch_manager";
  EXPECT_EQ(vf.cap(0x90, 28, 24), 0u) << "log_max_l2_table";
  ASSERT_EQ(pf.query_cap(kGeneral, kMax), kOk);
  EXPECT_EQ(pf.cap(0x4c, 4, 4), 0u) << "lag_master: no LAG";

  // rdma-core's DR asks a manager for its own vport's eswitch context before building a domain.
  ASSERT_EQ(pf.run(0x752, 0, {}, 0x110), kOk) << "QUERY_ESW_VPORT_CONTEXT own vport";
  EXPECT_EQ(pf.at(0x10 + 0xf0, 31, 0), 0u) << "no sw_steering_vport_icm_address_rx";
  std::vector<uint8_t> other(16);
  other[8] = 0x80;  // other_vport
  store_be16(&other[0x0a], 1);
  EXPECT_EQ(pf.run(0x752, 0, other, 0x110), kBadParam) << "a VF's vport is the host admin's";
  EXPECT_EQ(pf.run(0x752, 1, {}, 0x110), kBadParam) << "op_mod";
  EXPECT_EQ(pf.run(0x752, 0, {}, 0x100), kBadOutLen);
  EXPECT_EQ(vf.run(0x752, 0, {}, 0x110), kBadParam) << "a VF is no manager";
}

// The MPFS L2 table: mlx5_core claims each unicast address of its netdev at the lowest free index.
TEST(FwHcaEswitch, TheL2TableKeepsUnicastAddressesByIndex) {
  Function pf;
  auto entry = [](uint32_t index, std::array<uint8_t, 6> mac, int vlan = -1) {
    std::vector<uint8_t> in(0x40);
    store_be32(&in[0x14], index);
    if (vlan >= 0) store_be32(&in[0x1c], 1u << 12 | uint32_t(vlan));
    std::copy(mac.begin(), mac.end(), in.begin() + 0x22);
    return in;
  };
  const std::array<uint8_t, 6> mac{0x02, 0xc9, 0, 0, 0, 0}, other{0x02, 0xc9, 0, 0, 0, 7};
  ASSERT_EQ(pf.run(0x829, 0, entry(0, mac)), kOk) << "SET_L2_TABLE_ENTRY";
  ASSERT_EQ(pf.run(0x82a, 0, entry(0, {}), 0x40), kOk) << "QUERY_L2_TABLE_ENTRY";
  EXPECT_TRUE(std::equal(mac.begin(), mac.end(), pf.out.begin() + 0x22));
  EXPECT_EQ(pf.at(0x1c, 12, 12), 0u) << "no VLAN";
  EXPECT_EQ(pf.run(0x829, 0, entry(1, mac)), kBadParam) << "the same address at a second index";
  EXPECT_EQ(pf.syndrome(), 0x08290017u);
  ASSERT_EQ(pf.run(0x829, 0, entry(1, mac, 5)), kOk) << "the same address on a VLAN is another entry";
  ASSERT_EQ(pf.run(0x82a, 0, entry(1, {}), 0x40), kOk);
  EXPECT_EQ(pf.at(0x1c, 12, 0), 1u << 12 | 5u);
  ASSERT_EQ(pf.run(0x829, 0, entry(31, other)), kOk) << "the last of 32";
  EXPECT_EQ(pf.run(0x829, 0, entry(32, other)), uint8_t(CommandStatus::kBadIndex)) << "past the table";
  EXPECT_EQ(pf.run(0x829, 0, entry(2, {0x01, 0, 0x5e, 0, 0, 1})), kBadParam) << "multicast";
  std::vector<uint8_t> silent = entry(2, other);
  store_be32(&silent[0x1c], 1u << 15);
  EXPECT_EQ(pf.run(0x829, 0, silent), kBadParam) << "silent mode (multi-host) is not offered";
  EXPECT_EQ(pf.run(0x829, 1, entry(2, other)), kBadParam) << "op_mod";
  EXPECT_EQ(pf.run(0x829, 0, std::vector<uint8_t>(0x20)), kBadInLen);
  ASSERT_EQ(pf.run(0x82b, 0, entry(0, {})), kOk) << "DELETE_L2_TABLE_ENTRY";
  EXPECT_EQ(pf.run(0x82b, 0, entry(0, {})), uint8_t(CommandStatus::kBadResource)) << "deleted twice";
  EXPECT_EQ(pf.run(0x82a, 0, entry(0, {}), 0x40), uint8_t(CommandStatus::kBadResource)) << "empty entry";
  ASSERT_EQ(pf.run(0x829, 0, entry(0, mac)), kOk) << "its index is free again";
  EXPECT_EQ(pf.run(0x829, 0, entry(0, mac, 7)), kOk) << "SET over an index replaces it";

  Function vf({.is_vf = true, .vhca_id = 1});
  EXPECT_EQ(vf.run(0x829, 0, entry(0, other)), kBadParam) << "a VF has no L2 table";
  std::vector<uint8_t> user = entry(0, mac);
  store_be16(&user[2], 1);
  EXPECT_EQ(pf.run(0x82b, 0, user), kBadParam) << "a user context may not touch it";
  ASSERT_EQ(pf.run(0x105, 0), kOk) << "DISABLE_HCA";
  ASSERT_EQ(pf.run(0x104, 0), kOk) << "ENABLE_HCA";
  EXPECT_EQ(pf.run(0x82a, 0, entry(0, {}), 0x40), uint8_t(CommandStatus::kBadResource)) << "reset empties it";
}

TEST(FwHcaIdentity, DefaultMacFollowsVhcaId) {
  FunctionIdentity vf{.is_vf = true, .vhca_id = 0x0102};
  EXPECT_EQ(vf.mac, (std::array<uint8_t, 6>{0x02, 0xc9, 0x00, 0x00, 0x01, 0x02}));
  EXPECT_EQ(vf.mac[0] & 0x03, 0x02) << "locally administered unicast";
}

}  // namespace
}  // namespace hcaemu::model
