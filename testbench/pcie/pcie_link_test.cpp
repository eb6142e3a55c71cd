// The TLM pass-through adds the modelled delay to b_transport and forwards the payload intact.
#include "pcie/pcie_link.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace hcaemu::pcie;
using namespace sc_core;

namespace {

struct Memory : sc_module {
  tlm_utils::simple_target_socket<Memory> socket{"socket"};
  std::vector<uint8_t> mem = std::vector<uint8_t>(1 << 16, 0);
  sc_time seen_delay;
  explicit Memory(sc_module_name n) : sc_module(n) { socket.register_b_transport(this, &Memory::b_transport); }
  void b_transport(tlm::tlm_generic_payload& t, sc_time& delay) {
    seen_delay = delay;
    uint8_t* p = mem.data() + t.get_address();
    if (t.is_read()) std::memcpy(t.get_data_ptr(), p, t.get_data_length());
    else std::memcpy(p, t.get_data_ptr(), t.get_data_length());
    delay += sc_time(10, SC_NS);  // the target's own access time
    t.set_response_status(tlm::TLM_OK_RESPONSE);
  }
};

struct Driver : sc_module {
  tlm_utils::simple_initiator_socket<Driver> socket{"socket"};
  sc_time write_delay, read_delay, ignore_delay;
  std::vector<uint8_t> readback = std::vector<uint8_t>(4096);
  tlm::tlm_response_status status = tlm::TLM_INCOMPLETE_RESPONSE;
  SC_HAS_PROCESS(Driver);
  explicit Driver(sc_module_name n) : sc_module(n) { SC_THREAD(run); }
  sc_time access(tlm::tlm_command cmd, uint8_t* data, unsigned len) {
    tlm::tlm_generic_payload t;
    t.set_command(cmd);
    t.set_address(0x100);
    t.set_data_ptr(data);
    t.set_data_length(len);
    t.set_streaming_width(len);
    sc_time delay = SC_ZERO_TIME;
    socket->b_transport(t, delay);
    status = t.get_response_status();
    return delay;
  }
  void run() {
    std::vector<uint8_t> payload(4096);
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i * 7);
    write_delay = access(tlm::TLM_WRITE_COMMAND, payload.data(), 4096);
    read_delay = access(tlm::TLM_READ_COMMAND, readback.data(), 4096);
    ignore_delay = access(tlm::TLM_IGNORE_COMMAND, readback.data(), 0);
  }
};

TEST(PcieLink, AddsModelledDelayAndForwards) {
  LinkConfig cfg;
  cfg.gen = 4;
  Driver drv("drv");
  PcieLink link("link", cfg, LinkDirection::kDeviceToHost);
  Memory mem("mem");
  drv.socket.bind(link.target);
  link.initiator.bind(mem.socket);
  sc_start();

  const sc_time ten(10, SC_NS);
  EXPECT_EQ(drv.write_delay, link.cost(tlm::TLM_WRITE_COMMAND, 4096) + ten);
  EXPECT_EQ(drv.read_delay, link.cost(tlm::TLM_READ_COMMAND, 4096) + ten);
  EXPECT_EQ(drv.ignore_delay, ten);
  EXPECT_EQ(mem.seen_delay, link.cost(tlm::TLM_IGNORE_COMMAND, 0));
  EXPECT_EQ(drv.status, tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(link.transactions(), 3u);
  // The figures are the link model's: DMA write of 4 KiB on Gen4 x16 = 500 ns + 16 TLPs' worth.
  EXPECT_NEAR(link.cost(tlm::TLM_WRITE_COMMAND, 4096).to_seconds() * 1e9,
              link.timing().dma_write_time(4096).count(), 0.001);
  EXPECT_GT(link.cost(tlm::TLM_READ_COMMAND, 4096), link.cost(tlm::TLM_WRITE_COMMAND, 4096));
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(drv.readback[i], uint8_t(i * 7)) << i;
}

TEST(PcieLink, HostToDeviceUsesMmioCosts) {
  // Static form: no module, so this test can share a process with the elaborating one.
  const LinkTiming t{LinkConfig{}};
  const auto dir = LinkDirection::kHostToDevice;
  EXPECT_NEAR(PcieLink::cost(t, dir, tlm::TLM_READ_COMMAND, 4).to_seconds() * 1e9, t.mmio_read_latency(4).count(), 0.001);
  EXPECT_NEAR(PcieLink::cost(t, dir, tlm::TLM_WRITE_COMMAND, 8).to_seconds() * 1e9, t.mmio_write_latency(8).count(), 0.001);
  EXPECT_GT(PcieLink::cost(t, dir, tlm::TLM_READ_COMMAND, 4), PcieLink::cost(t, dir, tlm::TLM_WRITE_COMMAND, 4));
}

}  // namespace

// libsystemc references sc_main; GoogleTest provides main(), and sc_start() works without it.
int sc_main(int, char**) { return 0; }
