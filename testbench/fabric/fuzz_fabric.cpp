// libFuzzer over the fabric: a topology file (any bytes: a topology or an error, never a crash)
// and, when it parses, arbitrary frames sent into it from its hosts (any bytes: delivered,
// dropped or counted unroutable, never a crash or a hang).
// Input: [hosts - 1][topology text][0][host][length][frame bytes]...
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fabric/network.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hcaemu::fabric;
  if (size < 2) return 0;
  const uint32_t hosts = uint32_t(data[0] % 16) + 1;
  const uint8_t* text = data + 1;
  const uint8_t* end = data + size;
  const uint8_t* nul = static_cast<const uint8_t*>(std::memchr(text, 0, size_t(end - text)));
  const uint8_t* text_end = nul != nullptr ? nul : end;
  std::string error;
  auto topology = parse_topology(std::string_view(reinterpret_cast<const char*>(text), size_t(text_end - text)), hosts, &error);
  if (!topology) return 0;
  (void)topology->describe();
  if (topology->switch_config.buffer_bytes > (uint64_t(1) << 24)) topology->switch_config.buffer_bytes = uint64_t(1) << 24;
  std::vector<Mac> macs;
  for (uint32_t h = 0; h < hosts; ++h) macs.push_back({0x02, 0, 0, 0, 0, uint8_t(h)});
  Network net(*topology, macs, 1, 10'000'000, {.deliver = [](uint32_t, std::vector<uint8_t>&, uint64_t) {}});
  uint64_t now = 0;
  for (const uint8_t* p = nul != nullptr ? nul + 1 : end; p + 2 <= end;) {
    const uint32_t host = p[0] % hosts;
    const size_t length = std::min<size_t>(p[1], size_t(end - p - 2));
    std::vector<uint8_t> frame(p + 2, p + 2 + length);
    if (!frame.empty()) frame[0] = 0x02, frame.resize(std::max<size_t>(frame.size(), 6));
    if (frame.size() >= 6) frame[5] = frame.size() > 6 ? frame[6] % uint8_t(hosts + 1) : 0;  // mostly to a host
    net.send(host, std::move(frame), now);
    now += 50'000;
    p += 2 + length;
  }
  for (int events = 0; events < 100000; ++events) {  // bounded: a pause refresh loop would show here
    const auto next = net.next_event_ps();
    if (!next) break;
    net.run_until(*next);
  }
  return 0;
}
