#pragma once
// The testbenches use the headless host's simulated memory and MSI-X recorder.
#include "hostsim/sim_host_memory.h"

namespace hcaemu::testbench {
using hostsim::RecordingMsix;
using hostsim::SimHostMemory;
}  // namespace hcaemu::testbench
