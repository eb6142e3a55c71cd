#pragma once
// DevX UMEMs (objects/umem.h) for the create commands of a process's queues: the buffer or the
// doorbell record a command places in a UMEM, resolved to the UMEM's pages. Each fails the command
// (BAD_PARAMETER with the UMEM check, or the lookup's status) when the UMEM is not the sender's,
// the range leaves it, or the device would write a UMEM registered read-only.
#include <cstdint>
#include <memory>
#include <optional>

#include "model/firmware/command_table.h"
#include "model/queues/page_list.h"

namespace hcaemu::model::fw {

// Bytes [offset, offset + size) of UMEM `id` as a queue buffer, charged to the translation budget.
std::optional<PageList> umem_buffer(CommandCall& call, uint32_t id, uint64_t offset, uint64_t size, bool device_writes);

// A queue's doorbell record in UMEM `id`: `dbr_addr` comes as its offset there and leaves as its
// host address, and `held` takes the share of the UMEM the queue holds while it lives. False when
// the command failed.
bool place_doorbell_record(CommandCall& call, uint32_t id, uint64_t& dbr_addr, std::shared_ptr<const void>& held);

}  // namespace hcaemu::model::fw
