#include "qemu-bridge/netdev_link.h"

#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <system_error>

#include "common/log.h"
#include "common/log_limit.h"
#include "transport/stream_framing.h"

namespace hcaemu::bridge {

using vfio_user::UniqueFd;

namespace {

[[noreturn]] void throw_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

uint64_t now_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

uint64_t now_ms() { return now_ns() / 1000000; }

// "unix:PATH" or "tcp:HOST:PORT" / "udp:HOST:PORT" (`inet` names the one the kind wants).
std::optional<SocketAddress> parse_address(std::string_view text, std::string_view inet, std::string& error) {
  SocketAddress a;
  if (text.starts_with("unix:")) {
    a.family = SocketAddress::Family::kUnix;
    a.path = std::string(text.substr(5));
    if (a.path.empty() || a.path.size() >= sizeof(sockaddr_un::sun_path)) {
      error = "a UNIX socket path must be 1 to " + std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes";
      return std::nullopt;
    }
    return a;
  }
  const std::string prefix = std::string(inet) + ":";
  if (!text.starts_with(prefix)) {
    error = "\"" + std::string(text) + "\" is not unix:PATH or " + prefix + "HOST:PORT";
    return std::nullopt;
  }
  const std::string_view rest = text.substr(prefix.size());
  const size_t colon = rest.rfind(':');
  unsigned port = 0;
  if (colon == std::string_view::npos || colon == 0 ||
      std::from_chars(rest.data() + colon + 1, rest.data() + rest.size(), port).ec != std::errc{} ||
      port == 0 || port > 65535) {
    error = "\"" + std::string(text) + "\" needs a host and a port from 1 to 65535";
    return std::nullopt;
  }
  a.family = SocketAddress::Family::kInet;
  a.host = std::string(rest.substr(0, colon));
  a.port = uint16_t(port);
  return a;
}

// A sockaddr for `a` (resolving an inet host, numeric or by name).
socklen_t to_sockaddr(const SocketAddress& a, int type, sockaddr_storage& out) {
  std::memset(&out, 0, sizeof(out));
  if (a.family == SocketAddress::Family::kUnix) {
    auto* un = reinterpret_cast<sockaddr_un*>(&out);
    un->sun_family = AF_UNIX;
    std::memcpy(un->sun_path, a.path.c_str(), a.path.size() + 1);
    return sizeof(sockaddr_un);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = type;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(a.port);
  if (int rc = ::getaddrinfo(a.host.c_str(), port.c_str(), &hints, &found); rc != 0 || found == nullptr)
    throw std::runtime_error("cannot resolve " + a.text() + ": " + ::gai_strerror(rc));
  const socklen_t length = found->ai_addrlen;
  std::memcpy(&out, found->ai_addr, length);
  ::freeaddrinfo(found);
  return length;
}

UniqueFd open_socket(const sockaddr_storage& address, int type) {
  UniqueFd fd(::socket(address.ss_family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) throw_errno(errno, "socket");
  return fd;
}

// A UNIX socket file left by an earlier run is replaced; anything else at the path is refused.
void clear_stale_socket(const SocketAddress& a) {
  if (a.family != SocketAddress::Family::kUnix) return;
  struct stat st {};
  if (::lstat(a.path.c_str(), &st) != 0) return;
  if (!S_ISSOCK(st.st_mode)) throw_errno(EEXIST, "refusing to replace non-socket " + a.path);
  ::unlink(a.path.c_str());
}

LogLimiter& framing_log() {
  static thread_local LogLimiter limiter;  // each link's I/O thread has its own
  return limiter;
}

}  // namespace

std::string SocketAddress::text() const {
  return family == Family::kUnix ? "unix:" + path : host + ":" + std::to_string(port);
}

std::optional<LinkSpec> parse_link_spec(std::string_view text, std::string& error) {
  LinkSpec spec;
  spec.text = std::string(text);
  std::vector<std::string_view> parts;
  for (size_t at = 0; at <= text.size();) {
    const size_t comma = std::min(text.find(',', at), text.size());
    parts.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  const std::string_view kind = parts[0];
  std::optional<SocketAddress> listen, connect, local, remote;
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == std::string_view::npos) {
      error = "\"" + std::string(parts[i]) + "\" is not KEY=VALUE";
      return std::nullopt;
    }
    const std::string_view key = parts[i].substr(0, eq), value = parts[i].substr(eq + 1);
    std::optional<SocketAddress>* slot = key == "listen" ? &listen : key == "connect" ? &connect
                                       : key == "local"  ? &local  : key == "remote"  ? &remote : nullptr;
    if (slot == nullptr) {
      error = "unknown key \"" + std::string(key) + "\" (listen, connect, local, remote)";
      return std::nullopt;
    }
    if (!(*slot = parse_address(value, kind == "dgram" ? "udp" : "tcp", error))) return std::nullopt;
  }
  if (kind == "stream") {
    if (bool(listen) == bool(connect) || local || remote) {
      error = "a stream link takes exactly one of listen=ADDRESS and connect=ADDRESS";
      return std::nullopt;
    }
    spec.kind = listen ? LinkSpec::Kind::kStreamListen : LinkSpec::Kind::kStreamConnect;
    (listen ? spec.local : spec.remote) = listen ? *listen : *connect;
    return spec;
  }
  if (kind == "dgram") {
    if (!local || !remote || listen || connect || local->family != remote->family) {
      error = "a dgram link takes local=ADDRESS and remote=ADDRESS, both unix: or both udp:";
      return std::nullopt;
    }
    spec.kind = LinkSpec::Kind::kDatagram;
    spec.local = *local;
    spec.remote = *remote;
    return spec;
  }
  error = "\"" + std::string(kind) + "\" is not a link kind (stream or dgram)";
  return std::nullopt;
}

NetdevLink::NetdevLink(std::string name, LinkSpec spec, Receive receive, Carrier carrier, LinkOptions options)
    : name_(std::move(name)),
      spec_(std::move(spec)),
      receive_(std::move(receive)),
      carrier_(std::move(carrier)),
      options_(options),
      decoder_(options.max_frame) {
  wake_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_fd_) throw_errno(errno, "eventfd");
  open_sockets();
  thread_ = std::thread([this] { run(); });
}

NetdevLink::~NetdevLink() { stop(); }

void NetdevLink::open_sockets() {
  sockaddr_storage address;
  switch (spec_.kind) {
    case LinkSpec::Kind::kStreamListen:
      open_listener();
      log().info("{}: listening on {} (stream)", name_, spec_.local.text());
      return;
    case LinkSpec::Kind::kStreamConnect:
      to_sockaddr(spec_.remote, SOCK_STREAM, address);  // resolvable now, or the link is refused
      log().info("{}: connecting to {} (stream)", name_, spec_.remote.text());
      return;
    case LinkSpec::Kind::kDatagram: {
      const socklen_t length = to_sockaddr(spec_.local, SOCK_DGRAM, address);
      clear_stale_socket(spec_.local);
      peer_fd_ = open_socket(address, SOCK_DGRAM);
      if (::bind(peer_fd_.get(), reinterpret_cast<sockaddr*>(&address), length) != 0)
        throw_errno(errno, "bind " + spec_.local.text());
      remote_length_ = to_sockaddr(spec_.remote, SOCK_DGRAM, remote_);
      // UDP: connected, so only the remote's datagrams come in. A UNIX remote may not be bound yet
      // (its VM starts later): each datagram is addressed to it instead.
      if (spec_.remote.family == SocketAddress::Family::kInet &&
          ::connect(peer_fd_.get(), reinterpret_cast<sockaddr*>(&remote_), remote_length_) != 0)
        throw_errno(errno, "connect " + spec_.remote.text());
      log().info("{}: datagrams from {} to {}", name_, spec_.local.text(), spec_.remote.text());
      set_carrier(true);
      return;
    }
  }
}

void NetdevLink::open_listener() {
  sockaddr_storage address;
  const socklen_t length = to_sockaddr(spec_.local, SOCK_STREAM, address);
  clear_stale_socket(spec_.local);
  UniqueFd fd = open_socket(address, SOCK_STREAM);
  const int one = 1;
  if (address.ss_family != AF_UNIX) ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), length) != 0) throw_errno(errno, "bind " + spec_.local.text());
  if (address.ss_family == AF_UNIX) ::chmod(spec_.local.path.c_str(), 0600);  // the owner's VMs only
  if (::listen(fd.get(), 4) != 0) throw_errno(errno, "listen " + spec_.local.text());
  listen_fd_ = std::move(fd);
}

