// Flow steering commands (mlx5-device-bringup.md section 4.4): flow tables, groups, entries, the
// root table of a table type, flow counters, and packet reformat contexts (encapsulation on NIC TX). Layouts: mlx5-layouts.md create_flow_table_in,
// flow_table_context, create_flow_group_in, set_fte_in. Fields of the commands the layouts file
// does not list (destroy/query/modify flow table, destroy flow group, delete/query entry, root,
// counters, the 8-byte destination entries after set_fte_in) follow the same PRM structures:
// table_type at 0x10 [31:24], table_id at 0x14 [23:0], group_id at 0x18, flow_index at 0x20.
#include "model/eth/objects.h"
#include "common/log.h"
#include "model/eth/flow_index.h"
#include "model/firmware/firmware.h"
#include "model/firmware/resource_helpers.h"
#include "model/steering/terminals.h"

namespace hcaemu::model {
namespace {

using fw::check;
using fw::lookup;

constexpr uint16_t kSetFlowTableRoot = 0x92f, kCreateFlowTable = 0x930, kDestroyFlowTable = 0x931;
constexpr uint16_t kQueryFlowTable = 0x932, kCreateFlowGroup = 0x933, kDestroyFlowGroup = 0x934;
constexpr uint16_t kSetFte = 0x936, kQueryFte = 0x937, kDeleteFte = 0x938;
constexpr uint16_t kAllocFlowCounter = 0x939, kDeallocFlowCounter = 0x93a, kQueryFlowCounter = 0x93b;
constexpr uint16_t kModifyFlowTable = 0x93c, kAllocPacketReformat = 0x93d, kDeallocPacketReformat = 0x93e;
constexpr uint16_t kSyncSteering = 0xb00;
constexpr uint16_t kAllocModifyHeader = 0x940, kDeallocModifyHeader = 0x941;

enum FlowCheck : uint16_t {
  kCheckTableType = 0x30,
  kCheckTable = 0x31,
  kCheckGroup = 0x32,
  kCheckIndex = 0x33,
  kCheckDestination = 0x34,
  kCheckCounter = 0x35,
  kCheckOverlap = 0x36,
  kCheckMiss = 0x37,
  kCheckReformat = 0x38,
  kCheckSoftwareOwned = 0x39,
  kCheckModifyHeader = 0x3a,
};

// Shared input fields.
constexpr Field kOtherVport{0x08, 31, 31};
constexpr Field kVportNumber{0x08, 15, 0};
constexpr Field kTableType{0x10, 31, 24};
constexpr Field kTableId{0x14, 23, 0};
constexpr Field kGroupId{0x18, 23, 0};      // destroy_flow_group_in
constexpr Field kFlowIndex{0x20, 31, 0};    // set/query/delete_fte_in
constexpr Field kOutObjectId{0x08, 23, 0};  // create_flow_table_out.table_id, create_flow_group_out.group_id

// flow_table_context (at 0x18 in create/modify_flow_table_in).
constexpr uint32_t kTableContext = 0x18, kTableContextSize = 0x28;
constexpr Field kTableMissAction{0x00, 27, 24};
constexpr Field kTableLevel{0x00, 23, 16};
constexpr Field kTableLogSize{0x00, 7, 0};
constexpr Field kTableMissId{0x04, 23, 0};
constexpr uint8_t kMissGoToTable = 1;
constexpr Field kModifyFieldSelect{0x0c, 15, 0};
constexpr uint32_t kModifyMissTable = 0x1;
// Software-owned tables (mlx5 DR): the device walks the steering entries at the root's ICM address
// (steering/ste_v1.h) instead of the table's entries. root_1 serves FDB TX only, which hcaemu lacks.
constexpr Field kTableSwOwner{0x00, 29, 29};
constexpr uint32_t kTableIcmRoot1 = 0x18, kTableIcmRoot0 = 0x20;
constexpr uint32_t kQueryTableOutContext = 0x18;

// create_flow_group_in.
constexpr uint32_t kGroupInSize = 0x400;
constexpr Field kGroupStart{0x1c, 31, 0};
constexpr Field kGroupEnd{0x24, 31, 0};
constexpr Field kGroupCriteriaEnable{0x3c, 7, 0};
constexpr uint32_t kGroupCriteria = 0x40;

// set_fte_in: flow_context at 0x40, destination list right after the fixed input. The running 6.1
// driver sends 0x348 bytes for a one-destination entry, so its flow_context is 0x300 bytes and the
// list starts at 0x340 (mlx5-layouts.md's 0x330 total undercounts execute_aso[4]).
constexpr uint32_t kFteInSize = 0x340, kFlowContext = 0x40, kDestinationList = 0x340, kDestinationSize = 8;
constexpr Field kFteGroup{0x44, 31, 0};
constexpr Field kFteFlowTag{0x48, 23, 0};
constexpr Field kFteAction{0x4c, 15, 0};
constexpr Field kFteDestinationCount{0x50, 23, 0};
constexpr Field kFteCounterCount{0x54, 23, 0};
constexpr Field kFtePacketReformatId{0x58, 31, 0};
constexpr Field kFteModifyHeaderId{0x5c, 31, 0};
constexpr uint32_t kFteMatchValue = 0x80;
constexpr uint32_t kMaxDestinations = 256;
enum FteOpMod : uint16_t { kFteNew = 0, kFteModify = 1 };

// flow counters.
constexpr Field kCounterBulk{0x0c, 7, 0};
constexpr Field kCounterId{0x08, 31, 0};    // alloc out, dealloc in
constexpr Field kQueryCounterCount{0x18, 15, 0};
constexpr Field kQueryCounterClear{0x18, 31, 31};
constexpr Field kQueryCounterId{0x1c, 31, 0};
constexpr uint32_t kCounterStatistics = 0x10, kCounterStatisticsSize = 16;

// alloc_packet_reformat_context_in: packet_reformat_context at 0x1c, its data from 0x22.
constexpr Field kReformatType{0x1c, 31, 24};
constexpr Field kReformatDataSize{0x1c, 9, 0};
constexpr uint32_t kReformatData = 0x22;
constexpr Field kReformatId{0x08, 31, 0};  // alloc out, dealloc in

// alloc_modify_header_context_in: the actions from 0x10, 8 bytes each.
constexpr Field kModifyTableType{0x0c, 31, 24};
constexpr Field kModifyActionCount{0x0c, 7, 0};
constexpr uint32_t kModifyActions = 0x10;
constexpr Field kModifyHeaderId{0x08, 31, 0};  // alloc out, dealloc in

bool known_table_type(uint32_t type) {
  using namespace flow_table_type;
  return type == kNicRx || type == kNicTx || type == kEswEgressAcl || type == kEswIngressAcl || type == kFdb ||
         type == kRdmaRx || type == kRdmaTx;
}

// The table a command names, of the type it names: a process (mlx5 DR through DevX) acts on its
// own tables only, the kernel on any.
FlowTable* table_of(CommandCall& call, uint32_t table_id) {
  FlowTable* table = fw::lookup_owned(call, call.function().eth.flow_tables, table_id, kCheckTable);
  if (table != nullptr && !check(call, table->type == get(call.in(), kTableType), kCheckTableType)) return nullptr;
  return table;
}

FlowTable* table_of(CommandCall& call) { return table_of(call, get(call.in(), kTableId)); }

// A miss target: another table of the same type.
bool check_miss_target(CommandCall& call, uint32_t self, uint8_t type, uint8_t action, uint32_t miss) {
  if (action != kMissGoToTable) return check(call, action == 0, kCheckMiss);
  const FlowTable* target = call.function().eth.flow_tables.find(miss);
  return check(call, target != nullptr && miss != self && target->type == type, kCheckMiss);
}

// A software-owned table: NIC RX or TX of a function that offers software steering, rooted at a
// 64-byte entry.
bool check_software_owned(CommandCall& call, const FlowTable& table) {
  if (!table.sw_owner) return true;
  const bool nic = table.type == flow_table_type::kNicRx || table.type == flow_table_type::kNicTx;
  return check(call, call.function().identity.sw_icm && nic && table.icm_root != 0 && table.icm_root % 64 == 0,
               kCheckSoftwareOwned);
}

// A process's tables are NIC RX or TX tables of its own function; the eswitch's (FDB, ACLs, other
// vports) are the kernel's.
bool check_user_table(CommandCall& call, const FlowTable& table) {
  if (call.uid() == kKernelUid) return true;
  const bool nic = table.type == flow_table_type::kNicRx || table.type == flow_table_type::kNicTx;
  return check(call, nic && !table.other_vport, kCheckTableType);
}

void reference_table(FunctionContext& f, uint32_t table_id, int delta) {
  if (FlowTable* table = f.eth.flow_tables.find(table_id)) table->refs += uint32_t(delta);
}

// ---- flow tables ----

void create_flow_table(CommandCall& call) {
  if (!fw::start(call, kTableContext + kTableContextSize)) return;
  FunctionContext& f = call.function();
  const auto ctx = sub(call.in(), kTableContext, kTableContextSize);
  FlowTable table;
  table.type = uint8_t(get(call.in(), kTableType));
  table.level = uint8_t(get(ctx, kTableLevel));
  table.log_size = get(ctx, kTableLogSize);
  table.miss_action = uint8_t(get(ctx, kTableMissAction));
  table.miss_table = get(ctx, kTableMissId);
  table.other_vport = get(call.in(), kOtherVport) != 0;
  table.vport = get(call.in(), kVportNumber);
  table.sw_owner = get(ctx, kTableSwOwner) != 0;
  table.icm_root = get64(ctx, kTableIcmRoot0);
  if (!check(call, known_table_type(table.type), kCheckTableType) ||
      !fw::check_log_size(call, table.log_size, kLogMaxFlowTableSize) ||
      !check_miss_target(call, 0, table.type, table.miss_action, table.miss_table) ||
      !check_software_owned(call, table) || !check_user_table(call, table))
    return;
  std::copy(ctx.begin(), ctx.end(), table.context.begin());
  const bool misses = table.miss_action == kMissGoToTable;
  const uint32_t miss = table.miss_table;
  const uint32_t id = fw::insert(call, f.eth.flow_tables, 16, std::move(table));
  if (id == 0) return;
  if (misses) reference_table(f, miss, +1);
  set(call.out(), kOutObjectId, id);
  log().trace("flow: table {:#x} type {} level {} miss {}", id, get(call.in(), kTableType), get(ctx, kTableLevel),
              misses ? int(miss) : -1);
}

void destroy_flow_table(CommandCall& call) {
  if (!fw::start(call, 0x18)) return;
  FunctionContext& f = call.function();
  const uint32_t id = get(call.in(), kTableId);
  FlowTable* table = table_of(call, id);
  if (table == nullptr || !fw::not_in_use(call, table->refs + table->groups + uint32_t(table->entries.size()))) return;
  if (table->miss_action == kMissGoToTable) reference_table(f, table->miss_table, -1);
  auto root = f.eth.roots.find(table->type);
  if (root != f.eth.roots.end() && root->second == id) f.eth.roots.erase(root);
  f.eth.flow_tables.erase(id);
}

void query_flow_table(CommandCall& call) {
  if (!fw::start(call, 0x18, kQueryTableOutContext + kTableContextSize)) return;
  const uint32_t id = get(call.in(), kTableId);
  FlowTable* table = table_of(call, id);
  if (table == nullptr) return;
  const auto out = call.out().subspan(kQueryTableOutContext, kTableContextSize);
  std::copy(table->context.begin(), table->context.end(), out.begin());
  // A firmware table is a terminal mlx5 DR's entries may end in (a destination array's table):
  // both roots name it, as rdma-core 44 reads root_1 for TX and later ones root_0.
  if (!table->sw_owner && call.function().identity.sw_icm) {
    set64(out, kTableIcmRoot0, steering::flow_table_address(id));
    set64(out, kTableIcmRoot1, steering::flow_table_address(id));
  }
}

void modify_flow_table(CommandCall& call) {
  if (!fw::start(call, kTableContext + kTableContextSize)) return;
  FunctionContext& f = call.function();
  const uint32_t id = get(call.in(), kTableId);
  FlowTable* table = table_of(call, id);
  if (table == nullptr || (get(call.in(), kModifyFieldSelect) & kModifyMissTable) == 0) return;
  const auto ctx = sub(call.in(), kTableContext, kTableContextSize);
  const uint8_t action = uint8_t(get(ctx, kTableMissAction));
  const uint32_t miss = get(ctx, kTableMissId);
  if (!check_miss_target(call, id, table->type, action, miss)) return;
  if (table->miss_action == kMissGoToTable) reference_table(f, table->miss_table, -1);
  table->miss_action = action;
  table->miss_table = miss;
  if (action == kMissGoToTable) reference_table(f, miss, +1);
  set(table->context, kTableMissAction, action);
  set(table->context, kTableMissId, miss);
}

// op_mod 0 connects `table_id` as the root of its type, op_mod 1 disconnects the root.
void set_flow_table_root(CommandCall& call) {
  if (!fw::start(call, 0x18)) return;
  FunctionContext& f = call.function();
  const uint8_t type = uint8_t(get(call.in(), kTableType));
  const uint32_t id = get(call.in(), kTableId);
  if (!check(call, known_table_type(type) && call.op_mod() <= 1, kCheckTableType)) return;
  if (call.op_mod() == 1 || id == 0) {
    f.eth.roots.erase(type);
    return;
  }
  if (table_of(call, id) != nullptr) f.eth.roots[type] = id;
  log().trace("flow: root of type {} = {:#x}", type, id);
}

// ---- flow groups ----

void create_flow_group(CommandCall& call) {
  if (!call.need_input(kGroupInSize) || !call.need_output(0x10)) return;
  FunctionContext& f = call.function();
  const uint32_t table_id = get(call.in(), kTableId);
  FlowTable* table = table_of(call, table_id);
  if (table == nullptr || !check(call, !table->sw_owner, kCheckSoftwareOwned)) return;
  FlowGroup group;
  group.table = table_id;
  group.start = get(call.in(), kGroupStart);
  group.end = get(call.in(), kGroupEnd);
  group.criteria_enable = uint8_t(get(call.in(), kGroupCriteriaEnable));
  if (!check(call, group.start <= group.end && (uint64_t(group.end) >> table->log_size) == 0, kCheckIndex)) return;
  for (const auto& [id, other] : f.eth.flow_groups)
    if (other.table == table_id && !(group.end < other.start || other.end < group.start)) {
      call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), kCheckOverlap));
      return;
    }
  const auto criteria = sub(call.in(), kGroupCriteria, kMatchParamSize);
  group.criteria.assign(criteria.begin(), criteria.end());
  // At most 2^12 groups a function: steering looks a frame up once per group of a table
  // (eth/flow_index.h), so the groups, not the entries, bound its cost (mlx5e uses a few dozen).
  constexpr uint32_t kLogMaxFlowGroups = 12;
  const uint32_t id = fw::insert(call, f.eth.flow_groups, kLogMaxFlowGroups, std::move(group));
  if (id == 0) return;
  ++table->groups;
  set(call.out(), kOutObjectId, id);
}

