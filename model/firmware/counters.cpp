// Queue counter sets (ALLOC/DEALLOC/QUERY_Q_COUNTER). mlx5e allocates two at probe, mlx5_ib one per
// port and binds every QP to it at RST2INIT; the RDMA engine counts into the set of a QP
// (objects/queue_counters.h), QUERY_Q_COUNTER reads them and with `clear` zeroes them.
#include <algorithm>

#include "common/endian.h"
#include "model/firmware/firmware.h"

namespace hcaemu::model {
namespace {

constexpr uint16_t kAllocQCounter = 0x771, kDeallocQCounter = 0x772, kQueryQCounter = 0x773;
constexpr Field kAllocOutCounterSetId{0x08, 7, 0};    // alloc_q_counter_out.counter_set_id
constexpr Field kDeallocInCounterSetId{0x08, 7, 0};   // dealloc_q_counter_in.counter_set_id
constexpr Field kQueryInClear{0x18, 31, 31};          // query_q_counter_in.clear
constexpr Field kQueryInCounterSetId{0x1c, 7, 0};     // query_q_counter_in.counter_set_id
constexpr uint32_t kQueryQCounterOutSize = q_counter::kOutSize;

// (Check 1, a uid that may not send the command, is Firmware::execute's: Senders.)
enum Check : uint16_t { kNoSuchSet = 2, kTableFull = 3 };

void alloc_q_counter(CommandCall& call) {
  if (!call.need_input(0x10) || !call.need_output(0x10)) return;
  auto& sets = call.function().q_counters;
  for (uint32_t id = 1; id <= kMaxQueueCounterSets; ++id) {  // 0 is never handed out
    if (sets.try_emplace(id).second) {
      set(call.out(), kAllocOutCounterSetId, id);
      return;
    }
  }
  call.fail(CommandStatus::kExceedLimit, syndrome(kAllocQCounter, kTableFull));
}

void dealloc_q_counter(CommandCall& call) {
  if (!call.need_input(0x10)) return;
  if (call.function().q_counters.erase(get(call.in(), kDeallocInCounterSetId)) == 0)
    call.fail(CommandStatus::kBadResource, syndrome(kDeallocQCounter, kNoSuchSet));
}

void query_q_counter(CommandCall& call) {
  if (!call.need_input(0x20) || !call.need_output(kQueryQCounterOutSize)) return;
  auto found = call.function().q_counters.find(get(call.in(), kQueryInCounterSetId));
  if (found == call.function().q_counters.end()) {
    call.fail(CommandStatus::kBadResource, syndrome(kQueryQCounter, kNoSuchSet));
    return;
  }
  QueueCounterSet& set_counters = found->second;
  auto out = call.out();
  for (uint32_t at = 0x10; at + 4 <= kQueryQCounterOutSize; at += 4) store_be32(&out[at], set_counters.at(at));
  if (get(call.in(), kQueryInClear) != 0) set_counters = QueueCounterSet{};
}

// QUERY_VPORT_COUNTER: mlx5e's periodic stats read of its own vport. The counters read zero (the
// switch counts per vport; wiring them in is left for the stats work), the shape is the PRM's.
constexpr uint16_t kQueryVportCounter = 0x770;
constexpr Field kVportCounterOtherVport{0x08, 31, 31};
constexpr uint32_t kQueryVportCounterMinOut = 0x10;
enum VportCheck : uint16_t { kOtherVport = 4 };

void query_vport_counter(CommandCall& call) {
  if (!call.need_input(0x10) || !call.need_output(kQueryVportCounterMinOut)) return;
  if (get(call.in(), kVportCounterOtherVport) != 0)  // we are no eswitch manager
    call.fail(CommandStatus::kBadParameter, syndrome(kQueryVportCounter, kOtherVport));
}

// QUERY_CONG_STATISTICS: DCQCN's counters, mlx5_ib's hw_counters rp_cnp_ignored, rp_cnp_handled,
// np_ecn_marked_roce_packets and np_cnp_sent (read when cc_query_allowed); `clear` zeroes them.
constexpr uint16_t kQueryCongStatistics = 0x826;
constexpr Field kCongInClear{0x08, 31, 31};
constexpr uint32_t kCongOutSize = 0x110;
constexpr uint32_t kRpCnpIgnored = 0x18, kRpCnpHandled = 0x20, kTimeStamp = 0x48, kNpEcnMarked = 0x54,
                   kNpCnpSent = 0x5c;  // 64-bit counters, high dword first

void query_cong_statistics(CommandCall& call) {
  if (!call.need_input(0x10) || !call.need_output(kCongOutSize)) return;
  FunctionContext& f = call.function();
  using Stats = FunctionContext::CongestionStatistics;
  const Stats now = f.congestion_statistics ? f.congestion_statistics() : Stats{};
  const Stats& base = f.congestion_cleared;
  const auto since = [](uint64_t value, uint64_t cleared) { return value - std::min(value, cleared); };
  auto out = call.out();
  store_be64(&out[kRpCnpIgnored], since(now.rp_cnp_ignored, base.rp_cnp_ignored));
  store_be64(&out[kRpCnpHandled], since(now.rp_cnp_handled, base.rp_cnp_handled));
  store_be64(&out[kNpEcnMarked], since(now.np_ecn_marked_roce_packets, base.np_ecn_marked_roce_packets));
  store_be64(&out[kNpCnpSent], since(now.np_cnp_sent, base.np_cnp_sent));
  if (f.clock_ticks) store_be64(&out[kTimeStamp], f.clock_ticks());
  if (get(call.in(), kCongInClear) != 0) f.congestion_cleared = now;
}

}  // namespace

void register_counter_commands(CommandTable& table) {
  table.add(kAllocQCounter, "ALLOC_Q_COUNTER", alloc_q_counter, Senders::kKernelShared);
  table.add(kDeallocQCounter, "DEALLOC_Q_COUNTER", dealloc_q_counter);
  table.add(kQueryQCounter, "QUERY_Q_COUNTER", query_q_counter);
  table.add(kQueryVportCounter, "QUERY_VPORT_COUNTER", query_vport_counter, Senders::kUserQuery);
  table.add(kQueryCongStatistics, "QUERY_CONG_STATISTICS", query_cong_statistics, Senders::kUser);
}

}  // namespace hcaemu::model
