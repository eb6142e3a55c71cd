// libFuzzer target: the hostile wire (hostile_wire.h) with every choice taken from the input, so
// coverage guides which headers, PSNs, keys, lengths and payloads reach B's RC, UC, UD and XRC
// QPs. A fresh pair of functions per input (a crash replays from its input alone); up to 32
// rounds per input. Any wrong answer, illegal QP state or write outside B's region aborts.
#include <cstdio>
#include <cstdlib>

#include "testbench/model/hostile_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hcaemu::model::test;
  static const bool failures_abort = [] {  // the headless host's own checks (a command that failed)
    hcaemu::hostsim::set_failure_handler([](std::string_view what) {
      std::fprintf(stderr, "hostile wire: host: %.*s\n", int(what.size()), what.data());
      std::abort();
    });
    return true;
  }();
  (void)failures_abort;
  size_t at = 0;
  auto next = [&]() -> uint64_t {  // 8 bytes of input per choice; zeros once it runs out
    uint64_t value = 0;
    for (int i = 0; i < 8 && at < size; ++i) value |= uint64_t(data[at++]) << (8 * i);
    return value;
  };
  HostileWire w(next);
  uint64_t good = 0, errors = 0;
  for (int round = 0; round < 32 && at < size; ++round) {
    const std::string wrong = w.step(good, errors);
    if (!wrong.empty()) {
      std::fprintf(stderr, "hostile wire, round %d: %s\n", round, wrong.c_str());
      std::abort();
    }
  }
  const std::string wrong = w.memory_intact();
  if (!wrong.empty()) {
    std::fprintf(stderr, "hostile wire: %s\n", wrong.c_str());
    std::abort();
  }
  return 0;
}

// libsystemc references sc_main; libFuzzer provides main() and no kernel runs here.
int sc_main(int, char**) { return 0; }
