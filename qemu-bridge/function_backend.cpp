#include "qemu-bridge/function_backend.h"

#include <algorithm>

#include "common/log.h"

namespace hcaemu::bridge {

using namespace vfio_user;

vfio_user::RegionInfo FunctionBackend::region_info(uint32_t index) const {
  RegionInfo info;
  if (index <= kBar5Region) {
    info.size = function_.bar_shape(int(index)).size;
  } else if (index == kConfigRegion) {
    info.size = function_.config_size();
  }
  info.readable = info.writable = info.size != 0;
  return info;
}

uint32_t FunctionBackend::irq_count(uint32_t index) const {
  switch (index) {
    case kMsixIrq: return function_.msix_vectors();
    case kErrIrq:  // QEMU enables error recovery only when ERR has exactly one vector
    case kReqIrq: return 1;
    default: return 0;  // Interrupt Pin is 0 and there is no MSI capability
  }
}

void FunctionBackend::access(uint32_t index, uint64_t offset, std::span<uint8_t> bytes, bool is_write) {
  const uint64_t max_piece = index == kConfigRegion ? 4 : 8;
  size_t done = 0;
  while (done < bytes.size()) {
    const uint64_t at = offset + done;
    // Largest power of two that is aligned at `at`, fits what is left and the piece limit.
    uint64_t piece = max_piece;
    while (piece > 1 && ((at & (piece - 1)) != 0 || piece > bytes.size() - done)) piece >>= 1;
    auto chunk = bytes.subspan(done, piece);
    if (index == kConfigRegion) {
      if (is_write)
        function_.client_config_write(uint32_t(at), chunk);
      else
        function_.config_read(uint32_t(at), chunk);
    } else if (is_write) {
      function_.bar_write(int(index), at, chunk);
    } else if (!function_.bar_read(int(index), at, chunk)) {
      std::fill(chunk.begin(), chunk.end(), 0xff);
    }
    done += piece;
  }
}

void FunctionBackend::region_read(uint32_t index, uint64_t offset, uint32_t count, ReadDone done) {
  queue_.post([this, index, offset, count, done = std::move(done)] {
    std::vector<uint8_t> data(count);
    access(index, offset, data, false);
    done(0, std::move(data));
  });
}

void FunctionBackend::region_write(uint32_t index, uint64_t offset, std::vector<uint8_t> data, WriteDone done) {
  queue_.post([this, index, offset, data = std::move(data), done = std::move(done)]() mutable {
    access(index, offset, data, true);
    if (done) done(0);
  });
}

void FunctionBackend::reset(WriteDone done) {
  queue_.post([this, done = std::move(done)] {
    log().info("{}: device reset requested by the client", function_.name());
    function_.reset();
    if (done) done(0);
  });
}

// A new client never sees the previous one's objects, keys, GIDs or traffic: the function is reset
// before anything the client sends is applied (as vfio-pci resets a VF handed to a new VM). A PF's
// reset keeps the SR-IOV configuration (FunctionPort::reset).
void FunctionBackend::connection_changed(bool connected) {
  log().info("{}: client {}", function_.name(), connected ? "connected" : "disconnected");
  if (connected) queue_.post([this] { function_.reset(); });
}

}  // namespace hcaemu::bridge