void NetdevLink::set_enabled(bool enabled) {
  enabled_ = enabled;
  wake();
}

void NetdevLink::follow_enabled() {
  if (spec_.kind == LinkSpec::Kind::kDatagram) return;
  if (!enabled_) {
    was_enabled_ = false;
    if (listen_fd_) {  // first, so a peer that sees its carrier go cannot queue on the old socket
      listen_fd_.reset();
      log().info("{}: not listening while administratively down", name_);
    }
    if (peer_fd_) drop_peer("dropped: the port is administratively down");
    return;
  }
  if (!was_enabled_) next_connect_ms_ = 0;  // up again: connect or listen at once
  was_enabled_ = true;
  if (spec_.kind == LinkSpec::Kind::kStreamConnect) return try_connect();
  if (listen_fd_ || now_ms() < next_connect_ms_) return;
  try {
    open_listener();
    log().info("{}: listening again on {}", name_, spec_.local.text());
  } catch (const std::exception& e) {  // e.g. the TCP port was taken meanwhile: try again later
    next_connect_ms_ = now_ms() + options_.reconnect_ms;
    log().error("{}: cannot listen again: {} (retrying every {} ms)", name_, e.what(), options_.reconnect_ms);
  }
}

void NetdevLink::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  wake();
  thread_.join();
  peer_fd_.reset();
  listen_fd_.reset();
  if (spec_.kind != LinkSpec::Kind::kStreamConnect && spec_.local.family == SocketAddress::Family::kUnix)
    ::unlink(spec_.local.path.c_str());
}

