#include "model/steering/terminals.h"

namespace hcaemu::model::steering {

std::optional<Terminal> terminal_at(uint64_t address) {
  if (address < kTerminalBase || address >= (uint64_t(1) << 40) || (address & 0x3f) != 0) return std::nullopt;
  if (address == kNicRxDrop || address == kNicTxDrop) return Terminal{TerminalKind::kDrop};
  if (address == kNicTxAllow) return Terminal{TerminalKind::kAllow};
  const auto id = uint32_t((address >> 6) & 0xffffff);
  if (address >= kTirTerminals && address < kTirTerminals + (uint64_t(1) << 30))
    return Terminal{TerminalKind::kTir, id};
  if (address >= kFlowTableTerminals && address < kFlowTableTerminals + (uint64_t(1) << 30))
    return Terminal{TerminalKind::kFlowTable, id};
  if (address >= kSamplerTerminals && address < kSamplerTerminals + (uint64_t(1) << 30))
    return Terminal{TerminalKind::kSampler, id};
  return std::nullopt;
}

}  // namespace hcaemu::model::steering
