// General objects (CREATE / MODIFY / QUERY / DESTROY_GENERAL_OBJECT): one set of commands for many
// object types, told apart by the obj_type of the header. The device offers these types:
// - reserved QP numbers (here): libmlx5's mlx5dv_reserved_qpn_alloc takes a block of QP numbers
//   through DevX and hands them out one by one, so a process can name a QP number to its peers
//   (rdma_cm's DC connections) before any QP has it. No QP is created at a reserved number while
//   the block is held (objects/object_table.h hold_block);
// - NIC scheduling elements (firmware/scheduling_elements.cpp);
// - address-to-QP mappings (firmware/av_qp_mappings.cpp);
// - steering ICM ranges, with FunctionIdentity::sw_icm only (firmware/sw_icm.cpp).
// Any other obj_type is refused as a ConnectX refuses a type it lacks (BAD_PARAMETER), and its caps
// bit (general_obj_types) stays clear.
#include <optional>

#include "model/firmware/firmware.h"
#include "model/firmware/general_object_types.h"
#include "model/firmware/hca_caps.h"
#include "model/firmware/resource_helpers.h"

namespace hcaemu::model {
namespace {

using namespace fw;

constexpr uint16_t kCreateGeneralObject = 0xa00, kModifyGeneralObject = 0xa01, kQueryGeneralObject = 0xa02,
                   kDestroyGeneralObject = 0xa03;
// general_obj_in_cmd_hdr: obj_type where other commands have op_mod; general_obj_out_cmd_hdr.
constexpr Field kObjType{0x04, 15, 0};
constexpr Field kObjId{0x08, 31, 0};
constexpr Field kLogObjRange{0x0c, 28, 24};
constexpr Field kOutObjId{0x08, 31, 0};
constexpr uint16_t kCheckObjType = 0x30, kCheckRange = 0x31;

bool refuse_type(CommandCall& call) {
  call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), kCheckObjType));
  return false;
}

// The block a destroy, query or modify names (route() checked the header's size), if the sender
// may act on it (a user context only on its own); nothing, the command failed, otherwise.
std::optional<uint32_t> named_block(CommandCall& call) {
  const uint32_t first = get(call.in(), kObjId);
  const auto& qps = call.function().resources.qps;
  if (!qps.holds_block(first) || !acts_for(call, qps.block_owner(first))) {
    call.fail(CommandStatus::kBadResource, syndrome(call.opcode(), kCheckLookup));
    return std::nullopt;
  }
  return first;
}

void create_reserved_qpn(CommandCall& call) {
  const uint32_t log_range = get(call.in(), kLogObjRange);
  if (log_range < kLogReservedQpnGranularity || log_range > kLogReservedQpnMaxAlloc) {
    call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), kCheckRange));
    return;
  }
  auto& qps = call.function().resources.qps;
  const uint32_t first = qps.held_ids() + (uint64_t(1) << log_range) <= (uint64_t(1) << kLogMaxNumReservedQpn)
                             ? qps.hold_block(log_range, call.uid())
                             : 0;
  if (first == 0) {
    call.fail(CommandStatus::kExceedLimit, syndrome(call.opcode(), kCheckFull));
    return;
  }
  set(call.out(), kOutObjId, first);
}

void destroy_reserved_qpn(CommandCall& call) {
  if (auto first = named_block(call)) call.function().resources.qps.release_block(*first);
}

// A reserved block has nothing to report or change beyond its ID.
void query_reserved_qpn(CommandCall& call) {
  if (auto first = named_block(call)) set(call.out(), kOutObjId, *first);
}

void modify_reserved_qpn(CommandCall& call) {
  if (named_block(call)) call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), kCheckParameter));
}

struct TypeHandlers {
  uint16_t obj_type;
  void (*create)(CommandCall&);
  void (*modify)(CommandCall&);
  void (*query)(CommandCall&);
  void (*destroy)(CommandCall&);
};

constexpr TypeHandlers kTypes[] = {
    {kObjTypeReservedQpn, create_reserved_qpn, modify_reserved_qpn, query_reserved_qpn, destroy_reserved_qpn},
    {kObjTypeSchedulingElement, create_scheduling_element, modify_scheduling_element, query_scheduling_element,
     destroy_scheduling_element},
    {kObjTypeAvQpMapping, create_av_qp_mapping, modify_av_qp_mapping, query_av_qp_mapping, destroy_av_qp_mapping},
    {kObjTypeSwIcm, create_sw_icm, modify_sw_icm, query_sw_icm, destroy_sw_icm},
    {kObjTypeFlowSampler, create_flow_sampler, modify_flow_sampler, query_flow_sampler, destroy_flow_sampler},
    {kObjTypeMatchDefiner, create_match_definer, modify_match_definer, query_match_definer, destroy_match_definer},
};

// Runs the handler `pick` chooses for the command's obj_type; an obj_type not offered is refused.
template <typename Pick>
void route(CommandCall& call, Pick pick) {
  if (!start(call, mbox::kHeaderSize, mbox::kHeaderSize)) return;
  for (const TypeHandlers& type : kTypes)
    if (get(call.in(), kObjType) == type.obj_type) return pick(type)(call);
  refuse_type(call);
}

void create_general_object(CommandCall& call) { route(call, [](const TypeHandlers& t) { return t.create; }); }
void modify_general_object(CommandCall& call) { route(call, [](const TypeHandlers& t) { return t.modify; }); }
void query_general_object(CommandCall& call) { route(call, [](const TypeHandlers& t) { return t.query; }); }
void destroy_general_object(CommandCall& call) { route(call, [](const TypeHandlers& t) { return t.destroy; }); }

}  // namespace

void register_general_object_commands(CommandTable& table) {
  table.add(kCreateGeneralObject, "CREATE_GENERAL_OBJECT", create_general_object, Senders::kUser);
  table.add(kModifyGeneralObject, "MODIFY_GENERAL_OBJECT", modify_general_object, Senders::kUser);
  table.add(kQueryGeneralObject, "QUERY_GENERAL_OBJECT", query_general_object, Senders::kUser);
  table.add(kDestroyGeneralObject, "DESTROY_GENERAL_OBJECT", destroy_general_object, Senders::kUser);
}

}  // namespace hcaemu::model
