#include "model/firmware.h"

#include "common/endian.h"
#include "common/log.h"

namespace hcaemu::model {

void Firmware::execute(const CommandRequest& request, std::vector<uint8_t>& output) {
  ++unsupported_;
  if (reported_.insert(request.opcode).second)
    log().warn("firmware: command {} ({:#06x}) op_mod {:#x} is not supported; answering BAD_OPCODE",
               command_name(request.opcode), request.opcode, request.op_mod);
  output.assign(16, 0);
  output[0] = uint8_t(CommandStatus::kBadOpcode);
  store_be32(&output[4], unsupported_syndrome(request.opcode));
}

}  // namespace hcaemu::model