void destroy_flow_group(CommandCall& call) {
  if (!fw::start(call, 0x1c)) return;
  FunctionContext& f = call.function();
  const uint32_t table_id = get(call.in(), kTableId), group_id = get(call.in(), kGroupId);
  FlowTable* table = table_of(call, table_id);
  if (table == nullptr) return;
  FlowGroup* group = lookup(call, f.eth.flow_groups, group_id, kCheckGroup);
  if (group == nullptr || !check(call, group->table == table_id, kCheckGroup, CommandStatus::kBadResource) ||
      !fw::not_in_use(call, group->entries))
    return;
  --table->groups;
  f.eth.flow_groups.erase(group_id);
}

// ---- flow table entries ----

// Takes or releases the references an entry holds (destinations, counters, group).
void reference_entry(FunctionContext& f, const FlowEntry& entry, int delta) {
  for (const FlowDestination& d : entry.destinations) {
    if (d.type == flow_dest::kTir) {
      if (TransportInterfaceReceive* tir = f.eth.tirs.find(d.id)) tir->refs += uint32_t(delta);
    } else if (d.type == flow_dest::kFlowTable) {
      reference_table(f, d.id, delta);
    }
  }
  for (uint32_t id : entry.counters)
    if (FlowCounter* counter = f.eth.flow_counters.find(id)) counter->refs += uint32_t(delta);
  if (PacketReformat* reformat = f.eth.packet_reformats.find(entry.packet_reformat)) reformat->refs += uint32_t(delta);
  if (ModifyHeader* modify = f.eth.modify_headers.find(entry.modify_header)) modify->refs += uint32_t(delta);
  if (FlowGroup* group = f.eth.flow_groups.find(entry.group)) group->entries += uint32_t(delta);
}

