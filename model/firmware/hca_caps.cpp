// Capability pages (mlx5-device-bringup.md section 4.3; layouts from mlx5-layouts.md
// `cmd_hca_cap`, `per_protocol_networking_offload_caps`, `atomic_caps`, `roce_cap`,
// `flow_table_nic_cap`).
// Every field we report non-zero, and every "must be 0" of section 4.3, is a named Field next to
// its layouts-doc name; the pages are tables of (field, value).
#include "model/firmware/hca_caps.h"
#include "model/steering/modify_header.h"
#include "model/steering/terminals.h"

#include <algorithm>
#include <bit>

#include "model/firmware/init_segment.h"
#include "model/function_context.h"

namespace hcaemu::model {
namespace {

struct CapValue {
  Field field;
  uint32_t value;
};

// --- cmd_hca_cap (type 0), offsets inside the capability -------------------------------------
namespace gen {
constexpr Field kHcaCap2{0x04, 31, 31};                       // hca_cap_2
constexpr Field kVhcaId{0x04, 15, 0};                         // vhca_id
constexpr Field kLogMaxSrqSz{0x10, 31, 24};                   // log_max_srq_sz
constexpr Field kLogMaxQpSz{0x10, 23, 16};                    // log_max_qp_sz
constexpr Field kLogMaxQp{0x10, 4, 0};                        // log_max_qp
constexpr Field kLogMaxSrq{0x14, 20, 16};                     // log_max_srq
constexpr Field kLogMaxCqSz{0x18, 23, 16};                    // log_max_cq_sz
constexpr Field kLogMaxCq{0x18, 4, 0};                        // log_max_cq
constexpr Field kLogMaxEqSz{0x1c, 31, 24};                    // log_max_eq_sz
constexpr Field kLogMaxMkey{0x1c, 21, 16};                    // log_max_mkey
constexpr Field kFastTeardown{0x1c, 4, 4};                    // fast_teardown
constexpr Field kLogMaxEq{0x1c, 3, 0};                        // log_max_eq
constexpr Field kLogMaxMrwSz{0x20, 22, 16};                   // log_max_mrw_sz
constexpr Field kForceTeardown{0x20, 15, 15};                 // force_teardown
constexpr Field kFixedBufferSize{0x20, 23, 23};               // fixed_buffer_size (KSM)
constexpr Field kUmrExtendedTranslationOffset{0x20, 7, 7};    // umr_extended_translation_offset
constexpr Field kNullMkey{0x20, 6, 6};                        // null_mkey (QUERY_SPECIAL_CONTEXTS)
constexpr Field kLogMaxKlmListSize{0x20, 5, 0};               // log_max_klm_list_size
constexpr Field kReleaseAllPages{0x28, 26, 26};               // release_all_pages
constexpr Field kLogMaxRaReqQp{0x28, 21, 16};                 // log_max_ra_req_qp
constexpr Field kRts2RtsQpUdpSport{0x28, 14, 14};             // rts2rts_qp_udp_sport
constexpr Field kLogMaxRaResQp{0x28, 5, 0};                   // log_max_ra_res_qp
constexpr Field kCcQueryAllowed{0x2c, 30, 30};                // cc_query_allowed
constexpr Field kCacheLine128Byte{0x2c, 27, 27};              // cache_line_128byte
constexpr Field kGidTableSize{0x2c, 15, 0};                   // gid_table_size
constexpr Field kVportCounters{0x30, 30, 30};                 // vport_counters
constexpr Field kDebug{0x30, 28, 28};                         // debug
constexpr Field kOutOfSeqCnt{0x30, 31, 31};                   // out_of_seq_cnt
constexpr Field kRetransmissionQCounters{0x30, 29, 29};       // retransmission_q_counters
constexpr Field kMaxQpCnt{0x30, 25, 16};                      // max_qp_cnt
constexpr Field kPkeyTableSize{0x30, 15, 0};                  // pkey_table_size
constexpr Field kVportGroupManager{0x34, 31, 31};             // vport_group_manager
constexpr Field kNicFlowTable{0x34, 25, 25};                  // nic_flow_table
constexpr Field kEswitchManager{0x34, 24, 24};                // eswitch_manager
constexpr Field kDeviceMemory{0x34, 23, 23};                  // device_memory: a DEV_MEM cap page
constexpr Field kMcamReg{0x34, 22, 22};                       // mcam_reg
constexpr Field kPcamReg{0x34, 21, 21};                       // pcam_reg
constexpr Field kLocalCaAckDelay{0x34, 20, 16};               // local_ca_ack_delay
constexpr Field kEnhancedErrorQCounters{0x34, 14, 14};        // enhanced_error_q_counters
constexpr Field kPortType{0x34, 9, 8};                        // port_type
constexpr Field kNumPorts{0x34, 7, 0};                        // num_ports
constexpr Field kLogMaxMsg{0x38, 28, 24};                     // log_max_msg
constexpr Field kCqeVersion{0x3c, 3, 0};                      // cqe_version
constexpr Field kStridingRq{0x40, 30, 30};                    // striding_rq
constexpr Field kUmrModifyEntitySizeDisabled{0x40, 24, 24};   // umr_modify_entity_size_disabled
constexpr Field kCmdifChecksum{0x40, 15, 14};                 // cmdif_checksum
constexpr Field kDrainSigerr{0x40, 16, 16};                   // drain_sigerr: signature pipelining
constexpr Field kSigerrCqe{0x40, 13, 13};                     // sigerr_cqe
constexpr Field kSigCrc32c{0x28, 23, 23};                     // sig_crc32c
constexpr Field kSho{0x40, 8, 8};                             // sho: signature handover (signature MKEYs)
constexpr Field kSigerrDomainAndSigType{0x90, 31, 31};        // sigerr_domain_and_sig_type (SIGERR CQE)
constexpr Field kDct{0x40, 5, 5};                             // dct
constexpr Field kQos{0x40, 4, 4};                             // qos
constexpr Field kEthNetOffloads{0x40, 3, 3};                  // eth_net_offloads
constexpr Field kRoce{0x40, 2, 2};                            // roce
constexpr Field kAtomic{0x40, 1, 1};                          // atomic
constexpr Field kCqResize{0x44, 30, 30};                      // cq_resize
constexpr Field kCqModeration{0x44, 29, 29};                  // cq_moderation
constexpr Field kBlockLbMc{0x44, 23, 23};                     // block_lb_mc
constexpr Field kImaicl{0x44, 14, 14};                        // imaicl: memory windows
constexpr Field kPg{0x44, 24, 24};                            // pg
constexpr Field kSetDethSqpn{0x44, 7, 7};                     // set_deth_sqpn
constexpr Field kXrc{0x44, 3, 3};                             // xrc
constexpr Field kUd{0x44, 2, 2};                              // ud
constexpr Field kUc{0x44, 1, 1};                              // uc
constexpr Field kRc{0x44, 0, 0};                              // rc
constexpr Field kUar4k{0x48, 31, 31};                         // uar_4k
constexpr Field kLogPgSz{0x48, 7, 0};                         // log_pg_sz
constexpr Field kBf{0x4c, 31, 31};                            // bf
constexpr Field kDriverVersion{0x4c, 30, 30};                 // driver_version
constexpr Field kMkeyByName{0x4c, 25, 25};                    // mkey_by_name
constexpr Field kLogBfRegSize{0x4c, 20, 16};                  // log_bf_reg_size
constexpr Field kLagMaster{0x4c, 4, 4};                       // lag_master
constexpr Field kMaxWqeSzSq{0x50, 15, 0};                     // max_wqe_sz_sq
constexpr Field kMaxWqeSzRq{0x54, 15, 0};                     // max_wqe_sz_rq
constexpr Field kMaxQpMcg{0x5c, 24, 0};                       // max_qp_mcg
constexpr Field kLogMaxMcg{0x60, 7, 0};                       // log_max_mcg
constexpr Field kLogMaxTransportDomain{0x64, 28, 24};         // log_max_transport_domain
constexpr Field kLogMaxPd{0x64, 20, 16};                      // log_max_pd
constexpr Field kLogMaxXrcd{0x64, 4, 0};                      // log_max_xrcd
constexpr Field kLogMaxRq{0x6c, 28, 24};                      // log_max_rq
constexpr Field kLogMaxSq{0x6c, 20, 16};                      // log_max_sq
constexpr Field kLogMaxTir{0x6c, 12, 8};                      // log_max_tir
constexpr Field kLogMaxTis{0x6c, 4, 0};                       // log_max_tis
constexpr Field kLogMaxRmp{0x70, 28, 24};                     // log_max_rmp
constexpr Field kLogMaxRqt{0x70, 20, 16};                     // log_max_rqt
constexpr Field kLogMaxRqtSize{0x70, 12, 8};                  // log_max_rqt_size
constexpr Field kLogMaxWqSz{0x78, 4, 0};                      // log_max_wq_sz
constexpr Field kDisableLocalLbUc{0x7c, 30, 30};              // disable_local_lb_uc
constexpr Field kDisableLocalLbMc{0x7c, 29, 29};              // disable_local_lb_mc
constexpr Field kLogMaxVlanList{0x7c, 20, 16};                // log_max_vlan_list
constexpr Field kLogMaxCurrentMcList{0x7c, 12, 8};            // log_max_current_mc_list
constexpr Field kLogMaxCurrentUcList{0x7c, 4, 0};             // log_max_current_uc_list
constexpr Field kQpcExtension{0x24, 29, 29};                  // qpc_extension (QP commands' qpc_data_ext)
constexpr Field kLogMaxRaReqDc{0x24, 21, 16};                 // log_max_ra_req_dc
constexpr Field kLogMaxRaResDc{0x24, 5, 0};                   // log_max_ra_res_dc
constexpr Field kGeneralObjTypesHigh{0x80, 31, 0};            // general_obj_types, bits 63..32
constexpr Field kGeneralObjTypesLow{0x84, 31, 0};             // bits 31..0
constexpr Field kLogMaxUctx{0x8c, 28, 24};                    // log_max_uctx
constexpr Field kMaxNumEqs{0x8c, 15, 0};                      // max_num_eqs
constexpr Field kLogMaxL2Table{0x90, 28, 24};                 // log_max_l2_table (MPFS)
constexpr Field kLogUarPageSz{0x90, 15, 0};                   // log_uar_page_sz
constexpr Field kDeviceFrequencyKhz{0x9c, 31, 0};             // device_frequency_khz
constexpr Field kLogMaxDciStreamChannels{0xb0, 20, 16};       // log_max_dci_stream_channels
constexpr Field kLogMaxDciErroredStreams{0xb0, 12, 8};        // log_max_dci_errored_streams
constexpr Field kCqe128Always{0xb4, 2, 2};                    // cqe_128_always (CQEs padded to 128 bytes)
constexpr Field kCqeCompression128{0xb4, 1, 1};               // cqe_compression_128
constexpr Field kCqeCompression{0xb4, 0, 0};                  // cqe_compression
constexpr Field kMiniCqeRespStrideIndex{0xb4, 3, 3};          // mini_cqe_resp_stride_index
constexpr Field kCqeCompressionMaxNum{0xb8, 15, 0};           // cqe_compression_max_num
constexpr Field kTagMatching{0xbc, 15, 15};                   // tag_matching
constexpr Field kRndvOffloadRc{0xbc, 14, 14};                 // rndv_offload_rc
constexpr Field kNativePortNum{0xc0, 23, 16};                 // native_port_num
constexpr Field kNumVhcaPorts{0xc0, 15, 8};                   // num_vhca_ports
constexpr Field kSf{0xd0, 31, 31};                            // sf
constexpr Field kUctxCap{0xd4, 31, 0};                        // uctx_cap
}  // namespace gen

// Fixed part of the general caps. Zeros that section 4.3 calls out as "musts" are listed too, so
// the table says what is switched off and why a feature's commands never come.
constexpr CapValue kGeneralCaps[] = {
    {gen::kHcaCap2, 1},                      // cmd_hca_cap_2: reserved QP number blocks
    {gen::kLogMaxSrqSz, 15},
    {gen::kLogMaxQpSz, 15},
    {gen::kLogMaxQp, 17},
    {gen::kLogMaxSrq, 16},
    {gen::kLogMaxCqSz, 22},
    {gen::kLogMaxCq, 16},
    {gen::kLogMaxEqSz, 22},
    {gen::kLogMaxMkey, 16},
    {gen::kFastTeardown, 0},
    {gen::kLogMaxMrwSz, 64},
    {gen::kForceTeardown, 0},
    {gen::kLogMaxKlmListSize, 16},
    {gen::kFixedBufferSize, 1},               // KSM keys: implicit ODP MRs (objects/memory_protection.cpp)
    {gen::kUmrExtendedTranslationOffset, 1},  // UMR offsets past 16 bits (objects/umr.cpp reads 48)
    {gen::kNullMkey, 1},
    {gen::kReleaseAllPages, 0},
    {gen::kRts2RtsQpUdpSport, 1},           // RTS2RTS may set a RoCE QP's UDP source port (firmware/qp.cpp)
    {gen::kLogMaxRaReqQp, 4},
    {gen::kLogMaxRaResQp, 4},
    {gen::kLogMaxRaReqDc, 4},                // DC as RC (rdma/dc.cpp); libmlx5's max_dc_rd_atom
    {gen::kLogMaxRaResDc, 4},
    {gen::kCcQueryAllowed, 1},               // QUERY_CONG_STATISTICS (hw_counters); debugfs needs cc_modify too
    {gen::kCacheLine128Byte, 0},
    {gen::kGidTableSize, 0},                 // IB only
    {gen::kVportCounters, 0},
    {gen::kDebug, 0},                        // no DEBUG caps, no rsc_dump
    {gen::kMaxQpCnt, kMaxQueueCounterSets},  // Q counters: mlx5_ib binds QPs, hw_counters in sysfs
    {gen::kOutOfSeqCnt, 1},                  // ... with out_of_sequence,
    {gen::kRetransmissionQCounters, 1},      // duplicate_request, rnr_nak_retry_err, packet_seq_err, ...
    {gen::kEnhancedErrorQCounters, 1},       // and the error CQE counters (objects/queue_counters.h)
    {gen::kPkeyTableSize, 0},                // 128 entries
    {gen::kVportGroupManager, 0},            // the PF's: fill_every_function (eswitch manager)
    {gen::kNicFlowTable, 1},                 // mlx5e needs it
    {gen::kEswitchManager, 0},               // the PF's: fill_every_function
    {gen::kMcamReg, 0},                      // no MCAM, no fw tracer
    {gen::kPcamReg, 0},
    {gen::kLocalCaAckDelay, 16},
    {gen::kPortType, 1},                     // Ethernet
    {gen::kNumPorts, kNumPorts},
    {gen::kLogMaxMsg, 30},
    {gen::kCqeVersion, 1},                   // CQEs name their QP by its user index
    {gen::kStridingRq, 0},                   // mlx5e uses the legacy cyclic RQ
    {gen::kUmrModifyEntitySizeDisabled, 0},  // user MRs loaded by UMR (objects/umr.h), the MKEY cache
    {gen::kCmdifChecksum, 0},
    // Signature MKEYs (objects/block_signature.h): T10-DIF and CRC32/CRC32C blocks in one domain,
    // SIGERR CQEs that name the domain. No CRC64, no 4048-byte blocks.
    {gen::kSho, 1},
    {gen::kDrainSigerr, 1},  // signature pipelining: SQD at the next fenced WQE, SQD_RTS_QP
    {gen::kSigerrCqe, 1},
    {gen::kSigerrDomainAndSigType, 1},
    {gen::kSigCrc32c, 1},
    {gen::kDct, 1},                          // DC: DCIs and DCTs (rdma/dc.cpp, firmware/dct.cpp)
    {gen::kQos, 1},                          // QOS caps: packet pacing, NIC scheduling elements for QPs
    {gen::kQpcExtension, 1},                 // a QP joins a queue group through qpc_ext (libmlx5 checks it)
    {gen::kEthNetOffloads, 1},
    {gen::kRoce, 1},
    {gen::kAtomic, 1},                       // 8-byte CS/FA on RC: ATOMIC caps below
    {gen::kCqResize, 1},
    {gen::kCqModeration, 1},
    {gen::kImaicl, 1},                       // memory windows type 1 and 2B (objects/umr.h apply_bind_umr)
    {gen::kBlockLbMc, 1},                    // qpc.block_lb_mc (rdma/datagram.cpp receive_multicast)
    {gen::kPg, 1},                           // ODP: explicit on-demand paging (ODP caps below)
    {gen::kSetDethSqpn, 0},
    {gen::kXrc, 1},                          // mlx5_ib refuses to load without it
    {gen::kUd, 1},
    {gen::kUc, 1},
    {gen::kRc, 1},
    {gen::kUar4k, 0},
    {gen::kLogPgSz, 12},
    {gen::kBf, 0},                           // no WC self-test, no BlueFlame
    {gen::kDriverVersion, 0},
    {gen::kMkeyByName, 0},
    {gen::kLogBfRegSize, 9},
    {gen::kLagMaster, 0},
    {gen::kMaxWqeSzSq, 1024},
    {gen::kMaxWqeSzRq, 512},
    {gen::kMaxQpMcg, MulticastGroups::kMaxQpsPerGroup},
    {gen::kLogMaxMcg, MulticastGroups::kLogMaxGroups},
    {gen::kLogMaxTransportDomain, 16},
    {gen::kLogMaxPd, 18},
    {gen::kLogMaxXrcd, 16},
    {gen::kLogMaxRq, 17},
    {gen::kLogMaxSq, 17},
    {gen::kLogMaxTir, 16},
    {gen::kLogMaxTis, 16},
    {gen::kLogMaxRmp, 16},
    {gen::kLogMaxRqt, 16},
    {gen::kLogMaxRqtSize, 11},
    {gen::kLogMaxWqSz, 17},
    {gen::kDisableLocalLbUc, 1},             // the vport's local loopback can be turned off
    {gen::kDisableLocalLbMc, 1},
    {gen::kLogMaxVlanList, kLogMaxVlanList},
    {gen::kLogMaxCurrentMcList, kLogMaxCurrentMcList},
    {gen::kLogMaxCurrentUcList, kLogMaxCurrentUcList},
    {gen::kLogMaxUctx, ResourceLimits{}.log_max_uctx},
    {gen::kLogMaxDciStreamChannels, ResourceLimits{}.log_max_dci_stream_channels},  // DCS (rdma/dc.cpp)
    {gen::kLogMaxDciErroredStreams, ResourceLimits{}.log_max_dci_errored_streams},  // DevX user contexts (firmware/user_context.cpp)
    {gen::kLogUarPageSz, 0},
    {gen::kDeviceFrequencyKhz, init_seg::kInternalTimerKhz},  // the internal timer: model time
    {gen::kCqe128Always, 1},       // cqc.cqe_sz 2 (firmware/uar_pd_eq_cq.cpp): mlx5dv's CQE padding
    // CQE compression is taken (cqc.cqe_comp_en, any mini-CQE format, 64- and 128-byte CQEs) and
    // every CQE written whole, as a device may (firmware/uar_pd_eq_cq.cpp): no session ever forms.
    {gen::kCqeCompression128, 1},
    {gen::kCqeCompression, 1},
    {gen::kMiniCqeRespStrideIndex, 1},
    {gen::kCqeCompressionMaxNum, 64},  // CQEs one session may fold, as ConnectX-5/6 report
    // No hardware tag matching: on a RoCE port rdma-core cannot create a TM SRQ (libmlx5 connects its
    // command QP to itself without a GRH, which the kernel refuses on RoCE), so offering it would
    // only turn ibv_create_srq_ex(IBV_SRQT_TM) from "not supported" into EINVAL.
    {gen::kTagMatching, 0},
    {gen::kRndvOffloadRc, 0},
    {gen::kNativePortNum, 1},
    {gen::kNumVhcaPorts, 0},
    {gen::kSf, 0},                           // no sub-functions
    {gen::kUctxCap, kUctxCapRawTx},          // a user context may send raw Ethernet (raw packet QPs)
    // General objects (firmware/general_objects.cpp): reserved QP numbers, scheduling elements and
    // address-to-QP mappings.
    {gen::kGeneralObjTypesHigh, 1u << (kObjTypeReservedQpn - 32) | 1u << (kObjTypeSchedulingElement - 32) |
                                    1u << (kObjTypeAvQpMapping - 32)},
    {gen::kGeneralObjTypesLow, 0},
};

// --- qos_cap (type 0xc): packet pacing (firmware/packet_pacing.cpp, objects/rate_limits.h) and
// NIC scheduling elements (firmware/scheduling_elements.cpp, objects/scheduling_elements.h): DWRR
// TSARs and queue groups with bw_share and max_average_bw, which RDMA QPs (qpc_ext) and SQs
// (sqc.qos_queue_group_id: mlx5e's HTB offload, a raw packet QP) join. No eswitch scheduling
// (esw_scheduling 0): mlx5_core builds no eswitch QoS tree.
namespace qos {
constexpr Field kPacketPacing{0x00, 31, 31};                  // packet_pacing
constexpr Field kNicSqScheduling{0x00, 23, 23};               // nic_sq_scheduling
constexpr Field kNicBwShare{0x00, 22, 22};                    // nic_bw_share
constexpr Field kNicRateLimit{0x00, 21, 21};                  // nic_rate_limit
constexpr Field kPacketPacingUid{0x00, 20, 20};               // packet_pacing_uid (DevX entries)
constexpr Field kNicQpScheduling{0x04, 30, 30};               // nic_qp_scheduling
constexpr Field kLogMaxQosNicQueueGroup{0x04, 20, 16};        // log_max_qos_nic_queue_group
constexpr Field kNicElementType{0x20, 31, 16};                // nic_element_type (bit per element type)
constexpr Field kNicTsarType{0x20, 15, 0};                    // nic_tsar_type (bit per TSAR type)
constexpr Field kPacketPacingMaxRate{0x08, 31, 0};            // packet_pacing_max_rate (kb/s)
constexpr Field kPacketPacingMinRate{0x0c, 31, 0};            // packet_pacing_min_rate
constexpr Field kPacketPacingRateTableSize{0x10, 15, 0};      // packet_pacing_rate_table_size
}  // namespace qos

constexpr CapValue kQosCaps[] = {
    {qos::kPacketPacing, 1},
    {qos::kPacketPacingUid, 1},
    {qos::kNicSqScheduling, 1},
    {qos::kNicBwShare, 1},
    {qos::kNicRateLimit, 1},
    {qos::kNicQpScheduling, 1},
    {qos::kLogMaxQosNicQueueGroup, sched_element::kLogMaxQueueGroups},
    {qos::kNicElementType, 1u << sched_element::kTsar | 1u << sched_element::kQueueGroup},
    {qos::kNicTsarType, 1u << sched_element::kTsarDwrr},
    {qos::kPacketPacingMaxRate, RateLimitTable::kMaxRateKbps},
    {qos::kPacketPacingMinRate, RateLimitTable::kMinRateKbps},
    {qos::kPacketPacingRateTableSize, RateLimitTable::kSize},
};

// --- cmd_hca_cap_2 (type 0x20) ------------------------------------------------------------------
namespace gen2 {
constexpr Field kLogMaxNumReservedQpn{0x10, 20, 16};          // log_max_num_reserved_qpn
constexpr Field kLogReservedQpnGranularity{0x10, 12, 8};      // log_reserved_qpn_granularity
constexpr Field kLogReservedQpnMaxAlloc{0x10, 4, 0};          // log_reserved_qpn_max_alloc
}  // namespace gen2

// sw_vhca_id_valid stays 0: mlx5_core then never sets this page.
constexpr CapValue kGeneral2Caps[] = {
    {gen2::kLogMaxNumReservedQpn, kLogMaxNumReservedQpn},
    {gen2::kLogReservedQpnGranularity, kLogReservedQpnGranularity},
    {gen2::kLogReservedQpnMaxAlloc, kLogReservedQpnMaxAlloc},
};

// --- per_protocol_networking_offload_caps (type 1) ---------------------------------------------
namespace eth {
constexpr Field kCsumCap{0x00, 31, 31};              // csum_cap
constexpr Field kVlanCap{0x00, 30, 30};              // vlan_cap
constexpr Field kLroCap{0x00, 29, 29};               // lro_cap
constexpr Field kSelfLbEnModifiable{0x00, 23, 23};   // self_lb_en_modifiable
constexpr Field kMaxLsoCap{0x00, 20, 16};            // max_lso_cap
constexpr Field kMultiPktSendWqe{0x00, 15, 14};      // multi_pkt_send_wqe
constexpr Field kWqeInlineMode{0x00, 13, 12};        // wqe_inline_mode
constexpr Field kRssIndTblCap{0x00, 11, 8};          // rss_ind_tbl_cap
constexpr Field kSwp{0x04, 31, 31};                  // swp
}  // namespace eth

constexpr uint32_t kInlineModeNotRequired = 2;
constexpr CapValue kEthernetCaps[] = {
    {eth::kCsumCap, 1},
    {eth::kVlanCap, 1},
    {eth::kLroCap, 0},
    {eth::kSelfLbEnModifiable, 1},  // else mlx5e warns; TIR self_lb_block is bookkeeping
    {eth::kMaxLsoCap, 16},
    {eth::kMultiPktSendWqe, 0},
    {eth::kWqeInlineMode, kInlineModeNotRequired},  // 1 would make mlx5e query the vport min inline
    {eth::kRssIndTblCap, 7},
    {eth::kSwp, 0},
};

// --- atomic_caps (type 3) ------------------------------------------------------------------------
// Standard 8-byte atomics only: compare-swap and fetch-add on RC (and XRC) QPs. No masked/extended
// atomics (atomic_operations bits 2/3), the same 8-byte atomics on DC (atomic_size_dc), no PCI
// atomics. What Linux 6.1 does with this page:
// - mlx5_core handle_hca_cap_atomic (before INIT_HCA, PF and VF): gated on general `atomic`, it
//   queries cur and max; when max has supported_atomic_req_8B_endianness_mode_1 it sends
//   SET_HCA_CAP(op_mod 3 << 1) with an all-zero page except atomic_req_8B_endianness_mode = 1
//   (MLX5_ATOMIC_REQ_MODE_HOST_ENDIANNESS). After INIT_HCA mlx5_query_hca_caps reads cur/max again.
// - mlx5_ib get_atomic_caps reads cur: CS and FA in atomic_operations, the 8-byte bit in
//   atomic_size_qp and a non-zero atomic_req_8B_endianness_mode give atomic_cap = IB_ATOMIC_HCA
//   (else IB_ATOMIC_NONE); masked_atomic_cap is always NONE. libmlx5 takes its atomic_cap from
//   there and refuses atomic WRs without it.
// - qpc.atomic_mode (0x90[19:16]): get_atomic_mode (qp.c) sees no extended ops and CS + FA, so it
//   returns MLX5_ATOMIC_MODE_IB_COMP = 1; set_qpc_atomic_flags writes atomic_mode = 1 with rae = 1
//   when the QP's access flags have IB_ACCESS_REMOTE_ATOMIC and its max_dest_rd_atomic is non-zero
//   (otherwise only rwe survives). max_dest_rd_atomic is first given at INIT2RTR (it is 0 before),
//   so for an RC QP RST2INIT carries rae = rre = 0, atomic_mode = 0, and INIT2RTR carries rae = 1,
//   atomic_mode = 1 (the driver remembers the RST2INIT access flags); later transitions repeat the
//   four fields only when IB_QP_ACCESS_FLAGS or IB_QP_MAX_DEST_RD_ATOMIC is in the attr mask.
// - Endianness: the WQE atomic segment (swap_add, compare) and AtomicETH/AtomicAckETH on the wire
//   are big-endian. The 8-byte operand in responder memory is a host-endian integer: the x86 guest
//   (HOST_ENDIANNESS register he = 0 from the PF) is little-endian, so the responder reads and
//   writes it little-endian; IB_ATOMIC_HCA means the HCA's atomics see the same uint64_t the CPUs
//   see. The original value returned to the requester is written into its local 8-byte buffer in
//   host endianness (little-endian) under mode 1 (cur after the driver's SET), and big-endian
//   (network order, OFED's IB_ATOMIC_HCA_REPLY_BE) under the power-on mode 0.
namespace atom {
constexpr Field kAtomicReq8BEndiannessMode{0x08, 31, 30};           // atomic_req_8B_endianness_mode
constexpr Field kSupportedAtomicReq8BEndiannessMode1{0x08, 25, 25}; // supported_atomic_req_8B_endianness_mode_1
constexpr Field kAtomicOperations{0x10, 15, 0};                     // atomic_operations
constexpr Field kAtomicSizeQp{0x14, 15, 0};                         // atomic_size_qp
constexpr Field kAtomicSizeDc{0x18, 15, 0};                         // atomic_size_dc
}  // namespace atom

constexpr CapValue kAtomicCaps[] = {
    {atom::kAtomicReq8BEndiannessMode, kAtomicReqModeHostEndianness},  // max; cur from HcaCapSettings
    {atom::kSupportedAtomicReq8BEndiannessMode1, 1},  // makes mlx5_core SET mode 1
    {atom::kAtomicOperations, kAtomicOpsCompareSwap | kAtomicOpsFetchAdd},
    {atom::kAtomicSizeQp, kAtomicSize8Bytes},
    {atom::kAtomicSizeDc, kAtomicSize8Bytes},  // DC executes them as RC does (rdma/dc.cpp)
};

// --- odp_cap (type 2) ----------------------------------------------------------------------------
// On-demand paging of explicit MRs (objects/page_faults.h, rdma/odp.cpp): a not-present MTT entry
// stops the work that needs it with a page-fault event until PAGE_FAULT_RESUME. Offered per transport for what the data
// path faults on: the requester's SGEs (send), RC/XRC receive WQEs of an RQ or SRQ (receive, srq_receive)
// and the responder's remote ranges (write, read, atomic). Implicit ODP too (fixed_buffer_size,
// null_mkey, umr_extended_translation_offset: a KSM key over the address space whose entries name
// child MTT keys or the null MKEY). DC as RC (a DCI's SGEs; a DCT's SRQ and remote ranges). Not
// offered: UC. mlx5_core 6.1 sends
// SET_HCA_CAP(ODP) with every bit of srq_receive and of xrc/dc that max has; cur equals max, so the
// SET is checked (a subset of max) and changes nothing.
namespace odp {
constexpr Field kRc{0x10, 31, 26};   // rc_odp_caps: send receive write read atomic srq_receive
constexpr Field kUd{0x18, 31, 26};   // ud_odp_caps
constexpr Field kXrc{0x1c, 31, 26};  // xrc_odp_caps
constexpr Field kDc{0x20, 31, 26};   // dc_odp_caps
constexpr uint32_t kSend = 1u << 5, kReceive = 1u << 4, kWrite = 1u << 3, kRead = 1u << 2, kAtomic = 1u << 1,
                   kSrqReceive = 1u << 0;
}  // namespace odp

constexpr CapValue kOdpCaps[] = {
    {odp::kRc, odp::kSend | odp::kReceive | odp::kWrite | odp::kRead | odp::kAtomic | odp::kSrqReceive},
    {odp::kUd, odp::kSend},  // datagrams are received without faults (rdma/datagram.cpp)
    {odp::kXrc, odp::kSend | odp::kWrite | odp::kRead | odp::kAtomic | odp::kSrqReceive},
    {odp::kDc, odp::kSend | odp::kWrite | odp::kRead | odp::kAtomic | odp::kSrqReceive},  // a DCT receives through its SRQ
};

// --- roce_cap (type 4) ---------------------------------------------------------------------------
namespace roce {
constexpr Field kRoceApm{0x00, 31, 31};                 // roce_apm
constexpr Field kSwRRoceSrcUdpPort{0x00, 27, 27};       // sw_r_roce_src_udp_port
constexpr Field kQpTsFormat{0x00, 1, 0};                // qp_ts_format
constexpr Field kL3Type{0x10, 19, 16};                  // l3_type
constexpr Field kRoceVersion{0x10, 7, 0};               // roce_version
constexpr Field kRRoceDestUdpPort{0x14, 15, 0};         // r_roce_dest_udp_port
constexpr Field kRRoceMaxSrcUdpPort{0x18, 31, 16};      // r_roce_max_src_udp_port
constexpr Field kRRoceMinSrcUdpPort{0x18, 15, 0};       // r_roce_min_src_udp_port
constexpr Field kRoceAddressTableSize{0x1c, 15, 0};     // roce_address_table_size
}  // namespace roce

constexpr uint32_t kL3TypeIpv4Cap = 0x2, kL3TypeIpv6Cap = 0x4;  // both needed for any RoCE port flag
constexpr uint32_t kRoceV1Cap = 0x1, kRoceV2Cap = 0x4;
constexpr uint32_t kRoceV2UdpPort = 4791;  // IANA
constexpr CapValue kRoceCaps[] = {
    {roce::kRoceApm, 0},
    {roce::kSwRRoceSrcUdpPort, 0},  // same in cur and max: no SET_HCA_CAP(ROCE) at probe
    {roce::kQpTsFormat, 0},
    {roce::kL3Type, kL3TypeIpv4Cap | kL3TypeIpv6Cap},
    {roce::kRoceVersion, kRoceV1Cap | kRoceV2Cap},
    {roce::kRRoceDestUdpPort, kRoceV2UdpPort},
    {roce::kRRoceMaxSrcUdpPort, 0xffff},
    {roce::kRRoceMinSrcUdpPort, 0xc000},
    {roce::kRoceAddressTableSize, kRoceAddressTableSize},
};

// --- flow_table_nic_cap (type 7): flow_table_properties_nic_receive at 0x40, _nic_transmit at 0x100 --
// NIC TX tables count, drop, allow and encapsulate (packet reformat L2_TO_L2_TUNNEL and
// L2_TO_L3_TUNNEL, eth/queues.cpp rewrite_tx); NIC RX tables take frames out of tunnels (DECAP for
// an L2 tunnel, reformat L3_TUNNEL_TO_L2: eth/queues.cpp decapsulate_rx). Both rewrite header
// fields (modify-header contexts on the outer MACs and ethertype).
namespace ft {
constexpr uint32_t kNicReceive = 0x40;                        // flow_table_properties_nic_receive
constexpr uint32_t kNicTransmit = 0x100;                      // flow_table_properties_nic_transmit
// In flow_table_prop_layout, at either of them.
constexpr Field kFtSupport{0x00, 31, 31};                     // ft_support
constexpr Field kFlowModifyEn{0x00, 28, 28};                  // flow_modify_en
constexpr Field kModifyRoot{0x00, 27, 27};                    // modify_root
constexpr Field kIdentifiedMissTableMode{0x00, 26, 26};       // identified_miss_table_mode
constexpr Field kFlowTableModify{0x00, 25, 25};               // flow_table_modify
constexpr Field kReformat{0x00, 24, 24};                      // reformat
constexpr Field kDecap{0x00, 23, 23};                         // decap
constexpr Field kReformatL3TunnelToL2{0x00, 13, 13};          // reformat_l3_tunnel_to_l2
constexpr Field kReformatL2ToL3Tunnel{0x00, 12, 12};          // reformat_l2_to_l3_tunnel
constexpr Field kIgnoreFlowLevel{0x00, 10, 10};               // ignore_flow_level
constexpr Field kLogMaxFtSize{0x04, 29, 24};                  // log_max_ft_size
constexpr Field kLogMaxModifyHeaderContext{0x04, 23, 16};     // log_max_modify_header_context
constexpr Field kMaxModifyHeaderActions{0x04, 15, 8};         // max_modify_header_actions
constexpr Field kMaxFtLevel{0x04, 7, 0};                      // max_ft_level
constexpr Field kLogMaxFtNum{0x0c, 7, 0};                     // log_max_ft_num
constexpr Field kLogMaxDestination{0x10, 7, 0};               // log_max_destination
constexpr Field kLogMaxFlow{0x14, 7, 0};                      // log_max_flow
constexpr uint32_t kFtFieldSupport = 0x20;                    // ft_field_support (128 bits)
constexpr uint32_t kFtFieldBitmaskSupport = 0x30;             // ft_field_bitmask_support (128 bits)
// flow_table_fields_supported bits (from its first, most significant bit) of the fields the data
// path matches frames by (model/eth/frame.h): outer and inner L2-L4 (no second VLAN), the GRE,
// VXLAN and Geneve headers and a RoCEv2 BTH's destination QP. Not the eswitch's source port, MPLS,
// ESP, Geneve options or metadata registers: a rule on those would never see a frame's value.
constexpr uint32_t kMatchedFields[] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,              // outer dmac .. ipv4_ttl
    0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,  // outer sip .. tcp_flags
    0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d,                    // gre protocol/key, vxlan, geneve
    0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26,                    // inner dmac .. first_vid
    0x2c, 0x2d, 0x2e, 0x2f, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36,  // inner sip .. tcp_flags
    0x5a,                                                        // bth_dst_qp
};
// The page's own fields.
constexpr Field kEncapGeneralHeader{0x04, 31, 31};            // encap_general_header
constexpr Field kLogMaxPacketReformatContext{0x04, 20, 16};   // log_max_packet_reformat_context
constexpr Field kMaxEncapHeaderSize{0x04, 9, 0};              // max_encap_header_size
}  // namespace ft

constexpr CapValue kFlowTableProperties[] = {
    {ft::kFtSupport, 1},
    {ft::kFlowModifyEn, 1},  // the four "chaining caps" enable bypass/offloads/ethtool namespaces
    {ft::kModifyRoot, 1},
    {ft::kIdentifiedMissTableMode, 1},
    {ft::kFlowTableModify, 1},
    {ft::kReformat, 1},         // RX: no reformat type is offered for it (see above); TX: encapsulation
    {ft::kIgnoreFlowLevel, 1},  // a rule may forward to a table of any level (mlx5e's TC post-action table)
    {ft::kLogMaxFtSize, 20},
    {ft::kMaxFtLevel, 63},  // mlx5e requires >= 3
    // Modify headers (outer MACs and ethertype, set and copy: steering/modify_header.h).
    {ft::kLogMaxModifyHeaderContext, 16},
    {ft::kMaxModifyHeaderActions, steering::kMaxModifyHeaderActions},
    // Limits beyond the doc's minimum, generous so no steering path trips on a 0 (= 1 entry).
    {ft::kLogMaxFtNum, 10},
    {ft::kLogMaxDestination, 6},
    {ft::kLogMaxFlow, 20},
};

constexpr CapValue kFlowTableCaps[] = {
    {ft::kEncapGeneralHeader, 1},
    {ft::kLogMaxPacketReformatContext, 16},
    {ft::kMaxEncapHeaderSize, kMaxEncapHeaderSize},
};

// --- device_mem_cap (type 0xf): the function's MEMIC window (objects/device_memory.h) -----------
namespace dm {
constexpr Field kMemic{0x00, 31, 31};                         // memic
constexpr Field kLogMinMemicAllocSize{0x04, 20, 16};          // log_min_memic_alloc_size
constexpr Field kLogMaxMemicAddrAlignment{0x04, 7, 0};        // log_max_memic_addr_alignment
constexpr Field kMemicBarStartAddrHigh{0x08, 31, 0};          // memic_bar_start_addr (64 bits)
constexpr Field kMemicBarStartAddrLow{0x0c, 31, 0};
constexpr Field kMemicBarSize{0x10, 31, 0};                   // memic_bar_size
constexpr Field kMaxMemicSize{0x14, 31, 0};                   // max_memic_size
constexpr Field kMemicIncrementSizes{0x04, 31, 24};           // sizes of an increment (bit 0: one byte)
constexpr Field kMemicTestAndSetSizes{0x04, 15, 8};           // sizes of a test-and-set
constexpr Field kMemicOperationsOffered{0x40, 31, 0};                // memic_operations: bit per operation
// Steering ICM (objects/sw_icm.h), announced only with FunctionIdentity::sw_icm.
constexpr Field kSteeringSwIcmStartHigh{0x18, 31, 0};          // steering_sw_icm_start_address (64 bits)
constexpr Field kSteeringSwIcmStartLow{0x1c, 31, 0};
constexpr Field kLogHeaderModifySwIcmSize{0x20, 23, 16};       // log_header_modify_sw_icm_size
constexpr Field kLogSwIcmAllocGranularity{0x20, 13, 8};        // log_sw_icm_alloc_granularity
constexpr Field kLogSteeringSwIcmSize{0x20, 7, 0};             // log_steering_sw_icm_size
constexpr Field kLogHeaderModifyPatternSwIcmSize{0x24, 7, 0};  // log_header_modify_pattern_sw_icm_size
constexpr Field kHeaderModifySwIcmStartHigh{0x28, 31, 0};      // header_modify_sw_icm_start_address
constexpr Field kHeaderModifySwIcmStartLow{0x2c, 31, 0};
constexpr Field kHeaderModifyPatternSwIcmStartHigh{0x38, 31, 0};  // header_modify_pattern_sw_icm_start_address
constexpr Field kHeaderModifyPatternSwIcmStartLow{0x3c, 31, 0};
}  // namespace dm

// --- virtio_emulation_cap (type 0x13): the function's VARs (objects/var_window.h), and no virtio
// queue type or event mode, so mlx5_core creates no vDPA device over them.
namespace virtio {
constexpr Field kEventMode{0x00, 15, 8};              // event_mode: none
constexpr Field kVirtioQueueType{0x00, 7, 0};         // virtio_queue_type: none
constexpr Field kLogDoorbellStride{0x04, 12, 8};      // log_doorbell_stride
constexpr Field kLogDoorbellBarSize{0x04, 4, 0};      // log_doorbell_bar_size (4 KiB pages)
constexpr Field kDoorbellBarOffsetHigh{0x08, 31, 0};  // doorbell_bar_offset (64 bits)
constexpr Field kDoorbellBarOffsetLow{0x0c, 31, 0};
}  // namespace virtio

constexpr uint32_t kGeneralBytes = 0x100, kEthernetBytes = 0x100, kAtomicBytes = 0x100, kRoceBytes = 0x100,
                   kFlowTableBytes = 0x1000, kDeviceMemoryBytes = 0x100, kOdpBytes = 0x100, kGeneral2Bytes = 0x100,
                   kQosBytes = 0x100, kVirtioEmulationBytes = 0x100, kEswitchFlowTableBytes = 0x1000,
                   kEswitchBytes = 0x100;

// --- settable fields: what SET_HCA_CAP may change in `cur` -------------------------------------
// kLimit: value <= max; kFlag: 1 only where max is 1. kSubset: a bit mask that may only name what
// max offers (0 included); checked but never stored (`value` is null): cur keeps reporting max.
enum class Settable { kLimit, kFlag, kSubset };
struct SettableField {
  CapType type;
  Field field;
  Settable kind;
  uint32_t HcaCapSettings::*value;
};
constexpr SettableField kSettable[] = {
    {CapType::kGeneral, gen::kPkeyTableSize, Settable::kLimit, &HcaCapSettings::pkey_table_size},
    {CapType::kGeneral, gen::kLogMaxQp, Settable::kLimit, &HcaCapSettings::log_max_qp},
    {CapType::kGeneral, gen::kCmdifChecksum, Settable::kLimit, &HcaCapSettings::cmdif_checksum},
    {CapType::kGeneral, gen::kLogUarPageSz, Settable::kLimit, &HcaCapSettings::log_uar_page_sz},
    {CapType::kGeneral, gen::kUar4k, Settable::kFlag, &HcaCapSettings::uar_4k},
    {CapType::kGeneral, gen::kCacheLine128Byte, Settable::kFlag, &HcaCapSettings::cache_line_128byte},
    {CapType::kGeneral, gen::kDct, Settable::kFlag, &HcaCapSettings::dct},
    {CapType::kGeneral, gen::kReleaseAllPages, Settable::kFlag, &HcaCapSettings::release_all_pages},
    {CapType::kGeneral, gen::kMkeyByName, Settable::kFlag, &HcaCapSettings::mkey_by_name},
    {CapType::kGeneral, gen::kNumVhcaPorts, Settable::kLimit, &HcaCapSettings::num_vhca_ports},
    {CapType::kAtomic, atom::kAtomicReq8BEndiannessMode, Settable::kLimit,
     &HcaCapSettings::atomic_req_8B_endianness_mode},
    {CapType::kAtomic, atom::kAtomicOperations, Settable::kSubset, nullptr},  // no masked atomics
    {CapType::kAtomic, atom::kAtomicSizeQp, Settable::kSubset, nullptr},
    {CapType::kAtomic, atom::kAtomicSizeDc, Settable::kSubset, nullptr},
    {CapType::kRoce, roce::kSwRRoceSrcUdpPort, Settable::kFlag, &HcaCapSettings::sw_r_roce_src_udp_port},
    {CapType::kOdp, odp::kRc, Settable::kSubset, nullptr},
    {CapType::kOdp, odp::kUd, Settable::kSubset, nullptr},
    {CapType::kOdp, odp::kXrc, Settable::kSubset, nullptr},
    {CapType::kOdp, odp::kDc, Settable::kSubset, nullptr},
};
constexpr uint16_t kSettableCheckBase = 0x100;

constexpr uint32_t kControlEqs = 4;  // cmd, async, pages EQs plus one spare (MLX5_MAX_ASYNC_EQS)
constexpr uint32_t kMinLogMaxEq = 6;

void fill(std::span<uint8_t> page, std::span<const CapValue> values) {
  for (const CapValue& v : values) set(page, v.field, v.value);
}

// device_mem_cap: the steering ICM regions (FunctionIdentity::sw_icm) and the MEMIC window.
void announce_icm_region(std::span<uint8_t> page, Field start_high, Field start_low, Field log_size,
                         const SwIcmRegion& region) {
  set(page, start_high, uint32_t(region.start >> 32));
  set(page, start_low, uint32_t(region.start));
  set(page, log_size, region.log_size);
}

void fill_device_memory(const FunctionIdentity& identity, std::span<uint8_t> page) {
  if (identity.sw_icm) {
    announce_icm_region(page, dm::kSteeringSwIcmStartHigh, dm::kSteeringSwIcmStartLow, dm::kLogSteeringSwIcmSize,
                        kSteeringIcm);
    announce_icm_region(page, dm::kHeaderModifySwIcmStartHigh, dm::kHeaderModifySwIcmStartLow,
                        dm::kLogHeaderModifySwIcmSize, kHeaderModifyIcm);
    announce_icm_region(page, dm::kHeaderModifyPatternSwIcmStartHigh, dm::kHeaderModifyPatternSwIcmStartLow,
                        dm::kLogHeaderModifyPatternSwIcmSize, kHeaderModifyPatternIcm);
    set(page, dm::kLogSwIcmAllocGranularity, kLogSwIcmBlock);
  }
  if (identity.memic.bytes == 0) return;
  set(page, dm::kMemic, 1);
  set(page, dm::kLogMinMemicAllocSize, std::countr_zero(DeviceMemory::kAllocationGranule));
  set(page, dm::kLogMaxMemicAddrAlignment, DeviceMemory::kMaxLogAlignment);
  set(page, dm::kMemicBarStartAddrHigh, uint32_t(identity.memic.bar_offset >> 32));
  set(page, dm::kMemicBarStartAddrLow, uint32_t(identity.memic.bar_offset));
  set(page, dm::kMemicBarSize, identity.memic.bytes);
  set(page, dm::kMaxMemicSize, identity.memic.bytes);
  if (identity.memic.ops_offset != 0) {  // MEMIC atomic operations, one byte at a time
    set(page, dm::kMemicOperationsOffered, (1u << kMemicOperations) - 1);
    set(page, dm::kMemicIncrementSizes, 1);
    set(page, dm::kMemicTestAndSetSizes, 1);
  }
}

// mlx5 DR (software steering, docs/mlx5-dr.md section 1), only with FunctionIdentity::sw_icm: STE
// format v1 (ConnectX-6 Dx), software-owned NIC RX and TX tables with the terminals their entries
// end in (steering/terminals.h), force-loopback RC QPs for DR's send rings.
namespace sws {
constexpr Field kSteeringFormatVersion{0x88, 27, 24};          // cmd_hca_cap steering_format_version
constexpr uint32_t kSteeringFormatConnectX6Dx = 1;
constexpr Field kGeneralFlRcQpWhenRoceDisabled{0x48, 23, 23};  // cmd_hca_cap fl_rc_qp_when_roce_disabled
constexpr Field kFlRcQpWhenRoceDisabled{0x00, 26, 26};         // roce_cap
constexpr Field kFlRcQpWhenRoceEnabled{0x00, 25, 25};          // roce_cap
constexpr Field kSwOwner{0x00, 14, 14};                        // flow_table_prop_layout sw_owner
constexpr uint32_t kRxDropIcmAddress = 0x400;                  // sw_steering_nic_rx_action_drop_icm_address
constexpr uint32_t kTxDropIcmAddress = 0x408;                  // sw_steering_nic_tx_action_drop_icm_address
constexpr uint32_t kTxAllowIcmAddress = 0x410;                 // sw_steering_nic_tx_action_allow_icm_address
constexpr Field kMatchDefinerFormatsLow{0xfc, 31, 0};          // match_definer_format_supported, bits 31..0
constexpr uint32_t kDefinerFormat0 = 1u << 0;                  // steering/ste_v1.h definer_tag
}  // namespace sws

void fill_software_steering(CapType type, std::span<uint8_t> page) {
  switch (type) {
    case CapType::kGeneral:
      set(page, sws::kSteeringFormatVersion, sws::kSteeringFormatConnectX6Dx);
      set(page, sws::kGeneralFlRcQpWhenRoceDisabled, 1);
      set(page, gen::kGeneralObjTypesHigh, get(page, gen::kGeneralObjTypesHigh) | 1u << (kObjTypeFlowSampler - 32));
      set(page, gen::kGeneralObjTypesLow, get(page, gen::kGeneralObjTypesLow) | 1u << kObjTypeMatchDefiner);
      set(page, sws::kMatchDefinerFormatsLow, sws::kDefinerFormat0);
      return;
    case CapType::kRoce:
      set(page, sws::kFlRcQpWhenRoceDisabled, 1);
      set(page, sws::kFlRcQpWhenRoceEnabled, 1);
      return;
    case CapType::kFlowTable:
      set(page.subspan(ft::kNicReceive), sws::kSwOwner, 1);
      set(page.subspan(ft::kNicTransmit), sws::kSwOwner, 1);
      set64(page, sws::kRxDropIcmAddress, steering::kNicRxDrop);
      set64(page, sws::kTxDropIcmAddress, steering::kNicTxDrop);
      set64(page, sws::kTxAllowIcmAddress, steering::kNicTxAllow);
      return;
    default:
      return;
  }
}

void fill_every_function(const FunctionIdentity& identity, CapType type, std::span<uint8_t> page) {
  switch (type) {
    case CapType::kGeneral:
      fill(page, kGeneralCaps);
      set(page, gen::kVhcaId, identity.vhca_id);
      set(page, gen::kLogMaxQp, identity.quotas.log_max_qp);  // the admin's per-function quotas
      set(page, gen::kLogMaxCq, identity.quotas.log_max_cq);
      set(page, gen::kLogMaxMkey, identity.quotas.log_max_mkey);
      set(page, gen::kLogMaxSrq, identity.quotas.log_max_srq);
      set(page, gen::kLogMaxEq, log_max_eq(identity));
      set(page, gen::kMaxNumEqs, max_num_eqs(identity));
      set(page, gen::kDeviceMemory, identity.memic.bytes != 0 || identity.sw_icm);
      set(page, gen::kGeneralObjTypesLow, (identity.var.bytes != 0 ? 1u << kObjTypeVirtioNetQueue : 0) |
                                              (identity.sw_icm ? 1u << kObjTypeSwIcm : 0));
      if (is_eswitch_manager(identity)) {
        // The PF manages the embedded switch in legacy mode, as a passed-through ConnectX PF does:
        // mlx5_core builds its eswitch (devlink shows the mode) and keeps its MACs in the MPFS L2
        // table. No LAG (lag_master 0). Its eswitch caps (types 8 and 9) offer no FDB.
        set(page, gen::kVportGroupManager, 1);
        set(page, gen::kEswitchManager, 1);
        set(page, gen::kLogMaxL2Table, kLogMaxL2Table);
      }
      return;
    case CapType::kEthernetOffloads:
      fill(page, kEthernetCaps);
      return;
    case CapType::kAtomic:
      fill(page, kAtomicCaps);
      return;
    case CapType::kOdp:
      fill(page, kOdpCaps);
      return;
    case CapType::kRoce:
      fill(page, kRoceCaps);
      return;
    case CapType::kFlowTable:
      fill(page, kFlowTableCaps);
      for (uint32_t properties : {ft::kNicReceive, ft::kNicTransmit}) {
        fill(page.subspan(properties), kFlowTableProperties);
        for (uint32_t bit : ft::kMatchedFields) {  // what frame::match_key gives a frame
          page[properties + ft::kFtFieldSupport + bit / 8] |= uint8_t(0x80u >> (bit % 8));
          page[properties + ft::kFtFieldBitmaskSupport + bit / 8] |= uint8_t(0x80u >> (bit % 8));
        }
      }
      set(page.subspan(ft::kNicReceive), ft::kDecap, 1);
      set(page.subspan(ft::kNicReceive), ft::kReformatL3TunnelToL2, 1);
      set(page.subspan(ft::kNicTransmit), ft::kReformatL2ToL3Tunnel, 1);
      return;
    case CapType::kDeviceMemory:
      fill_device_memory(identity, page);
      return;
    case CapType::kVirtioEmulation:
      if (identity.var.bytes == 0) return;
      set(page, virtio::kEventMode, 0);  // both 0: no virtio queue can be created
      set(page, virtio::kVirtioQueueType, 0);
      set(page, virtio::kLogDoorbellStride, kLogVarStride);
      set(page, virtio::kLogDoorbellBarSize, uint32_t(std::countr_zero(identity.var.bytes / kVarPageBytes)));
      set(page, virtio::kDoorbellBarOffsetHigh, uint32_t(identity.var.bar_offset >> 32));
      set(page, virtio::kDoorbellBarOffsetLow, uint32_t(identity.var.bar_offset));
      return;
    case CapType::kGeneral2:
      fill(page, kGeneral2Caps);
      return;
    case CapType::kQos:
      fill(page, kQosCaps);
      return;
    case CapType::kEswitchFlowTable:  // all zero: no FDB or ACL tables, encap mode none, no SW FDB
    case CapType::kEswitch:           // all zero: no VLAN strip/insert, no metadata, no ECPF
      return;
    default:
      return;
  }
}

void fill_max(const FunctionIdentity& identity, CapType type, std::span<uint8_t> page) {
  fill_every_function(identity, type, page);
  if (identity.sw_icm) fill_software_steering(type, page);
}

}  // namespace

