// Regression test for the mlx5e stall of issue 3: EQE and CQE writes spend model time on their DMA,
// so two SystemC processes posting to one EQ (or CQ) at once must still get distinct slots. Before
// the fix both wrote the same slot and the producer skipped one: the driver waited forever on an
// entry that was never written.
#include <gtest/gtest.h>

#include <systemc>

#include <array>
#include <map>
#include <vector>

#include "common/endian.h"
#include "model/queues/completion_queue.h"
#include "model/queues/event_queue.h"
#include "model/function_context.h"

namespace {

using namespace hcaemu;

// Host memory whose every access takes model time, like the PCIe link model's.
class SlowMemory : public pcie::HostMemory {
 public:
  bool read(uint64_t addr, std::span<uint8_t> dst) override {
    sc_core::wait(50, sc_core::SC_NS);
    for (size_t i = 0; i < dst.size(); ++i) dst[i] = bytes_[addr + i];
    return true;
  }
  bool write(uint64_t addr, std::span<const uint8_t> src) override {
    sc_core::wait(50, sc_core::SC_NS);
    for (size_t i = 0; i < src.size(); ++i) bytes_[addr + i] = src[i];
    return true;
  }
  uint8_t at(uint64_t addr) { return bytes_[addr]; }

 private:
  std::map<uint64_t, uint8_t> bytes_;
};

model::PageList one_page(uint64_t address) {
  std::array<uint8_t, 8> pas{};
  store_be64(pas.data(), address);
  model::PageListError error{};
  return *model::PageList::build(pas, 12, 0, 4096, error);
}

SC_MODULE(TwoPosters) {
  model::FunctionContext& f;
  int done = 0;
  void eq_poster() {
    for (int i = 0; i < 8; ++i) model::eq_write(f, 1, 0x00, 0, std::array<uint8_t, 4>{1, 2, 3, uint8_t(i)});
    ++done;
  }
  void cq_poster() {
    for (int i = 0; i < 8; ++i) model::write_cqe(f, 1, [](std::span<uint8_t> cqe) { cqe[model::cqe::kOpOwn] = 0x20; });
    ++done;
  }
  SC_HAS_PROCESS(TwoPosters);
  TwoPosters(sc_core::sc_module_name name, model::FunctionContext& context) : sc_module(name), f(context) {
    SC_THREAD(eq_poster);
    SC_THREAD(eq_poster);
    SC_THREAD(cq_poster);
    SC_THREAD(cq_poster);
  }
};

TEST(ConcurrentCompletionWrites, TwoProcessesNeverShareASlot) {
  SlowMemory memory;
  model::FunctionContext f;
  f.attach_memory(&memory);
  model::EventQueue eq;
  eq.log_size = 6;
  eq.ring = one_page(0x10000);
  ASSERT_EQ(f.resources.eqs.insert(std::move(eq)), 1u);
  model::CompletionQueue cq;
  cq.log_size = 6;
  cq.ring = one_page(0x20000);
  ASSERT_EQ(f.resources.cqs.insert(std::move(cq)), 1u);

  TwoPosters posters("posters", f);
  sc_core::sc_start();
  ASSERT_EQ(posters.done, 4);

  EXPECT_EQ(f.resources.eqs.find(1)->producer, 16u);
  EXPECT_EQ(f.resources.cqs.find(1)->producer, 16u);
  // Every one of the 16 slots was written (EQE type byte 0 and owner 0 look empty, so check the
  // data byte that both posters set, and the CQE opcode nibble).
  for (uint64_t slot = 0; slot < 16; ++slot) {
    EXPECT_EQ(memory.at(0x10000 + slot * 64 + 0x20 + 0), 1) << "EQE slot " << slot;
    EXPECT_EQ(memory.at(0x20000 + slot * 64 + model::cqe::kOpOwn) & 0xf0, 0x20) << "CQE slot " << slot;
  }
}

}  // namespace

// libsystemc wants an sc_main; GoogleTest's main drives the kernel instead.
int sc_main(int, char**) { return 0; }