bool check_destination(CommandCall& call, uint32_t table_id, const FlowDestination& d) {
  FunctionContext& f = call.function();
  bool ok = false;
  switch (d.type) {
    case flow_dest::kTir: ok = f.eth.tirs.contains(d.id) && fw::acts_for(call, f.eth.tirs.owner(d.id)); break;
    case flow_dest::kFlowTable:
      ok = d.id != table_id && f.eth.flow_tables.contains(d.id) && fw::acts_for(call, f.eth.flow_tables.owner(d.id));
      break;
    case flow_dest::kQp: ok = call.uid() == kKernelUid && f.resources.qps.contains(d.id); break;
    case flow_dest::kVport: ok = call.uid() == kKernelUid; break;  // the eswitch owns vports; bookkeeping only
    default: break;
  }
  return check(call, ok, kCheckDestination, CommandStatus::kBadResource);
}

void set_fte(CommandCall& call) {
  if (!fw::start(call, kFteInSize)) return;
  FunctionContext& f = call.function();
  const uint32_t table_id = get(call.in(), kTableId), index = get(call.in(), kFlowIndex);
  FlowTable* table = table_of(call, table_id);
  if (table == nullptr || !check(call, call.op_mod() <= kFteModify, fw::kCheckParameter) ||
      !check(call, (uint64_t(index) >> table->log_size) == 0, kCheckIndex, CommandStatus::kBadIndex))
    return;
  const bool exists = table->entries.count(index) != 0;
  if (!check(call, exists == (call.op_mod() == kFteModify), kCheckIndex, CommandStatus::kBadResourceState)) return;
  FlowEntry entry;
  entry.group = get(call.in(), kFteGroup);
  entry.action = get(call.in(), kFteAction);
  entry.flow_tag = get(call.in(), kFteFlowTag);
  // A reformat of the sender's own: an encapsulation on NIC TX, an L3 tunnel's removal on NIC RX.
  // DECAP (an L2 tunnel's removal) on NIC RX, never with a reformat as well.
  if (entry.action & flow_action::kPacketReformat) {
    entry.packet_reformat = get(call.in(), kFtePacketReformatId);
    const auto& reformats = f.eth.packet_reformats;
    const PacketReformat* reformat = reformats.find(entry.packet_reformat);
    const bool usable = reformat != nullptr && fw::acts_for(call, reformats.owner(entry.packet_reformat)) &&
                        reformat_type::on_transmit(reformat->type) == (table->type == flow_table_type::kNicTx);
    if (!check(call, usable && (entry.action & flow_action::kDecap) == 0, kCheckReformat)) return;
  }
  if (!check(call, (entry.action & flow_action::kDecap) == 0 || table->type == flow_table_type::kNicRx, kCheckReformat))
    return;
  // A modify header made for this table's type, the sender's own.
  if (entry.action & flow_action::kModifyHeader) {
    entry.modify_header = get(call.in(), kFteModifyHeaderId);
    const ModifyHeader* modify = f.eth.modify_headers.find(entry.modify_header);
    const bool usable = modify != nullptr && modify->table_type == table->type &&
                        fw::acts_for(call, f.eth.modify_headers.owner(entry.modify_header));
    if (!check(call, usable, kCheckModifyHeader, CommandStatus::kBadResource)) return;
  }
  FlowGroup* group = lookup(call, f.eth.flow_groups, entry.group, kCheckGroup);
  if (group == nullptr ||
      !check(call, group->table == table_id && index >= group->start && index <= group->end, kCheckGroup))
    return;
  const uint32_t destinations = (entry.action & flow_action::kForward) ? get(call.in(), kFteDestinationCount) : 0;
  const uint32_t counters = (entry.action & flow_action::kCount) ? get(call.in(), kFteCounterCount) : 0;
  if (!check(call, destinations <= kMaxDestinations && counters <= kMaxDestinations, kCheckDestination) ||
      !check(call, (entry.action & flow_action::kForward) == 0 || destinations > 0, kCheckDestination) ||
      !check(call, call.in().size() >= kDestinationList + uint64_t(destinations + counters) * kDestinationSize,
             kCheckDestination, CommandStatus::kBadInputLength))
    return;
  for (uint32_t i = 0; i < destinations; ++i) {
    const uint32_t at = kDestinationList + i * kDestinationSize;
    const FlowDestination d{uint8_t(get(call.in(), Field{at, 31, 24})), get(call.in(), Field{at, 23, 0})};
    if (!check_destination(call, table_id, d)) return;
    entry.destinations.push_back(d);
  }
  for (uint32_t i = 0; i < counters; ++i) {
    const uint32_t id = get(call.in(), Field{kDestinationList + (destinations + i) * kDestinationSize, 31, 0});
    const bool ok = f.eth.flow_counters.contains(id) && fw::acts_for(call, f.eth.flow_counters.owner(id));
    if (!check(call, ok, kCheckCounter, CommandStatus::kBadResource)) return;
    entry.counters.push_back(id);
  }
  const auto match = sub(call.in(), kFteMatchValue, kMatchParamSize);
  entry.match_value.assign(match.begin(), match.end());
  const auto raw = sub(call.in(), kFlowContext, kDestinationList - kFlowContext + (destinations + counters) * kDestinationSize);
  entry.raw.assign(raw.begin(), raw.end());
  if (exists) {
    const FlowEntry& old = table->entries[index];
    reference_entry(f, old, -1);
    if (const FlowGroup* old_group = f.eth.flow_groups.find(old.group)) unindex_flow_entry(*table, *old_group, index, old);
  }
  reference_entry(f, entry, +1);
  index_flow_entry(*table, *group, index, entry);
  table->entries[index] = std::move(entry);
}

