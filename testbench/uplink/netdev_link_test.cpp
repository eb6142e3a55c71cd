// The uplink's socket end (qemu-bridge/netdev_link.h): --uplink specs, two links exchanging frames
// over QEMU's stream framing and over datagrams, and a peer that sends garbage, oversized frames or
// goes away mid-frame: counted, disconnected, and the link takes the next peer.
#include "qemu-bridge/netdev_link.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <thread>

#include "transport/stream_framing.h"

namespace hcaemu::bridge {
namespace {

namespace fs = std::filesystem;

// Frames a link received, waited for with a generous bound (the links run on their own threads).
struct Inbox {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::vector<uint8_t>> frames;
  bool carrier = false;
  NetdevLink::Receive receive() {
    return [this](std::vector<uint8_t> f) {
      std::lock_guard lock(mutex);
      frames.push_back(std::move(f));
      changed.notify_all();
    };
  }
  NetdevLink::Carrier carrier_fn() {
    return [this](bool up) {
      std::lock_guard lock(mutex);
      carrier = up;
      changed.notify_all();
    };
  }
  bool wait(const std::function<bool()>& done) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(10), done);
  }
};

std::vector<uint8_t> frame_of(size_t size, uint8_t seed) {
  std::vector<uint8_t> f(size);
  std::iota(f.begin(), f.end(), seed);
  return f;
}

