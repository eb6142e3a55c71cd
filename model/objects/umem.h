#pragma once
// DevX UMEMs: process memory that mlx5_ib pinned and described to the device (CREATE_UMEM, an MTT
// of the process's pages). A process's own queues (DevX CREATE_CQ / CREATE_QP / CREATE_SQ, ...)
// then name a UMEM and an offset in it instead of a PAS: mlx5_ib forces the commands' umem_valid
// bits, so a process can never hand the device addresses of memory it was not given.
// A queue over a UMEM keeps a slice of its pages (PageList::slice) or its doorbell record's share,
// both holding the UMEM's `pages.source`; DESTROY_UMEM is refused while any of them lives
// (in_use), as a ConnectX refuses it.
#include <cstdint>
#include <memory>

#include "model/objects/object_table.h"
#include "model/queues/page_list.h"

namespace hcaemu::model {

struct Umem {
  PageList pages;          // the whole UMEM, its `source` the share below
  bool writable = false;   // every MTT entry lets the device write (the process registered it writable)

  bool in_use() const { return pages.source.use_count() > 1; }
};

// IDs from 1; at most 2^16 a function (log_max_umem is not a cap mlx5_ib reads).
using Umems = ObjectTable<Umem>;
inline constexpr uint32_t kLogMaxUmems = 16;

}  // namespace hcaemu::model