FlowTable* entry_table(CommandCall& call, uint32_t& index) {
  if (!fw::start(call, 0x24)) return nullptr;
  FlowTable* table = table_of(call);
  index = get(call.in(), kFlowIndex);
  if (table != nullptr && !check(call, table->entries.count(index) != 0, kCheckIndex, CommandStatus::kBadResource))
    return nullptr;
  return table;
}

void query_fte(CommandCall& call) {
  uint32_t index = 0;
  FlowTable* table = entry_table(call, index);
  if (table == nullptr || !call.need_output(kFteMatchValue)) return;
  const FlowEntry& entry = table->entries[index];
  const size_t room = call.out().size() - kFlowContext;
  std::copy_n(entry.raw.begin(), std::min(room, entry.raw.size()), call.out().begin() + kFlowContext);
}

void delete_fte(CommandCall& call) {
  uint32_t index = 0;
  FlowTable* table = entry_table(call, index);
  if (table == nullptr) return;
  const FlowEntry& entry = table->entries[index];
  reference_entry(call.function(), entry, -1);
  if (const FlowGroup* group = call.function().eth.flow_groups.find(entry.group))
    unindex_flow_entry(*table, *group, index, entry);
  table->entries.erase(index);
}

// ---- flow counters ----

void alloc_flow_counter(CommandCall& call) {
  if (!fw::start(call, 0x10)) return;
  // Bulk allocation needs the flow_counter_bulk_alloc cap, which the model reports as 0.
  if (!check(call, get(call.in(), kCounterBulk) == 0, fw::kCheckParameter)) return;
  const uint32_t id = fw::insert(call, call.function().eth.flow_counters, 16, FlowCounter{});
  if (id != 0) set(call.out(), kCounterId, id);
}

