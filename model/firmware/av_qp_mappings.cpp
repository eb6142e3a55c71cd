// Address-to-QP mappings (objects/av_qp_mappings.h), general objects of obj_type AV_QP_MAPPING
// (0x3a) as libmlx5's mlx5dv_map_ah_to_qp creates them through DevX: after the general object
// header, av_qp_mapping { modify_field_select (64 bits), reserved, qpn, remote_address_vector
// (ud_av: sl_or_eth_prio, src_addr_index, rgid_or_rip) }. The QP may be another process's (the
// mapping names whose congestion control an address takes, not an object the sender acts on) but
// must be one of this function; nothing of a mapping can be modified.
#include <algorithm>

#include "model/firmware/firmware.h"
#include "model/firmware/general_object_types.h"
#include "model/firmware/resource_helpers.h"

namespace hcaemu::model {
namespace {

using namespace fw;

constexpr uint32_t kMapping = 0x10;  // after the general object header, in a create's input and a query's output
constexpr uint32_t kMappingBytes = 0x40;
constexpr Field kObjId{0x08, 31, 0};  // general_obj_in_cmd_hdr.obj_id, general_obj_out_cmd_hdr.obj_id
constexpr Field kQpn{kMapping + 0x0c, 31, 0};
constexpr uint32_t kAddress = kMapping + 0x10;  // remote_address_vector
constexpr Field kSlOrEthPrio{kAddress + 0x0c, 27, 24};
constexpr Field kSrcAddrIndex{kAddress + 0x1c, 27, 20};
constexpr uint32_t kRgid = kAddress + 0x20;
constexpr uint16_t kCheckQpn = 0x50, kCheckAddrIndex = 0x51;

AvQpMapping* named_mapping(CommandCall& call, uint32_t out_bytes) {
  if (!start(call, mbox::kHeaderSize, out_bytes)) return nullptr;
  return lookup_owned(call, call.function().resources.av_qp_mappings, get(call.in(), kObjId), kCheckLookup);
}

}  // namespace

void create_av_qp_mapping(CommandCall& call) {
  if (!start(call, kMapping + kMappingBytes)) return;
  const Resources& r = call.function().resources;
  AvQpMapping mapping;
  mapping.qpn = get(call.in(), kQpn);
  mapping.sl_or_eth_prio = uint8_t(get(call.in(), kSlOrEthPrio));
  mapping.src_addr_index = uint8_t(get(call.in(), kSrcAddrIndex));
  std::copy_n(call.in().begin() + kRgid, mapping.rgid.size(), mapping.rgid.begin());
  if (!check(call, r.qps.contains(mapping.qpn), kCheckQpn, CommandStatus::kBadResource) ||
      !check(call, mapping.src_addr_index < r.limits.roce_address_table_size, kCheckAddrIndex))
    return;
  const uint32_t id = insert(call, call.function().resources.av_qp_mappings, kLogMaxAvQpMappings, mapping);
  if (id != 0) set(call.out(), kObjId, id);
}

void query_av_qp_mapping(CommandCall& call) {
  const AvQpMapping* mapping = named_mapping(call, kMapping + kMappingBytes);
  if (mapping == nullptr) return;
  auto out = call.out();
  set(out, kObjId, get(call.in(), kObjId));
  set(out, kQpn, mapping->qpn);
  set(out, kSlOrEthPrio, mapping->sl_or_eth_prio);
  set(out, kSrcAddrIndex, mapping->src_addr_index);
  std::copy(mapping->rgid.begin(), mapping->rgid.end(), out.begin() + kRgid);
}

void modify_av_qp_mapping(CommandCall& call) {
  if (named_mapping(call, mbox::kHeaderSize) != nullptr)
    call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), kCheckParameter));
}

void destroy_av_qp_mapping(CommandCall& call) {
  if (named_mapping(call, mbox::kHeaderSize) != nullptr)
    call.function().resources.av_qp_mappings.erase(get(call.in(), kObjId));
}

}  // namespace hcaemu::model
