#include "qemu-bridge/server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/log.h"

namespace hcaemu::vfio_user {

namespace {
[[noreturn]] void throw_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}
constexpr size_t kRxBufSize = 1u << 16;
}  // namespace

VfioUserServer::VfioUserServer(std::string socket_path, DeviceBackend& backend, ServerOptions options)
    : path_(std::move(socket_path)),
      opts_(options),
      dispatcher_(backend, *this, options.protocol),
      decoder_(dispatcher_),
      rx_buf_(kRxBufSize) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.empty() || path_.size() >= sizeof(addr.sun_path))
    throw_errno(ENAMETOOLONG, "vfio-user socket path empty or too long: " + path_);
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);

  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw_errno(EEXIST, "refusing to replace non-socket " + path_);
    ::unlink(path_.c_str());  // stale socket from an earlier run
  }
  listen_fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listen_fd_) throw_errno(errno, "socket");
  if (::bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    throw_errno(errno, "bind " + path_);
  if (::chmod(path_.c_str(), opts_.socket_mode) != 0) throw_errno(errno, "chmod " + path_);
  if (::listen(listen_fd_.get(), 4) != 0) throw_errno(errno, "listen " + path_);
  wake_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_fd_) throw_errno(errno, "eventfd");

  thread_ = std::thread([this] { run(); });
  log().info("vfio-user: listening on {}", path_);
}

VfioUserServer::~VfioUserServer() {
  stop();
  dispatcher_.detach_sink();  // completions that arrive from now on must not reach our members
}

void VfioUserServer::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  wake();
  thread_.join();
  if (client_fd_) drop_client("server stopping");
  listen_fd_.reset();
  ::unlink(path_.c_str());
  log().info("vfio-user: stopped {}", path_);
}

bool VfioUserServer::client_connected() const {
  std::lock_guard lock(write_mu_);
  return client_fd_.valid() && !broken_;
}

void VfioUserServer::wake() {
  uint64_t one = 1;
  [[maybe_unused]] auto r = ::write(wake_fd_.get(), &one, sizeof(one));
}

void VfioUserServer::run() {
  dispatcher_.set_io_thread(std::this_thread::get_id());
  while (!stopping_) {
    // While accept() fails for want of fds, the listening socket stays readable: leave it out of
    // the poll for a while instead of spinning (the connected client is still served).
    const auto now = std::chrono::steady_clock::now();
    const bool listening = now >= accept_paused_until_;
    bool sending = false;
    std::chrono::steady_clock::time_point send_deadline{};
    {
      std::lock_guard lock(write_mu_);
      sending = client_fd_ && !broken_ && !outbox_.empty();
      send_deadline = outbox_since_ + opts_.send_timeout;
      if (sending && now >= send_deadline) {
        break_connection_locked("the client has not read its replies in time");
        sending = false;
      }
    }
    pollfd pfd[3] = {{wake_fd_.get(), POLLIN, 0}, {listening ? listen_fd_.get() : -1, POLLIN, 0},
                     {client_fd_.get(), short(POLLIN | (sending ? POLLOUT : 0)), 0}};
    const nfds_t n = client_fd_ ? 3 : 2;
    // DMA requests the client has not answered in time fail here, so no waiter needs a clock.
    auto wait_until = dispatcher_.expire_dma(now);
    if (!listening) wait_until = std::min(wait_until, accept_paused_until_);
    if (sending) wait_until = std::min(wait_until, send_deadline);
    const int timeout_ms =
        wait_until == std::chrono::steady_clock::time_point::max()
            ? -1
            : int(std::chrono::duration_cast<std::chrono::milliseconds>(wait_until - now).count()) + 1;
    int r = ::poll(pfd, n, timeout_ms);
    if (r < 0) {
      if (errno == EINTR) continue;
      log().error("vfio-user: poll failed: {}", std::strerror(errno));
      break;
    }
    if (pfd[0].revents & POLLIN) {
      uint64_t v;
      [[maybe_unused]] auto rr = ::read(wake_fd_.get(), &v, sizeof(v));
    }
    if (stopping_) break;
    if (n == 3 && (pfd[2].revents & POLLOUT)) {
      std::lock_guard lock(write_mu_);
      flush_outbox_locked();
    }
    if (n == 3 && (pfd[2].revents & (POLLIN | POLLHUP | POLLERR))) {
      if (!read_client()) drop_client("connection closed");
    }
    if (pfd[1].revents & POLLIN) accept_client();
  }
}

