#pragma once
// A memory-backed DeviceBackend for the vfio-user tests. Accesses are applied in call order on a
// worker thread (standing in for the SystemC kernel thread), so completions arrive off the
// server's I/O thread just as they will in the emulator.
#include <sys/stat.h>

#include <array>
#include <condition_variable>
#include <deque>
#include <dirent.h>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "qemu-bridge/device_backend.h"

namespace hcaemu::vfio_user::test {

class FakeBackend final : public DeviceBackend {
 public:
  FakeBackend() {
    mem_[0].resize(64 * 1024);  // BAR0
    mem_[2].resize(4096);       // BAR2
    mem_[6].resize(2048);       // ROM (read-only)
    mem_[7].resize(4096);       // config space
    worker_ = std::thread([this] { run(); });
  }
  ~FakeBackend() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  RegionInfo region_info(uint32_t index) const override {
    if (index >= kNumRegions) return {};
    return RegionInfo{mem_[index].size(), true, index != kRomRegion};
  }
  uint32_t irq_count(uint32_t index) const override {
    static constexpr std::array<uint32_t, kNumIrqs> counts = {1, 0, 8, 1, 1};
    return index < kNumIrqs ? counts[index] : 0;
  }

  void region_read(uint32_t index, uint64_t offset, uint32_t count, ReadDone done) override {
    if (on_io_thread_read) on_io_thread_read();
    post([this, index, offset, count, done = std::move(done)] {
      std::vector<uint8_t> out(mem_[index].begin() + offset, mem_[index].begin() + offset + count);
      record("R" + std::to_string(index) + "@" + std::to_string(offset));
      done(0, std::move(out));
    });
  }
  void region_write(uint32_t index, uint64_t offset, std::vector<uint8_t> data, WriteDone done) override {
    post([this, index, offset, data = std::move(data), done = std::move(done)] {
      std::copy(data.begin(), data.end(), mem_[index].begin() + offset);
      record("W" + std::to_string(index) + "@" + std::to_string(offset));
      if (done) done(0);
    });
  }
  void reset(WriteDone done) override {
    post([this, done = std::move(done)] {
      std::fill(mem_[0].begin(), mem_[0].end(), 0);
      ++resets;
      record("RESET");
      done(0);
    });
  }
  void connection_changed(bool connected) override {
    std::lock_guard lock(log_mu_);
    connections.push_back(connected);
  }

  // Waits until every queued operation ran.
  void drain() {
    std::unique_lock lock(mu_);
    idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
  }
  std::vector<std::string> ops() {
    std::lock_guard lock(log_mu_);
    return ops_;
  }
  std::vector<bool> connection_events() {
    std::lock_guard lock(log_mu_);
    return connections;
  }
  uint8_t peek(uint32_t index, uint64_t offset) {
    drain();
    return mem_[index][offset];
  }

  std::function<void()> on_io_thread_read;  // runs synchronously inside region_read (I/O thread)
  std::atomic<int> resets{0};

 private:
  void post(std::function<void()> f) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(f));
    }
    cv_.notify_all();
  }
  void record(std::string s) {
    std::lock_guard lock(log_mu_);
    ops_.push_back(std::move(s));
  }
  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto f = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      f();
      lock.lock();
      busy_ = false;
      if (queue_.empty()) idle_cv_.notify_all();
    }
  }

  std::array<std::vector<uint8_t>, kNumRegions> mem_;
  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false, stop_ = false;
  std::thread worker_;
  std::mutex log_mu_;
  std::vector<std::string> ops_;
  std::vector<bool> connections;
};

// Number of open fds of this process.
inline int open_fd_count() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (::readdir(d)) ++n;
    ::closedir(d);
  }
  return n;
}

}  // namespace hcaemu::vfio_user::test
