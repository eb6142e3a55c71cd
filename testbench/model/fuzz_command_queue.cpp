// libFuzzer target: a command queue entry and the host memory around it (mailbox chains, pointers,
// lengths, tokens) come from the fuzzer. The queue must answer or refuse every shape of it without
// touching memory outside the simulated RAM.
#include <cstdint>
#include <cstring>

#include "common/log.h"
#include "model/firmware/command_queue.h"
#include "model/firmware/firmware.h"
#include "testbench/host/sim_host_memory.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bool quiet = hcaemu::set_log_level("off");
  (void)quiet;
  hcaemu::testbench::SimHostMemory ram(0, 64 * 1024);
  std::memcpy(ram.at(0), data, std::min<size_t>(size, 64 * 1024));
  ram.at(0)[0x3f] |= 1;  // the entry is handed to the hardware
  hcaemu::model::FunctionContext function;
  hcaemu::model::Firmware firmware(function);
  hcaemu::model::CommandQueue queue([&](const hcaemu::model::CommandRequest& r, std::vector<uint8_t>& out) {
    firmware.execute(r, out);
  });
  queue.execute(ram, 0, 0);
  queue.execute(ram, 0, 31);
  return 0;
}
