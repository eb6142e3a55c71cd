#pragma once
// The initialization segment at BAR0 offset 0 (mlx5-device-bringup.md section 2): firmware version,
// command interface revision, command queue address, command doorbell, the initializing bit, the
// health buffer and the internal timer. All registers are big-endian dwords, as the driver's
// ioread32be/iowrite32be expect; the segment is kept as bytes so any access size reads correctly.
#include <array>
#include <cstdint>
#include <span>

namespace hcaemu::model {

struct FirmwareVersion {
  uint16_t major = 22;
  uint16_t minor = 35;
  uint16_t subminor = 1012;
};

namespace init_seg {
inline constexpr uint32_t kFwRev = 0x000;            // [31:16] minor, [15:0] major
inline constexpr uint32_t kCmdifRevFwSub = 0x004;    // [31:16] cmdif revision, [15:0] fw subminor
inline constexpr uint32_t kCmdqAddrHigh = 0x010;
inline constexpr uint32_t kCmdqAddrLowSize = 0x014;  // [31:12] addr, [10:8] nic_interface, [7:4] log_sz, [3:0] log_stride
inline constexpr uint32_t kCmdDoorbell = 0x018;      // bitmask of submitted entries
inline constexpr uint32_t kInitializing = 0x1fc;     // [31] firmware still initializing
inline constexpr uint32_t kHealthBuffer = 0x200;
inline constexpr uint32_t kHealthFwVer = 0x230;      // must never read 0xffffffff (= device gone)
inline constexpr uint32_t kHealthRfrSeverity = 0x238;
inline constexpr uint32_t kHealthSyndrome = 0x23c;   // byte 0x23d holds synd; 0 = healthy
inline constexpr uint8_t kNicInterfaceDisabled = 1;  // cmdq_addr_l_sz bits 10:8: the function is torn down
inline constexpr uint8_t kSyndromeFetchPciError = 0xa;  // health synd "ICM fetch PCI error"
inline constexpr uint32_t kCmdExecTimeout = 0xff8;
inline constexpr uint32_t kCmdQInitTimeout = 0xffc;  // 0 = driver keeps its built-in timeouts
inline constexpr uint32_t kInternalTimerHigh = 0x1000;
inline constexpr uint32_t kInternalTimerLow = 0x1004;
inline constexpr uint32_t kHealthCounter = 0x1010;
// The internal timer counts model time in nanoseconds: a 1 GHz device clock, which the caps'
// device_frequency_khz announces, so the guest's PTP clock and completion timestamps read model
// time (a user can measure model-time latency from inside the guest).
inline constexpr uint32_t kInternalTimerKhz = 1'000'000;
inline constexpr uint32_t kSize = 0x2010;            // sizeof(struct mlx5_init_seg)

inline constexpr uint32_t kCmdifRevision = 5;        // the only revision the Linux driver accepts
inline constexpr uint32_t kLogCmdqSize = 5;          // 32 entries, the driver's maximum
inline constexpr uint32_t kLogCmdqStride = 6;        // 64-byte entries
}  // namespace init_seg

// What a register write asks the rest of the function to do.
struct InitSegmentEffect {
  uint32_t doorbell_bits = 0;  // command entries submitted by this write
};

class InitSegment {
 public:
  explicit InitSegment(FirmwareVersion fw = {});

  // Accesses must lie inside [0, kSize); the caller decodes the BAR. `now_ticks` feeds the
  // internal timer (device clock ticks of model time).
  void read(uint32_t offset, std::span<uint8_t> out, uint64_t now_ticks);
  InitSegmentEffect write(uint32_t offset, std::span<const uint8_t> in);

  // Back to power-on state (FLR, device reset): queue address forgotten, counters kept running.
  void reset();
  // The function failed (a fatal PCIe error): the NIC interface reads disabled and the health
  // buffer names `syndrome`, which mlx5's health poll takes for a fatal error and recovers from by
  // loading the driver again. Its command queue set-up (a write of the queue address) clears it.
  void fail(uint8_t syndrome);
  bool failed() const { return nic_interface_ == init_seg::kNicInterfaceDisabled && bytes_[init_seg::kHealthSyndrome + 1] != 0; }

  uint64_t command_queue_address() const { return cmdq_address_; }
  bool command_queue_configured() const { return cmdq_address_ != 0; }
  uint32_t nic_interface() const { return nic_interface_; }
  const FirmwareVersion& firmware() const { return fw_; }

 private:
  uint32_t dword(uint32_t offset) const;
  void set_dword(uint32_t offset, uint32_t value);
  void refresh_dynamic(uint64_t now_ticks);

  FirmwareVersion fw_;
  std::array<uint8_t, init_seg::kSize> bytes_{};
  uint64_t cmdq_address_ = 0;
  uint32_t nic_interface_ = 0;
  uint32_t health_counter_ = 0;
};

}  // namespace hcaemu::model
