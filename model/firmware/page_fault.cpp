// PAGE_FAULT_RESUME (objects/page_faults.h): the driver has mapped the pages of an ODP fault; the
// work the fault held goes on (rdma/odp.cpp), or with the error bit fails. The fault is named by
// the type, WQ number and token of its event; a resume that names no open fault is refused
// (BAD_PARAMETER) and changes nothing.
#include "model/firmware/firmware.h"
#include "model/firmware/resource_helpers.h"

namespace hcaemu::model {
namespace {

using namespace fw;

constexpr uint16_t kPageFaultResume = 0x204;
constexpr uint32_t kResumeInBytes = 0x10;
// page_fault_resume_in
constexpr Field kError{0x08, 31, 31};
constexpr Field kPageFaultType{0x08, 26, 24};
constexpr Field kWqNumber{0x08, 23, 0};
constexpr Field kToken{0x0c, 23, 0};

enum ResumeCheck : uint16_t { kCheckNoSuchFault = 0x10 };

void page_fault_resume(CommandCall& call) {
  if (!start(call, kResumeInBytes, mbox::kHeaderSize)) return;
  FunctionContext& f = call.function();
  const uint32_t token = get(call.in(), kToken);
  const std::optional<PageFault> fault =
      f.resources.page_faults.take(uint8_t(get(call.in(), kPageFaultType)), get(call.in(), kWqNumber), token);
  if (!fault) {
    call.fail(CommandStatus::kBadParameter, syndrome(kPageFaultResume, kCheckNoSuchFault));
    return;
  }
  if (f.page_fault_resumed) f.page_fault_resumed(*fault, token, get(call.in(), kError) != 0);
}

}  // namespace

void register_page_fault_commands(CommandTable& table) {
  table.add(kPageFaultResume, "PAGE_FAULT_RESUME", page_fault_resume);
}

}  // namespace hcaemu::model
