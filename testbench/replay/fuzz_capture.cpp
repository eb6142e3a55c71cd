// libFuzzer over the capture reconstruction: the input is cut into frames (a two-byte length
// before each), fed in order, and the reconstruction finished and lowered; never a crash.
#include <cstddef>
#include <cstdint>
#include <span>

#include "replay/reconstruct.h"
#include "replay/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hcaemu::replay::Reconstructor builder;
  uint64_t index = 0;
  while (size >= 2) {
    const size_t length = std::min<size_t>(size - 2, size_t(data[0]) << 8 | data[1]);
    builder.add(index, index * 1000, std::span(data + 2, length));
    ++index;
    data += 2 + length;
    size -= 2 + length;
  }
  (void)hcaemu::replay::workload_json(hcaemu::replay::lower(builder.finish()));
  return 0;
}
