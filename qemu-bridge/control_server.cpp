#include "qemu-bridge/control_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>

#include "common/log.h"
#include "common/log_limit.h"

namespace hcaemu::bridge {

using vfio_user::UniqueFd;

namespace {

constexpr size_t kMaxRequest = 4096;
constexpr int kRequestTimeoutMs = 2000;

[[noreturn]] void throw_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

LogLimiter& control_log() {
  static LogLimiter limiter;  // the server's one thread uses it
  return limiter;
}

// Writes all of `text` or gives up after the request's time: a client that stops reading only
// loses its answer.
void write_all(int fd, const std::string& text) {
  size_t done = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kRequestTimeoutMs);
  while (done < text.size()) {
    const ssize_t put = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (put > 0) {
      done += size_t(put);
      continue;
    }
    if (put < 0 && errno != EAGAIN && errno != EINTR) return;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd p{fd, POLLOUT, 0};
    ::poll(&p, 1, int(left.count()));
  }
}

}  // namespace

std::vector<std::string> split_words(std::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n')) ++i;
    const size_t start = i;
    while (i < line.size() && !(line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n')) ++i;
    if (i > start) words.emplace_back(line.substr(start, i - start));
  }
  return words;
}

ControlServer::ControlServer(std::string path, unsigned mode, Handler handler)
    : path_(std::move(path)), handler_(std::move(handler)) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path_.size() >= sizeof(address.sun_path)) throw_errno(ENAMETOOLONG, "control socket " + path_);
  std::memcpy(address.sun_path, path_.c_str(), path_.size() + 1);
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw_errno(EEXIST, "control socket " + path_ + " (a file that is not a socket)");
    ::unlink(path_.c_str());
  }
  listen_fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listen_fd_) throw_errno(errno, "socket");
  if (::bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0)
    throw_errno(errno, "bind " + path_);
  ::chmod(path_.c_str(), mode);
  if (::listen(listen_fd_.get(), 8) != 0) throw_errno(errno, "listen " + path_);
  wake_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_fd_) throw_errno(errno, "eventfd");
  thread_ = std::thread([this] { run(); });
}

ControlServer::~ControlServer() { stop(); }

void ControlServer::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  uint64_t one = 1;
  [[maybe_unused]] auto r = ::write(wake_fd_.get(), &one, sizeof(one));
  thread_.join();
  listen_fd_.reset();
  ::unlink(path_.c_str());
}

void ControlServer::run() {
  while (!stopping_) {
    pollfd fds[2] = {{wake_fd_.get(), POLLIN, 0}, {listen_fd_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      log().error("control: poll: {}", std::strerror(errno));
      return;
    }
    if (!(fds[1].revents & POLLIN)) continue;
    UniqueFd client(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!client) continue;
    ucred peer{};
    socklen_t length = sizeof(peer);
    if (::getsockopt(client.get(), SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0 ||
        (peer.uid != ::geteuid() && peer.uid != 0)) {
      ++refused_;
      if (control_log().allow()) log().warn("control: refused a client of uid {} (not ours)", peer.uid);
      continue;
    }
    serve(std::move(client));
  }
}

// One request: read up to the newline (bounded in size and time), answer, close.
void ControlServer::serve(UniqueFd client) {
  std::string request;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kRequestTimeoutMs);
  char buffer[512];
  while (request.find('\n') == std::string::npos) {
    if (request.size() > kMaxRequest) return write_all(client.get(), "error\nrequest longer than 4096 bytes\n");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return write_all(client.get(), "error\nno request line within 2 s\n");
    pollfd p{client.get(), POLLIN, 0};
    if (::poll(&p, 1, int(left.count())) <= 0) continue;
    const ssize_t got = ::recv(client.get(), buffer, sizeof(buffer), 0);
    if (got == 0) break;  // a request without its newline: take what came
    if (got < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return;
    }
    request.append(buffer, size_t(got));
  }
  ++requests_;
  const std::vector<std::string> words = split_words(request.substr(0, request.find('\n')));
  ControlReply reply;
  try {
    reply = words.empty() ? ControlReply{false, "empty request (try: help)"} : handler_(words);
  } catch (const std::exception& e) {
    reply = {false, e.what()};
  }
  std::string text = std::string(reply.ok ? "ok" : "error") + "\n" + reply.text;
  if (!reply.text.empty() && reply.text.back() != '\n') text += "\n";
  write_all(client.get(), text);
}

}  // namespace hcaemu::bridge
