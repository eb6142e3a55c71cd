#pragma once
// The event queue engine (mlx5-device-bringup.md sections 3.4 and 6.2): 64-byte EQEs written into
// a host ring described by a PAS list, owner bit = (producer >> log_size) & 1, consumer index and
// arming from the UAR doorbells (+0x40 update CI and arm, +0x48 update CI only). An armed EQ raises
// its MSI-X vector once when it holds an EQE beyond the consumer index, then stays quiet until it
// is armed again. The ring is never overwritten past CI + size: such EQEs are counted and dropped.
#include <array>
#include <cstdint>
#include <span>

#include "model/prm/bits.h"
#include "model/queues/page_list.h"

namespace hcaemu::model {

struct FunctionContext;

namespace eqe {
inline constexpr uint32_t kSize = 64;
inline constexpr Field kType{0x00, 23, 16};     // byte 0x01
inline constexpr Field kSubType{0x00, 7, 0};    // byte 0x03
inline constexpr uint32_t kData = 0x20;         // 28 bytes of event data
inline constexpr uint32_t kDataSize = 28;
inline constexpr uint32_t kOwnerByte = 0x3f;    // bit 0
inline constexpr uint32_t kCounterMask = 0xffffff;  // producer/consumer counters are 24 bits

// Event types (device.h enum mlx5_event) the model produces or routes.
enum Type : uint8_t {
  kCompletion = 0x00,       // cqn at data + 0x18
  kPathMigrated = 0x01,
  kCommEstablished = 0x02,
  kSqDrained = 0x03,
  kCqError = 0x04,          // cqn at data + 0, syndrome at data + 0x0b
  kWqCatastrophic = 0x05,
  kPortChange = 0x09,
  kCommand = 0x0a,          // BE32 bitmask of completed command slots at data + 0
  kPageRequest = 0x0b,
  kSrqRqLimit = 0x14,       // SRQ number at data + 0x18 (mlx5_eqe_qp_srq), resource type at data + 0x14
};
}  // namespace eqe

struct EventQueue {
  uint32_t log_size = 0;
  uint32_t uar_page = 0;
  uint32_t vector = 0;                  // eqc.intr: the MSI-X vector
  std::array<uint64_t, 4> event_mask{};  // bit n of mask[i] subscribes to event type 64 * i + n
  PageList ring;
  uint32_t producer = 0;  // EQEs written (24-bit counter)
  uint32_t consumer = 0;  // last CI the driver reported
  bool armed = false;
  bool overflow_reported = false;
  uint32_t cq_refs = 0;   // CQs that complete into this EQ

  // Statistics.
  uint64_t eqes = 0;
  uint64_t overflow_drops = 0;
  uint64_t dma_faults = 0;
  uint64_t interrupts = 0;
  uint64_t refused_interrupts = 0;  // the host had no route for the vector

  uint32_t entries() const { return 1u << log_size; }
  uint32_t pending() const { return (producer - consumer) & eqe::kCounterMask; }
  bool subscribes(uint8_t type) const { return (event_mask[type >> 6] >> (type & 63)) & 1; }
};

// Writes one EQE (type, sub_type, up to 28 bytes of data) into EQ `eqn` of the function and raises
// its vector if the EQ is armed. False when the EQ does not exist, is full, or the DMA failed.
bool eq_write(FunctionContext& f, uint32_t eqn, uint8_t type, uint8_t sub_type, std::span<const uint8_t> data);

// Routes an event to every EQ of the function subscribed to `type`; returns how many took it.
uint32_t eq_post(FunctionContext& f, uint8_t type, uint8_t sub_type, std::span<const uint8_t> data);

// An event about one QP or SRQ (mlx5_eqe_qp_srq: the resource type after five reserved dwords,
// then its number), routed as eq_post routes it.
namespace eqe {
inline constexpr uint8_t kResourceQp = 0, kResourceSrq = 1;
}
uint32_t eq_post_qp_srq(FunctionContext& f, uint8_t type, uint8_t resource_type, uint32_t number);

bool eq_has_subscriber(const FunctionContext& f, uint8_t type);

// The +0x40 (arm = true) / +0x48 doorbell. False when `eqn` names no EQ of the function or the CI
// is ahead of the producer (malformed; ignored).
bool eq_doorbell(FunctionContext& f, uint32_t eqn, uint32_t ci, bool arm);

// Event-mode command completion: a CMD EQE carrying the BE32 bitmask of completed slots. Call it
// after the entries' ownership bits were cleared; a no-op unless an EQ subscribes to CMD events.
void post_command_completion(FunctionContext& f, uint32_t slot_mask);

}  // namespace hcaemu::model
