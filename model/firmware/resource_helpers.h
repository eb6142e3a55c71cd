#pragma once
// Checks shared by the resource command handlers (firmware/uar_pd_eq_cq.cpp, firmware/mkey_srq.cpp, firmware/qp.cpp).
// Each one ends the command with a PRM status and a syndrome naming the check, and returns false
// (or null), so a handler reads as a list of checks followed by the happy path.
#include <cstdint>
#include <optional>
#include <span>

#include "common/log.h"
#include "model/firmware/command_table.h"
#include "model/function_context.h"

namespace hcaemu::model::fw {

// Check numbers inside a command's syndrome range (syndrome(opcode, check)).
enum Check : uint16_t {
  kCheckUid = 0x01,
  kCheckLookup = 0x02,       // the object the command names
  kCheckFull = 0x03,         // table at its log_max_* limit
  kCheckSize = 0x04,         // log size out of range
  kCheckPd = 0x05,
  kCheckCq = 0x06,
  kCheckEq = 0x07,
  kCheckUar = 0x08,
  kCheckXrcd = 0x09,
  kCheckSrq = 0x0a,
  kCheckDbr = 0x0b,
  kCheckInUse = 0x0c,
  kCheckParameter = 0x0d,    // an unsupported mode or a value out of its range
  kCheckVector = 0x0e,
  kCheckState = 0x0f,
  kCheckPas = 0x10,          // + PageListError
  kCheckBudget = 0x20,       // hcaemu's memory budget for the function (ResourceLimits)
  kCheckUmem = 0x21,         // a DevX UMEM the command names: not the sender's, too short, read-only, or a use not offered
};

// Fails the command with `status` and check number `check_number` of its syndrome range unless `ok`.
inline bool check(CommandCall& call, bool ok, uint16_t check_number, CommandStatus status = CommandStatus::kBadParameter) {
  if (!ok) call.fail(status, syndrome(call.opcode(), check_number));
  return ok;
}

// The command's fixed input and output sizes (the sender's uid was checked before: Senders).
inline bool start(CommandCall& call, uint32_t in_bytes, uint32_t out_bytes = mbox::kHeaderSize) {
  return call.need_input(in_bytes) && call.need_output(out_bytes);
}

// Looks up an ID from the driver: BAD_INDEX when it cannot name an object of this kind at all,
// BAD_RESOURCE when no such object exists in this function (stale, foreign or never created).
template <typename T>
T* lookup(CommandCall& call, ObjectTable<T>& table, uint32_t id, uint16_t check) {
  if (!table.in_range(id)) {
    call.fail(CommandStatus::kBadIndex, syndrome(call.opcode(), check));
    return nullptr;
  }
  T* object = table.find(id);
  if (object == nullptr) call.fail(CommandStatus::kBadResource, syndrome(call.opcode(), check));
  return object;
}

// Whether the command's sender may act on something `owner` made: the kernel on everything, a
// user context on its own only.
inline bool acts_for(const CommandCall& call, uint16_t owner) { return call.uid() == kKernelUid || owner == call.uid(); }

// Whether a QP or SQ of the sender may join queue group `id` (objects/scheduling_elements.h): 0
// (none), or a queue group the sender may act on.
inline bool may_join_queue_group(CommandCall& call, uint32_t id) {
  if (id == 0) return true;
  const auto& elements = call.function().resources.scheduling.table();
  const SchedulingElement* e = elements.find(id);
  return e != nullptr && e->type == sched_element::kQueueGroup && acts_for(call, elements.owner(id));
}

// The object a command acts on (destroys, modifies, queries): as lookup(), and a user context may
// act only on its own objects; another's, or the kernel's, is no object of its (BAD_RESOURCE).
// Objects a command merely points at (a QP's CQs and PD) are looked up with lookup(): mlx5_ib
// itself mixes owners there (an XRC initiator QP is the kernel's, with a user's CQs; a PD shared
// between processes keeps its creator's uid).
template <typename T>
T* lookup_owned(CommandCall& call, ObjectTable<T>& table, uint32_t id, uint16_t check) {
  T* object = lookup(call, table, id, check);
  if (object == nullptr || acts_for(call, table.owner(id))) return object;
  call.fail(CommandStatus::kBadResource, syndrome(call.opcode(), check));
  return nullptr;
}

// A new object, owned by the command's sender.
template <typename T>
uint32_t insert(CommandCall& call, ObjectTable<T>& table, uint32_t log_max, T object) {
  table.set_limit(log_max >= 32 ? 0xffffffffu : (1u << log_max));
  const uint32_t id = table.insert(std::move(object), call.uid());
  if (id == 0) call.fail(CommandStatus::kExceedLimit, syndrome(call.opcode(), kCheckFull));
  return id;
}

inline bool check_log_size(CommandCall& call, uint32_t log_size, uint32_t log_max) {
  if (log_size <= log_max) return true;
  call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), kCheckSize));
  return false;
}

