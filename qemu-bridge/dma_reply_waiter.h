#pragma once
// How a function's SystemC thread waits for the reply to a DMA_READ/WRITE it sent to its client
// (maps without an fd): it waits on an event in the kernel, so the kernel runs every other
// function meanwhile and only the function whose client is slow waits. The server's I/O thread
// wakes it (reply, disconnect, or the dma_timeout it enforces) through async_request_update, the
// one SystemC call that is safe off the kernel thread. Called from any other thread (a test's, a
// host thread's), it blocks on a condition variable instead. One per function, built before
// sc_start like every channel.
#include <systemc>

#include <condition_variable>
#include <mutex>

#include "qemu-bridge/dispatcher.h"

namespace hcaemu::bridge {

class DmaReplyWaiter final : public sc_core::sc_prim_channel, public vfio_user::DmaWaiter {
 public:
  explicit DmaReplyWaiter(const char* name);
  void wait(const std::function<bool()>& done) override;
  void wake() override;
  uint64_t kernel_waits() const { return kernel_waits_; }  // waits that let other functions run

 private:
  void update() override { arrived_.notify(sc_core::SC_ZERO_TIME); }

  sc_core::sc_event arrived_;
  std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t kernel_waits_ = 0;
};

}  // namespace hcaemu::bridge
