// Flow samplers (general object type FLOW_SAMPLER, 0x20), as mlx5 DR creates them for
// mlx5dv_dr_action_create_flow_sampler: after the general object header, flow_sampler {
// modify_field_select (64 bits), table_type [31:24] / level [23:16] / ignore_flow_level [0] at
// 0x18, sample_ratio at 0x1c, sample_table_id at 0x20 and default_table_id at 0x24 (24 bits each),
// sw_steering_icm_address_rx/_tx (64 bits) at 0x28 and 0x30 }. Both tables are the sender's own, of
// the sampler's table type, the sample table a firmware one (DR's termination table: counters and
// TIRs), the default table either kind (DR names its software table there); QUERY answers the ICM address software steering
// entries name the sampler by (steering/terminals.h). Only with FunctionIdentity::sw_icm.
#include "model/eth/objects.h"
#include "model/firmware/firmware.h"
#include "model/firmware/general_object_types.h"
#include "model/firmware/resource_helpers.h"
#include "model/steering/terminals.h"

namespace hcaemu::model {
namespace {

using namespace fw;

constexpr uint32_t kSampler = 0x10, kSamplerBytes = 0x28;  // after the general object header
constexpr Field kObjId{0x08, 31, 0};
constexpr Field kTableType{kSampler + 0x08, 31, 24};
constexpr Field kSampleRatio{kSampler + 0x0c, 31, 0};
constexpr Field kSampleTable{kSampler + 0x10, 23, 0};
constexpr Field kDefaultTable{kSampler + 0x14, 23, 0};
constexpr uint32_t kIcmRx = kSampler + 0x18, kIcmTx = kSampler + 0x20;
constexpr uint16_t kCheckSamplerTable = 0x53;
constexpr uint32_t kLogMaxFlowSamplers = 12;

FlowSampler* named_sampler(CommandCall& call, uint32_t out_bytes) {
  return named_steering_object(call, call.function().eth.flow_samplers, out_bytes);
}

// A table the sender may point at, of the sampler's type (a firmware one when `firmware`).
bool usable_table(CommandCall& call, uint32_t id, uint8_t type, bool firmware) {
  auto& tables = call.function().eth.flow_tables;
  const FlowTable* table = tables.find(id);
  return table != nullptr && !(firmware && table->sw_owner) && table->type == type && acts_for(call, tables.owner(id));
}

void reference(FunctionContext& f, const FlowSampler& sampler, int delta) {
  for (uint32_t id : {sampler.sample_table, sampler.default_table})
    if (FlowTable* table = f.eth.flow_tables.find(id)) table->refs += uint32_t(delta);
}

}  // namespace

void create_flow_sampler(CommandCall& call) {
  if (!offers_software_steering(call) || !start(call, kSampler + kSamplerBytes)) return;
  FunctionContext& f = call.function();
  FlowSampler sampler;
  sampler.table_type = uint8_t(get(call.in(), kTableType));
  sampler.ratio = get(call.in(), kSampleRatio);
  sampler.sample_table = get(call.in(), kSampleTable);
  sampler.default_table = get(call.in(), kDefaultTable);
  // NIC RX only: mlx5 DR samples on NIC RX and FDB, and hcaemu's functions steer no FDB.
  if (!check(call, sampler.table_type == flow_table_type::kNicRx && sampler.ratio != 0, kCheckParameter) ||
      !check(call, usable_table(call, sampler.sample_table, sampler.table_type, true) &&
                       usable_table(call, sampler.default_table, sampler.table_type, false),
             kCheckSamplerTable, CommandStatus::kBadResource))
    return;
  const uint32_t id = insert(call, f.eth.flow_samplers, kLogMaxFlowSamplers, sampler);
  if (id == 0) return;
  reference(f, sampler, +1);
  set(call.out(), kObjId, id);
}

void query_flow_sampler(CommandCall& call) {
  const FlowSampler* sampler = named_sampler(call, kSampler + kSamplerBytes);
  if (sampler == nullptr) return;
  const uint32_t id = get(call.in(), kObjId);
  set(call.out(), kObjId, id);
  set(call.out(), kTableType, sampler->table_type);
  set(call.out(), kSampleRatio, sampler->ratio);
  set(call.out(), kSampleTable, sampler->sample_table);
  set(call.out(), kDefaultTable, sampler->default_table);
  set64(call.out(), kIcmRx, steering::sampler_address(id));
  set64(call.out(), kIcmTx, steering::sampler_address(id));
}

void modify_flow_sampler(CommandCall& call) { refuse_steering_modify(call, call.function().eth.flow_samplers); }

void destroy_flow_sampler(CommandCall& call) {
  const FlowSampler* sampler = named_sampler(call, mbox::kHeaderSize);
  if (sampler == nullptr) return;
  reference(call.function(), *sampler, -1);
  call.function().eth.flow_samplers.erase(get(call.in(), kObjId));
}

}  // namespace hcaemu::model