bool is_eswitch_manager(const FunctionIdentity& identity) { return !identity.is_vf; }

uint32_t cap_struct_bytes(const FunctionIdentity& identity, uint16_t type) {
  switch (CapType(type)) {
    case CapType::kEswitchFlowTable: return is_eswitch_manager(identity) ? kEswitchFlowTableBytes : 0;
    case CapType::kEswitch: return is_eswitch_manager(identity) ? kEswitchBytes : 0;
    case CapType::kGeneral: return kGeneralBytes;
    case CapType::kEthernetOffloads: return kEthernetBytes;
    case CapType::kAtomic: return kAtomicBytes;
    case CapType::kOdp: return kOdpBytes;
    case CapType::kRoce: return kRoceBytes;
    case CapType::kFlowTable: return kFlowTableBytes;
    case CapType::kDeviceMemory: return kDeviceMemoryBytes;
    case CapType::kVirtioEmulation: return kVirtioEmulationBytes;
    case CapType::kGeneral2: return kGeneral2Bytes;
    case CapType::kQos: return kQosBytes;
    default: return 0;  // the rest are never offered
  }
}

uint32_t max_num_eqs(const FunctionIdentity& identity) {
  // One completion EQ per MSI-X vector plus the control EQs; the driver never needs more.
  return std::min<uint32_t>(std::max<uint32_t>(identity.msix_vectors, 1) + kControlEqs, 0xffff);
}