// DEALLOC_* of an object flow entries refer to (a counter, a reformat context): the ID at
// `id_field`, the sender's own (the kernel frees any), refused while an entry uses it.
template <typename T>
void dealloc_unused(CommandCall& call, ObjectTable<T>& table, Field id_field, uint16_t check_number) {
  if (!fw::start(call, 0x10)) return;
  const uint32_t id = get(call.in(), id_field);
  T* object = fw::lookup_owned(call, table, id, check_number);
  if (object == nullptr || !fw::not_in_use(call, object->refs)) return;
  table.erase(id);
}

// A process allocates its own counters through DevX (rdma-core's DR tests count a rule's hits
// with one); it may free and read only its own, the kernel any.
void dealloc_flow_counter(CommandCall& call) {
  dealloc_unused(call, call.function().eth.flow_counters, kCounterId, kCheckCounter);
}

void query_flow_counter(CommandCall& call) {
  if (!fw::start(call, 0x20)) return;
  const uint32_t first = get(call.in(), kQueryCounterId);
  const uint32_t count = std::max<uint32_t>(1, get(call.in(), kQueryCounterCount));
  if (!call.need_output(kCounterStatistics + count * kCounterStatisticsSize)) return;
  auto& counters = call.function().eth.flow_counters;
  for (uint32_t i = 0; i < count; ++i) {
    const bool readable = counters.contains(first + i) && fw::acts_for(call, counters.owner(first + i));
    if (!check(call, readable, kCheckCounter, CommandStatus::kBadResource)) return;
  }
  const bool clear = get(call.in(), kQueryCounterClear) != 0;
  for (uint32_t i = 0; i < count; ++i) {
    FlowCounter* counter = counters.find(first + i);
    set64(call.out(), kCounterStatistics + i * kCounterStatisticsSize, counter->packets);
    set64(call.out(), kCounterStatistics + i * kCounterStatisticsSize + 8, counter->octets);
    if (clear) counter->packets = counter->octets = 0;
  }
}

