#include "qemu-bridge/dispatcher.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/log.h"

namespace hcaemu::vfio_user {

namespace {
constexpr std::array<std::string_view, size_t(Reject::kCount)> kRejectNames = {
    "bad_header",  "too_large",  "before_version", "bad_version",     "bad_json",         "bad_payload",
    "bad_index",   "out_of_range", "bad_flags",    "bad_fds",         "dma_map",          "dma_unmap",
    "unknown_command", "unexpected_reply", "second_client", "backend_error",
};

// The VERSION reply's capabilities (vfio-user.md section 3): no write_multiple, no twin socket.
std::string capabilities_json(const ProtocolOptions& o) {
  nlohmann::json caps = {{"max_msg_fds", o.max_msg_fds},
                         {"max_data_xfer_size", o.max_data_xfer_size},
                         {"pgsizes", kPgSizes},
                         {"max_dma_maps", o.max_dma_maps}};
  return nlohmann::json{{"capabilities", caps}}.dump();
}

uint32_t irq_info_flags(uint32_t index) {
  switch (index) {
    case kIntxIrq: return kIrqInfoFlagEventfd | kIrqInfoFlagMaskable | kIrqInfoFlagAutomasked;
    case kMsixIrq: return kIrqInfoFlagEventfd | kIrqInfoFlagMaskable;  // never NORESIZE (section 4)
    default: return kIrqInfoFlagEventfd;
  }
}
}  // namespace

std::string_view reject_name(Reject r) { return size_t(r) < kRejectNames.size() ? kRejectNames[size_t(r)] : "?"; }

uint64_t RejectCounters::total() const {
  uint64_t t = 0;
  for (const auto& n : n_) t += n.load(std::memory_order_relaxed);
  return t;
}

// One outstanding DMA_READ/WRITE of ours, owned by the waiting thread's stack.
struct MessageDispatcher::Pending {
  uint16_t cmd = 0;
  uint64_t addr = 0;
  uint32_t count = 0;
  std::span<uint8_t> dst;  // DMA_READ destination
  bool done = false;
  int err = 0;
  std::chrono::steady_clock::time_point deadline{};
};

MessageDispatcher::MessageDispatcher(DeviceBackend& backend, MessageSink& sink, ProtocolOptions opts)
    : backend_(backend), opts_(opts), path_(std::make_shared<ReplyPath>()), dma_(opts.max_dma_maps, this, opts.max_dma_mapped_bytes) {
  path_->sink = &sink;
  path_->rejects = &rejects_;
  for (uint32_t i = 0; i < kNumIrqs; ++i) irqs_[i].resize(backend_.irq_count(i));
}

MessageDispatcher::~MessageDispatcher() {
  fail_pending(ESHUTDOWN);
  detach_sink();
}

void MessageDispatcher::detach_sink() {
  std::lock_guard lock(path_->mu);
  path_->sink = nullptr;  // late backend completions go nowhere
}

// ---- framing -----------------------------------------------------------------------------------

MessageDispatcher::Framing MessageDispatcher::check_header(const Header& h) {
  if (h.size < kHeaderSize) {
    rejects_.add(Reject::kBadHeader);
    if (reject_log_[size_t(Reject::kBadHeader)].allow())  // a client reconnecting to do it again and again
      log().warn("vfio-user: rejected message id {} cmd {}: size {} < header, dropping connection ({} so far)",
                 h.msg_id, h.command, h.size, rejects_.get(Reject::kBadHeader));
    return Framing::kDisconnect;
  }
  if (h.size > max_message_size()) {
    rejects_.add(Reject::kTooLarge);
    if (reject_log_[size_t(Reject::kTooLarge)].allow())
      log().warn("vfio-user: rejected {} id {}: size {} above limit {}, skipping body ({} so far)",
                 command_name(h.command), h.msg_id, h.size, max_message_size(), rejects_.get(Reject::kTooLarge));
    if (!h.is_reply() && !h.no_reply()) send(build_error_reply(h, E2BIG));
    return Framing::kSkip;
  }
  return Framing::kAccept;
}

// ---- connection --------------------------------------------------------------------------------

uint64_t MessageDispatcher::connect() {
  uint64_t gen = conn_.fetch_add(1) + 1;
  negotiated_ = false;
  peer_max_xfer_ = opts_.max_data_xfer_size;
  connected_ = true;
  backend_.connection_changed(true);
  return gen;
}

void MessageDispatcher::disconnect() {
  if (!connected_.exchange(false)) return;
  conn_.fetch_add(1);  // replies still in flight for the old connection are dropped by the sink
  negotiated_ = false;
  fail_pending(ECONNRESET);
  dma_.unmap_all();
  drop_irqs();
  backend_.connection_changed(false);
}

void MessageDispatcher::drop_irqs() {
  std::lock_guard lock(irq_mu_);
  for (auto& v : irqs_)
    for (auto& fd : v) fd.reset();
}

bool MessageDispatcher::irq_installed(uint32_t index, uint32_t vector) const {
  std::lock_guard lock(irq_mu_);
  return index < kNumIrqs && vector < irqs_[index].size() && irqs_[index][vector].valid();
}

// ---- replies -----------------------------------------------------------------------------------

void MessageDispatcher::send(std::vector<uint8_t> bytes) {
  std::lock_guard lock(path_->mu);
  if (path_->sink) path_->sink->send(conn_.load(), std::move(bytes));
}

void MessageDispatcher::reply(const Header& req, std::span<const uint8_t> payload) {
  if (!req.no_reply()) send(build_reply(req, payload));
}

void MessageDispatcher::reject(Message& m, Reject why, int err, std::string_view detail) {
  rejects_.add(why);
  m.fds.clear();  // close whatever came with it before anyone sees the reply
  uint64_t skipped = 0;
  if (reject_log_[size_t(why)].allow(skipped))
    log().warn("vfio-user: rejected {} id {}: {} ({}, errno {}){}{}", command_name(m.hdr.command), m.hdr.msg_id, detail,
               reject_name(why), err, m.hdr.no_reply() ? ", no reply (NO_REPLY)" : "",
               skipped != 0 ? fmt::format(" [{} more {} not logged]", skipped, reject_name(why)) : "");
  if (!m.hdr.no_reply()) send(build_error_reply(m.hdr, uint32_t(err)));
}

// ---- dispatch ----------------------------------------------------------------------------------

void MessageDispatcher::handle(Message m) {
  const Header& h = m.hdr;
  if (h.is_reply()) return handle_reply(m);
  if (h.type() != kFlagTypeCommand) return reject(m, Reject::kBadHeader, EINVAL, "invalid message type");
  log().debug("vfio-user: {} id {} size {} flags {:#x} fds {}", command_name(h.command), h.msg_id, h.size, h.flags,
              m.fds.size());
  if (m.fds_bad) return reject(m, Reject::kBadFds, EINVAL, "too many or misplaced fds");
  if (!negotiated_ && h.command != kCmdVersion) return reject(m, Reject::kBeforeVersion, EINVAL, "before VERSION");
  if (!m.fds.empty() && h.command != kCmdDmaMap && h.command != kCmdDeviceSetIrqs)
    return reject(m, Reject::kBadFds, EINVAL, "fds on a command that takes none");

  switch (h.command) {
    case kCmdVersion: return on_version(m);
    case kCmdDmaMap: return on_dma_map(m);
    case kCmdDmaUnmap: return on_dma_unmap(m);
    case kCmdDeviceGetInfo: return on_get_info(m);
    case kCmdDeviceGetRegionInfo: return on_region_info(m);
    case kCmdDeviceGetIrqInfo: return on_irq_info(m);
    case kCmdDeviceSetIrqs: return on_set_irqs(m);
    case kCmdRegionRead: return on_region_read(m);
    case kCmdRegionWrite: return on_region_write(m);
    case kCmdDeviceReset: return on_reset(m);
    default: return reject(m, Reject::kUnknownCommand, ENOSYS, "command not implemented");
  }
}

void MessageDispatcher::on_version(Message& m) {
  auto v = decode_version(m.payload);
  if (!v) return reject(m, Reject::kBadPayload, EINVAL, "VERSION payload too short");
  if (negotiated_) return reject(m, Reject::kBadVersion, EINVAL, "VERSION already negotiated");
  if (v->major != kVersionMajor) return reject(m, Reject::kBadVersion, ENOTSUP, "unsupported major version");
  uint32_t peer_xfer = opts_.max_data_xfer_size;
  if (v->has_json) {
    if (!v->json_nul_terminated) return reject(m, Reject::kBadJson, EINVAL, "JSON not NUL-terminated");
    auto j = nlohmann::json::parse(v->json, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return reject(m, Reject::kBadJson, EINVAL, "JSON is not an object");
    if (auto c = j.find("capabilities"); c != j.end()) {
      if (!c->is_object()) return reject(m, Reject::kBadJson, EINVAL, "capabilities is not an object");
      if (auto x = c->find("max_data_xfer_size"); x != c->end()) {
        if (!x->is_number_unsigned() || x->get<uint64_t>() == 0)
          return reject(m, Reject::kBadJson, EINVAL, "bad max_data_xfer_size");
        peer_xfer = uint32_t(std::min<uint64_t>(x->get<uint64_t>(), opts_.max_data_xfer_size));
      }
      if (auto x = c->find("max_msg_fds"); x != c->end() && !x->is_number_unsigned())
        return reject(m, Reject::kBadJson, EINVAL, "bad max_msg_fds");
    }
  }
  peer_max_xfer_ = peer_xfer;
  negotiated_ = true;
  log().info("vfio-user: VERSION {}.{} from client, replying {}.{} (DMA chunk {} bytes)", v->major, v->minor,
             kVersionMajor, kVersionMinor, peer_xfer);
  reply(m.hdr, encode_version(kVersionMajor, kVersionMinor, capabilities_json(opts_)));
}

void MessageDispatcher::on_dma_map(Message& m) {
  auto p = decode_dma_map(m.payload);
  if (!p || p->argsz < kDmaMapSize) return reject(m, Reject::kBadPayload, EINVAL, "DMA_MAP payload/argsz too small");
  if (m.fds.size() > 1) return reject(m, Reject::kBadFds, EINVAL, "DMA_MAP with more than one fd");
  if ((p->flags & ~(kDmaMapFlagRead | kDmaMapFlagWrite)) != 0 ||
      (p->flags & (kDmaMapFlagRead | kDmaMapFlagWrite)) == 0)
    return reject(m, Reject::kBadFlags, EINVAL, "DMA_MAP flags");
  UniqueFd fd = m.fds.empty() ? UniqueFd() : std::move(m.fds[0]);
  const bool has_fd = fd.valid();
  int err = dma_.map(p->addr, p->size, p->flags, std::move(fd), p->offset);
  if (err != 0) return reject(m, Reject::kDmaMap, err, "DMA_MAP refused by the map table");
  log().debug("vfio-user: mapped iova {:#x}+{:#x} flags {} {}", p->addr, p->size, p->flags,
              has_fd ? "shared" : "by message");
  reply(m.hdr, {});
}

void MessageDispatcher::on_dma_unmap(Message& m) {
  auto p = decode_dma_unmap(m.payload);
  if (!p || p->argsz < kDmaUnmapSize)
    return reject(m, Reject::kBadPayload, EINVAL, "DMA_UNMAP payload/argsz too small");
  if ((p->flags & ~kDmaUnmapFlagAll) != 0) return reject(m, Reject::kBadFlags, EINVAL, "DMA_UNMAP flags");
  if (p->flags & kDmaUnmapFlagAll) {
    if (p->addr != 0 || p->size != 0) return reject(m, Reject::kBadFlags, EINVAL, "UNMAP ALL with a range");
    dma_.unmap_all();
  } else if (int err = dma_.unmap(p->addr, p->size); err != 0) {
    return reject(m, Reject::kDmaUnmap, err, "DMA_UNMAP does not match a map");
  }
  reply(m.hdr, encode_dma_unmap(DmaUnmapPayload{kDmaUnmapSize, p->flags, p->addr, p->size}));
}

void MessageDispatcher::on_get_info(Message& m) {
  auto p = decode_device_info(m.payload);
  if (!p || p->argsz < kDeviceInfoSize)
    return reject(m, Reject::kBadPayload, EINVAL, "GET_INFO payload/argsz too small");
  reply(m.hdr, encode_device_info(DeviceInfo{kDeviceInfoSize, kDeviceFlagPci | kDeviceFlagReset, kNumRegions, kNumIrqs}));
}

void MessageDispatcher::on_region_info(Message& m) {
  auto p = decode_region_info(m.payload);
  if (!p || p->argsz < kRegionInfoSize)
    return reject(m, Reject::kBadPayload, EINVAL, "REGION_INFO payload/argsz too small");
  if (p->index >= kNumRegions) return reject(m, Reject::kBadIndex, EINVAL, "region index out of range");
  RegionInfo ri = backend_.region_info(p->index);
  uint32_t flags = 0;
  if (ri.size > 0) flags = (ri.readable ? kRegionFlagRead : 0) | (ri.writable ? kRegionFlagWrite : 0);
  reply(m.hdr, encode_region_info(RegionInfoPayload{kRegionInfoSize, flags, p->index, 0, ri.size,
                                                    uint64_t(p->index) << kRegionOffsetShift}));
}

void MessageDispatcher::on_irq_info(Message& m) {
  auto p = decode_irq_info(m.payload);
  if (!p || p->argsz < kIrqInfoSize) return reject(m, Reject::kBadPayload, EINVAL, "IRQ_INFO payload/argsz too small");
  if (p->index >= kNumIrqs) return reject(m, Reject::kBadIndex, EINVAL, "IRQ index out of range");
  reply(m.hdr, encode_irq_info(IrqInfoPayload{kIrqInfoSize, irq_info_flags(p->index), p->index,
                                              uint32_t(irqs_[p->index].size())}));
}

// SET_IRQS (vfio-user.md section 4): DATA_NONE|TRIGGER count 0 disables the index; DATA_EVENTFD|
// TRIGGER installs one fd per vector start..start+count-1 (closing the previous ones), or with no
// fds de-assigns them; MASK/UNMASK are bounds-checked and accepted as no-ops (QEMU owns masking);
// DATA_BOOL|TRIGGER (loopback trigger) is accepted as a no-op.
namespace {
// An interrupt is a write to the fd on the simulation thread: only a non-blocking eventfd may
// take it. A pipe, a socket or a file could block that thread (every function) or do worse.
bool is_eventfd(int fd) {
  char link[64] = {};
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(path.c_str(), link, sizeof link - 1);
  return n > 0 && std::string_view(link, size_t(n)) == "anon_inode:[eventfd]";
}
bool make_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}
}  // namespace

void MessageDispatcher::on_set_irqs(Message& m) {
  auto p = decode_irq_set(m.payload);
  if (!p || p->argsz < kIrqSetFixedSize)
    return reject(m, Reject::kBadPayload, EINVAL, "SET_IRQS payload/argsz too small");
  const uint32_t data = p->flags & kIrqSetDataMask, action = p->flags & kIrqSetActionMaskAll;
  if ((p->flags & ~(kIrqSetDataMask | kIrqSetActionMaskAll)) != 0 || std::popcount(data) != 1 ||
      std::popcount(action) != 1)
    return reject(m, Reject::kBadFlags, EINVAL, "SET_IRQS needs exactly one DATA and one ACTION flag");
  if (p->index >= kNumIrqs) return reject(m, Reject::kBadIndex, EINVAL, "IRQ index out of range");
  const uint64_t n = irqs_[p->index].size();
  const bool disable_all = data == kIrqSetDataNone && action == kIrqSetActionTrigger && p->count == 0;
  if (!disable_all && (p->count == 0 || uint64_t(p->start) + p->count > n))
    return reject(m, Reject::kOutOfRange, EINVAL, "SET_IRQS start/count outside the IRQ count");
  if (data != kIrqSetDataEventfd && !m.fds.empty())
    return reject(m, Reject::kBadFds, EINVAL, "fds without DATA_EVENTFD");
  if (data == kIrqSetDataEventfd && !m.fds.empty() && m.fds.size() != p->count)
    return reject(m, Reject::kBadFds, EINVAL, "number of fds differs from count");
  if (data == kIrqSetDataBool && p->data.size() < p->count)
    return reject(m, Reject::kBadPayload, EINVAL, "DATA_BOOL without count bytes");
  if (data == kIrqSetDataEventfd && action == kIrqSetActionTrigger)
    for (const UniqueFd& fd : m.fds)
      if (!is_eventfd(fd.get()) || !make_nonblocking(fd.get()))
        return reject(m, Reject::kBadFds, EINVAL, "SET_IRQS fd is not an eventfd");

  if (disable_all) {
    std::lock_guard lock(irq_mu_);
    for (auto& fd : irqs_[p->index]) fd.reset();
  } else if (data == kIrqSetDataEventfd && action == kIrqSetActionTrigger) {
    std::lock_guard lock(irq_mu_);
    for (uint32_t i = 0; i < p->count; ++i)
      irqs_[p->index][p->start + i] = m.fds.empty() ? UniqueFd() : std::move(m.fds[i]);  // closes the old fd
  }
  // MASK/UNMASK (any data type) and DATA_BOOL/NONE triggers with count > 0: accepted, nothing to
  // store; an eventfd given with MASK/UNMASK (INTx resample) is closed with the message.
  log().debug("vfio-user: SET_IRQS index {} start {} count {} flags {:#x} fds {}", p->index, p->start, p->count,
              p->flags, m.fds.size());
  reply(m.hdr, {});
}

void MessageDispatcher::on_region_read(Message& m) {
  auto p = decode_region_access(m.payload);
  if (!p || !p->data.empty()) return reject(m, Reject::kBadPayload, EINVAL, "REGION_READ payload size");
  if (p->region >= kNumRegions) return reject(m, Reject::kBadIndex, EINVAL, "region index out of range");
  RegionInfo ri = backend_.region_info(p->region);
  if (ri.size == 0 || !ri.readable) return reject(m, Reject::kBadIndex, EINVAL, "region absent or not readable");
  if (p->count == 0 || p->count > opts_.max_data_xfer_size)
    return reject(m, Reject::kOutOfRange, EINVAL, "count zero or above max_data_xfer_size");
  if (p->offset > ri.size || p->count > ri.size - p->offset)
    return reject(m, Reject::kOutOfRange, EINVAL, "offset/count outside the region");

  // The reply comes from the backend's completion, on whatever thread completes it.
  auto path = path_;
  const uint64_t conn = conn_.load();
  backend_.region_read(p->region, p->offset, p->count,
                       [path, conn, hdr = m.hdr, off = p->offset, region = p->region, count = p->count](
                           int err, std::vector<uint8_t> bytes) {
                         if (err == 0 && bytes.size() > count) err = EIO;
                         std::lock_guard lock(path->mu);
                         if (!path->sink) return;
                         if (err != 0) path->rejects->add(Reject::kBackendError);
                         if (hdr.no_reply()) return;
                         path->sink->send(conn, err != 0 ? build_error_reply(hdr, uint32_t(err))
                                                         : build_reply(hdr, encode_region_access(
                                                                                off, region, uint32_t(bytes.size()), bytes)));
                       });
}

// Non-posted writes are answered from the backend's completion, not on enqueue: the backend
// decides when a write counts as accepted (the SystemC bridge completes right after queueing, as
// section 9 recommends), and its errors reach the client. Posted (NO_REPLY) writes pass no callback.
void MessageDispatcher::on_region_write(Message& m) {
  auto p = decode_region_access(m.payload);
  if (!p || p->data.size() != p->count) return reject(m, Reject::kBadPayload, EINVAL, "REGION_WRITE data != count");
  if (p->region >= kNumRegions) return reject(m, Reject::kBadIndex, EINVAL, "region index out of range");
  RegionInfo ri = backend_.region_info(p->region);
  if (ri.size == 0 || !ri.writable) return reject(m, Reject::kBadIndex, EINVAL, "region absent or not writable");
  if (p->count == 0 || p->count > opts_.max_data_xfer_size)
    return reject(m, Reject::kOutOfRange, EINVAL, "count zero or above max_data_xfer_size");
  if (p->offset > ri.size || p->count > ri.size - p->offset)
    return reject(m, Reject::kOutOfRange, EINVAL, "offset/count outside the region");

  std::vector<uint8_t> bytes(p->data.begin(), p->data.end());
  auto path = path_;
  WriteDone done;
  if (m.hdr.no_reply()) {
    done = [path](int err) {
      if (err != 0) path->rejects->add(Reject::kBackendError);  // a posted write cannot report errors
    };
  } else {
    done = [path, conn = conn_.load(), hdr = m.hdr, off = p->offset, region = p->region, count = p->count](int err) {
      std::lock_guard lock(path->mu);
      if (!path->sink) return;
      if (err != 0) path->rejects->add(Reject::kBackendError);
      path->sink->send(conn, err != 0 ? build_error_reply(hdr, uint32_t(err))
                                      : build_reply(hdr, encode_region_access(off, region, count, {})));
    };
  }
  backend_.region_write(p->region, p->offset, std::move(bytes), std::move(done));
}

void MessageDispatcher::on_reset(Message& m) {
  if (!m.payload.empty()) return reject(m, Reject::kBadPayload, EINVAL, "DEVICE_RESET carries no payload");
  auto path = path_;
  backend_.reset([path, conn = conn_.load(), hdr = m.hdr](int err) {
    std::lock_guard lock(path->mu);
    if (!path->sink) return;
    if (err != 0) path->rejects->add(Reject::kBackendError);
    if (hdr.no_reply()) return;
    path->sink->send(conn, err != 0 ? build_error_reply(hdr, uint32_t(err)) : build_reply(hdr, {}));
  });
}

// ---- our DMA requests ----------------------------------------------------------------------------

void MessageDispatcher::handle_reply(Message& m) {
  m.fds.clear();
  std::lock_guard lock(pending_mu_);
  auto it = pending_.find(m.hdr.msg_id);
  if (it == pending_.end() || it->second->cmd != m.hdr.command || it->second->done) {
    rejects_.add(Reject::kUnexpectedReply);
    if (reject_log_[size_t(Reject::kUnexpectedReply)].allow())
      log().warn("vfio-user: rejected reply id {} cmd {}: no pending request ({} so far)", m.hdr.msg_id, m.hdr.command,
                 rejects_.get(Reject::kUnexpectedReply));
    return;
  }
  Pending& p = *it->second;
  if (m.hdr.is_error()) {
    p.err = m.hdr.error != 0 ? int(m.hdr.error) : EIO;
  } else if (p.cmd == kCmdDmaRead) {
    // parse_dma_read_reply works on the whole message; rebuild the header bytes in front.
    std::vector<uint8_t> whole(kHeaderSize + m.payload.size());
    encode_header(whole.data(), m.hdr);
    std::memcpy(whole.data() + kHeaderSize, m.payload.data(), m.payload.size());
    auto data = parse_dma_read_reply(whole, p.addr, p.count);
    if (data) {
      std::memcpy(p.dst.data(), data->data(), data->size());
    } else {
      p.err = EIO;
      rejects_.add(Reject::kBadPayload);
      if (reject_log_[size_t(Reject::kBadPayload)].allow())
        log().warn("vfio-user: rejected DMA_READ reply id {}: malformed", m.hdr.msg_id);
    }
  }
  p.done = true;
  pending_cv_.notify_all();
  if (waiter_ != nullptr) waiter_->wake();
}

void MessageDispatcher::fail_pending(int err) {
  std::lock_guard lock(pending_mu_);
  bool failed = false;
  for (auto& [id, p] : pending_) {
    if (!p->done) {
      p->err = err;
      p->done = true;
      failed = true;
    }
  }
  pending_cv_.notify_all();
  // Only a waiter that waits is woken: at teardown the waiter may already be gone.
  if (failed && waiter_ != nullptr) waiter_->wake();
}

std::chrono::steady_clock::time_point MessageDispatcher::expire_dma(std::chrono::steady_clock::time_point now) {
  auto next = std::chrono::steady_clock::time_point::max();
  bool expired = false;
  std::lock_guard lock(pending_mu_);
  for (auto& [id, p] : pending_) {
    if (p->done) continue;
    if (p->deadline <= now) {
      p->err = ETIMEDOUT;
      p->done = true;
      expired = true;
    } else {
      next = std::min(next, p->deadline);
    }
  }
  if (expired) {
    pending_cv_.notify_all();
    if (waiter_ != nullptr) waiter_->wake();
  }
  return next;
}

int MessageDispatcher::dma_round_trip(uint16_t cmd, uint64_t addr, std::span<uint8_t> dst,
                                      std::span<const uint8_t> src) {
  if (std::this_thread::get_id() == io_thread_.load()) return EDEADLK;  // we would wait for ourselves
  if (!connected_ || !negotiated_) return ENOTCONN;
  const uint64_t conn = conn_.load();
  const size_t total = cmd == kCmdDmaRead ? dst.size() : src.size();
  const size_t chunk = std::max<uint32_t>(1, peer_max_xfer_.load());
  for (size_t off = 0; off < total; off += chunk) {
    const size_t n = std::min(chunk, total - off);
    Pending p{cmd, addr + off, uint32_t(n), cmd == kCmdDmaRead ? dst.subspan(off, n) : std::span<uint8_t>{}};
    p.deadline = std::chrono::steady_clock::now() + opts_.dma_timeout;
    std::vector<uint8_t> msg;
    {
      std::lock_guard lock(pending_mu_);
      uint16_t id = next_dma_id_++;
      while (pending_.count(id)) id = next_dma_id_++;
      pending_[id] = &p;
      msg = cmd == kCmdDmaRead ? build_dma_read_request(id, p.addr, p.count)
                               : build_dma_write_request(id, p.addr, src.subspan(off, n));
    }
    const uint16_t id = load_le16(msg.data());
    bool sent = false;
    {
      std::lock_guard lock(path_->mu);
      sent = path_->sink && path_->sink->send(conn, std::move(msg));
      if (sent) path_->sink->dma_requested();
    }
    if (sent && waiter_ != nullptr) {
      waiter_->wait([&] {
        std::lock_guard lock(pending_mu_);
        return p.done;
      });
    }
    std::unique_lock lock(pending_mu_);
    if (sent && waiter_ == nullptr) pending_cv_.wait_for(lock, opts_.dma_timeout, [&] { return p.done; });
    pending_.erase(id);
    if (!sent) return ENOTCONN;
    if (!p.done || p.err == ETIMEDOUT) {
      const uint64_t n = dma_timeouts_.fetch_add(1) + 1;  // any thread: an atomic count, not a LogLimiter
      if (LogLimiter::logs(n))
        log().warn("vfio-user: {} id {} iova {:#x} timed out ({} so far)", command_name(cmd), id, p.addr, n);
      return ETIMEDOUT;
    }
    if (p.err != 0) return p.err;
  }
  return 0;
}

int MessageDispatcher::dma_read(uint64_t addr, std::span<uint8_t> dst) {
  return dma_round_trip(kCmdDmaRead, addr, dst, {});
}
int MessageDispatcher::dma_write(uint64_t addr, std::span<const uint8_t> src) {
  return dma_round_trip(kCmdDmaWrite, addr, {}, src);
}

bool MessageDispatcher::signal(uint32_t vector) {
  std::lock_guard lock(irq_mu_);
  auto& v = irqs_[kMsixIrq];
  if (vector >= v.size() || !v[vector].valid()) return false;
  uint64_t one = 1;
  if (::write(v[vector].get(), &one, sizeof(one)) == ssize_t(sizeof(one))) return true;
  if (errno != EAGAIN) return false;
  irq_would_block_.fetch_add(1, std::memory_order_relaxed);  // the counter is full: already signalled
  return true;
}

// ---- StreamDecoder -------------------------------------------------------------------------------

void StreamDecoder::reset() {
  phase_ = Phase::kHeader;
  got_ = 0;
  skip_left_ = 0;
  cur_ = Message{};
}

size_t StreamDecoder::want() const {
  switch (phase_) {
    case Phase::kHeader: return kHeaderSize - got_;
    case Phase::kBody: return cur_.payload.size() - got_;
    case Phase::kSkip: return size_t(std::min<uint64_t>(skip_left_, 1u << 16));
  }
  return 0;
}

bool StreamDecoder::consume(std::span<const uint8_t> bytes, std::vector<UniqueFd> fds, bool fds_truncated) {
  if (!fds.empty() || fds_truncated) {
    // fds belong with a header; anywhere else (mid-body, mid-header after the first read) they are
    // misplaced and the message is refused. In a skipped body they are simply closed.
    // A message keeps at most max_msg_fds of them; misplaced or extra ones are closed at once, so a
    // client that sends fds with every byte of a long message cannot pile up the process's fds.
    const bool at_header_start = phase_ == Phase::kHeader && got_ == 0;
    if (phase_ != Phase::kSkip) {
      const bool misplaced = fds_truncated || !at_header_start;
      cur_.fds_bad |= misplaced || cur_.fds.size() + fds.size() > d_.max_msg_fds();
      for (auto& fd : fds)
        if (!misplaced && cur_.fds.size() < d_.max_msg_fds()) cur_.fds.push_back(std::move(fd));
    }
    fds.clear();  // what was not kept closes here
  }
  while (!bytes.empty()) {
    const size_t n = std::min(want(), bytes.size());
    switch (phase_) {
      case Phase::kHeader: {
        std::memcpy(hdr_buf_ + got_, bytes.data(), n);
        got_ += n;
        if (got_ < kHeaderSize) break;
        cur_.hdr = decode_header(hdr_buf_);
        got_ = 0;
        switch (d_.check_header(cur_.hdr)) {
          case MessageDispatcher::Framing::kDisconnect: reset(); return false;
          case MessageDispatcher::Framing::kSkip:
            skip_left_ = cur_.hdr.size - kHeaderSize;
            cur_ = Message{};
            phase_ = skip_left_ ? Phase::kSkip : Phase::kHeader;
            break;
          case MessageDispatcher::Framing::kAccept:
            cur_.payload.resize(cur_.hdr.size - kHeaderSize);
            phase_ = Phase::kBody;
            break;
        }
        break;
      }
      case Phase::kBody:
        std::memcpy(cur_.payload.data() + got_, bytes.data(), n);
        got_ += n;
        break;
      case Phase::kSkip:
        skip_left_ -= n;
        if (skip_left_ == 0) phase_ = Phase::kHeader;
        break;
    }
    bytes = bytes.subspan(n);
    if (phase_ == Phase::kBody && got_ == cur_.payload.size()) {
      Message done = std::move(cur_);
      reset();
      d_.handle(std::move(done));
    }
  }
  return true;
}

}  // namespace hcaemu::vfio_user
