// Issue 14: a function's DMA through its client (maps without an fd: DMA_READ/WRITE messages) used
// to block the SystemC kernel thread until the client answered, up to 5 s per chunk, so a client
// that never answered froze every function on the device again and again. With DmaReplyWaiter the
// waiting function yields to the kernel: another function keeps running in model time meanwhile,
// the late reply still completes the access, and an unanswered one fails at dma_timeout.
#include <gtest/gtest.h>

#include <systemc>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "qemu-bridge/dma_reply_waiter.h"
#include "qemu-bridge/server.h"
#include "testbench/vfio_user/client.h"
#include "testbench/vfio_user/fake_backend.h"

namespace {

using namespace hcaemu;
using namespace std::chrono_literals;

struct DmaRun {
  bool first_ok = false, second_ok = true;
  uint64_t other_steps_during_first = 0, other_steps_during_second = 0;
  std::atomic<int> phase{0};  // 1: first DMA waiting, 2: second DMA waiting, 3: done
};

SC_MODULE(TwoFunctions) {
  vfio_user::VfioUserServer* server = nullptr;
  DmaRun* run = nullptr;
  uint64_t other_steps = 0;

  SC_CTOR(TwoFunctions) {
    SC_THREAD(slow_function);
    SC_THREAD(other_function);
  }
  void slow_function() {
    std::vector<uint8_t> got(16);
    run->phase = 1;
    uint64_t before = other_steps;
    run->first_ok = server->host_memory().read(0x10000, got);  // answered late by the client
    run->other_steps_during_first = other_steps - before;
    run->phase = 2;
    before = other_steps;
    run->second_ok = server->host_memory().read(0x10000, got);  // never answered
    run->other_steps_during_second = other_steps - before;
    run->phase = 3;
    sc_core::sc_stop();
  }
  void other_function() {  // another function's engine, busy in model time
    for (;;) {
      sc_core::wait(1, sc_core::SC_US);
      ++other_steps;
      if (other_steps % 64 == 0) std::this_thread::sleep_for(100us);  // at emulation speed
    }
  }
};

TEST(SlowClientDma, OnlyTheWaitingFunctionWaits) {
  vfio_user::test::FakeBackend backend;
  char tmpl[] = "/tmp/hcaemu-slowdma-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/s.sock";
  vfio_user::ServerOptions options;
  options.protocol.dma_timeout = 300ms;
  bridge::DmaReplyWaiter waiter("waiter");  // outlives the server that wakes it
  vfio_user::VfioUserServer server(path, backend, options);
  server.set_dma_waiter(&waiter);
  vfio_user::test::TestClient client;
  ASSERT_TRUE(client.connect(path));
  ASSERT_TRUE(client.version()->ok());
  ASSERT_TRUE(client.dma_map(0x10000, 0x1000, vfio_user::kDmaMapFlagRead)->ok());
  client.add_dma_memory(0x10000, 0x1000);

  DmaRun run;
  TwoFunctions device("device");
  device.server = &server;
  device.run = &run;
  std::thread slow_client([&] {
    while (run.phase.load() < 1) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(200ms);  // a slow client...
    EXPECT_EQ(client.serve_dma(1), 1);  // ...that answers the first request in the end
  });
  sc_core::sc_start();
  slow_client.join();

  EXPECT_TRUE(run.first_ok);
  EXPECT_FALSE(run.second_ok);  // ETIMEDOUT after 300 ms
  EXPECT_EQ(run.phase.load(), 3);
  // The other function ran all along (before the fix: not one step while the first waited).
  EXPECT_GT(run.other_steps_during_first, 100u);
  EXPECT_GT(run.other_steps_during_second, 100u);
  EXPECT_GT(waiter.kernel_waits(), 0u);
  server.stop();
  std::filesystem::remove_all(tmpl);
}

}  // namespace

int sc_main(int, char**) { return 0; }