// ---- packet reformat contexts ----

void alloc_packet_reformat(CommandCall& call) {
  if (!fw::start(call, kReformatData)) return;
  const uint32_t size = get(call.in(), kReformatDataSize);
  const uint8_t type = uint8_t(get(call.in(), kReformatType));
  // Encapsulation behind at least an Ethernet header, no longer than the caps say; an L3 tunnel's
  // removal puts back an Ethernet header, with or without a VLAN tag.
  const bool known = reformat_type::on_transmit(type) || type == reformat_type::kL3TunnelToL2;
  const bool sized = type == reformat_type::kL3TunnelToL2 ? size == 14 || size == 18
                                                          : size >= 14 && size <= kMaxEncapHeaderSize;
  if (!check(call, known, kCheckReformat) || !check(call, sized, kCheckReformat) ||
      !check(call, call.in().size() >= kReformatData + size, kCheckReformat, CommandStatus::kBadInputLength))
    return;
  PacketReformat reformat;
  reformat.type = type;
  const auto data = sub(call.in(), kReformatData, size);
  reformat.data.assign(data.begin(), data.end());
  const uint32_t id = fw::insert(call, call.function().eth.packet_reformats, 16, std::move(reformat));
  if (id != 0) set(call.out(), kReformatId, id);
}

