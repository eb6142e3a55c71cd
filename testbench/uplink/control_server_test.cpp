// hcaemu's control socket (qemu-bridge/control_server.h): one request per connection answered with
// ok/error and the text, words split as hcactl joins them, and clients that misbehave (too long, no
// newline, silent) answered with an error while the next client is still served.
#include "qemu-bridge/control_server.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace hcaemu::bridge {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("hcaemu-control-" + std::to_string(::getpid()) + "-" +
                                               std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

// Sends `request` and reads the answer until the server closes (bounded).
std::string ask(const std::string& socket, const std::string& request, bool close_write = false) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, socket.c_str(), sizeof(a.sun_path) - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return "connect failed";
  }
  [[maybe_unused]] auto put = ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  if (close_write) ::shutdown(fd, SHUT_WR);
  std::string answer;
  char buffer[1024];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10000) <= 0) break;
    const ssize_t got = ::recv(fd, buffer, sizeof(buffer), 0);
    if (got <= 0) break;
    answer.append(buffer, size_t(got));
  }
  ::close(fd);
  return answer;
}

TEST(ControlServer, SplitWordsTakesRunsOfBlanksAsOneSeparator) {
  EXPECT_EQ(split_words("  link  set\tuplink0 loss 1%\r\n"),
            (std::vector<std::string>{"link", "set", "uplink0", "loss", "1%"}));
  EXPECT_TRUE(split_words(" \t ").empty());
}

TEST(ControlServer, AnswersEachRequestWithOkOrErrorAndItsText) {
  TempDir dir;
  const std::string path = (dir.path / "control.sock").string();
  std::vector<std::vector<std::string>> seen;
  ControlServer server(path, 0600, [&](const std::vector<std::string>& words) {
    seen.push_back(words);
    if (words[0] == "fail") return ControlReply{false, "no such thing"};
    if (words[0] == "throw") throw std::runtime_error("handler threw");
    return ControlReply{true, "did " + words[0]};
  });
  EXPECT_EQ(ask(path, "stats\n"), "ok\ndid stats\n");
  EXPECT_EQ(ask(path, "fail now\n"), "error\nno such thing\n");
  EXPECT_EQ(ask(path, "throw\n"), "error\nhandler threw\n") << "a handler's exception is an error, not a crash";
  EXPECT_EQ(ask(path, "   \n"), "error\nempty request (try: help)\n");
  EXPECT_EQ(ask(path, "link show", true), "ok\ndid link\n") << "a request without its newline, then EOF";
  EXPECT_EQ(ask(path, std::string(5000, 'x')).rfind("error\nrequest longer", 0), 0u);
  EXPECT_EQ(ask(path, "stats\n"), "ok\ndid stats\n") << "still serving";
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[1], (std::vector<std::string>{"fail", "now"}));
  EXPECT_EQ(server.requests(), 6u) << "the over-long one was refused before it was read";
}

TEST(ControlServer, ASilentClientGetsAnErrorAfterTwoSecondsAndTheNextIsServed) {
  TempDir dir;
  const std::string path = (dir.path / "control.sock").string();
  ControlServer server(path, 0600, [](const std::vector<std::string>& words) { return ControlReply{true, words[0]}; });
  EXPECT_EQ(ask(path, ""), "error\nno request line within 2 s\n");
  EXPECT_EQ(ask(path, "hello\n"), "ok\nhello\n");
}

TEST(ControlServer, RefusesAPathHeldByAnotherKindOfFile) {
  TempDir dir;
  const fs::path path = dir.path / "not-a-socket";
  { std::ofstream(path) << "data"; }
  EXPECT_THROW(ControlServer(path.string(), 0600, [](const auto&) { return ControlReply{}; }), std::system_error);
  EXPECT_TRUE(fs::exists(path)) << "left alone";
}

}  // namespace
}  // namespace hcaemu::bridge
