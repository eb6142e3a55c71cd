#include "model/queues/event_queue.h"

#include <algorithm>

#include "common/endian.h"
#include "common/log.h"
#include "model/function_context.h"

namespace hcaemu::model {
namespace {

void fire(FunctionContext& f, EventQueue& eq) {
  eq.armed = false;
  if (f.msix == nullptr || !f.msix->signal(eq.vector)) {
    ++eq.refused_interrupts;
    return;
  }
  ++eq.interrupts;
}

}  // namespace

bool eq_write(FunctionContext& f, uint32_t eqn, uint8_t type, uint8_t sub_type, std::span<const uint8_t> data) {
  EventQueue* eq = f.resources.eqs.find(eqn);
  if (eq == nullptr) return false;
  if (eq->pending() >= eq->entries()) {
    // Never overwrite an EQE the driver has not consumed (CI from the last doorbell).
    ++eq->overflow_drops;
    if (!eq->overflow_reported) {
      eq->overflow_reported = true;
      log().warn("eq {}: overflow (producer {:#x}, consumer {:#x}, {} entries); event type {:#x} dropped", eqn,
                 eq->producer, eq->consumer, eq->entries(), type);
    }
    return false;
  }
  std::array<uint8_t, eqe::kSize> entry{};
  set(entry, eqe::kType, type);
  set(entry, eqe::kSubType, sub_type);
  std::copy_n(data.begin(), std::min<size_t>(data.size(), eqe::kDataSize), entry.begin() + eqe::kData);
  const uint32_t slot = eq->producer;
  eq->producer = (eq->producer + 1) & eqe::kCounterMask;
  entry[eqe::kOwnerByte] = uint8_t((slot >> eq->log_size) & 1);
  const uint64_t at = uint64_t(slot & (eq->entries() - 1)) * eqe::kSize;
  // Body first, owner byte last: the driver may look at the owner bit at any time.
  if (f.memory == nullptr ||
      !eq->ring.write(*f.memory, at, std::span<const uint8_t>(entry.data(), eqe::kOwnerByte)) ||
      !eq->ring.write(*f.memory, at + eqe::kOwnerByte, std::span<const uint8_t>(&entry[eqe::kOwnerByte], 1))) {
    ++eq->dma_faults;
    return false;
  }
  ++eq->eqes;
  if (eq->armed) fire(f, *eq);
  return true;
}

uint32_t eq_post(FunctionContext& f, uint8_t type, uint8_t sub_type, std::span<const uint8_t> data) {
  uint32_t delivered = 0;
  for (auto& [eqn, eq] : f.resources.eqs)
    if (eq.subscribes(type) && eq_write(f, eqn, type, sub_type, data)) ++delivered;
  return delivered;
}

uint32_t eq_post_qp_srq(FunctionContext& f, uint8_t type, uint8_t resource_type, uint32_t number) {
  std::array<uint8_t, eqe::kDataSize> data{};
  data[20] = resource_type;
  store_be32(&data[24], number);
  return eq_post(f, type, 0, data);
}

bool eq_has_subscriber(const FunctionContext& f, uint8_t type) {
  return std::any_of(f.resources.eqs.begin(), f.resources.eqs.end(),
                     [type](const auto& entry) { return entry.second.subscribes(type); });
}

bool eq_doorbell(FunctionContext& f, uint32_t eqn, uint32_t ci, bool arm) {
  EventQueue* eq = f.resources.eqs.find(eqn);
  if (eq == nullptr) return false;
  ci &= eqe::kCounterMask;
  if (((eq->producer - ci) & eqe::kCounterMask) > eq->entries()) return false;  // CI ahead of what we wrote
  eq->consumer = ci;
  if (eq->pending() < eq->entries()) eq->overflow_reported = false;
  if (!arm) return true;
  eq->armed = true;
  if (eq->pending() != 0) fire(f, *eq);
  return true;
}

void post_command_completion(FunctionContext& f, uint32_t slot_mask) {
  std::array<uint8_t, 4> data{};
  store_be32(data.data(), slot_mask);
  eq_post(f, eqe::kCommand, 0, data);
}

}  // namespace hcaemu::model
