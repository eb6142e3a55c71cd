// Prints how fast a host thread reaches the model without QEMU: BAR0 register reads as round trips
// (host thread -> kernel queue -> PCIe link model -> HCA function -> reply), and posted doorbell
// writes. Wall-clock figures of this machine; the model-time cost of each access is printed too.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <thread>
#include <vector>

#include "common/log.h"
#include "model/firmware/init_segment.h"
#include "qemu-bridge/kernel_queue.h"
#include "sriov/hca_device.h"

using namespace hcaemu;
using Clock = std::chrono::steady_clock;

int sc_main(int argc, char** argv) {
  const int reads = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int writes = argc > 2 ? std::atoi(argv[2]) : 200000;
  set_log_level("warn");
  sriov::DeviceConfig config;
  sriov::HcaDevice device("hca", config);
  bridge::KernelQueue queue("queue");
  auto& pf = device.pf();

  std::vector<double> latency_us;
  double write_rate = 0, model_ns_per_read = 0;
  std::thread host([&] {
    // Enable memory space the way a driver would, before any BAR access.
    std::promise<void> ready;
    queue.post([&] {
      uint8_t cmd[2] = {0x06, 0};
      pf.config_write(0x04, cmd);
      ready.set_value();
    });
    ready.get_future().wait();
    for (int i = 0; i < reads; ++i) {
      std::promise<uint32_t> reply;
      auto t0 = Clock::now();
      queue.post([&] {
        uint8_t b[4];
        const auto before = sc_core::sc_time_stamp();
        pf.bar_read(0, model::init_seg::kHealthCounter, b);
        model_ns_per_read = (sc_core::sc_time_stamp() - before).to_seconds() * 1e9;
        reply.set_value(b[3]);
      });
      reply.get_future().wait();
      latency_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    auto t0 = Clock::now();
    for (int i = 0; i < writes; ++i)
      queue.post([&pf] {
        uint8_t b[4] = {1, 2, 3, 4};
        pf.bar_write(0, 0x3800, b);
      });
    std::promise<void> flushed;
    queue.post([&] { flushed.set_value(); });
    flushed.get_future().wait();
    write_rate = writes / std::chrono::duration<double>(Clock::now() - t0).count();
    queue.request_stop();
  });
  sc_core::sc_start();
  host.join();

  std::sort(latency_us.begin(), latency_us.end());
  std::printf("bridge_bench: BAR0 read round trip (host thread -> SystemC model -> host thread)\n");
  std::printf("  median %.1f us, p99 %.1f us, n=%d; model time per read %.0f ns (PCIe Gen%u x%u link model)\n",
              latency_us[latency_us.size() / 2], latency_us[latency_us.size() * 99 / 100], reads, model_ns_per_read,
              config.link_generation, config.link_width);
  std::printf("  posted doorbell writes handled by the kernel: %.2f M/s (n=%d)\n", write_rate / 1e6, writes);
  std::printf("  UAR writes counted by the model: %llu\n",
              static_cast<unsigned long long>(pf.hca().counters().uar_writes));
  return 0;
}
