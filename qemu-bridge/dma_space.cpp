#include "qemu-bridge/dma_space.h"

#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <vector>

#include "common/log.h"
#include "common/log_limit.h"
#include "qemu-bridge/guarded_copy.h"

namespace hcaemu::vfio_user {

namespace {
// mmap offsets must be aligned to the page size of the fd's file system (huge pages on hugetlbfs).
uint64_t fd_page_size(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) == 0 && fs.f_type == HUGETLBFS_MAGIC && fs.f_bsize > 0) return uint64_t(fs.f_bsize);
  return uint64_t(::sysconf(_SC_PAGESIZE));
}
}  // namespace

DmaSpace::DmaSpace(size_t max_maps, DmaMessenger* messenger, uint64_t max_mapped_bytes)
    : max_maps_(max_maps), max_mapped_bytes_(max_mapped_bytes), messenger_(messenger) {}

uint64_t DmaSpace::mapped_bytes() const {
  std::shared_lock lock(mu_);
  return mapped_bytes_;
}

DmaSpace::~DmaSpace() { unmap_all(); }

void DmaSpace::release(Map& m) {
  if (m.mapping) ::munmap(m.mapping, m.mapping_len);
  m.mapping = nullptr;
  m.host = nullptr;
}

void DmaSpace::set_messenger(DmaMessenger* messenger) {
  std::unique_lock lock(mu_);
  messenger_ = messenger;
}

size_t DmaSpace::map_count() const {
  std::shared_lock lock(mu_);
  return maps_.size();
}

int DmaSpace::map(uint64_t iova, uint64_t size, uint32_t flags, UniqueFd fd, uint64_t fd_offset) {
  if (size == 0 || iova + size < iova) return EINVAL;
  if ((flags & ~(kRead | kWrite)) != 0 || (flags & (kRead | kWrite)) == 0) return EINVAL;

  Map m{iova, size, flags};
  if (fd.valid()) {
    if (fd_offset + size < fd_offset) return EINVAL;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno;
    // A mapping past the end of a regular file (memfd included) would SIGBUS on access.
    if (S_ISREG(st.st_mode) && uint64_t(st.st_size) < fd_offset + size) return EINVAL;
    const uint64_t page = fd_page_size(fd.get());
    const uint64_t aligned = fd_offset & ~(page - 1);
    const uint64_t remainder = fd_offset - aligned;
    if (size > SIZE_MAX - remainder) return EINVAL;
    {
      std::shared_lock lock(mu_);  // checked again when the map is added
      if (size + remainder > max_mapped_bytes_ - std::min(mapped_bytes_, max_mapped_bytes_)) return ENOSPC;
    }
    int prot = ((flags & kRead) ? PROT_READ : 0) | ((flags & kWrite) ? PROT_WRITE : 0);
    void* p = ::mmap(nullptr, size_t(size + remainder), prot, MAP_SHARED, fd.get(), off_t(aligned));
    if (p == MAP_FAILED) return errno;
    m.mapping = p;
    m.mapping_len = size_t(size + remainder);
    m.host = static_cast<uint8_t*>(p) + remainder;
  }
  // fd is closed when it goes out of scope: the mapping holds the memory.

  std::unique_lock lock(mu_);
  auto next = maps_.lower_bound(iova);
  bool overlap = (next != maps_.end() && next->second.iova < iova + size);
  if (!overlap && next != maps_.begin()) {
    auto prev = std::prev(next);
    overlap = prev->second.iova + prev->second.size > iova;
  }
  const bool over_budget = m.mapping_len > max_mapped_bytes_ - std::min(mapped_bytes_, max_mapped_bytes_);
  int err = overlap ? EEXIST : (maps_.size() >= max_maps_ || over_budget ? ENOSPC : 0);
  if (err != 0) {
    lock.unlock();
    release(m);
    return err;
  }
  mapped_bytes_ += m.mapping_len;
  maps_.emplace(iova, m);
  return 0;
}

