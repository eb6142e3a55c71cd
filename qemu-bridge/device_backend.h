#pragma once
// The device behind one vfio-user socket, as the protocol server sees it. The server owns the
// socket, messages and DMA maps; the backend owns what region accesses mean (config space, BARs).
#include <cstdint>
#include <functional>
#include <vector>

namespace hcaemu::vfio_user {

// vfio-pci region and IRQ indices (linux/vfio.h VFIO_PCI_*_REGION_INDEX / _IRQ_INDEX).
enum RegionIndex : uint32_t {
  kBar0Region = 0,
  kBar5Region = 5,
  kRomRegion = 6,
  kConfigRegion = 7,
  kVgaRegion = 8,
  kNumRegions = 9,
};
enum IrqIndex : uint32_t { kIntxIrq = 0, kMsiIrq = 1, kMsixIrq = 2, kErrIrq = 3, kReqIrq = 4, kNumIrqs = 5 };

struct RegionInfo {
  uint64_t size = 0;  // 0 = region absent
  bool readable = false;
  bool writable = false;
};

// Completions may be called on any thread, exactly once. err is 0 or a positive errno.
using ReadDone = std::function<void(int err, std::vector<uint8_t> data)>;
using WriteDone = std::function<void(int err)>;

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  // Fixed for the life of the backend; called on the server's I/O thread.
  virtual RegionInfo region_info(uint32_t index) const = 0;
  // Number of vectors for an IRQ index (MSI-X: the table size; others typically 0, ERR/REQ 1 or 0).
  virtual uint32_t irq_count(uint32_t index) const = 0;

  // Region accesses arrive after the server has checked index, offset and count against
  // region_info(). The backend applies them in the order of the calls, so a read observes
  // every earlier write (posted or not). `done` may be empty for a posted write.
  virtual void region_read(uint32_t index, uint64_t offset, uint32_t count, ReadDone done) = 0;
  virtual void region_write(uint32_t index, uint64_t offset, std::vector<uint8_t> data, WriteDone done) = 0;

  // DEVICE_RESET: a function-level reset. Ordered with the region accesses.
  virtual void reset(WriteDone done) = 0;

  // The client connected or went away (maps and IRQ fds are already dropped when this runs).
  virtual void connection_changed(bool connected) {}
};

}  // namespace hcaemu::vfio_user
