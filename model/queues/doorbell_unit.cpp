#include "model/queues/doorbell_unit.h"

#include <array>

#include "common/endian.h"
#include "model/function_context.h"

namespace hcaemu::model {

bool read_doorbell_record(pcie::HostMemory* memory, uint64_t address, uint32_t& value) {
  std::array<uint8_t, 4> word{};
  if (memory == nullptr || address == 0 || !memory->read(address, word)) return false;
  value = load_be32(word.data());
  return true;
}

void DoorbellUnit::cq_doorbell(FunctionContext& f, uint32_t high, uint32_t low) {
  // high = arm_sn[29:28] | cmd[27:24] | ci[23:0], low = cqn[23:0]
  const uint32_t cmd = (high >> 24) & 0xf;
  if (!cq_arm_doorbell(f, low & 0xffffff, high & 0xffffff, cmd, (high >> 28) & 0x3)) {
    ++counters_.malformed;
    return;
  }
  ++counters_.cq_doorbells;
}

void DoorbellUnit::write(FunctionContext& f, uint64_t bar_offset, std::span<const uint8_t> data, uint64_t written_ps) {
  ++counters_.writes;
  if (f.identity.var.contains(bar_offset)) {
    ++counters_.var_writes;
    return;
  }
  const uint64_t index = bar_offset / kUarPageSize;
  const uint32_t offset = uint32_t(bar_offset % kUarPageSize);
  if (index > kMaxObjectId || !f.resources.uars.contains(uint32_t(index))) {
    ++counters_.unallocated_uar;
    return;
  }
  const uint32_t uar_index = uint32_t(index);
  if (offset >= uar::kBlueFlame) {
    ++counters_.sq_doorbells;
    if (sq_hook_) sq_hook_(f, uar_index, offset, data, written_ps);
    return;
  }
  switch (offset) {
    case uar::kCqDoorbell:
      if (data.size() == 8) {
        cq_high_.erase(uar_index);
        cq_doorbell(f, load_be32(&data[0]), load_be32(&data[4]));
        return;
      }
      if (data.size() == 4) {  // first half of a split doorbell; the low dword completes it
        cq_high_[uar_index] = load_be32(&data[0]);
        return;
      }
      break;
    case uar::kCqDoorbellLow:
      if (data.size() == 4) {
        auto it = cq_high_.find(uar_index);
        if (it == cq_high_.end()) break;
        const uint32_t high = it->second;
        cq_high_.erase(it);
        cq_doorbell(f, high, load_be32(&data[0]));
        return;
      }
      break;
    case uar::kEqArmDoorbell:
    case uar::kEqDoorbell:
      if (data.size() == 4) {
        const uint32_t value = load_be32(&data[0]);
        if (!eq_doorbell(f, value >> 24, value & 0xffffff, offset == uar::kEqArmDoorbell)) break;
        ++counters_.eq_doorbells;
        return;
      }
      break;
    default:
      break;
  }
  ++counters_.malformed;
}

}  // namespace hcaemu::model
