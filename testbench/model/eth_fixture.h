#pragma once
// A function with the objects an Ethernet queue needs (UAR, PD, TD, EQ, CQs) and builders for the
// Ethernet object commands (inputs laid out per mlx5-layouts.md: create_rq_in/create_sq_in with
// their wq at 0x50 and PAS at 0x110, tisc/tirc/rqtc at 0x20, flow commands).
#include "testbench/model/resource_fixture.h"

namespace hcaemu::model::test {

struct EthFunction : TestFunction {
  uint32_t uar = 0, pd = 0, td = 0, eqn = 0, cqn = 0;
  uint64_t cq_ring = 0, cq_dbr = 0;

  EthFunction() {
    uar = alloc(0x802);
    pd = alloc(0x800);
    td = alloc(0x816);
    eqn = create_eq(4, uar, 0, 0, {page()});
    cq_ring = page();
    cq_dbr = page();
    cqn = create_cq(6, uar, eqn, cq_dbr, {cq_ring});
  }

  // create_rq_in / create_sq_in: wq at 0x50, PAS at 0x110.
  std::vector<uint8_t> queue_input(uint32_t cq, uint32_t log_size, uint32_t log_stride, uint64_t dbr,
                                   const std::vector<uint64_t>& pages, uint32_t wq_type = 1) {
    auto in = input(0x110);
    store_be32(&in[0x28], cq);
    store_be32(&in[0x50], wq_type << 28);
    store_be32(&in[0x58], pd);
    store_be32(&in[0x5c], uar);
    store_be64(&in[0x60], dbr);
    store_be32(&in[0x70], (log_stride << 16) | log_size);
    put_pas(in, 0x110, pages);
    return in;
  }
  uint32_t create_rq(uint64_t dbr, uint64_t ring, uint32_t log_size = 4, uint32_t log_stride = 5) {
    EXPECT_EQ(run(0x908, queue_input(cqn, log_size, log_stride, dbr, {ring})), 0);
    return object();
  }
  uint32_t create_sq(uint64_t dbr, uint64_t ring, uint32_t tis, uint32_t log_size = 4) {
    auto in = queue_input(cqn, log_size, 6, dbr, {ring});
    if (tis != 0) {
      store_be32(&in[0x40], 1u << 16);
      store_be32(&in[0x4c], tis);
    }
    EXPECT_EQ(run(0x904, in), 0);
    return object();
  }
  uint8_t modify_state(uint16_t opcode, uint32_t number, uint32_t from, uint32_t to) {
    auto in = input(0x110);
    store_be32(&in[0x08], (from << 28) | number);
    store_be32(&in[0x20], to << 20);
    return run(opcode, in);
  }
  uint32_t create_tis() {
    auto in = input(0xc0);
    store_be32(&in[0x44], td);
    EXPECT_EQ(run(0x912, in), 0);
    return object();
  }
  std::vector<uint8_t> rqt_input(const std::vector<uint32_t>& rqns, uint32_t max_size) {
    auto in = input(0x110 + 4 * rqns.size());
    store_be32(&in[0x34], max_size);
    store_be32(&in[0x38], uint32_t(rqns.size()));
    for (size_t i = 0; i < rqns.size(); ++i) store_be32(&in[0x110 + 4 * i], rqns[i]);
    return in;
  }
  std::vector<uint8_t> tir_input(bool indirect, uint32_t target) {
    auto in = input(0x110);
    store_be32(&in[0x24], (indirect ? 1u : 0u) << 28);
    store_be32(indirect ? &in[0x40] : &in[0x3c], target);
    store_be32(&in[0x44], td);
    return in;
  }
  std::vector<uint8_t> flow_input(size_t size, uint8_t type, uint32_t table) {
    auto in = input(size);
    in[0x10] = type;
    store_be32(&in[0x14], table);
    return in;
  }
  uint32_t create_flow_table(uint8_t type, uint32_t log_size, uint8_t level = 0) {
    auto in = flow_input(0x40, type, 0);
    store_be32(&in[0x18], (uint32_t(level) << 16) | log_size);
    EXPECT_EQ(run(0x930, in), 0);
    return object();
  }
  // A group over [start, end] matching the outer destination MAC.
  uint32_t create_group(uint8_t type, uint32_t table, uint32_t start, uint32_t end, bool match_dmac) {
    auto in = flow_input(0x400, type, table);
    store_be32(&in[0x1c], start);
    store_be32(&in[0x24], end);
    if (match_dmac) {
      in[0x3f] = 1;  // match_criteria_enable: outer headers
      std::fill_n(&in[0x40 + 0x08], 6, 0xff);
    }
    EXPECT_EQ(run(0x933, in), 0);
    return object();
  }
  std::vector<uint8_t> fte_input(uint8_t type, uint32_t table, uint32_t index, uint32_t group,
                                 const std::vector<std::pair<uint8_t, uint32_t>>& dests,
                                 const std::array<uint8_t, 6>* dmac = nullptr) {
    auto in = flow_input(0x340 + 8 * dests.size(), type, table);
    store_be32(&in[0x20], index);
    store_be32(&in[0x44], group);
    store_be32(&in[0x4c], dests.empty() ? 0x1 : 0x4);
    store_be32(&in[0x50], uint32_t(dests.size()));
    if (dmac != nullptr) std::copy(dmac->begin(), dmac->end(), &in[0x80 + 0x08]);
    for (size_t i = 0; i < dests.size(); ++i) store_be32(&in[0x340 + 8 * i], (uint32_t(dests[i].first) << 24) | dests[i].second);
    return in;
  }
};

}  // namespace hcaemu::model::test
