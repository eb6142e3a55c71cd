// Packet pacing (SET_PP_RATE_LIMIT): mlx5_core keeps the table's bookkeeping (which index holds
// which rate, who shares it) and sets or clears one entry at a time here; Ethernet SQs that name an
// entry are paced to its rate (eth/queues.cpp). The uid says whose entry it is: the kernel's (0),
// one shared by every process (kSharedResourceUid) or one a DevX process holds alone
// (mlx5dv_pp_alloc's dedicated index). Only the kernel or the entry's owner may change a set
// entry.
#include "model/firmware/firmware.h"
#include "model/firmware/resource_helpers.h"

namespace hcaemu::model {
namespace {

using namespace fw;

constexpr uint16_t kSetPpRateLimit = 0x780;
constexpr uint32_t kInBytes = 0x40;  // header, index, then set_pp_rate_limit_context at 0x10
constexpr Field kRateLimitIndex{0x08, 15, 0};
constexpr Field kRateLimit{0x10, 31, 0};  // kb/s; 0 clears the entry
constexpr Field kBurstUpperBound{0x14, 31, 0};
constexpr Field kTypicalPacketSize{0x18, 15, 0};

void set_pp_rate_limit(CommandCall& call) {
  if (!start(call, kInBytes)) return;
  const uint32_t index = get(call.in(), kRateLimitIndex);
  if (!RateLimitTable::valid_index(index)) {  // entry 0 is "no limit" and never set
    call.fail(CommandStatus::kBadParameter, syndrome(kSetPpRateLimit, kCheckLookup));
    return;
  }
  RateLimitEntry& entry = call.function().resources.rate_limits.at(index);
  if (entry.rate_kbps != 0 && !acts_for(call, entry.owner)) {
    call.fail(CommandStatus::kBadResource, syndrome(kSetPpRateLimit, kCheckInUse));
    return;
  }
  const uint32_t rate = get(call.in(), kRateLimit);
  if (rate == 0) {
    entry = {};
    return;
  }
  if (rate < RateLimitTable::kMinRateKbps || rate > RateLimitTable::kMaxRateKbps) {
    call.fail(CommandStatus::kBadParameter, syndrome(kSetPpRateLimit, kCheckParameter));
    return;
  }
  entry = {.rate_kbps = rate,
           .burst_bytes = get(call.in(), kBurstUpperBound),
           .typical_packet_size = uint16_t(get(call.in(), kTypicalPacketSize)),
           .owner = call.uid()};
}

}  // namespace

void register_packet_pacing_commands(CommandTable& table) {
  table.add(kSetPpRateLimit, "SET_PP_RATE_LIMIT", set_pp_rate_limit, Senders::kKernelForUsers);
}

}  // namespace hcaemu::model