void NetdevLink::wake() {
  uint64_t one = 1;
  [[maybe_unused]] auto r = ::write(wake_fd_.get(), &one, sizeof(one));
}

void NetdevLink::set_carrier(bool up) {
  connected_ = up;
  if (up == carrier_up_) return;
  carrier_up_ = up;
  if (carrier_) carrier_(up);
}

void NetdevLink::set_pace(Pace pace) {
  {
    std::lock_guard lock(outbox_mutex_);
    pace_ = std::move(pace);
  }
  wake();
}

void NetdevLink::send(std::span<const uint8_t> frame) {
  if (!connected_) return void(++counters_.tx_dropped_no_peer);
  std::vector<uint8_t> bytes = spec_.kind == LinkSpec::Kind::kDatagram
                                   ? std::vector<uint8_t>(frame.begin(), frame.end())
                                   : transport::stream_encode(frame);
  {
    std::lock_guard lock(outbox_mutex_);
    if (outbox_bytes_ + bytes.size() > options_.max_outbox_bytes) return void(++counters_.tx_dropped_backlog);
    outbox_bytes_ += bytes.size();
    const uint64_t release = pace_ ? pace_(now_ns(), frame.size()) : 0;
    outbox_.push_back({std::move(bytes), release});
  }
  ++counters_.tx_frames;
  wake();
}