void dealloc_packet_reformat(CommandCall& call) {
  dealloc_unused(call, call.function().eth.packet_reformats, kReformatId, kCheckReformat);
}

// ---- modify-header contexts ----

// NIC RX and TX tables rewrite outer MACs and the ethertype (steering/modify_header.h says why
// only those); what cannot be applied is refused here, not when a frame comes.
void alloc_modify_header(CommandCall& call) {
  if (!fw::start(call, kModifyActions)) return;
  const uint8_t type = uint8_t(get(call.in(), kModifyTableType));
  const uint32_t count = get(call.in(), kModifyActionCount);
  if (!check(call, type == flow_table_type::kNicRx || type == flow_table_type::kNicTx, kCheckTableType)) return;
  if (!check(call, call.in().size() >= kModifyActions + uint64_t(count) * steering::kModifyActionSize,
             kCheckModifyHeader, CommandStatus::kBadInputLength))
    return;
  ModifyHeader modify;
  modify.table_type = type;
  const char* why = steering::decode_modify_actions(call.in().subspan(kModifyActions), count, modify.actions);
  if (why != nullptr) log().debug("ALLOC_MODIFY_HEADER_CONTEXT refused: {}", why);
  if (!check(call, why == nullptr, kCheckModifyHeader)) return;
  const uint32_t id = fw::insert(call, call.function().eth.modify_headers, 16, std::move(modify));
  if (id != 0) set(call.out(), kModifyHeaderId, id);
}

