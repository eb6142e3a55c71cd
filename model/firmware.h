#pragma once
// The firmware personality: what each command opcode does. This walking skeleton knows no command
// yet (issue 3 brings them); every opcode is answered with the PRM's BAD_OPCODE status and a
// syndrome that names the opcode, and logged once by name.
#include <cstdint>
#include <set>
#include <vector>

#include "model/command_queue.h"

namespace hcaemu::model {

class Firmware {
 public:
  void execute(const CommandRequest& request, std::vector<uint8_t>& output);

  // Syndrome reported for an opcode we do not implement (stable, so logs can be matched).
  static uint32_t unsupported_syndrome(uint16_t opcode) { return 0x0bad0000u | opcode; }

  void reset() {}  // nothing to release yet
  uint64_t unsupported_commands() const { return unsupported_; }

 private:
  std::set<uint16_t> reported_;
  uint64_t unsupported_ = 0;
};

}  // namespace hcaemu::model