void NetdevLink::drop_peer(const char* why) {
  if (spec_.kind == LinkSpec::Kind::kDatagram) return;
  // Whatever way the peer goes, the next one starts on a frame boundary.
  if (decoder_.mid_frame()) ++counters_.rx_cut_frames;
  decoder_.reset();
  if (peer_fd_) {
    log().info("{}: peer {} ({})", name_, why,
               !enabled_ ? "none until the port is up" : spec_.kind == LinkSpec::Kind::kStreamListen ? "waiting for the next" : "reconnecting");
    ++counters_.disconnects;
  }
  peer_fd_.reset();
  {
    std::lock_guard lock(outbox_mutex_);
    outbox_.clear();  // frames for the peer that went are lost, as on a cable pulled
    outbox_bytes_ = 0;
    head_written_ = 0;
  }
  next_connect_ms_ = now_ms() + options_.reconnect_ms;
  set_carrier(false);
}

void NetdevLink::try_connect() {
  if (peer_fd_ || now_ms() < next_connect_ms_) return;
  next_connect_ms_ = now_ms() + options_.reconnect_ms;
  sockaddr_storage address;
  socklen_t length = 0;
  try {
    length = to_sockaddr(spec_.remote, SOCK_STREAM, address);
  } catch (const std::exception&) {
    return;  // the name may resolve later
  }
  UniqueFd fd = open_socket(address, SOCK_STREAM);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), length) != 0 && errno != EINPROGRESS) return;
  // Non-blocking: the connection completes (or fails) while we wait below; a short wait is fine here.
  pollfd p{fd.get(), POLLOUT, 0};
  if (::poll(&p, 1, 200) != 1) return;
  int error = 0;
  socklen_t size = sizeof(error);
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &size) != 0 || error != 0) return;
  peer_fd_ = std::move(fd);
  ++counters_.connects;
  log().info("{}: connected to {}", name_, spec_.remote.text());
  set_carrier(true);
}