LinkSpec spec(const std::string& text) {
  std::string error;
  auto s = parse_link_spec(text, error);
  EXPECT_TRUE(s) << text << ": " << error;
  return s.value_or(LinkSpec{});
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("hcaemu-link-" + std::to_string(::getpid()) + "-" +
                                               std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string at(const char* name) const { return (path / name).string(); }
};

int raw_connect(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
  for (int i = 0; i < 100 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return fd;
}

TEST(LinkSpec, ParsesTheFourEndpointsAndSaysWhatIsWrong) {
  EXPECT_EQ(spec("stream,listen=unix:/tmp/u.sock").kind, LinkSpec::Kind::kStreamListen);
  const LinkSpec tcp = spec("stream,connect=tcp:127.0.0.1:7000");
  EXPECT_EQ(tcp.kind, LinkSpec::Kind::kStreamConnect);
  EXPECT_EQ(tcp.remote.host, "127.0.0.1");
  EXPECT_EQ(tcp.remote.port, 7000);
  const LinkSpec udp = spec("dgram,local=udp:127.0.0.1:5000,remote=udp:localhost:5001");
  EXPECT_EQ(udp.kind, LinkSpec::Kind::kDatagram);
  EXPECT_EQ(udp.remote.host, "localhost");
  std::string error;
  for (const char* bad : {"", "stream", "stream,listen=unix:/a,connect=unix:/b", "token,listen=unix:/a",
                          "stream,listen=tcp:host", "stream,listen=tcp:host:0", "stream,listen=tcp:host:70000",
                          "stream,listen=udp:h:1", "dgram,local=udp:h:1", "dgram,local=unix:/a,remote=udp:h:2",
                          "stream,bogus=1", "stream,listen"}) {
    error.clear();
    EXPECT_FALSE(parse_link_spec(bad, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

TEST(NetdevLink, TwoStreamEndsExchangeFramesBothWays) {
  TempDir dir;
  Inbox a, b;
  NetdevLink server("a", spec("stream,listen=unix:" + dir.at("l.sock")), a.receive(), a.carrier_fn());
  NetdevLink client("b", spec("stream,connect=unix:" + dir.at("l.sock")), b.receive(), b.carrier_fn());
  ASSERT_TRUE(a.wait([&] { return a.carrier; }));
  ASSERT_TRUE(b.wait([&] { return b.carrier; }));
  for (int i = 0; i < 50; ++i) server.send(frame_of(60 + i * 20, uint8_t(i)));
  client.send(frame_of(1514, 7));
  ASSERT_TRUE(b.wait([&] { return b.frames.size() == 50; }));
  ASSERT_TRUE(a.wait([&] { return a.frames.size() == 1; }));
  for (int i = 0; i < 50; ++i) EXPECT_EQ(b.frames[i], frame_of(60 + i * 20, uint8_t(i)));
  EXPECT_EQ(a.frames[0], frame_of(1514, 7));
  client.stop();
  EXPECT_TRUE(a.wait([&] { return !a.carrier; })) << "the server's carrier follows its peer";
  server.send(frame_of(60, 0));
  EXPECT_GE(server.counters().tx_dropped_no_peer.load(), 1u);
}

// Issue 15: a port disabled (hcactl link down) drops its peer and takes none while down, so the far
// end loses its carrier as over a cable; enabled again, the two ends find each other.
TEST(NetdevLink, ADisabledStreamEndTakesTheFarEndsCarrierAway) {
  TempDir dir;
  Inbox a, b;
  LinkOptions quick;
  quick.reconnect_ms = 50;
  NetdevLink server("a", spec("stream,listen=unix:" + dir.at("l.sock")), a.receive(), a.carrier_fn(), quick);
  NetdevLink client("b", spec("stream,connect=unix:" + dir.at("l.sock")), b.receive(), b.carrier_fn(), quick);
  ASSERT_TRUE(b.wait([&] { return b.carrier; }));

  server.set_enabled(false);  // the listening end
  ASSERT_TRUE(a.wait([&] { return !a.carrier; }));
  ASSERT_TRUE(b.wait([&] { return !b.carrier; })) << "the far end's carrier goes";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the client retries meanwhile
  EXPECT_FALSE(client.peer_connected()) << "no connection is taken while down";
  {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, dir.at("l.sock").c_str(), sizeof(address.sun_path) - 1);
    EXPECT_NE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << "refused, not queued";
    ::close(fd);
  }
  server.set_enabled(true);
  ASSERT_TRUE(b.wait([&] { return b.carrier; })) << "the client reconnects once the port is up";
  ASSERT_TRUE(a.wait([&] { return a.carrier; }));

  client.set_enabled(false);  // the connecting end
  ASSERT_TRUE(a.wait([&] { return !a.carrier; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(server.peer_connected()) << "a disabled connecting end does not retry";
  client.set_enabled(true);
  ASSERT_TRUE(a.wait([&] { return a.carrier; }));
  ASSERT_TRUE(b.wait([&] { return b.carrier; }));  // a frame sent before its end is up is dropped
  client.send(frame_of(100, 3));
  ASSERT_TRUE(a.wait([&] { return a.frames.size() == 1; }));
  EXPECT_EQ(a.frames[0], frame_of(100, 3));
  EXPECT_GE(server.counters().connects.load(), 2u);
}

// A peer dropped in the middle of a frame (here by the port going down) leaves nothing behind: the
// next peer's first frame is read from its own first byte (found by the link flap test: the rest of
// the old frame was taken as the new peer's length, and a good peer was dropped for garbage).
TEST(NetdevLink, APeerDroppedMidFrameLeavesNoPartOfItForTheNext) {
  TempDir dir;
  Inbox a;
  NetdevLink server("a", spec("stream,listen=unix:" + dir.at("l.sock")), a.receive(), a.carrier_fn());
  const int first = raw_connect(dir.at("l.sock"));
  ASSERT_TRUE(a.wait([&] { return a.carrier; }));
  const std::vector<uint8_t> half = {0, 0, 0x04, 0x00, 1, 2, 3};  // 1024 bytes announced, 3 sent
  ASSERT_EQ(::write(first, half.data(), half.size()), ssize_t(half.size()));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.set_enabled(false);
  ASSERT_TRUE(a.wait([&] { return !a.carrier; }));
  ::close(first);
  server.set_enabled(true);
  const int second = raw_connect(dir.at("l.sock"));
  ASSERT_TRUE(a.wait([&] { return a.carrier; }));
  const std::vector<uint8_t> frame = frame_of(64, 9);
  std::vector<uint8_t> bytes = {0, 0, 0, 64};
  bytes.insert(bytes.end(), frame.begin(), frame.end());
  ASSERT_EQ(::write(second, bytes.data(), bytes.size()), ssize_t(bytes.size()));
  ASSERT_TRUE(a.wait([&] { return a.frames.size() == 1; }));
  EXPECT_EQ(a.frames[0], frame);
  EXPECT_EQ(server.counters().rx_cut_frames.load(), 1u);
  EXPECT_EQ(server.counters().rx_bad_framing.load(), 0u);
  ::close(second);
}

TEST(NetdevLink, GarbageFramingDropsThePeerAndTheNextOneIsServed) {
  TempDir dir;
  Inbox a;
  NetdevLink server("a", spec("stream,listen=unix:" + dir.at("l.sock")), a.receive(), a.carrier_fn());
  int fd = raw_connect(dir.at("l.sock"));
  const uint8_t garbage[8] = {0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4};
  ASSERT_EQ(::write(fd, garbage, sizeof(garbage)), 8);
  uint8_t byte = 0;
  EXPECT_EQ(::read(fd, &byte, 1), 0) << "hcaemu closed the connection";
  ::close(fd);
  EXPECT_EQ(server.counters().rx_bad_framing.load(), 1u);
  // Next peer: an oversized frame is skipped, the one after it arrives; then it leaves mid-frame.
  fd = raw_connect(dir.at("l.sock"));
  auto bytes = transport::stream_encode(frame_of(20000, 0));
  const auto good = transport::stream_encode(frame_of(64, 5));
  bytes.insert(bytes.end(), good.begin(), good.end());
  const auto cut = transport::stream_encode(frame_of(500, 1));
  bytes.insert(bytes.end(), cut.begin(), cut.begin() + 100);
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), ssize_t(bytes.size()));
  ASSERT_TRUE(a.wait([&] { return a.frames.size() == 1; }));
  EXPECT_EQ(a.frames[0], frame_of(64, 5));
  ::close(fd);
  ASSERT_TRUE(a.wait([&] { return !a.carrier; }));
  EXPECT_EQ(server.counters().rx_oversized.load(), 1u);
  EXPECT_EQ(server.counters().rx_cut_frames.load(), 1u);
  EXPECT_EQ(server.counters().disconnects.load(), 2u);
}

TEST(NetdevLink, ASecondPeerIsRefusedWhileOneIsConnected) {
  TempDir dir;
  Inbox a;
  NetdevLink server("a", spec("stream,listen=unix:" + dir.at("l.sock")), a.receive(), a.carrier_fn());
  const int first = raw_connect(dir.at("l.sock"));
  ASSERT_TRUE(a.wait([&] { return a.carrier; }));
  const int second = raw_connect(dir.at("l.sock"));
  uint8_t byte = 0;
  EXPECT_EQ(::read(second, &byte, 1), 0);
  EXPECT_EQ(server.counters().second_peers_refused.load(), 1u);
  EXPECT_TRUE(server.peer_connected());
  ::close(first);
  ::close(second);
}

TEST(NetdevLink, DatagramEndsExchangeOneFramePerDatagram) {
  TempDir dir;
  Inbox a, b;
  NetdevLink one("a", spec("dgram,local=unix:" + dir.at("a") + ",remote=unix:" + dir.at("b")), a.receive(), a.carrier_fn());
  NetdevLink two("b", spec("dgram,local=unix:" + dir.at("b") + ",remote=unix:" + dir.at("a")), b.receive(), b.carrier_fn());
  // One's socket connected to a path that had no socket yet: it sends once the other is bound.
  two.send(frame_of(100, 3));
  one.send(frame_of(200, 4));
  ASSERT_TRUE(a.wait([&] { return a.frames.size() == 1; }));
  ASSERT_TRUE(b.wait([&] { return b.frames.size() == 1; }));
  EXPECT_EQ(a.frames[0], frame_of(100, 3));
  EXPECT_EQ(b.frames[0], frame_of(200, 4));
}

TEST(NetdevLink, APacedFrameLeavesNoSoonerThanItsReleaseTimeAndInOrder) {
  TempDir dir;
  Inbox a, b;
  NetdevLink server("a", spec("stream,listen=unix:" + dir.at("p.sock")), a.receive(), a.carrier_fn());
  NetdevLink client("b", spec("stream,connect=unix:" + dir.at("p.sock")), b.receive(), b.carrier_fn());
  ASSERT_TRUE(a.wait([&] { return a.carrier; }));
  std::atomic<uint64_t> released{0};
  server.set_pace([&](uint64_t now_ns, size_t) { return released = now_ns + 30000000; });  // 30 ms
  const auto sent = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) server.send(frame_of(100, uint8_t(i)));
  ASSERT_TRUE(b.wait([&] { return b.frames.size() == 5; }));
  // Only a lower bound: the link may be late on a busy machine, never early.
  EXPECT_GE(std::chrono::steady_clock::now() - sent, std::chrono::milliseconds(30));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(b.frames[i], frame_of(100, uint8_t(i)));
  server.set_pace({});
  server.send(frame_of(60, 9));
  ASSERT_TRUE(b.wait([&] { return b.frames.size() == 6; })) << "without a pace, at once";
}

}  // namespace
}  // namespace hcaemu::bridge