void VfioUserServer::accept_client() {
  UniqueFd fd(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!fd) {
    const int err = errno;
    if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM)
      accept_paused_until_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    uint64_t skipped = 0;
    if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR && accept_log_.allow(skipped))
      log().warn("vfio-user: accept on {} failed: {}{}", path_, std::strerror(err),
                 skipped != 0 ? fmt::format(" [{} more not logged]", skipped) : "");
    return;
  }
  ucred peer{};
  socklen_t peer_len = sizeof(peer);
  if (opts_.same_user_only &&
      (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &peer, &peer_len) != 0 ||
       (peer.uid != ::geteuid() && peer.uid != 0))) {
    ++refused_peers_;
    if (accept_log_.allow())
      log().warn("vfio-user: refused a client of uid {} on {} (not ours)", peer.uid, path_);
    return;  // fd closes here
  }
  if (client_fd_) {
    dispatcher_.count_reject(Reject::kSecondClient);
    if (accept_log_.allow())
      log().warn("vfio-user: refused a second client on {} (one is connected)", path_);
    return;  // fd closes here
  }
  // Every receive and send uses MSG_DONTWAIT: nothing here blocks on the client.
  decoder_.reset();
  const uint64_t conn = dispatcher_.connect();
  {
    std::lock_guard lock(write_mu_);
    client_fd_ = std::move(fd);
    client_conn_ = conn;
    broken_ = false;
  }
  const uint64_t n = accepted_.fetch_add(1) + 1;
  // A client that reconnects in a loop would fill the log with these two lines.
  if (LogLimiter::logs(n)) log().info("vfio-user: client connected on {} (connection {})", path_, n);
}

void VfioUserServer::drop_client(const char* why) {
  // The connection's maps and interrupts go first: once client_connected() says the client is
  // gone, nothing of it may be left (no DMA through its maps, no signal to its eventfds).
  dispatcher_.disconnect();
  {
    std::lock_guard lock(write_mu_);
    client_fd_.reset();
    client_conn_ = 0;
    broken_ = false;
    outbox_.clear();
    outbox_sent_ = outbox_bytes_ = 0;
  }
  decoder_.reset();
  if (LogLimiter::logs(accepted_.load())) log().info("vfio-user: client disconnected from {} ({})", path_, why);
}

// Reads what is available, never more than the decoder wants, so that SCM_RIGHTS fds (which the
// kernel delivers with the first byte of the sendmsg that carried them) attach to their header.
bool VfioUserServer::read_client() {
  for (int rounds = 0; rounds < 64; ++rounds) {
    const size_t want = std::min(decoder_.want(), rx_buf_.size());
    iovec iov{rx_buf_.data(), want};
    alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * kMaxMsgFds)];
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctrl;
    mh.msg_controllen = sizeof(ctrl);
    ssize_t n = ::recvmsg(client_fd_.get(), &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      return false;
    }
    std::vector<UniqueFd> fds;
    for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        fds.emplace_back(fd);
      }
    }
    const bool truncated = (mh.msg_flags & MSG_CTRUNC) != 0;  // the kernel closed what did not fit
    if (n == 0) return false;                                   // fds (if any) close with `fds`
    if (!decoder_.consume(std::span<const uint8_t>(rx_buf_.data(), size_t(n)), std::move(fds), truncated))
      return false;
    {
      std::lock_guard lock(write_mu_);
      if (broken_) return false;
    }
  }
  return true;  // more may be pending; poll will report it again
}

bool VfioUserServer::send(uint64_t conn, std::vector<uint8_t> bytes) {
  bool queued = false;
  {
    std::lock_guard lock(write_mu_);
    if (!client_fd_ || broken_ || conn != client_conn_) return false;
    if (outbox_.empty()) outbox_since_ = std::chrono::steady_clock::now();
    outbox_bytes_ += bytes.size();
    outbox_.push_back(std::move(bytes));
    if (outbox_bytes_ > opts_.max_outbox_bytes) {
      break_connection_locked("the client stopped reading (outbox full)");
      return false;
    }
    if (outbox_.size() == 1 && !flush_outbox_locked()) return false;
    queued = !outbox_.empty();
  }
  // The rest goes when the socket is writable: the I/O thread polls for it.
  if (queued && std::this_thread::get_id() != thread_.get_id()) wake();
  return true;
}

bool VfioUserServer::flush_outbox_locked() {
  while (!outbox_.empty()) {
    const std::vector<uint8_t>& front = outbox_.front();
    const ssize_t n = ::send(client_fd_.get(), front.data() + outbox_sent_, front.size() - outbox_sent_,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) {
      break_connection_locked(n < 0 ? std::strerror(errno) : "closed");
      return false;
    }
    outbox_sent_ += size_t(n);
    outbox_bytes_ -= size_t(n);
    if (outbox_sent_ == front.size()) {
      outbox_.pop_front();
      outbox_sent_ = 0;
      outbox_since_ = std::chrono::steady_clock::now();
    }
  }
  return true;
}

void VfioUserServer::break_connection_locked(const char* why) {
  if (send_failure_log_.allow())  // write_mu_ held
    log().warn("vfio-user: sending on {} failed: {}; dropping the client ({} so far)", path_, why,
               send_failure_log_.seen());
  broken_ = true;
  outbox_.clear();
  outbox_sent_ = outbox_bytes_ = 0;
  ::shutdown(client_fd_.get(), SHUT_RDWR);  // the I/O thread sees EOF and disconnects
  if (std::this_thread::get_id() != thread_.get_id()) wake();
}

}  // namespace hcaemu::vfio_user
