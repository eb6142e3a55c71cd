#pragma once
// The Ethernet objects a function creates through firmware/eth.cpp (mlx5-device-bringup.md section 4.4):
// TIS, TIR, RQT, RQ, SQ, NIC flow tables / groups / entries and flow counters. Plain data, held per
// function in FunctionContext::eth; references between them (SQ -> CQ/TIS, RQ -> CQ, RQT -> RQs,
// TIR -> RQT/RQ, flow entry -> TIR/flow table/counter) are counted, so nothing in use can be
// destroyed and no reference dangles. The data path (eth/queues.cpp) works on the same structs.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/prm/bits.h"
#include "model/objects/resources.h"
#include "model/steering/modify_header.h"
#include "model/steering/ste_v1.h"
#include "model/objects/object_table.h"
#include "model/queues/page_list.h"

namespace hcaemu::model {

class CommandTable;
void register_flow_commands(CommandTable& table);  // firmware/eth_flow.cpp, called by register_eth_commands

// RQ and SQ states (rqc.state / sqc.state; MODIFY_RQ/MODIFY_SQ carry current and next state).
enum class WqState : uint8_t { kReset = 0, kReady = 1, kError = 3 };
const char* wq_state_name(WqState state);

namespace wq_type {
inline constexpr uint8_t kLinkedList = 0, kCyclic = 1, kLinkedListStriding = 2, kCyclicStriding = 3;
}

// SQs and RQs live in the QPN number space of the function (the ctrl segment of a send WQE names
// an SQ exactly as it names a QP). They are numbered from ranges above the QPs, so a doorbell's
// number says which kind it is; QPs must stay below kFirstSqn.
inline constexpr uint32_t kFirstSqn = 0xc00000, kLastSqn = 0xdfffff;
inline constexpr uint32_t kFirstRqn = 0xe00000, kLastRqn = 0xffffff;
static_assert(kLastQpn < kFirstSqn && kLastSqn < kFirstRqn, "QP, SQ and RQ numbers never overlap");
inline constexpr uint32_t kLogMaxWqSize = 16;  // entries of an RQ/SQ ring (log2)

// The `wq` context shared by RQ and SQ (mlx5-layouts.md `wq`).
struct WorkQueueRing {
  uint8_t type = wq_type::kCyclic;
  uint32_t pd = 0;
  uint32_t uar_page = 0;
  uint64_t dbr_addr = 0;        // RQ: dword0 = receive counter; SQ: dword1 = send counter (WQEBBs)
  std::shared_ptr<const void> dbr_umem;  // the UMEM the record is in (DevX), held while the queue lives
  uint32_t log_stride = 6;      // absolute: bytes per entry = 1 << log_stride
  uint32_t log_size = 0;        // entries
  PageList buffer;

