#pragma once
// What `hcareplay inspect` prints of a reconstructed capture or a workload: hosts, queue pairs,
// message counts by opcode and size, think-time statistics, the protocol's anomalies and the
// unmapped frames with their reasons.
#include <ostream>

#include "replay/reconstruct.h"
#include "replay/workload.h"

namespace hcaemu::replay {

void print_capture(std::ostream& out, const Reconstruction& capture, size_t max_unmapped);
void print_workload(std::ostream& out, const Workload& workload);

}  // namespace hcaemu::replay
