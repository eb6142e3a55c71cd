// Device memory commands (objects/device_memory.h): ALLOC_MEMIC places bytes of the function's
// MEMIC window, DEALLOC_MEMIC gives them back, MODIFY_MEMIC turns a MEMIC atomic operation
// (increment, test-and-set) on or off for one allocation and names its operation address.
#include "model/firmware/firmware.h"
#include "model/firmware/resource_helpers.h"

namespace hcaemu::model {
namespace {

using namespace fw;

constexpr uint16_t kAllocMemic = 0x205, kDeallocMemic = 0x206, kModifyMemic = 0x207;
constexpr uint32_t kMemicInBytes = 0x20;

// alloc_memic_in / alloc_memic_out
constexpr Field kLogMemicAddrAlignment{0x0c, 7, 0};
constexpr uint32_t kRangeStartAddr = 0x10;  // BE64, a BAR0 offset
constexpr Field kRangeSize{0x18, 31, 0};
constexpr Field kAllocMemicSize{0x1c, 31, 0};
constexpr uint32_t kAllocMemicStartOut = 0x08;  // BE64
// dealloc_memic_in
constexpr uint32_t kDeallocMemicStart = 0x10;  // BE64
constexpr Field kDeallocMemicSize{0x18, 31, 0};

// modify_memic_in / modify_memic_out
enum ModifyMemicOpMod : uint16_t { kOperationOn = 0, kOperationOff = 1 };
constexpr Field kMemicOperationType{0x0c, 7, 0};
constexpr uint32_t kMemicStartAddr = 0x10;          // BE64, a BAR0 offset: the allocation's start
constexpr uint32_t kMemicOperationAddrOut = 0x10;   // BE64, a BAR0 offset
constexpr uint32_t kModifyMemicBytes = 0x40;

enum MemicCheck : uint16_t { kCheckNoMemic = 0x30, kCheckPlacement = 0x31, kCheckAllocation = 0x32 };

void alloc_memic(CommandCall& call) {
  if (!start(call, kMemicInBytes, 0x10)) return;
  DeviceMemory& memory = call.function().device_memory;
  if (!memory.present()) {
    call.fail(CommandStatus::kBadParameter, syndrome(kAllocMemic, kCheckNoMemic));
    return;
  }
  uint64_t placed = 0;
  switch (memory.allocate(get64(call.in(), kRangeStartAddr), get(call.in(), kRangeSize),
                          get(call.in(), kAllocMemicSize), get(call.in(), kLogMemicAddrAlignment), placed)) {
    case DeviceMemory::AllocError::kNone:
      set64(call.out(), kAllocMemicStartOut, placed);
      return;
    case DeviceMemory::AllocError::kBadParameter:
      call.fail(CommandStatus::kBadParameter, syndrome(kAllocMemic, kCheckParameter));
      return;
    case DeviceMemory::AllocError::kNoRoom:  // mlx5_ib reads NO_RESOURCES as "try the next page"
      call.fail(CommandStatus::kNoResources, syndrome(kAllocMemic, kCheckPlacement));
      return;
  }
}

void dealloc_memic(CommandCall& call) {
  if (!start(call, kMemicInBytes)) return;
  if (!call.function().device_memory.release(get64(call.in(), kDeallocMemicStart),
                                             get(call.in(), kDeallocMemicSize)))
    call.fail(CommandStatus::kBadParameter, syndrome(kDeallocMemic, kCheckAllocation));
}

void modify_memic(CommandCall& call) {
  if (!start(call, kModifyMemicBytes, kModifyMemicBytes)) return;
  DeviceMemory& memory = call.function().device_memory;
  const uint64_t start_addr = get64(call.in(), kMemicStartAddr);
  const auto operation = uint8_t(get(call.in(), kMemicOperationType));
  switch (call.op_mod()) {
    case kOperationOn:
      if (auto address = memory.enable_operation(start_addr, operation)) {
        set64(call.out(), kMemicOperationAddrOut, *address);
        return;
      }
      break;
    case kOperationOff:
      if (memory.disable_operation(start_addr, operation)) return;
      break;
    default:
      call.fail(CommandStatus::kBadParameter, syndrome(kModifyMemic, kCheckParameter));
      return;
  }
  call.fail(CommandStatus::kBadParameter, syndrome(kModifyMemic, kCheckAllocation));
}

}  // namespace

void register_memic_commands(CommandTable& table) {
  table.add(kAllocMemic, "ALLOC_MEMIC", alloc_memic);
  table.add(kDeallocMemic, "DEALLOC_MEMIC", dealloc_memic);
  table.add(kModifyMemic, "MODIFY_MEMIC", modify_memic);
}

}  // namespace hcaemu::model