  uint32_t entries() const { return 1u << log_size; }
  uint64_t bytes() const { return uint64_t(entries()) << log_stride; }
};

// sqc/rqc.user_index: what the queue's CQEs name it by (cqe_version 1; a raw packet QP's SQ and RQ
// carry libmlx5's uidx of the QP, mlx5e leaves it 0).
inline constexpr Field kWqUserIndex{0x04, 23, 0};

namespace sqc {
inline constexpr Field kRateLimitIndex{0x1c, 15, 0};  // sqc.packet_pacing_rate_limit_index (0: no limit)
inline constexpr Field kQosQueueGroupId{0x20, 15, 0};  // sqc.qos_queue_group_id (0: none)
}

struct EthSendQueue {
  std::array<uint8_t, 0xf0> context{};  // sqc as created/modified (QUERY_SQ), state kept current
  WqState state = WqState::kReset;
  uint32_t cqn = 0;
  uint32_t tisn = 0;                    // 0 when tis_lst_sz is 0
  WorkQueueRing wq;
  uint32_t consumer = 0;                // WQEBBs consumed (16-bit counter semantics)
  uint64_t paced_until_ps = 0;          // packet pacing: the model time its next frame may leave
  // Statistics.
  uint64_t wqes = 0, frames = 0, bytes = 0, errors = 0;
};

namespace rqc {
inline constexpr Field kCounterSetId{0x0c, 31, 24};  // rqc.counter_set_id: 0, or a queue counter set
}

struct EthReceiveQueue {
  std::array<uint8_t, 0xf0> context{};  // rqc (QUERY_RQ)
  WqState state = WqState::kReset;
  uint32_t cqn = 0;
  WorkQueueRing wq;
  uint32_t consumer = 0;                // WQEs consumed (16-bit counter semantics)
  uint32_t refs = 0;                    // RQTs and TIRs pointing here
  // Statistics.
  uint64_t frames = 0, bytes = 0, no_wqe = 0, too_big = 0;
};

struct TransportInterfaceSend {
  std::array<uint8_t, 0xa0> context{};  // tisc
  uint32_t td = 0;
  uint32_t refs = 0;                    // SQs
};

struct RqTable {
  std::array<uint8_t, 0xf0> context{};  // rqtc without its list
  uint32_t max_size = 0;
  std::vector<uint32_t> rqns;           // rqt_actual_size entries
  uint32_t refs = 0;                    // TIRs
};

enum class TirDispatch : uint8_t { kDirect = 0, kIndirect = 1 };

// tirc.self_lb_block: bit 0 unicast, bit 1 multicast (judged on local loopback, eth/queues.cpp).
inline constexpr Field kTirSelfLbBlock{0x24, 25, 24};

struct TransportInterfaceReceive {
  std::array<uint8_t, 0xf0> context{};  // tirc (QUERY_TIR)
  TirDispatch dispatch = TirDispatch::kDirect;
  uint32_t inline_rqn = 0;              // direct
  uint32_t rqt = 0;                     // indirect
  uint32_t td = 0;
  uint32_t refs = 0;                    // flow entries forwarding here
};

// Flow steering (NIC RX/TX and RDMA tables; the model keeps the FDB/ACL ones as bookkeeping).
namespace flow_dest {
inline constexpr uint8_t kVport = 0x0, kFlowTable = 0x1, kTir = 0x2, kQp = 0x3;
}
namespace flow_action {
inline constexpr uint32_t kAllow = 0x1, kDrop = 0x2, kForward = 0x4, kCount = 0x8, kPacketReformat = 0x10, kDecap = 0x20,
                           kModifyHeader = 0x40;
}
namespace flow_table_type {
inline constexpr uint8_t kNicRx = 0, kNicTx = 1, kEswEgressAcl = 2, kEswIngressAcl = 3, kFdb = 4, kRdmaRx = 7, kRdmaTx = 8;
}
inline constexpr uint32_t kMatchParamSize = 0x200;  // fte_match_param
inline constexpr uint32_t kLogMaxFlowTableSize = 24;

struct FlowDestination {
  uint8_t type = 0;
  uint32_t id = 0;
};

// A packet reformat context (ALLOC_PACKET_REFORMAT_CONTEXT): what a flow entry's reformat action
// does to a frame. L2_TO_L2_TUNNEL puts `data` (the tunnel's Ethernet, IP, UDP and tunnel headers)
// before the frame on NIC TX (eth/queues.cpp encapsulate); L2_TO_L3_TUNNEL puts them before its IP
// packet; L3_TUNNEL_TO_L2, on NIC RX, takes the inner IP packet out of its tunnel and puts `data`
// (an Ethernet header) before it. (An L2 tunnel's removal needs no context: the DECAP action.)
namespace reformat_type {
inline constexpr uint8_t kL2ToL2Tunnel = 0x2;
inline constexpr uint8_t kL3TunnelToL2 = 0x3;
inline constexpr uint8_t kL2ToL3Tunnel = 0x4;  // the frame's Ethernet header goes first
inline constexpr bool on_transmit(uint8_t type) { return type == kL2ToL2Tunnel || type == kL2ToL3Tunnel; }
}
inline constexpr uint32_t kMaxEncapHeaderSize = 128;  // flow_table_nic_cap.max_encap_header_size
struct PacketReformat {
  uint8_t type = 0;
  std::vector<uint8_t> data;
  uint32_t refs = 0;  // flow entries using it
};

// A modify-header context (ALLOC_MODIFY_HEADER_CONTEXT): the header fields a flow entry's MOD_HDR
// action rewrites, on the table type it was made for (NIC RX or TX).
struct ModifyHeader {
  uint8_t table_type = 0;
  std::vector<steering::ModifyAction> actions;
  uint32_t refs = 0;  // flow entries using it
};

struct FlowEntry {
  uint32_t group = 0;
  uint32_t action = 0;
  uint32_t flow_tag = 0;
  uint32_t packet_reformat = 0;               // with the kPacketReformat action
  uint32_t modify_header = 0;                 // with the kModifyHeader action
  std::vector<uint8_t> match_value;           // fte_match_param (0x200)
  std::vector<FlowDestination> destinations;  // forward destinations
  std::vector<uint32_t> counters;             // flow counter IDs
  std::vector<uint8_t> raw;                   // flow_context + destination list as set (QUERY_FLOW_TABLE_ENTRY)
};

// A table's entries by group and masked match value (flow_index.cpp), so that steering a frame
// costs one hash lookup per group instead of a scan of every entry: a guest may install 2^20.
struct FlowGroupIndex {
  uint32_t group = 0;
  std::unordered_map<std::string, std::set<uint32_t>> by_value;  // masked match value -> flow indices
};

struct FlowTable {
  uint8_t type = 0;
  uint8_t level = 0;
  uint32_t log_size = 0;
  uint8_t miss_action = 0;                    // 0 default, 1 go to table_miss_id
  uint32_t miss_table = 0;
  uint32_t vport = 0;
  bool other_vport = false;
  bool sw_owner = false;                      // mlx5 DR's: steered by the entries at icm_root
  uint64_t icm_root = 0;                      // steering ICM address of its start anchor
  std::array<uint8_t, 0x28> context{};        // flow_table_context (QUERY_FLOW_TABLE)
  std::map<uint32_t, FlowEntry> entries;      // by flow index
  std::map<uint32_t, FlowGroupIndex> index;   // by the group's start index: groups in flow index order
  uint32_t groups = 0;
  uint32_t refs = 0;                          // miss references and entries forwarding here
};

struct FlowGroup {
  uint32_t table = 0;
  uint32_t start = 0, end = 0;                // flow index range, inclusive
  uint8_t criteria_enable = 0;
  std::vector<uint8_t> criteria;              // fte_match_param mask (0x200)
  uint32_t entries = 0;
};

// A flow sampler (mlx5 DR): every `ratio`-th frame that reaches it is copied into the sample table,
// and every frame goes on to the default table (firmware tables both; they are counted in order, so
// a closed run samples the same frames every time).
struct FlowSampler {
  uint8_t table_type = 0;
  uint32_t ratio = 1;
  uint32_t sample_table = 0, default_table = 0;
  uint64_t seen = 0;
};

struct FlowCounter {
  uint64_t packets = 0, octets = 0;
  uint32_t refs = 0;                          // flow entries counting here
};

struct EthObjects {
  ObjectTable<TransportInterfaceSend> tises{1, 0xffffff, 1u << 16};
  ObjectTable<TransportInterfaceReceive> tirs{1, 0xffffff, 1u << 16};
  ObjectTable<RqTable> rqts{1, 0xffffff, 1u << 16};
  ObjectTable<EthReceiveQueue> rqs{kFirstRqn, kLastRqn, 1u << 16};
  ObjectTable<EthSendQueue> sqs{kFirstSqn, kLastSqn, 1u << 16};
  ObjectTable<FlowTable> flow_tables{1, 0xffffff, 1u << 16};
  ObjectTable<FlowGroup> flow_groups{1, 0xffffff, 1u << 12};  // firmware/eth_flow.cpp says why
  ObjectTable<FlowCounter> flow_counters{1, 0xffffff, 1u << 16};
  ObjectTable<PacketReformat> packet_reformats{1, 0xffffff, 1u << 16};
  ObjectTable<FlowSampler> flow_samplers{1, 0xffffff, 1u << 12};
  ObjectTable<ModifyHeader> modify_headers{1, 0xffffff, 1u << 16};
  // MATCH_DEFINER objects (mlx5 DR's large matchers): an entry's lookup type names one by its ID in
  // one byte, above the fixed lookup types (steering/ste_v1.h).
  ObjectTable<steering::MatchDefinerView> match_definers{steering::kFirstDefinerIndex, 0xfe, 0xff};
  // Root table per table type (SET_FLOW_TABLE_ROOT); 0 = none set (lowest level table is used).
  std::map<uint8_t, uint32_t> roots;

  void clear() {
    tises.clear();
    tirs.clear();
    rqts.clear();
    rqs.clear();
    sqs.clear();
    flow_tables.clear();
    flow_groups.clear();
    flow_counters.clear();
    packet_reformats.clear();
    flow_samplers.clear();
    modify_headers.clear();
    match_definers.clear();
    roots.clear();
  }
  // Objects a user context created that are still alive (raw packet and RSS QPs' TIS, SQ, RQ, TIR,
  // RQT; mlx5 DR's flow tables, groups, counters, packet reformat and modify-header contexts).
  size_t owned_by(uint16_t uid) const {
    return tises.owned_by(uid) + tirs.owned_by(uid) + rqts.owned_by(uid) + rqs.owned_by(uid) + sqs.owned_by(uid) +
           flow_counters.owned_by(uid) + flow_tables.owned_by(uid) + flow_groups.owned_by(uid) +
           packet_reformats.owned_by(uid) + flow_samplers.owned_by(uid) + modify_headers.owned_by(uid) +
           match_definers.owned_by(uid);
  }
};

}  // namespace hcaemu::model
