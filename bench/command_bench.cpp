// Command-engine throughput without QEMU: a host thread drives the PF's command queue the way
// mlx5_core does in polling mode (entry and mailboxes in host memory, doorbell through BAR0, wait
// for the ownership bit) and issues QUERY_HCA_CAP, ALLOC_PD + DEALLOC_PD and CREATE_CQ +
// DESTROY_CQ in loops. Prints commands per second of wall clock (host thread -> kernel queue ->
// PCIe link model -> command engine -> DMA back) and the model time per command, from the doorbell
// write to the ownership bit's return.
// Usage: command_bench [ITERATIONS]   (per loop; default 20000)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/endian.h"
#include "common/log.h"
#include "model/firmware/command_queue.h"
#include "model/firmware/firmware.h"
#include "model/firmware/init_segment.h"
#include "qemu-bridge/kernel_queue.h"
#include "sriov/hca_device.h"
#include "testbench/host/sim_host_memory.h"

using namespace hcaemu;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kRamBase = 0x40000000;
constexpr uint64_t kQueue = kRamBase;                    // command queue page (slot 0 used)
constexpr uint64_t kInMailboxes = kRamBase + 0x10000;    // 1 KiB aligned blocks
constexpr uint64_t kOutMailboxes = kRamBase + 0x20000;
constexpr uint64_t kEqRing = kRamBase + 0x40000;
constexpr uint64_t kCqRing = kRamBase + 0x50000;
constexpr uint64_t kCqDoorbellRecord = kRamBase + 0x60000;

std::string name(uint16_t opcode) { return std::string(model::Firmware::command_name(opcode)); }

// Host RAM that tells the host thread when the device hands a command entry back: the engine's
// last DMA for a command is the one byte holding the ownership bit.
class WatchedMemory : public testbench::SimHostMemory {
 public:
  using SimHostMemory::SimHostMemory;
  bool write(uint64_t addr, std::span<const uint8_t> src) override {
    const bool ok = SimHostMemory::write(addr, src);
    if (addr <= watched_ && watched_ < addr + src.size()) {
      completed_at = sc_core::sc_time_stamp();
      done.store(true, std::memory_order_release);
      done.notify_one();
    }
    return ok;
  }
  uint64_t watched_ = kQueue + 0x3f;
  sc_core::sc_time completed_at;  // written on the kernel thread before `done` is released
  std::atomic<bool> done{false};
};

struct Driver {
  sriov::FunctionPort& pf;
  bridge::KernelQueue& queue;
  WatchedMemory& ram;
  std::map<uint16_t, std::vector<double>> model_ns;  // by opcode, for the current loop

  // Runs `fn` on the kernel thread and waits for it.
  void on_kernel(std::function<void()> fn) {
    std::promise<void> done;
    queue.post([&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }
  void reg_write(uint64_t offset, uint32_t value) {
    on_kernel([&] {
      uint8_t b[4];
      store_be32(b, value);
      pf.bar_write(0, offset, b);
    });
  }

  // Lays a mailbox chain for `bytes` bytes past the inline 16 at `base`; returns its address or 0.
  uint64_t chain(uint64_t base, uint32_t bytes, const uint8_t* data) {
    if (bytes <= model::cmdq::kInlineBytes) return 0;
    const uint32_t blocks = (bytes - model::cmdq::kInlineBytes + model::cmdq::kMailboxData - 1) / model::cmdq::kMailboxData;
    for (uint32_t i = 0; i < blocks; ++i) {
      uint8_t* block = ram.at(base + i * 1024);
      std::memset(block, 0, model::cmdq::kMailboxSize);
      if (data) {
        const uint32_t from = model::cmdq::kInlineBytes + i * model::cmdq::kMailboxData;
        std::memcpy(block, data + from, std::min(model::cmdq::kMailboxData, bytes - from));
      }
      store_be64(block + model::cmdq::kMailboxNext, i + 1 < blocks ? base + (i + 1) * 1024 : 0);
      store_be32(block + model::cmdq::kMailboxBlockNum, i);
    }
    return base;
  }

  // One command through slot 0; returns the output's first 16 bytes (status, syndrome, out[8..15]).
  std::vector<uint8_t> command(std::vector<uint8_t> in, uint32_t out_length = 16) {
    in.resize(std::max<size_t>(in.size(), 16), 0);
    uint8_t* entry = ram.at(kQueue);
    std::memset(entry, 0, model::cmdq::kEntrySize);
    entry[0] = model::cmdq::kTypePciTransport;
    store_be32(entry + 0x04, uint32_t(in.size()));
    std::memcpy(entry + 0x10, in.data(), 16);
    store_be64(entry + 0x08, chain(kInMailboxes, uint32_t(in.size()), in.data()));
    store_be64(entry + 0x30, chain(kOutMailboxes, out_length, nullptr));
    store_be32(entry + 0x38, out_length);
    entry[0x3f] = 1;  // owned by hardware
    ram.done.store(false);
    sc_core::sc_time rung;
    queue.post([&] {
      rung = sc_core::sc_time_stamp();
      uint8_t b[4];
      store_be32(b, 1u);  // slot 0
      pf.bar_write(0, model::init_seg::kCmdDoorbell, b);
    });
    ram.done.wait(false, std::memory_order_acquire);
    const uint16_t opcode = load_be16(in.data());
    model_ns[opcode].push_back((ram.completed_at - rung).to_seconds() * 1e9);
    if (entry[0x3f] != 0 || entry[0x20] != 0)
      std::fprintf(stderr, "command_bench: %s failed: delivery %#x, status %#x\n",
                   name(opcode).c_str(), entry[0x3f] >> 1, entry[0x20]);
    return {entry + 0x20, entry + 0x30};
  }
  static std::vector<uint8_t> op(uint16_t opcode, uint16_t op_mod = 0, size_t size = 16) {
    std::vector<uint8_t> in(size, 0);
    store_be16(&in[0], opcode);
    store_be16(&in[6], op_mod);
    return in;
  }
  static std::vector<uint8_t> with_number(uint16_t opcode, uint32_t number) {
    auto in = op(opcode);
    store_be32(&in[8], number);
    return in;
  }
};

// Runs `iteration` `n` times; prints commands/s of wall clock and each opcode's median model time.
void loop(Driver& d, const char* what, int n, int commands_per_iteration, const std::function<void()>& iteration) {
  d.model_ns.clear();
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) iteration();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::string model;
  for (auto& [opcode, ns] : d.model_ns) {
    std::sort(ns.begin(), ns.end());
    char part[96];
    std::snprintf(part, sizeof part, "%s%s %.2f us", model.empty() ? "" : ", ",
                  name(opcode).c_str(), ns[ns.size() / 2] / 1e3);
    model += part;
  }
  std::printf("  %-26s %7.0f commands/s (%4.1f us each); model time per command (median): %s\n", what,
              n * commands_per_iteration / seconds, 1e6 * seconds / (n * commands_per_iteration), model.c_str());
}

}  // namespace

