#pragma once
// The counters of every function and of the embedded switch, written to the log when a run ends:
// the first place to look when traffic goes missing.
#include "sriov/hca_device.h"

namespace hcaemu::sriov {

void log_device_counters(HcaDevice& device);

}  // namespace hcaemu::sriov
