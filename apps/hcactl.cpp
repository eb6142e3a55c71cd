// hcactl: changes a running hcaemu through its control socket (links up/down, faults, VFs) and
// reads its counters, as `ip link` and sysfs do for a real host's NIC.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "qemu-bridge/control_help.h"

namespace {

constexpr const char* kUsage = R"(Usage: hcactl [--socket PATH | --socket-dir DIR] COMMAND [ARGS...]

Talks to a running hcaemu over its control socket: DIR/control.sock of hcaemu's --socket-dir (or
its --control-socket PATH; the HCACTL_SOCKET environment variable sets the default). Prints the
answer; exits 0 when the command was done, 1 when hcaemu refused it, 2 when hcaemu could not be
reached.

)";

int usage_error(const std::string& what) {
  std::cerr << "hcactl: " << what << "\n(see hcactl --help)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket_path = std::getenv("HCACTL_SOCKET") != nullptr ? std::getenv("HCACTL_SOCKET") : "";
  std::vector<std::string> words;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (words.empty() && (arg == "--help" || arg == "-h")) {
      std::cout << kUsage << hcaemu::bridge::kControlHelp << "\n";
      return 0;
    }
    if (words.empty() && (arg == "--socket" || arg == "--socket-dir")) {
      if (i + 1 >= argc) return usage_error(arg + " needs a value");
      socket_path = std::string(argv[++i]) + (arg == "--socket-dir" ? "/control.sock" : "");
      continue;
    }
    if (words.empty() && arg.starts_with("--")) return usage_error("unknown option " + arg);
    words.push_back(arg);
  }
  if (words.empty()) return usage_error("no command (try: hcactl help)");
  if (socket_path.empty()) return usage_error("which hcaemu? give --socket PATH or --socket-dir DIR");

  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(address.sun_path)) return usage_error("socket path too long: " + socket_path);
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    std::cerr << "hcactl: cannot reach hcaemu at " << socket_path << ": " << std::strerror(errno) << "\n";
    return 2;
  }
  std::string request;
  for (const auto& w : words) request += (request.empty() ? "" : " ") + w;
  request += "\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != ssize_t(request.size())) {
    std::cerr << "hcactl: sending to " << socket_path << ": " << std::strerror(errno) << "\n";
    return 2;
  }
  // The answer, until hcaemu closes the connection (it answers within ~5 s; wait at most 10).
  std::string answer;
  char buffer[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10000) <= 0) {
      std::cerr << "hcactl: no answer from " << socket_path << " within 10 s\n";
      return 2;
    }
    const ssize_t got = ::recv(fd, buffer, sizeof(buffer), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    answer.append(buffer, size_t(got));
  }
  ::close(fd);
  const size_t newline = answer.find('\n');
  const std::string status = answer.substr(0, newline);
  const std::string text = newline == std::string::npos ? "" : answer.substr(newline + 1);
  if (status == "ok") {
    std::cout << text;
    return 0;
  }
  if (status == "error") {
    std::cerr << "hcactl: " << text;
    return 1;
  }
  std::cerr << "hcactl: unexpected answer from " << socket_path << "\n";
  return 2;
}
