#pragma once
// hcaemu's control socket (hcactl speaks to it): a UNIX stream socket where the host admin changes a
// running emulator, the way `ip link` and sysfs change a real host's NIC. One request per
// connection: a line of words (at most 4 KiB, within 2 s), answered by "ok" or "error" on the first
// line, then the text, and the connection is closed. Only clients of hcaemu's own uid (or root) are
// served. Its thread runs the handler; hcaemu's handler hands the words to the SystemC kernel.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "qemu-bridge/unique_fd.h"

namespace hcaemu::bridge {

struct ControlReply {
  bool ok = true;
  std::string text;  // without a trailing newline
};

// "link set uplink0 loss 1%" -> {"link", "set", "uplink0", "loss", "1%"}; runs of blanks split.
std::vector<std::string> split_words(std::string_view line);

class ControlServer {
 public:
  using Handler = std::function<ControlReply(const std::vector<std::string>& words)>;

  // Creates the socket (replacing a stale socket file, refusing any other file) with `mode`, and
  // starts the thread. Throws std::system_error on failure.
  ControlServer(std::string path, unsigned mode, Handler handler);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  void stop();  // joins the thread, removes the socket file; idempotent
  const std::string& path() const { return path_; }
  uint64_t requests() const { return requests_.load(); }
  uint64_t refused() const { return refused_.load(); }

 private:
  void run();
  void serve(vfio_user::UniqueFd client);

  std::string path_;
  Handler handler_;
  vfio_user::UniqueFd listen_fd_, wake_fd_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> requests_{0}, refused_{0};
  std::thread thread_;
};

}  // namespace hcaemu::bridge
