// hcafabric as a process (apps/hcafabric.cpp): three stream ports on UNIX sockets and a peer on
// each speaking QEMU's 4-byte length framing. A broadcast is flooded, unicast goes only to the
// learned port, a peer sending garbage framing is dropped while the others go on, SIGTERM is a
// clean exit, bad specs exit 2. Every wait is bounded. The suite is named after the binary so that
// `ctest -R hcafabric` finds it.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "transport/stream_framing.h"

namespace hcaemu {
namespace {

namespace fs = std::filesystem;
using Frame = std::vector<uint8_t>;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kWait{10000};  // for anything that should take milliseconds
constexpr milliseconds kStep{10};

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A temporary directory, removed with everything in it.
struct TempDir {
  TempDir() {
    char pattern[] = "/tmp/hcafabric-test.XXXXXX";
    if (::mkdtemp(pattern) != nullptr) path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
  fs::path path;
};

// Starts `args` (args[0] the program) with stdout and stderr into `log`.
pid_t spawn(const std::vector<std::string>& args, const fs::path& log) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string log_path = log.string();
  const pid_t pid = ::fork();
  if (pid == 0) {  // only async-signal-safe calls from here on
    const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) ::_exit(126);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// The process's wait status once it exits within `wait`; nullopt if it is still running.
std::optional<int> wait_exit(pid_t pid, milliseconds wait = kWait) {
  for (const auto until = Clock::now() + wait;; std::this_thread::sleep_for(kStep)) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    if (Clock::now() >= until) return std::nullopt;
  }
}

// One end of a port's cable, in the framing QEMU's -netdev stream uses.
class Peer {
 public:
  explicit Peer(const fs::path& path) : decoder_(transport::kMaxStreamLength) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~Peer() { ::close(fd_); }
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  bool connected() const { return connected_; }
  bool send(const Frame& frame) { return send_bytes(transport::stream_encode(frame)); }
  bool send_bytes(const std::vector<uint8_t>& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size());
  }

  // The next frame the switch sent this port, waiting up to `wait` for it.
  std::optional<Frame> receive(milliseconds wait = kWait) {
    const auto until = Clock::now() + wait;
    while (frames_.empty() && !closed_) {
      const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now()).count();
      if (left <= 0 || !read_some(int(left))) break;
    }
    if (frames_.empty()) return std::nullopt;
    Frame frame = std::move(frames_.front());
    frames_.pop_front();
    return frame;
  }

  // Whether the switch closes this connection within `wait`.
  bool closed_within(milliseconds wait = kWait) {
    const auto until = Clock::now() + wait;
    while (!closed_) {
      const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now()).count();
      if (left <= 0 || !read_some(int(left))) break;
    }
    return closed_;
  }

 private:
  bool read_some(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) != 1) return false;
    uint8_t buffer[4096];
    const ssize_t got = ::recv(fd_, buffer, sizeof(buffer), 0);
    if (got <= 0) {
      closed_ = true;
      return false;
    }
    decoder_.feed(std::span(buffer, size_t(got)),
                  [&](std::span<const uint8_t> frame) { frames_.emplace_back(frame.begin(), frame.end()); });
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
  transport::StreamDecoder decoder_;
  std::deque<Frame> frames_;
};

using Mac = std::array<uint8_t, 6>;
const Mac kBroadcast = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
const Mac kA = {0x02, 0, 0, 0, 0, 0x0a}, kB = {0x02, 0, 0, 0, 0, 0x0b}, kC = {0x02, 0, 0, 0, 0, 0x0c};

// A 60-byte frame whose payload starts with `tag`, so each frame sent is told apart.
Frame frame(const Mac& destination, const Mac& source, uint8_t tag) {
  Frame f(60, 0);
  std::copy(destination.begin(), destination.end(), f.begin());
  std::copy(source.begin(), source.end(), f.begin() + 6);
  f[12] = 0x88;  // a local experimental EtherType (802 0x88b5)
  f[13] = 0xb5;
  f[14] = tag;
  return f;
}

// hcafabric with three listening ports in a temporary directory, a peer connected to each.
// (Lowercase: the suite carries the binary's name.)
class hcafabric : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path.empty());
    std::vector<std::string> args = {HCAFABRIC_PATH};
    for (int i = 0; i < 3; ++i) {
      args.push_back("--port");
      args.push_back("stream,listen=unix:" + socket(i).string());
    }
    pid_ = spawn(args, log_path());
    ASSERT_GT(pid_, 0);
    ASSERT_TRUE(wait_for_log("hcafabric ready: 3 ports")) << log();
    for (int i = 0; i < 3; ++i) connect(i);
  }

  void TearDown() override {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  fs::path socket(int port) const { return dir_.path / ("p" + std::to_string(port) + ".sock"); }
  fs::path log_path() const { return dir_.path / "hcafabric.log"; }
  std::string log() const { return "hcafabric's log:\n" + read_text(log_path()); }

  // Until the log holds `text` `count` times.
  bool wait_for_log(const std::string& text, size_t count = 1) {
    for (const auto until = Clock::now() + kWait; Clock::now() < until; std::this_thread::sleep_for(kStep))
      if (occurrences(read_text(log_path()), text) >= count) return true;
    return false;
  }

  // A new peer on `port`, once the switch has the port's link up (before, it floods nothing there).
  void connect(int port) {
    const std::string up = "port" + std::to_string(port) + ": link up";
    const size_t ups = occurrences(read_text(log_path()), up);
    peers_[port] = std::make_unique<Peer>(socket(port));
    ASSERT_TRUE(peers_[port]->connected()) << log();
    ASSERT_TRUE(wait_for_log(up, ups + 1)) << log();
  }

  Peer& peer(int port) { return *peers_[port]; }

  // SIGTERM; the exit code, or -1 if it did not exit cleanly in time.
  int terminate() {
    ::kill(pid_, SIGTERM);
    const std::optional<int> status = wait_exit(pid_);
    if (!status) return -1;
    exited_ = true;
    return WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
  }

  TempDir dir_;
  pid_t pid_ = -1;
  bool exited_ = false;
  std::unique_ptr<Peer> peers_[3];
};

