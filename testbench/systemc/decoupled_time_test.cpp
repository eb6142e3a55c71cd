// Work items in model time (pcie/model_time.h) and the switch's ingress (sriov/switch_ingress.h):
// an item's costs move its own clock ahead of the kernel's without yielding, the item waits the
// whole of it out once, and frames that functions running ahead hand to the switch reach it in the
// order of their model time, at that time, whichever function ran first.
#include <gtest/gtest.h>

#include <systemc>

#include <string>
#include <utility>
#include <vector>

#include "model/work_items.h"
#include "pcie/model_time.h"
#include "sriov/switch_ingress.h"

namespace {

using namespace hcaemu;
using sc_core::sc_time;
using sc_core::SC_NS;

struct Forwarded {
  uint16_t vport;
  char tag;
  sc_time at;
};

SC_MODULE(TwoItems) {
  std::vector<Forwarded> forwarded;
  sriov::SwitchIngress ingress{"ingress", [this](uint16_t vport, std::vector<uint8_t>& frame, uint32_t) {
                                 forwarded.push_back({vport, char(frame[0]), sc_core::sc_time_stamp()});
                               }};
  // What each item saw.
  sc_time a_local_after_costs, a_kernel_after_costs, a_kernel_after_settle;
  sc_time b_model_time_outside_item;
  int a_yields_seen_by_b = 0;

  SC_CTOR(TwoItems) {
    SC_THREAD(function_a);
    SC_THREAD(function_b);
  }
  void submit(uint16_t vport, char tag) {
    const uint8_t frame[1] = {uint8_t(tag)};
    ingress.submit(vport, frame, pcie::model_time());
  }
  void function_a() {
    pcie::DecoupledScope item;
    pcie::consume_model_time(sc_time(30, SC_NS));  // a DMA
    submit(0, 'a');
    pcie::consume_model_time(sc_time(20, SC_NS));  // the wire
    submit(0, 'c');
    a_local_after_costs = pcie::model_time();
    a_kernel_after_costs = sc_core::sc_time_stamp();
    item.settle();
    a_kernel_after_settle = sc_core::sc_time_stamp();
  }
  void function_b() {
    wait(10, SC_NS);
    b_model_time_outside_item = pcie::model_time();  // A is waiting out its item: the kernel's time
    pcie::DecoupledScope item;
    pcie::consume_model_time(sc_time(30, SC_NS));
    submit(1, 'b');  // at 40 ns: between A's two frames although A handed both over first
    item.settle();
  }
};

TEST(DecoupledTime, AnItemRunsAheadAndWaitsOnceFramesReachTheSwitchInModelTimeOrder) {
  TwoItems items("items");
  sc_core::sc_start();
  EXPECT_EQ(items.a_local_after_costs, sc_time(50, SC_NS));
  EXPECT_EQ(items.a_kernel_after_costs, sc_core::SC_ZERO_TIME) << "no yield inside the item";
  EXPECT_EQ(items.a_kernel_after_settle, sc_time(50, SC_NS)) << "one wait for the whole item";
  EXPECT_EQ(items.b_model_time_outside_item, sc_time(10, SC_NS)) << "A's offset does not leak into B";
  ASSERT_EQ(items.forwarded.size(), 3u);
  EXPECT_EQ(items.forwarded[0].tag, 'a');
  EXPECT_EQ(items.forwarded[0].at, sc_time(30, SC_NS));
  EXPECT_EQ(items.forwarded[1].tag, 'b');
  EXPECT_EQ(items.forwarded[1].vport, 1);
  EXPECT_EQ(items.forwarded[1].at, sc_time(40, SC_NS));
  EXPECT_EQ(items.forwarded[2].tag, 'c');
  EXPECT_EQ(items.forwarded[2].at, sc_time(50, SC_NS));
  EXPECT_EQ(items.ingress.waiting(), 0u);
  EXPECT_EQ(pcie::model_time(), sc_core::sc_time_stamp()) << "no item open once all are done";
}

// A sender that hands its buffer over (submit_buffer) loses it to the ingress: the bytes the
// switch gets are that buffer, not a copy, due now or queued, and they keep their model-time order
// among copied frames.
SC_MODULE(HandedOver) {
  std::vector<std::pair<char, const uint8_t*>> forwarded;  // tag, where its bytes lived
  std::vector<sc_time> at;
  const uint8_t* now_buffer = nullptr;
  const uint8_t* later_buffer = nullptr;
  bool left_empty = true;
  sriov::SwitchIngress ingress{"ingress", [this](uint16_t, std::vector<uint8_t>& frame, uint32_t) {
                                 forwarded.push_back({char(frame[0]), frame.data()});
                                 at.push_back(sc_core::sc_time_stamp());
                               }};
  SC_CTOR(HandedOver) { SC_THREAD(send); }
  void send() {
    std::vector<uint8_t> now(64, uint8_t('n'));
    now_buffer = now.data();
    ingress.submit_buffer(0, now, sc_core::sc_time_stamp());  // due: forwarded at once
    left_empty = left_empty && now.empty();
    std::vector<uint8_t> later(64, uint8_t('l'));
    later_buffer = later.data();
    ingress.submit_buffer(0, later, sc_core::sc_time_stamp() + sc_time(20, SC_NS));
    left_empty = left_empty && later.capacity() == 0;
    const uint8_t copied[1] = {uint8_t('c')};
    ingress.submit(1, copied, sc_core::sc_time_stamp() + sc_time(10, SC_NS));
  }
};

TEST(DecoupledTime, AHandedOverFrameIsTakenNotCopiedAndKeepsItsOrder) {
  HandedOver sender("sender");
  sc_core::sc_start();
  EXPECT_TRUE(sender.left_empty) << "the sender keeps no bytes of a frame it handed over";
  ASSERT_EQ(sender.forwarded.size(), 3u);
  EXPECT_EQ(sender.forwarded[0], std::make_pair('n', sender.now_buffer));
  EXPECT_EQ(sender.forwarded[1].first, 'c');
  EXPECT_EQ(sender.forwarded[2], std::make_pair('l', sender.later_buffer));
  EXPECT_EQ(sender.at, (std::vector<sc_time>{sc_core::SC_ZERO_TIME, sc_time(10, SC_NS), sc_time(20, SC_NS)}));
}

// to_ps and from_ps read and write an sc_time's value as picoseconds: the kernel must keep its
// default resolution of 1 ps.
TEST(DecoupledTime, ModelTimeCountsWholePicoseconds) {
  EXPECT_EQ(sc_core::sc_get_time_resolution(), sc_time(1, sc_core::SC_PS));
  EXPECT_EQ(pcie::to_ps(sc_time(3, SC_NS)), 3000u);
  EXPECT_EQ(pcie::from_ps(123'456'789'012), sc_time(123'456'789'012.0, sc_core::SC_PS));
  EXPECT_EQ(pcie::to_ps(pcie::from_ps(0xffff'ffff'ffffull)), 0xffff'ffff'ffffull);
}

// Issue 16 (mlx5 DR rule writes overtaken by raw packets): an item that must follow certain queued
// ones is due just after the latest of them, never before now, and at no particular time when none
// is queued.
TEST(WorkItems, AnItemAfterTheSelectedOnesIsDueJustAfterTheLatest) {
  struct Item {
    char kind;
    sc_time not_before;
  };
  const sc_time now(100, SC_NS), ps(1, sc_core::SC_PS);
  std::deque<Item> work{{'f', sc_time(150, SC_NS)}, {'d', sc_time(300, SC_NS)}, {'f', sc_time(120, SC_NS)}};
  const auto frames = [](const Item& item) { return item.kind == 'f'; };
  EXPECT_EQ(hcaemu::model::after_queued(work, now, frames), sc_time(150, SC_NS) + ps);
  work = {{'f', sc_time(20, SC_NS)}, {'r', sc_time(0, SC_NS)}};
  EXPECT_EQ(hcaemu::model::after_queued(work, now, frames), now + ps) << "all due: right after them, in order";
  work = {{'d', sc_time(300, SC_NS)}};
  EXPECT_FALSE(hcaemu::model::after_queued(work, now, frames).has_value());
}

}  // namespace

int sc_main(int, char**) { return 0; }
