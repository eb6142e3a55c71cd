#pragma once
// The qpc fields the model reads, one list for the firmware's QP commands (firmware/qp.cpp) and the RDMA
// engine (rdma_*.cpp): offsets inside the qpc (mlx5-layouts.md `qpc`; the primary address path
// "ads" starts at qpc + 0x18; mlx5-device-bringup.md section 6.4).
#include <cstdint>

#include "model/prm/bits.h"

namespace hcaemu::model::qpc {

inline constexpr Field kState{0x00, 31, 28};
inline constexpr Field kLagTxPortAffinity{0x00, 27, 24};
inline constexpr Field kPmState{0x00, 12, 11};
inline constexpr Field kSt{0x00, 23, 16};
inline constexpr Field kBlockLbMc{0x04, 30, 30};    // the QP takes no multicast its own function sent
inline constexpr Field kDrainSigerr{0x04, 26, 26};  // signature pipelining (rdma/signature.cpp)
inline constexpr Field kPd{0x04, 23, 0};
inline constexpr Field kMtu{0x08, 31, 29};
inline constexpr Field kLogMsgMax{0x08, 28, 24};
inline constexpr Field kLogRqSize{0x08, 22, 19};
inline constexpr Field kLogRqStride{0x08, 18, 16};
inline constexpr Field kNoSq{0x08, 15, 15};
inline constexpr Field kLogSqSize{0x08, 14, 11};
inline constexpr Field kCounterSetId{0x0c, 31, 24};  // queue counter set (objects/queue_counters.h)
inline constexpr Field kUarPage{0x0c, 23, 0};
inline constexpr Field kUserIndex{0x10, 23, 0};     // cqe_version 1: what the QP's CQEs name it by
inline constexpr Field kLogPageSize{0x14, 28, 24};
inline constexpr Field kRemoteQpn{0x14, 23, 0};
inline constexpr Field kForceLoopback{0x18, 31, 31};  // ads.fl: the QP's packets stay in the function
inline constexpr Field kPkeyIndex{0x18, 15, 0};      // ads.pkey_index
inline constexpr Field kAckTimeout{0x20, 31, 27};    // ads.ack_timeout
inline constexpr Field kSrcAddrIndex{0x20, 23, 16};  // ads.src_addr_index
inline constexpr Field kHopLimit{0x20, 7, 0};
inline constexpr Field kTclass{0x24, 27, 20};
inline constexpr Field kFlowLabel{0x24, 19, 0};
inline constexpr uint32_t kRgid = 0x28;              // ads.rgid_rip, 16 bytes
inline constexpr Field kDscp{0x38, 21, 16};
inline constexpr Field kUdpSport{0x38, 15, 0};
inline constexpr Field kVhcaPortNum{0x3c, 23, 16};   // ads.vhca_port_num
inline constexpr Field kRmacHigh{0x3c, 15, 0};
inline constexpr Field kRmacLow{0x40, 31, 0};
inline constexpr Field kLogAckReqFreq{0x70, 31, 28};
inline constexpr Field kLogSraMax{0x70, 23, 21};
inline constexpr Field kRetryCount{0x70, 18, 16};
inline constexpr Field kRnrRetry{0x70, 15, 13};
inline constexpr Field kNextSendPsn{0x78, 23, 0};
inline constexpr Field kLogNumDciStreamChannels{0x7c, 28, 24};  // DCI streams (rdma/dc.cpp)
inline constexpr Field kCqnSnd{0x7c, 23, 0};
inline constexpr Field kLogNumDciErroredStreams{0x80, 28, 24};
inline constexpr Field kLogRraMax{0x90, 23, 21};
inline constexpr Field kAtomicMode{0x90, 19, 16};
inline constexpr Field kRre{0x90, 15, 15};
inline constexpr Field kRwe{0x90, 14, 14};
inline constexpr Field kRae{0x90, 13, 13};
inline constexpr Field kPageOffset{0x90, 11, 6};
inline constexpr Field kMinRnrNak{0x94, 28, 24};
inline constexpr Field kNextRcvPsn{0x94, 23, 0};
inline constexpr Field kXrcd{0x98, 23, 0};
inline constexpr Field kCqnRcv{0x9c, 23, 0};
inline constexpr uint32_t kDbrAddr = 0xa0;
inline constexpr Field kQkey{0xa8, 31, 0};
inline constexpr Field kRqType{0xac, 26, 24};
inline constexpr Field kSrqn{0xac, 23, 0};
inline constexpr Field kHwSqWqebbCounter{0xb4, 31, 16};  // QUERY_QP: the first WQEBB not executed
inline constexpr Field kDbrUmemValid{0xd0, 28, 28};  // DevX: dbr_addr is an offset in UMEM dbr_umem_id
inline constexpr Field kDbrUmemId{0xe4, 31, 0};

}  // namespace hcaemu::model::qpc
