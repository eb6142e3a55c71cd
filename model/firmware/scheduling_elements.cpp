// NIC scheduling elements (objects/scheduling_elements.h), reached through two faces:
// - general objects of obj_type SCHEDULING_ELEMENT (0x26), as libmlx5's mlx5dv_sched_node_create /
//   mlx5dv_sched_leaf_create / *_modify / *_destroy send them through DevX: after the general object
//   header, sched_elem { modify_field_select (64 bits), scheduling_hierarchy, sched_context };
// - CREATE / DESTROY / QUERY / MODIFY_SCHEDULING_ELEMENT (0x782-0x785), as mlx5_core sends them for
//   mlx5e's HTB offload: scheduling_hierarchy at 0x08, the element ID at 0x0c, modify_bitmask at
//   0x14 and scheduling_context at 0x20.
// The context is the same in both (element_type, the TSAR's type, parent_element_id, bw_share,
// max_average_bw in Mb/s), and so are the bits naming the fields a modify changes.
#include "model/firmware/general_object_types.h"

#include "model/eth/objects.h"
#include "model/firmware/firmware.h"
#include "model/firmware/resource_helpers.h"

namespace hcaemu::model {
namespace {

using namespace fw;

// Offsets inside a scheduling context.
constexpr Field kElementType{0x00, 31, 24};
constexpr Field kTsarType{0x04, 23, 16};
constexpr Field kParent{0x08, 31, 0};
constexpr Field kBwShare{0x14, 31, 0};
constexpr Field kMaxAverageBw{0x18, 31, 0};
// The fields a create or modify takes (modify_field_select, modify_bitmask).
constexpr uint32_t kSelectBwShare = 1u << 0, kSelectMaxAverageBw = 1u << 1;
constexpr uint32_t kLogMaxElements = 12;
constexpr uint16_t kCheckHierarchy = 0x40, kCheckElementType = 0x41, kCheckParent = 0x42, kCheckSelect = 0x43;

// Where one face keeps each part in its inputs and outputs.
struct Face {
  uint32_t in_size;        // create and modify
  Field hierarchy;         // in a create's and modify's input
  bool lookups_name_hierarchy;  // a query's and destroy's input names it too
  Field id;                // the element an input names
  Field select;            // modify_field_select / modify_bitmask
  Field select_high;       // bits above it, which must be clear
  bool create_selects;     // a create has a select too (otherwise it takes every field)
  bool query_has_header;   // a query answers the ID, select and hierarchy before the context
  uint32_t context;        // the scheduling context in a create's or modify's input
  Field created_id;        // in a create's output
  uint32_t created_size;   // a create's output
  uint32_t query_context;  // in a query's output
  uint32_t query_size;
};

constexpr Face kGeneralObject{
    .in_size = 0x90, .hierarchy = {0x18, 31, 24}, .lookups_name_hierarchy = false, .id = {0x08, 31, 0}, .select = {0x14, 31, 0},
    .select_high = {0x10, 31, 0}, .create_selects = true, .query_has_header = true, .context = 0x30, .created_id = {0x08, 31, 0}, .created_size = mbox::kHeaderSize,
    .query_context = 0x30, .query_size = 0x90};
constexpr Face kCommand{
    .in_size = 0x80, .hierarchy = {0x08, 31, 24}, .lookups_name_hierarchy = true, .id = {0x0c, 31, 0}, .select = {0x14, 31, 0},
    .select_high = {0x10, 31, 0}, .create_selects = false, .query_has_header = false, .context = 0x20, .created_id = {0x10, 31, 0}, .created_size = 0x40,
    .query_context = 0x20, .query_size = 0x80};

Field at(uint32_t base, Field f) { return Field{base + f.offset, f.hi, f.lo}; }

// Whether the command names the fields it sets (a modify always; a create only on the face whose
// create has a select, otherwise it takes every field).
bool has_select(const Face& face, bool modify) { return modify || face.create_selects; }

// What a create and a modify share: the NIC hierarchy, a known element type (a TSAR of DWRR or a
// queue group) and only fields the device has.
bool check_context(CommandCall& call, const Face& face, bool modify) {
  const uint8_t type = uint8_t(get(call.in(), at(face.context, kElementType)));
  return check(call, get(call.in(), face.hierarchy) == sched_element::kHierarchyNic, kCheckHierarchy) &&
         check(call,
               type == sched_element::kQueueGroup ||
                   (type == sched_element::kTsar &&
                    get(call.in(), at(face.context, kTsarType)) == sched_element::kTsarDwrr),
               kCheckElementType) &&
         check(call,
               !has_select(face, modify) || (get(call.in(), face.select_high) == 0 &&
                               (get(call.in(), face.select) & ~(kSelectBwShare | kSelectMaxAverageBw)) == 0),
               kCheckSelect);
}

// Takes the fields the select names (every field for a create that has no select).
void apply_context(CommandCall& call, const Face& face, bool modify, SchedulingElement& e) {
  const uint32_t select = has_select(face, modify) ? get(call.in(), face.select) : kSelectBwShare | kSelectMaxAverageBw;
  if (select & kSelectBwShare) e.bw_share = get(call.in(), at(face.context, kBwShare));
  if (select & kSelectMaxAverageBw) e.max_average_bw_mbps = get(call.in(), at(face.context, kMaxAverageBw));
}

// The element a modify, query or destroy names, if the sender may act on it.
SchedulingElement* named_element(CommandCall& call, const Face& face, uint32_t in_bytes, uint32_t out_bytes) {
  if (!start(call, in_bytes, out_bytes) ||
      !check(call, !face.lookups_name_hierarchy || get(call.in(), face.hierarchy) == sched_element::kHierarchyNic,
             kCheckHierarchy))
    return nullptr;
  return lookup_owned(call, call.function().resources.scheduling.table(), get(call.in(), face.id), kCheckLookup);
}

void create(CommandCall& call, const Face& face) {
  if (!start(call, face.in_size, face.created_size) || !check_context(call, face, false)) return;
  auto& table = call.function().resources.scheduling.table();
  SchedulingElement element;
  element.type = uint8_t(get(call.in(), at(face.context, kElementType)));
  element.parent = get(call.in(), at(face.context, kParent));
  // A queue group hangs below a TSAR; a TSAR below another or at the root (parent 0). The parent
  // must be the sender's own.
  if (element.parent != 0 || element.type == sched_element::kQueueGroup) {
    const SchedulingElement* parent = table.find(element.parent);
    if (!check(call, parent != nullptr && acts_for(call, table.owner(element.parent)), kCheckParent,
               CommandStatus::kBadResource) ||
        !check(call, parent->type == sched_element::kTsar && parent->depth < sched_element::kMaxDepth, kCheckParent))
      return;
    element.depth = parent->depth + 1;
  }
  if (element.type == sched_element::kQueueGroup &&
      !check(call, call.function().resources.scheduling.queue_groups() < (1u << sched_element::kLogMaxQueueGroups), kCheckFull,
             CommandStatus::kExceedLimit))
    return;
  apply_context(call, face, false, element);
  const uint32_t id = insert(call, table, kLogMaxElements, element);
  if (id != 0) set(call.out(), face.created_id, id);
}

void modify(CommandCall& call, const Face& face) {
  SchedulingElement* e = named_element(call, face, face.in_size, mbox::kHeaderSize);
  if (e == nullptr || !check_context(call, face, true) ||
      !check(call, get(call.in(), at(face.context, kElementType)) == e->type, kCheckElementType))
    return;
  apply_context(call, face, true, *e);
}

void query(CommandCall& call, const Face& face) {
  const SchedulingElement* e = named_element(call, face, face.id.offset + 4, face.query_size);
  if (e == nullptr) return;
  auto out = call.out();
  if (face.query_has_header) {
    set(out, face.created_id, get(call.in(), face.id));
    set(out, face.select, kSelectBwShare | kSelectMaxAverageBw);
    set(out, face.hierarchy, sched_element::kHierarchyNic);
  }
  const uint32_t c = face.query_context;
  set(out, at(c, kElementType), e->type);
  if (e->type == sched_element::kTsar) set(out, at(c, kTsarType), sched_element::kTsarDwrr);
  set(out, at(c, kParent), e->parent);
  set(out, at(c, kBwShare), e->bw_share);
  set(out, at(c, kMaxAverageBw), e->max_average_bw_mbps);
}

// The element goes even while queues use it (a process that exits leaves them in any order): its
// children move up to its parent, and its QPs and SQs leave their group.
void destroy(CommandCall& call, const Face& face) {
  if (named_element(call, face, face.id.offset + 4, mbox::kHeaderSize) == nullptr) return;
  const uint32_t id = get(call.in(), face.id);
  FunctionContext& f = call.function();
  for (auto& [qpn, qp] : f.resources.qps) {
    if (qp.sched_group_requester == id) qp.sched_group_requester = 0;
    if (qp.sched_group_responder == id) qp.sched_group_responder = 0;
  }
  for (auto& [sqn, sq] : f.eth.sqs)
    if (get(sq.context, sqc::kQosQueueGroupId) == id) set(sq.context, sqc::kQosQueueGroupId, 0);
  f.resources.scheduling.erase(id);
}

constexpr uint16_t kCreateSchedulingElement = 0x782, kDestroySchedulingElement = 0x783,
                   kQuerySchedulingElement = 0x784, kModifySchedulingElement = 0x785;

}  // namespace

void create_scheduling_element(CommandCall& call) { create(call, kGeneralObject); }
void modify_scheduling_element(CommandCall& call) { modify(call, kGeneralObject); }
void query_scheduling_element(CommandCall& call) { query(call, kGeneralObject); }
void destroy_scheduling_element(CommandCall& call) { destroy(call, kGeneralObject); }

void register_scheduling_element_commands(CommandTable& table) {
  table.add(kCreateSchedulingElement, "CREATE_SCHEDULING_ELEMENT", [](CommandCall& call) { create(call, kCommand); });
  table.add(kDestroySchedulingElement, "DESTROY_SCHEDULING_ELEMENT", [](CommandCall& call) { destroy(call, kCommand); });
  table.add(kQuerySchedulingElement, "QUERY_SCHEDULING_ELEMENT", [](CommandCall& call) { query(call, kCommand); });
  table.add(kModifySchedulingElement, "MODIFY_SCHEDULING_ELEMENT", [](CommandCall& call) { modify(call, kCommand); });
}

}  // namespace hcaemu::model