int DmaSpace::unmap(uint64_t iova, uint64_t size) {
  Map victim;
  {
    std::unique_lock lock(mu_);  // waits for in-flight memcpy accesses
    auto it = maps_.find(iova);
    if (it == maps_.end()) return ENOENT;
    if (it->second.size != size) return EINVAL;
    victim = it->second;
    mapped_bytes_ -= victim.mapping_len;
    maps_.erase(it);
  }
  release(victim);  // no access can reach it any more
  return 0;
}

void DmaSpace::unmap_all() {
  std::map<uint64_t, Map> old;
  {
    std::unique_lock lock(mu_);
    old.swap(maps_);
    mapped_bytes_ = 0;
  }
  for (auto& [iova, m] : old) release(m);
}

// Resolves [addr, addr + len) into per-map segments under the shared lock, refusing the whole
// access unless every byte is covered with permission `need`. Segments of mmapped maps are copied
// under the lock; segments of fd-less maps are sent as messages after the lock is dropped (a
// message round trip can take seconds and must not hold off the I/O thread's map/unmap).
template <typename Copy, typename Send>
bool DmaSpace::access(uint64_t addr, size_t len, uint32_t need, Copy&& copy, Send&& send) {
  if (len == 0) return true;
  if (addr + len < addr) return false;
  const uint64_t end = addr + len;

  std::vector<Segment> remote;
  DmaMessenger* messenger = nullptr;
  {
    std::shared_lock lock(mu_);
    auto it = maps_.upper_bound(addr);
    if (it == maps_.begin()) return false;
    --it;
    std::vector<Segment> segs;
    uint64_t cur = addr;
    while (cur < end) {
      if (it == maps_.end()) return false;
      const Map& m = it->second;
      if (m.iova > cur || m.iova + m.size <= cur) return false;  // hole
      if ((m.flags & need) != need) return false;
      uint64_t seg_end = std::min(end, m.iova + m.size);
      segs.push_back(Segment{&m, cur, size_t(cur - addr), size_t(seg_end - cur)});
      cur = seg_end;
      ++it;
    }
    bool needs_messages = false;
    for (const auto& s : segs) needs_messages |= (s.map->host == nullptr);
    if (needs_messages && messenger_ == nullptr) return false;
    messenger = messenger_;
    for (const auto& s : segs) {
      if (s.map->host) {
        if (!copy(s.map->host + (s.iova - s.map->iova), s.buf_offset, s.len)) {
          // The client shrank the file behind the map: this access fails, nothing else does.
          const uint64_t n = faults_.fetch_add(1) + 1;
          if (LogLimiter::logs(n))
            log().warn("DMA at iova {:#x} ({} bytes) faulted: the client's memory behind the map is gone "
                       "(truncated); the access fails ({} so far)", s.iova, s.len, n);
          return false;
        }
      } else {
        remote.push_back(s);
      }
    }
  }
  for (const auto& s : remote) {
    const int error = send(messenger, s.iova, s.buf_offset, s.len);
    if (error == ETIMEDOUT) ++unanswered_;  // the client's fault; an error reply is the guest's address
    if (error != 0) return false;
  }
  return true;
}

bool DmaSpace::read(uint64_t addr, std::span<uint8_t> dst) {
  return access(
      addr, dst.size(), kRead,
      [&](const uint8_t* host, size_t off, size_t n) { return guarded_copy(dst.data() + off, host, n); },
      [&](DmaMessenger* m, uint64_t iova, size_t off, size_t n) { return m->dma_read(iova, dst.subspan(off, n)); });
}

bool DmaSpace::write(uint64_t addr, std::span<const uint8_t> src) {
  return access(
      addr, src.size(), kWrite,
      [&](uint8_t* host, size_t off, size_t n) { return guarded_copy(host, src.data() + off, n); },
      [&](DmaMessenger* m, uint64_t iova, size_t off, size_t n) { return m->dma_write(iova, src.subspan(off, n)); });
}

}  // namespace hcaemu::vfio_user