TEST_F(hcafabric, ABroadcastIsFloodedAndUnicastGoesOnlyToTheLearnedPort) {
  const Frame hello = frame(kBroadcast, kA, 1);
  ASSERT_TRUE(peer(0).send(hello));
  EXPECT_EQ(peer(1).receive(), hello) << log();
  EXPECT_EQ(peer(2).receive(), hello) << log();

  // A is learned on port 0, then B on 1 and C on 2 as they answer. Each port's frames are checked
  // in order, so a frame sent to a wrong port would show up ahead of the one expected there.
  const Frame b_to_a = frame(kA, kB, 2), c_to_b = frame(kB, kC, 3), a_to_c = frame(kC, kA, 4),
              b_to_a_again = frame(kA, kB, 5), c_to_b_again = frame(kB, kC, 6);
  ASSERT_TRUE(peer(1).send(b_to_a));
  EXPECT_EQ(peer(0).receive(), b_to_a);
  ASSERT_TRUE(peer(2).send(c_to_b));
  EXPECT_EQ(peer(1).receive(), c_to_b);
  ASSERT_TRUE(peer(0).send(a_to_c));
  EXPECT_EQ(peer(2).receive(), a_to_c) << "B->A was not flooded to port 2";
  ASSERT_TRUE(peer(1).send(b_to_a_again));
  EXPECT_EQ(peer(0).receive(), b_to_a_again) << "C->B was not flooded to port 0";
  ASSERT_TRUE(peer(2).send(c_to_b_again));
  EXPECT_EQ(peer(1).receive(), c_to_b_again) << "A->C was not flooded to port 1";

  EXPECT_EQ(terminate(), 0) << log();
  EXPECT_NE(read_text(log_path()).find("learned 3, moved 0"), std::string::npos) << log();
}

TEST_F(hcafabric, APeerSendingGarbageFramingIsDroppedAndTheOthersGoOn) {
  const Frame from_c = frame(kBroadcast, kC, 1);
  ASSERT_TRUE(peer(2).send(from_c));
  EXPECT_EQ(peer(0).receive(), from_c);
  EXPECT_EQ(peer(1).receive(), from_c);

  ASSERT_TRUE(peer(2).send_bytes({0, 0, 0, 0}));  // a frame of length 0: no sane peer sends it
  EXPECT_TRUE(peer(2).closed_within()) << log();
  ASSERT_TRUE(wait_for_log("port2: link down (1 MACs forgotten)")) << log();

  // C went with port 2: a frame for it is flooded again, to port 1 only.
  const Frame a_to_c = frame(kC, kA, 2), b_to_a = frame(kA, kB, 3);
  ASSERT_TRUE(peer(0).send(a_to_c));
  EXPECT_EQ(peer(1).receive(), a_to_c);
  ASSERT_TRUE(peer(1).send(b_to_a));
  EXPECT_EQ(peer(0).receive(), b_to_a) << "port 0 got nothing else";

  connect(2);  // the port takes a new peer
  const Frame hello = frame(kBroadcast, kA, 4);
  ASSERT_TRUE(peer(0).send(hello));
  EXPECT_EQ(peer(1).receive(), hello);
  EXPECT_EQ(peer(2).receive(), hello);

  EXPECT_EQ(terminate(), 0) << log();
  EXPECT_NE(read_text(log_path()).find("garbage framing 1,"), std::string::npos) << log();
}

// Runs hcafabric with `args` to its end; its exit code (-1: it did not end in time) and output.
std::pair<int, std::string> run(const std::vector<std::string>& args) {
  const TempDir dir;
  std::vector<std::string> argv = {HCAFABRIC_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  const pid_t pid = spawn(argv, dir.path / "out");
  const std::optional<int> status = wait_exit(pid);
  if (!status) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  return {status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1, read_text(dir.path / "out")};
}

// The command line alone (a suite of its own: the fixture above starts a switch).
TEST(hcafabricCommandLine, BadPortsAreRefusedWithExitCode2AndAReason) {
  const TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  const fs::path first = dir.path / "p0.sock";
  const std::string sock = "stream,listen=unix:" + first.string();
  auto [code, out] = run({"--port", sock});
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("at least two --port"), std::string::npos) << out;
  std::tie(code, out) = run({"--port", "stream,listen=nowhere", "--port", sock});
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("--port stream,listen=nowhere: "), std::string::npos) << out;
  std::tie(code, out) = run({"--port", sock, "--port", "stream,listen=unix:/nonexistent-dir/p.sock"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("No such file or directory"), std::string::npos) << out;
  std::tie(code, out) = run({"--port", sock, "--port", sock});
  EXPECT_EQ(code, 2) << out;
  std::tie(code, out) = run({"--port", sock, "--port", "stream,connect=unix:/x", "--port-faults", "2:loss=1%"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("a port from 0 to 1"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(first)) << "a port opened before the error is closed";
}

TEST(hcafabricCommandLine, HelpAndVersionExitZero) {
  const auto [help_code, help] = run({"--help"});
  EXPECT_EQ(help_code, 0);
  EXPECT_NE(help.find("--port-faults"), std::string::npos) << help;
  const auto [version_code, version] = run({"--version"});
  EXPECT_EQ(version_code, 0);
  EXPECT_EQ(version.rfind("hcafabric ", 0), 0u) << version;
}

}  // namespace
}  // namespace hcaemu