// The PAS list from `pas_offset` to the end of the input.
inline std::span<const uint8_t> pas_of(CommandCall& call, uint32_t pas_offset) {
  return call.in().size() > pas_offset ? call.in().subspan(pas_offset) : std::span<const uint8_t>{};
}

// `entries` more translation entries (MTT or page list) for the function, or the command fails
// with the PRM's exceeded-limit status when they would take it past its budget (ResourceLimits).
inline std::optional<BudgetCharge> take_translation(CommandCall& call, uint64_t entries) {
  Resources& r = call.function().resources;
  if (!r.translation_fits(entries)) {
    if (call.function().budget_log.allow())
      log().warn("function {}: {:#x} with {} translation entries past the budget ({} of {} in use)",
                 call.function().identity.vhca_id, call.opcode(), entries, r.translation_entries,
                 r.limits.max_translation_entries);
    call.fail(CommandStatus::kExceedLimit, syndrome(call.opcode(), kCheckBudget));
    return std::nullopt;
  }
  return BudgetCharge(r.translation_entries, entries);
}

// Builds a queue buffer; `log_page_size` absolute, `offset` in bytes. Its entries count against the
// function's translation budget while it lives.
inline std::optional<PageList> page_list(CommandCall& call, uint32_t pas_offset, uint32_t log_page_size,
                                         uint64_t offset, uint64_t size) {
  PageListError error = PageListError::kNone;
  auto list = PageList::build(pas_of(call, pas_offset), log_page_size, offset, size, error);
  if (!list) {
    call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), uint16_t(kCheckPas + uint16_t(error))));
    return std::nullopt;
  }
  auto charge = take_translation(call, list->pages().size());
  if (!charge) return std::nullopt;
  list->charge = std::move(*charge);
  return list;
}

// Queue contexts give page_offset in units of page_size / 64.
inline uint64_t quantized_offset(uint32_t page_offset, uint32_t log_page_size) {
  return uint64_t(page_offset) << (log_page_size - 6);
}

// A queue's buffer as its context describes it (EQ, CQ, SRQ, QP): log_page_size relative to
// PageList's smallest page, page_offset in page_size / 64 units, the PAS from `pas_offset`. A page
// size past the largest fails the command with the PAS syndrome for it.
inline std::optional<PageList> queue_buffer(CommandCall& call, uint32_t pas_offset, uint32_t context_log_page_size,
                                            uint32_t page_offset, uint64_t size) {
  const uint32_t log_page_size = PageList::kMinLogPageSize + context_log_page_size;
  if (log_page_size > PageList::kMaxLogPageSize) {
    call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), kCheckPas + uint16_t(PageListError::kPageSize)));
    return std::nullopt;
  }
  return page_list(call, pas_offset, log_page_size, quantized_offset(page_offset, log_page_size), size);
}

inline bool check_dbr(CommandCall& call, uint64_t dbr_addr) {
  if ((dbr_addr & 0x7) == 0) return true;
  call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), kCheckDbr));
  return false;
}

inline bool check_uar(CommandCall& call, uint32_t uar_index) {
  if (call.function().resources.uars.contains(uar_index)) return true;
  call.fail(CommandStatus::kBadResource, syndrome(call.opcode(), kCheckUar));
  return false;
}

inline bool not_in_use(CommandCall& call, uint32_t refs) {
  if (refs == 0) return true;
  call.fail(CommandStatus::kBadResourceState, syndrome(call.opcode(), kCheckInUse));
  return false;
}

}  // namespace hcaemu::model::fw
