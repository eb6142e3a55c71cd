// libFuzzer over the workload parser: any bytes give a workload or an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "replay/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string error;
  const auto w = hcaemu::replay::parse_workload(std::string_view(reinterpret_cast<const char*>(data), size), &error);
  if (w) (void)hcaemu::replay::workload_json(*w);
  return 0;
}
