#pragma once
// The headless host's RDMA side (hostsim/rdma_host.h: functions joined by a test wire, verbs-like
// calls written as libmlx5 writes them) for unit tests.
#include <deque>

#include "hostsim/rdma_host.h"
#include "testbench/model/resource_fixture.h"

namespace hcaemu::model::test {

// Keeps the SQ resumptions an engine asks for, as HcaFunction queues them, for a test to hand back
// (RdmaEngine::resume_sq) when and in what order it likes; a paced one shows its not_before_ps.
struct QueuedSqScheduler : RdmaEngine::SqScheduler {
  std::deque<SqResume> queued;
  void resume_later(const SqResume& resume) override { queued.push_back(resume); }
  bool reread_queued(uint32_t qpn) override {
    for (SqResume& r : queued)
      if (r.qpn == qpn) return r.reread = true;
    return false;
  }
};

// Two functions joined by one RC connection `c`, with a source MR at A and a target MR (every
// access) at B of `kBytes` each: the set-up of the single-connection tests.
template <uint64_t kBytes = 4096>
struct ConnectedPairTest : ::testing::Test {
  RdmaPair p;
  RdmaNode& a = p.a;
  RdmaNode& b = p.b;
  Connection c = p.connect();
  Mr src = a.reg_mr(kBytes);
  Mr dst = b.reg_mr(kBytes, access_bits::kAll);
};

}  // namespace hcaemu::model::test