uint32_t log_max_eq(const FunctionIdentity& identity) {
  const uint32_t needed = uint32_t(std::bit_width(max_num_eqs(identity) - 1));  // ceil(log2)
  return std::min<uint32_t>(std::max(needed, kMinLogMaxEq), gen::kLogMaxEq.mask());
}

bool build_cap_page(const FunctionIdentity& identity, const HcaCapSettings& cur, uint16_t type, CapMode mode,
                    std::span<uint8_t> page) {
  const uint32_t bytes = cap_struct_bytes(identity, type);
  if (bytes == 0 || page.size() < bytes) return false;
  page = page.first(bytes);
  std::fill(page.begin(), page.end(), 0);
  fill_max(identity, CapType(type), page);
  if (mode == CapMode::kCur) {
    for (const SettableField& s : kSettable)
      if (uint16_t(s.type) == type && s.value != nullptr) set(page, s.field, cur.*s.value);
  }
  return true;
}

uint16_t apply_set_hca_cap(const FunctionIdentity& identity, HcaCapSettings& cur, uint16_t type,
                           std::span<const uint8_t> page) {
  uint8_t max_page[kCapUnionBytes];
  if (!build_cap_page(identity, cur, type, CapMode::kMax, max_page)) return kSettableCheckBase - 1;
  // Validate every field first, then store: a refused SET leaves `cur` untouched.
  for (uint16_t i = 0; i < std::size(kSettable); ++i) {
    const SettableField& s = kSettable[i];
    if (uint16_t(s.type) != type) continue;
    const uint32_t value = get(page, s.field), max = get(max_page, s.field);
    bool ok = false;
    switch (s.kind) {
      case Settable::kLimit: ok = value <= max; break;
      case Settable::kFlag: ok = value == 0 || max == 1; break;
      case Settable::kSubset: ok = (value & ~max) == 0; break;
    }
    if (!ok) return uint16_t(kSettableCheckBase + i);
  }
  for (const SettableField& s : kSettable)
    if (uint16_t(s.type) == type && s.value != nullptr) cur.*s.value = get(page, s.field);
  return 0;
}

}  // namespace hcaemu::model
