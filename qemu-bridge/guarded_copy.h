#pragma once
// Copies to and from memory a vfio-user client shared with us (DMA_MAP with an fd) without
// letting the client kill the process. The client owns the file behind the mapping: if it
// truncates it (a memfd without F_SEAL_SHRINK, a regular file), touching the lost pages raises
// SIGBUS, which by default ends hcaemu and every VM it serves. guarded_copy() catches that fault
// in the copy it makes and returns false: the access fails like a DMA error for that function
// only. A SIGBUS anywhere else keeps its default action (the process ends with a core dump).
#include <cstddef>

namespace hcaemu::vfio_user {

// memcpy(dst, src, n), false when a page of either range raised SIGBUS (the copy may have been
// done in part). Any thread.
bool guarded_copy(void* dst, const void* src, size_t n);

}  // namespace hcaemu::vfio_user
