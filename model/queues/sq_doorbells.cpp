#include "model/queues/sq_doorbells.h"

#include "common/endian.h"

namespace hcaemu::model {

namespace {
constexpr uint32_t kMask = 0xffff;
// A 16-bit distance that is "behind" (the consumer has passed it).
bool ahead(uint16_t producer, uint32_t consumer) {
  const uint32_t d = (producer - consumer) & kMask;
  return d != 0 && d < 0x8000;
}
}  // namespace

std::optional<uint16_t> SqDoorbells::announced_producer(std::span<const uint8_t> doorbell) {
  if (doorbell.size() < 8) return std::nullopt;
  const uint32_t wqe_index = (load_be32(doorbell.data()) >> 8) & kMask;
  const uint32_t ds = doorbell[7] & 0x3f;  // qpn_ds: ds in 16-byte units
  if (ds == 0) return std::nullopt;
  return uint16_t((wqe_index + (ds + 3) / 4) & kMask);
}

void SqDoorbells::rang(uint16_t producer, uint64_t time_ps) {
  if (last_ == producer) return;  // a repeated doorbell announces nothing new
  last_ = producer;
  if (pending_.size() >= kMaxPending)
    pending_.back().producer = producer;
  else
    pending_.push_back({producer, time_ps});
}

uint32_t SqDoorbells::producer(uint32_t consumer, uint32_t recorded) const {
  if (!last_) return recorded;
  const uint32_t announced = (*last_ - consumer) & kMask, available = (recorded - consumer) & kMask;
  return announced <= available ? *last_ : recorded;
}

uint64_t SqDoorbells::time_of(uint32_t consumer) {
  while (!pending_.empty() && !ahead(pending_.front().producer, consumer)) pending_.pop_front();
  return pending_.empty() ? 0 : pending_.front().time_ps;
}

}  // namespace hcaemu::model