int sc_main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 20000;
  set_log_level("warn");
  sriov::DeviceConfig config;
  sriov::HcaDevice device("hca", config);
  bridge::KernelQueue queue("queue");
  WatchedMemory ram(kRamBase, 1 << 20);
  testbench::RecordingMsix msix;
  device.pf().attach_host(&ram, &msix, sriov::FunctionFace::MsixRouting::kHostOwnsTable);
  Driver d{device.pf(), queue, ram, {}};

  std::thread host([&] {
    d.on_kernel([&] {
      uint8_t cmd[2] = {0x06, 0};  // memory space + bus master
      d.pf.config_write(0x04, cmd);
    });
    d.reg_write(model::init_seg::kCmdqAddrHigh, uint32_t(kQueue >> 32));
    d.reg_write(model::init_seg::kCmdqAddrLowSize, uint32_t(kQueue));
    d.command(Driver::op(0x104));  // ENABLE_HCA
    const uint32_t uar = load_be32(&d.command(Driver::op(0x802))[8]) & 0xffffff;  // ALLOC_UAR
    auto eq = Driver::op(0x301, 0, 0x118);                                         // CREATE_EQ, 64 EQEs
    store_be32(&eq[0x1c], (6u << 24) | uar);
    store_be64(&eq[0x110], kEqRing);
    const uint32_t eqn = load_be32(&d.command(eq)[8]) & 0xff;
    auto cq = Driver::op(0x400, 0, 0x118);  // CREATE_CQ, 64 CQEs in one page
    store_be32(&cq[0x1c], (6u << 24) | uar);
    store_be32(&cq[0x24], eqn);
    store_be64(&cq[0x48], kCqDoorbellRecord);
    store_be64(&cq[0x110], kCqRing);

    std::printf("command_bench: PF command queue in polling mode, %d iterations a loop (host thread -> SystemC model)\n", n);
    loop(d, "QUERY_HCA_CAP (4 KiB out)", n, 1, [&] { d.command(Driver::op(0x100, 0x1), 0x1010); });
    loop(d, "ALLOC_PD + DEALLOC_PD", n, 2, [&] {
      const uint32_t pd = load_be32(&d.command(Driver::op(0x800))[8]) & 0xffffff;
      d.command(Driver::with_number(0x801, pd));
    });
    loop(d, "CREATE_CQ + DESTROY_CQ", n, 2, [&] {
      const uint32_t cqn = load_be32(&d.command(cq)[8]) & 0xffffff;
      d.command(Driver::with_number(0x401, cqn));
    });
    std::printf("  commands executed by the model: %llu\n",
                static_cast<unsigned long long>(d.pf.hca().command_counters().executed));
    queue.request_stop();
  });
  sc_core::sc_start();
  host.join();
  return 0;
}
