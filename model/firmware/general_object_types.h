#pragma once
// Handlers of the general object types that have a file of their own; firmware/general_objects.cpp
// routes CREATE / MODIFY / QUERY / DESTROY_GENERAL_OBJECT to them by the header's obj_type.
#include "model/firmware/resource_helpers.h"

namespace hcaemu::model {

// obj_type SCHEDULING_ELEMENT (firmware/scheduling_elements.cpp).
void create_scheduling_element(CommandCall& call);
void modify_scheduling_element(CommandCall& call);
void query_scheduling_element(CommandCall& call);
void destroy_scheduling_element(CommandCall& call);

// obj_type AV_QP_MAPPING (firmware/av_qp_mappings.cpp).
void create_av_qp_mapping(CommandCall& call);
void modify_av_qp_mapping(CommandCall& call);
void query_av_qp_mapping(CommandCall& call);
void destroy_av_qp_mapping(CommandCall& call);

// Whether the function offers mlx5 DR software steering (FunctionIdentity::sw_icm), whose object
// types (SW_ICM, FLOW_SAMPLER, MATCH_DEFINER) a function without it refuses as types it lacks
// (firmware/sw_icm.cpp).
bool offers_software_steering(CommandCall& call);

// The software-steering object a QUERY, MODIFY or DESTROY names by the header's obj_id, the
// sender's own; nullptr when the command has failed instead.
template <typename T>
T* named_steering_object(CommandCall& call, ObjectTable<T>& table, uint32_t out_bytes) {
  if (!offers_software_steering(call) || !fw::start(call, mbox::kHeaderSize, out_bytes)) return nullptr;
  return fw::lookup_owned(call, table, get(call.in(), Field{0x08, 31, 0}), fw::kCheckLookup);
}

// MODIFY of a software-steering object: none of its fields may change once created.
template <typename T>
void refuse_steering_modify(CommandCall& call, ObjectTable<T>& table) {
  if (named_steering_object(call, table, mbox::kHeaderSize) != nullptr)
    call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), fw::kCheckParameter));
}

// obj_type SW_ICM (firmware/sw_icm.cpp).
void create_sw_icm(CommandCall& call);
void modify_sw_icm(CommandCall& call);
void query_sw_icm(CommandCall& call);
void destroy_sw_icm(CommandCall& call);

// obj_type FLOW_SAMPLER (firmware/flow_sampler.cpp).
void create_flow_sampler(CommandCall& call);
void modify_flow_sampler(CommandCall& call);
void query_flow_sampler(CommandCall& call);
void destroy_flow_sampler(CommandCall& call);

// obj_type MATCH_DEFINER (firmware/match_definer.cpp).
void create_match_definer(CommandCall& call);
void modify_match_definer(CommandCall& call);
void query_match_definer(CommandCall& call);
void destroy_match_definer(CommandCall& call);

}  // namespace hcaemu::model
