#pragma once
// The counters of every function and of the embedded switch, written to the log when a run ends:
// the first place to look when traffic goes missing.
#include <string>

#include "sriov/hca_device.h"

namespace hcaemu::sriov {

void log_device_counters(HcaDevice& device);
// The same counters as key=value lines, one per enabled function and one for the switch, for
// `hcactl stats` (kernel thread).
std::string device_counters_text(HcaDevice& device);

}  // namespace hcaemu::sriov
