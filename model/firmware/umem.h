#pragma once
// DevX UMEMs (objects/umem.h) for the create commands of a process's queues: the buffer or the
// doorbell record a command places in a UMEM, resolved to the UMEM's pages. Each fails the command
// (BAD_PARAMETER with the UMEM check, or the lookup's status) and returns nullopt when the UMEM is
// not the sender's, the range leaves it, or the device would write a UMEM registered read-only.
#include <cstdint>
#include <memory>
#include <optional>

#include "model/firmware/command_table.h"
#include "model/queues/page_list.h"

namespace hcaemu::model::fw {

// Bytes [offset, offset + size) of UMEM `id` as a queue buffer, charged to the translation budget.
std::optional<PageList> umem_buffer(CommandCall& call, uint32_t id, uint64_t offset, uint64_t size, bool device_writes);

// A doorbell record at byte `offset` of UMEM `id`: its host address, and the share of the UMEM the
// queue holds while it lives.
struct UmemDoorbellRecord {
  uint64_t address = 0;
  std::shared_ptr<const void> umem;
};
std::optional<UmemDoorbellRecord> umem_doorbell_record(CommandCall& call, uint32_t id, uint64_t offset);

}  // namespace hcaemu::model::fw