void dealloc_modify_header(CommandCall& call) {
  dealloc_unused(call, call.function().eth.modify_headers, kModifyHeaderId, kCheckModifyHeader);
}

// mlx5 DR asks the device to drop cached steering entries after it rewrote ICM. The model reads
// steering ICM afresh for every frame, so there is nothing to drop.
void sync_steering(CommandCall& call) {
  if (!fw::start(call, 0x10)) return;
  check(call, call.function().identity.sw_icm, fw::kCheckParameter, CommandStatus::kBadOpcode);
}

}  // namespace

void register_flow_commands(CommandTable& table) {
  // Processes create their own tables, groups and entries through DevX (mlx5 DR: its software-owned
  // tables, the firmware tables of a destination array); the root of a table type is the kernel's.
  table.add(kSetFlowTableRoot, "SET_FLOW_TABLE_ROOT", set_flow_table_root);
  table.add(kCreateFlowTable, "CREATE_FLOW_TABLE", create_flow_table, Senders::kUser);
  table.add(kDestroyFlowTable, "DESTROY_FLOW_TABLE", destroy_flow_table, Senders::kUser);
  table.add(kQueryFlowTable, "QUERY_FLOW_TABLE", query_flow_table, Senders::kUser);
  table.add(kModifyFlowTable, "MODIFY_FLOW_TABLE", modify_flow_table, Senders::kUser);
  table.add(kCreateFlowGroup, "CREATE_FLOW_GROUP", create_flow_group, Senders::kUser);
  table.add(kDestroyFlowGroup, "DESTROY_FLOW_GROUP", destroy_flow_group, Senders::kUser);
  table.add(kSetFte, "SET_FLOW_TABLE_ENTRY", set_fte, Senders::kUser);
  table.add(kQueryFte, "QUERY_FLOW_TABLE_ENTRY", query_fte, Senders::kUser);
  table.add(kDeleteFte, "DELETE_FLOW_TABLE_ENTRY", delete_fte, Senders::kUser);
  table.add(kSyncSteering, "SYNC_STEERING", sync_steering, Senders::kUser);
  table.add(kAllocFlowCounter, "ALLOC_FLOW_COUNTER", alloc_flow_counter, Senders::kUser);
  table.add(kDeallocFlowCounter, "DEALLOC_FLOW_COUNTER", dealloc_flow_counter, Senders::kUser);
  table.add(kQueryFlowCounter, "QUERY_FLOW_COUNTER", query_flow_counter, Senders::kUser);
  table.add(kAllocPacketReformat, "ALLOC_PACKET_REFORMAT_CONTEXT", alloc_packet_reformat, Senders::kUser);
  table.add(kDeallocPacketReformat, "DEALLOC_PACKET_REFORMAT_CONTEXT", dealloc_packet_reformat, Senders::kUser);
  table.add(kAllocModifyHeader, "ALLOC_MODIFY_HEADER_CONTEXT", alloc_modify_header, Senders::kUser);
  table.add(kDeallocModifyHeader, "DEALLOC_MODIFY_HEADER_CONTEXT", dealloc_modify_header, Senders::kUser);
}

}  // namespace hcaemu::model
