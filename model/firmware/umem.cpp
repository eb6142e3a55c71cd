// CREATE_UMEM / DESTROY_UMEM (objects/umem.h) as mlx5_ib sends them for mlx5dv_devx_umem_reg:
// create_umem_in { header, umem { ats, log_page_size (4 KiB << n) at 0x20, page_offset at 0x24,
// num_of_mtt (64 bits) at 0x28, mtt[] at 0x30 } }, each MTT entry a page address with read (bit 0)
// and write (bit 1) permission in its low bits. The UMEM is the process's (the command's uid).
#include "model/firmware/umem.h"

#include <algorithm>

#include "model/firmware/firmware.h"
#include "model/firmware/resource_helpers.h"

namespace hcaemu::model {
namespace {

using namespace fw;

constexpr uint16_t kCreateUmem = 0xa08, kDestroyUmem = 0xa0a;
constexpr Field kLogPageSize{0x20, 4, 0};
constexpr Field kPageOffset{0x24, 31, 0};
constexpr uint32_t kNumMtt = 0x28, kMtt = 0x30;
constexpr Field kUmemId{0x08, 23, 0};  // create_umem_out.umem_id, destroy_umem_in.umem_id
constexpr uint64_t kMttWrite = 0x2, kMttFlags = 0x3;

void create_umem(CommandCall& call) {
  if (!start(call, kMtt, 0x10)) return;
  const uint64_t count = get64(call.in(), kNumMtt);
  const uint32_t log_page_size = PageList::kMinLogPageSize + get(call.in(), kLogPageSize);
  const uint64_t page_offset = get(call.in(), kPageOffset);
  // The entries must all be in the command (the count bounds nothing else), and at least one.
  if (!check(call, count != 0 && count <= (call.in().size() - kMtt) / 8, kCheckPas + uint16_t(PageListError::kTooShort)) ||
      !check(call, log_page_size <= PageList::kMaxLogPageSize, kCheckPas + uint16_t(PageListError::kPageSize)))
    return;
  std::vector<uint64_t> pages(count);
  bool writable = true;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t entry = get64(call.in(), uint32_t(kMtt + i * 8));
    writable = writable && (entry & kMttWrite) != 0;
    pages[i] = entry & ~kMttFlags;
  }
  const uint64_t bytes = (count << log_page_size) - std::min(page_offset, count << log_page_size);
  PageListError error = PageListError::kNone;
  auto list = PageList::from_pages(std::move(pages), log_page_size, page_offset, bytes, error);
  if (!check(call, list.has_value(), kCheckPas + uint16_t(error))) return;
  auto charge = take_translation(call, count);
  if (!charge) return;
  Umem umem;
  umem.pages = std::move(*list);
  umem.pages.charge = std::move(*charge);
  umem.pages.source = std::make_shared<const bool>(true);
  umem.writable = writable;
  if (const uint32_t id = insert(call, call.function().resources.umems, kLogMaxUmems, std::move(umem)))
    set(call.out(), kUmemId, id);
}

void destroy_umem(CommandCall& call) {
  if (!start(call, 0x10)) return;
  Umems& umems = call.function().resources.umems;
  const uint32_t id = get(call.in(), kUmemId);
  const Umem* umem = lookup_owned(call, umems, id, kCheckUmem);
  if (umem == nullptr || !check(call, !umem->in_use(), kCheckInUse, CommandStatus::kBadResourceState)) return;
  umems.erase(id);
}

}  // namespace

namespace fw {

std::optional<PageList> umem_buffer(CommandCall& call, uint32_t id, uint64_t offset, uint64_t size, bool device_writes) {
  const Umem* umem = lookup_owned(call, call.function().resources.umems, id, kCheckUmem);
  if (umem == nullptr) return std::nullopt;
  auto slice = umem->pages.slice(offset, size);
  if (!check(call, slice.has_value() && (umem->writable || !device_writes), kCheckUmem)) return std::nullopt;
  auto charge = take_translation(call, slice->pages().size());
  if (!charge) return std::nullopt;
  slice->charge = std::move(*charge);
  return slice;
}

bool place_doorbell_record(CommandCall& call, uint32_t id, uint64_t& dbr_addr, std::shared_ptr<const void>& held) {
  const Umem* umem = lookup_owned(call, call.function().resources.umems, id, kCheckUmem);
  if (umem == nullptr) return false;
  // Eight aligned bytes inside the UMEM never cross one of its pages.
  const uint64_t offset = dbr_addr;
  const bool inside = offset % 8 == 0 && offset < umem->pages.size() && umem->pages.size() - offset >= 8;
  const auto address = inside ? umem->pages.translate(offset) : std::nullopt;
  if (!check(call, address.has_value() && address.value() % 8 == 0, kCheckUmem)) return false;
  dbr_addr = *address;
  held = umem->pages.source;
  return true;
}

}  // namespace fw

void register_umem_commands(CommandTable& table) {
  table.add(kCreateUmem, "CREATE_UMEM", create_umem, Senders::kUser);
  table.add(kDestroyUmem, "DESTROY_UMEM", destroy_umem, Senders::kUser);
}

}  // namespace hcaemu::model