void NetdevLink::accept_peer() {
  UniqueFd fd(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (!fd) return;
  if (peer_fd_) {  // one peer per link, as a cable has two ends
    ++counters_.second_peers_refused;
    if (framing_log().allow()) log().warn("{}: a second peer refused (one is connected)", name_);
    return;
  }
  peer_fd_ = std::move(fd);
  ++counters_.connects;
  log().info("{}: peer connected", name_);
  set_carrier(true);
}

void NetdevLink::run() {
  std::vector<uint8_t> buffer(transport::kMaxStreamLength + transport::kStreamLengthBytes);
  while (!stopping_) {
    follow_enabled();
    pollfd fds[3];
    nfds_t n = 0;
    fds[n++] = {wake_fd_.get(), POLLIN, 0};
    const int listen_at = listen_fd_ ? int(n) : -1;
    if (listen_fd_) fds[n++] = {listen_fd_.get(), POLLIN, 0};
    const int peer_at = peer_fd_ ? int(n) : -1;
    if (peer_fd_) {
      bool pending;
      {
        std::lock_guard lock(outbox_mutex_);
        pending = !outbox_.empty() && outbox_.front().release_ns <= now_ns();
      }
      fds[n++] = {peer_fd_.get(), short(POLLIN | (pending ? POLLOUT : 0)), 0};
    }
    const int64_t timeout = poll_timeout_ns();
    const timespec wait{time_t(timeout / 1000000000), long(timeout % 1000000000)};
    if (::ppoll(fds, n, timeout < 0 ? nullptr : &wait, nullptr) < 0) {
      if (errno == EINTR) continue;
      log().error("{}: poll: {}", name_, std::strerror(errno));
      return;
    }
    if (fds[0].revents & POLLIN) {
      uint64_t count = 0;
      [[maybe_unused]] auto r = ::read(wake_fd_.get(), &count, sizeof(count));
    }
    if (listen_at >= 0 && (fds[listen_at].revents & POLLIN)) accept_peer();
    if (peer_at < 0 || !peer_fd_) continue;
    if (fds[peer_at].revents & (POLLIN | POLLHUP | POLLERR)) {
      if (spec_.kind == LinkSpec::Kind::kDatagram)
        read_datagrams(buffer);
      else
        read_stream(buffer);
    }
    if (peer_fd_) drain_outbox();
  }
}

void NetdevLink::read_datagrams(std::vector<uint8_t>& buffer) {
  for (int i = 0; i < 64; ++i) {  // a burst, then back to the outbox
    const ssize_t got = ::recv(peer_fd_.get(), buffer.data(), buffer.size(), 0);
    if (got < 0) break;  // EAGAIN, or ECONNREFUSED: the remote is not up yet
    if (got == 0 || size_t(got) > options_.max_frame) {
      if (got != 0) ++counters_.rx_oversized;
      continue;
    }
    ++counters_.rx_frames;
    receive_(std::vector<uint8_t>(buffer.begin(), buffer.begin() + got));
  }
}

void NetdevLink::read_stream(std::vector<uint8_t>& buffer) {
  const ssize_t got = ::recv(peer_fd_.get(), buffer.data(), buffer.size(), 0);
  if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
    return drop_peer(got == 0 ? "disconnected" : "failed");
  if (got < 0) return;
  const uint64_t oversized_before = decoder_.oversized();
  const bool ok = decoder_.feed(std::span(buffer.data(), size_t(got)), [&](std::span<const uint8_t> frame) {
    ++counters_.rx_frames;
    receive_(std::vector<uint8_t>(frame.begin(), frame.end()));
  });
  if (const uint64_t skipped = decoder_.oversized() - oversized_before; skipped != 0) {
    counters_.rx_oversized += skipped;
    if (framing_log().allow()) log().warn("{}: a frame above {} bytes skipped", name_, options_.max_frame);
  }
  if (!ok) {
    ++counters_.rx_bad_framing;
    if (framing_log().allow())
      log().warn("{}: garbage framing (length {}): dropping the peer", name_, decoder_.bad_length());
    decoder_.reset();  // not a cut frame: the stream was broken
    drop_peer("sent garbage framing");
  }
}

int64_t NetdevLink::poll_timeout_ns() const {
  // Retrying: a connecting link without a peer, a listening one whose socket could not be reopened.
  const bool retrying = enabled_ && ((spec_.kind == LinkSpec::Kind::kStreamConnect && !peer_fd_) ||
                                     (spec_.kind == LinkSpec::Kind::kStreamListen && !listen_fd_));
  int64_t timeout = retrying ? int64_t(options_.reconnect_ms) * 1000000 : -1;
  std::lock_guard lock(outbox_mutex_);
  if (peer_fd_ && !outbox_.empty() && outbox_.front().release_ns != 0) {
    const uint64_t now = now_ns(), due = outbox_.front().release_ns;
    const int64_t wait = due <= now ? 0 : int64_t(due - now);
    timeout = timeout < 0 ? wait : std::min(timeout, wait);
  }
  return timeout;
}

// The outbox, as far as the socket takes it and as far as its frames are due.
void NetdevLink::drain_outbox() {
  std::unique_lock lock(outbox_mutex_);
  const uint64_t now = now_ns();
  while (!outbox_.empty()) {
    if (outbox_.front().release_ns > now) return;
    std::vector<uint8_t>& head = outbox_.front().bytes;
    const bool addressed = spec_.kind == LinkSpec::Kind::kDatagram && spec_.remote.family == SocketAddress::Family::kUnix;
    const ssize_t put = ::sendto(peer_fd_.get(), head.data() + head_written_, head.size() - head_written_, MSG_NOSIGNAL,
                                 addressed ? reinterpret_cast<const sockaddr*>(&remote_) : nullptr,
                                 addressed ? remote_length_ : 0);
    if (put < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      if (spec_.kind == LinkSpec::Kind::kDatagram) {  // the remote is not there (yet): this frame is lost
        ++counters_.tx_dropped_no_peer;
        outbox_bytes_ -= head.size();
        outbox_.pop_front();
        continue;
      }
      lock.unlock();
      return drop_peer("failed on send");
    }
    head_written_ += size_t(put);
    if (head_written_ < head.size()) return;
    outbox_bytes_ -= head.size();
    head_written_ = 0;
    outbox_.pop_front();
  }
}

}  // namespace hcaemu::bridge
