#pragma once
// The driver's side of on-demand paging, as mlx5_ib 6.1 plays it (its page-fault EQ, the resume
// command, the MTT entries it zaps and loads), for the tests of the data path's page faults.
#include "model/objects/page_faults.h"
#include "testbench/model/rdma_fixture.h"

namespace hcaemu::model::test {

// The EQE fields mlx5_ib_eq_pf_process reads.
struct PageFaultEqe {
  uint8_t type = 0, subtype = 0;
  uint16_t wqe_index = 0;
  uint32_t token = 0, rkey = 0, length = 0;
  uint64_t va = 0;
  uint8_t fault_type = 0;
  uint32_t wq_number = 0;  // WQE faults; RDMA faults carry the token there
};

// The page-fault EQ mlx5_ib creates on the first ODP MR (mlx5r_odp_create_eq: mask 1 << 0xC).
struct FaultQueue {
  RdmaNode& n;
  uint64_t ring = 0;
  uint32_t eqn = 0, consumed = 0;
  explicit FaultQueue(RdmaNode& node) : n(node) {
    ring = n.page();
    for (uint32_t i = 0; i < 64; ++i) *n.memory.at(ring + 64 * i + 0x3f) = 1;
    eqn = n.create_eq(6, n.uar, 0, uint64_t(1) << page_fault::kEventType, {ring});
  }
  std::vector<PageFaultEqe> poll() {
    std::vector<PageFaultEqe> all;
    for (;; ++consumed) {
      const auto e = n.read(ring + 64 * (consumed & 63), 64);
      if ((e[0x3f] & 1) != ((consumed >> 6) & 1)) break;
      const uint8_t* d = &e[0x20];
      PageFaultEqe f{.type = e[1], .subtype = e[3]};
      if (f.subtype == page_fault::kRdma) {
        f.rkey = load_be32(d + 4);
        f.length = load_be32(d + 12);
        f.va = load_be64(d + 16);
        f.fault_type = uint8_t(load_be32(d + 24) >> 24);
        f.token = f.wq_number = load_be32(d + 24) & 0xffffff;
      } else {
        f.wqe_index = load_be16(d + 6);
        f.token = load_be32(d + 12);
        f.fault_type = uint8_t(load_be32(d + 24) >> 24) & 7;
        f.wq_number = load_be32(d + 24) & 0xffffff;
      }
      all.push_back(f);
    }
    return all;
  }
  // mlx5_ib_page_fault_resume.
  uint8_t resume(const PageFaultEqe& f, bool error = false) {
    auto in = n.input(0x10);
    store_be32(&in[0x08], (error ? 1u << 31 : 0) | (uint32_t(f.fault_type & 7) << 24) | f.wq_number);
    store_be32(&in[0x0c], f.token & 0xffffff);
    return n.run(0x204, in);
  }
};

// The driver's invalidation (a ZAP) and its fault handling (a load), on the MR's MTT entries.
inline void set_present(RdmaNode& n, const Mr& mr, size_t page, bool present) {
  Mkey* m = n.f.resources.mkeys.find(mr.key >> 8);
  ASSERT_NE(m, nullptr);
  ASSERT_LT(page, m->mtt.size());
  m->mtt[page] = present ? (mr.pages[page] | 3) : 0;
}

}  // namespace hcaemu::model::test
