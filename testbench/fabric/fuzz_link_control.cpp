// libFuzzer over what a link's untrusted ends and its admin feed in (issue 15): hcactl's words
// (split as the control socket splits them) parsed as link fault settings over a base, those
// faults applied to frames, and the frames switched by hcafabric's learning switch with ports going
// up and down. Any bytes: settings or an error naming the key, frames forwarded or counted, never a
// crash, a hang or unbounded memory.
// Input: [ports - 2][settings text][0][op][port][length][frame bytes]...
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fabric/learning_switch.h"
#include "fabric/link_faults.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hcaemu::fabric;
  if (size < 2) return 0;
  const size_t ports = size_t(data[0] % 8) + 2;
  const uint8_t* text = data + 1;
  const uint8_t* end = data + size;
  const uint8_t* nul = static_cast<const uint8_t*>(std::memchr(text, 0, size_t(end - text)));
  const uint8_t* text_end = nul != nullptr ? nul : end;
  std::string error;
  const LinkFaultSettings base{.loss = 0.5, .delay_ns = 1000, .seed = 3};
  auto settings = parse_link_faults(std::string_view(reinterpret_cast<const char*>(text), size_t(text_end - text)), error, base);
  if (!settings) {
    if (error.empty()) __builtin_trap();  // a refusal always says why
    settings = base;
  }
  (void)settings->text();
  LinkFaults faults(*settings);
  LinkShaper shaper(*settings);
  LearningSwitch sw(ports, {.ageing_ns = 1'000'000, .max_entries = 64});
  uint64_t now = 0;
  for (const uint8_t* p = nul != nullptr ? nul + 1 : end; p + 3 <= end;) {
    const uint8_t op = p[0];
    const size_t port = p[1] % ports;
    const size_t length = std::min<size_t>(p[2] * 8u, size_t(end - p - 3));
    const std::span<const uint8_t> frame(p + 3, length);
    p += 3 + length;
    now += uint64_t(op) * 1000;
    if (op % 16 == 0) {
      sw.set_port_up(port, (op & 0x10) != 0);
      continue;
    }
    for (const auto& carried : faults.carry(frame)) {
      const uint64_t release = shaper.release_ns(now, carried.size());
      if (release < now) __builtin_trap();  // never before it was handed over
      for (size_t out : sw.forward(port, carried, now))
        if (out >= ports || out == port) __builtin_trap();
    }
    if (sw.table_size() > 64) __builtin_trap();
  }
  return 0;
}
