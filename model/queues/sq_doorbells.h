#pragma once
// The SQ doorbells a driver rang and not yet served. An mlx5 SQ doorbell (UAR +0x800, or the
// start of a BlueFlame write) carries the ctrl segment of the last WQE posted: its WQE index and
// its size in 16-byte units, so it announces a producer index of its own. The device works up to
// the last announced producer, not up to whatever the doorbell record holds when it reads it: in
// a live run the guest, on the wall clock, may have posted more by then, and taking those early
// would make the run depend on host timing. Each WQE also keeps the model time of the doorbell
// that announced it (the latency trace's doorbell stage, and the earliest its fetch may start).
#include <cstdint>
#include <deque>
#include <optional>
#include <span>

namespace hcaemu::model {

class SqDoorbells {
 public:
  // The producer index (16-bit WQEBB counter) an 8-byte doorbell announces; none when the ctrl
  // segment is too short or claims no segments.
  static std::optional<uint16_t> announced_producer(std::span<const uint8_t> doorbell);

  void rang(uint16_t producer, uint64_t time_ps);

  // Where the device stops: the last announced producer when the doorbell record (`recorded`)
  // covers it, else the record (no doorbell carried a producer, or the driver's record lags its
  // doorbell, which no driver does: the record bounds what the device takes either way).
  uint32_t producer(uint32_t consumer, uint32_t recorded) const;

  // The model time of the doorbell that announced the WQE at `consumer` (0 when none did);
  // doorbells the consumer has passed are forgotten.
  uint64_t time_of(uint32_t consumer);

 private:
  // Bounded per QP (a guest ringing without end must not grow it): past the bound, the newest
  // entry takes the later producers and keeps its time.
  static constexpr size_t kMaxPending = 64;
  struct Ring {
    uint16_t producer;
    uint64_t time_ps;
  };
  std::deque<Ring> pending_;
  std::optional<uint16_t> last_;
};

}  // namespace hcaemu::model
