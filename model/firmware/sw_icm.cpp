// Steering ICM ranges (objects/sw_icm.h), general objects of obj_type SW_ICM (0x8) as mlx5_core's
// mlx5_dm_sw_icm_alloc creates them for a process's mlx5dv_alloc_dm of steering or header-modify
// ICM: after the general object header, sw_icm { modify_field_select (64 bits), log_sw_icm_size at
// 0x18 [7:0], sw_icm_start_addr (64 bits) at 0x20 }. The driver keeps the regions' block bitmaps
// and picks the address; the device checks it lies in a region, aligned, over no placed range. Only
// with FunctionIdentity::sw_icm; a function without it refuses the type as one it lacks.
#include "model/firmware/firmware.h"
#include "model/firmware/general_object_types.h"
#include "model/firmware/resource_helpers.h"

namespace hcaemu::model {
namespace {

using namespace fw;

constexpr uint32_t kSwIcm = 0x10, kSwIcmBytes = 0x40;  // after the general object header
constexpr Field kObjId{0x08, 31, 0};                    // general_obj_in/out_cmd_hdr.obj_id
constexpr Field kLogSize{kSwIcm + 0x08, 7, 0};
constexpr uint32_t kStartAddr = kSwIcm + 0x10;
constexpr uint16_t kCheckObjType = 0x30, kCheckIcmRange = 0x52;

SwIcmObject* named_object(CommandCall& call, uint32_t out_bytes) {
  return named_steering_object(call, call.function().resources.sw_icm_objects, out_bytes);
}

}  // namespace

bool offers_software_steering(CommandCall& call) {
  if (call.function().identity.sw_icm) return true;
  call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), kCheckObjType));
  return false;
}

void create_sw_icm(CommandCall& call) {
  if (!offers_software_steering(call) || !start(call, kSwIcm + kSwIcmBytes)) return;
  FunctionContext& f = call.function();
  const SwIcmObject object{get64(call.in(), kStartAddr), get(call.in(), kLogSize)};
  if (!check(call, f.sw_icm.place(object.start, object.log_size), kCheckIcmRange)) return;
  const uint32_t id = insert(call, f.resources.sw_icm_objects, kLogMaxSwIcmObjects, object);
  if (id != 0)
    set(call.out(), kObjId, id);
  else
    f.sw_icm.remove(object.start);
}

void query_sw_icm(CommandCall& call) {
  const SwIcmObject* object = named_object(call, kSwIcm + kSwIcmBytes);
  if (object == nullptr) return;
  set(call.out(), kObjId, get(call.in(), kObjId));
  set(call.out(), kLogSize, object->log_size);
  set64(call.out(), kStartAddr, object->start);
}

void modify_sw_icm(CommandCall& call) { refuse_steering_modify(call, call.function().resources.sw_icm_objects); }

void destroy_sw_icm(CommandCall& call) {
  const SwIcmObject* object = named_object(call, mbox::kHeaderSize);
  if (object == nullptr) return;
  call.function().sw_icm.remove(object->start);
  call.function().resources.sw_icm_objects.erase(get(call.in(), kObjId));
}

}  // namespace hcaemu::model
