// The vfio-user server behind a real socket, driven by the test client: every command on the
// happy path, then malformed input (each followed by a well-formed request), then DMA and
// connection lifecycle.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sys/socket.h>
#include <sys/un.h>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "testbench/vfio_user/server_fixture.h"

namespace hcaemu::vfio_user {
namespace {

// ---- happy path ---------------------------------------------------------------------------------

TEST_F(ServerTest, VersionRepliesZeroZeroWithNulTerminatedCapabilities) {
  auto r = client_.version();
  ASSERT_TRUE(r && r->ok());
  auto v = decode_version(r->payload);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->major, 0);
  EXPECT_EQ(v->minor, 0);
  ASSERT_TRUE(v->json_nul_terminated);
  auto j = nlohmann::json::parse(v->json);
  auto& c = j.at("capabilities");
  EXPECT_EQ(c.at("max_msg_fds"), 16);
  EXPECT_EQ(c.at("max_data_xfer_size"), 1048576);
  EXPECT_EQ(c.at("pgsizes"), 4096);
  EXPECT_EQ(c.at("max_dma_maps"), 4096);  // per client, so all together stay under vm.max_map_count
  EXPECT_FALSE(c.contains("write_multiple"));
  EXPECT_FALSE(c.contains("twin_socket"));
  EXPECT_TRUE(server_->negotiated());
}

TEST_F(ServerTest, VersionWithoutJsonAndWithHigherMinorIsAccepted) {
  auto v = encode_version(0, 5, "");
  v.resize(kVersionFixedSize);  // no JSON at all
  auto r = client_.request(kCmdVersion, v);
  ASSERT_TRUE(r && r->ok());
  EXPECT_EQ(decode_version(r->payload)->minor, 0);
}

TEST_F(ServerTest, DeviceGetInfo) {
  handshake();
  auto r = client_.get_info();
  ASSERT_TRUE(r && r->ok());
  auto d = decode_device_info(r->payload);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->argsz, 16u);
  EXPECT_EQ(d->flags, kDeviceFlagPci | kDeviceFlagReset);
  EXPECT_EQ(d->num_regions, 9u);
  EXPECT_EQ(d->num_irqs, 5u);
  expect_error(client_.get_info(8), EINVAL);
}

TEST_F(ServerTest, RegionInfoForEveryIndex) {
  handshake();
  for (uint32_t i = 0; i < kNumRegions; ++i) {
    auto r = client_.region_info(i);
    ASSERT_TRUE(r && r->ok()) << i;
    ASSERT_EQ(r->payload.size(), kRegionInfoSize);
    auto ri = decode_region_info(r->payload);
    const RegionInfo want = backend_.region_info(i);
    EXPECT_EQ(ri->argsz, kRegionInfoSize);
    EXPECT_EQ(ri->index, i);
    EXPECT_EQ(ri->size, want.size);
    EXPECT_EQ(ri->cap_offset, 0u);
    EXPECT_EQ(ri->offset, uint64_t(i) << kRegionOffsetShift);
    EXPECT_EQ(ri->flags & (kRegionFlagMmap | kRegionFlagCaps), 0u);
    uint32_t flags = want.size ? (kRegionFlagRead | (want.writable ? kRegionFlagWrite : 0)) : 0;
    EXPECT_EQ(ri->flags, flags) << i;
    EXPECT_TRUE(r->fds.empty());
  }
  // A bigger argsz is fine (no caps to add); a smaller one is not.
  auto big = client_.region_info(0, 256);
  ASSERT_TRUE(big && big->ok());
  EXPECT_EQ(decode_region_info(big->payload)->argsz, kRegionInfoSize);
  expect_error(client_.region_info(0, 16), EINVAL);
}

TEST_F(ServerTest, IrqInfoForEveryIndex) {
  handshake();
  for (uint32_t i = 0; i < kNumIrqs; ++i) {
    auto r = client_.irq_info(i);
    ASSERT_TRUE(r && r->ok());
    auto ii = decode_irq_info(r->payload);
    EXPECT_EQ(ii->index, i);
    EXPECT_EQ(ii->count, backend_.irq_count(i));
    EXPECT_TRUE(ii->flags & kIrqInfoFlagEventfd);
    EXPECT_FALSE(ii->flags & kIrqInfoFlagNoresize);
  }
  EXPECT_EQ(decode_irq_info(client_.irq_info(kMsixIrq)->payload)->flags, kIrqInfoFlagEventfd | kIrqInfoFlagMaskable);
  expect_error(client_.irq_info(kNumIrqs), EINVAL);
}

TEST_F(ServerTest, SetIrqsEventfdsAreSignalled) {
  handshake();
  const uint32_t trig = kIrqSetDataEventfd | kIrqSetActionTrigger;
  // MSI-X enable as QEMU does it: vector 0, no fd = "enabled, no vectors".
  ASSERT_TRUE(client_.set_irqs(kMsixIrq, trig, 0, 1)->ok());
  EXPECT_FALSE(server_->msix().signal(0));
  UniqueFd e0(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), e1(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  int fds[2] = {e0.get(), e1.get()};
  ASSERT_TRUE(client_.set_irqs(kMsixIrq, trig, 2, 2, fds)->ok());
  EXPECT_TRUE(server_->msix().signal(2));
  EXPECT_TRUE(server_->msix().signal(2));
  EXPECT_TRUE(server_->msix().signal(3));
  EXPECT_EQ(read_eventfd(e0.get()), 2u);
  EXPECT_EQ(read_eventfd(e1.get()), 1u);
  EXPECT_FALSE(server_->msix().signal(4));    // no fd
  EXPECT_FALSE(server_->msix().signal(100));  // out of range
}

TEST_F(ServerTest, SetIrqsReplacesTheFdOnRemask) {
  handshake();
  const uint32_t trig = kIrqSetDataEventfd | kIrqSetActionTrigger;
  UniqueFd a(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), b(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  const int baseline = open_fd_count();
  int fa[1] = {a.get()};
  ASSERT_TRUE(client_.set_irqs(kMsixIrq, trig, 3, 1, fa)->ok());
  EXPECT_EQ(open_fd_count(), baseline + 1);  // the server's copy
  int fb[1] = {b.get()};
  ASSERT_TRUE(client_.set_irqs(kMsixIrq, trig, 3, 1, fb)->ok());
  EXPECT_EQ(open_fd_count(), baseline + 1);  // the old copy was closed
  EXPECT_TRUE(server_->msix().signal(3));
  EXPECT_EQ(read_eventfd(a.get()), 0u);
  EXPECT_EQ(read_eventfd(b.get()), 1u);
}

TEST_F(ServerTest, SetIrqsDisableAllAndDeassign) {
  handshake();
  const uint32_t trig = kIrqSetDataEventfd | kIrqSetActionTrigger;
  const int baseline = open_fd_count();
  {
    std::vector<UniqueFd> efds;
    std::vector<int> raw;
    for (int i = 0; i < 8; ++i) {
      efds.emplace_back(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
      raw.push_back(efds.back().get());
    }
    ASSERT_TRUE(client_.set_irqs(kMsixIrq, trig, 0, 8, raw)->ok());
  }
  EXPECT_EQ(open_fd_count(), baseline + 8);
  ASSERT_TRUE(client_.set_irqs(kMsixIrq, trig, 6, 2)->ok());  // no fds: de-assign 6 and 7
  EXPECT_FALSE(server_->irq_installed(kMsixIrq, 6));
  EXPECT_TRUE(server_->irq_installed(kMsixIrq, 5));
  EXPECT_EQ(open_fd_count(), baseline + 6);
  ASSERT_TRUE(client_.set_irqs(kMsixIrq, kIrqSetDataNone | kIrqSetActionTrigger, 0, 0)->ok());
  EXPECT_EQ(open_fd_count(), baseline);
  for (uint32_t v = 0; v < 8; ++v) EXPECT_FALSE(server_->msix().signal(v));
}

TEST_F(ServerTest, SetIrqsMaskUnmaskAcceptedForIntxErrReq) {
  handshake();
  for (uint32_t idx : {uint32_t(kIntxIrq), uint32_t(kErrIrq), uint32_t(kReqIrq)}) {
    EXPECT_TRUE(client_.set_irqs(idx, kIrqSetDataNone | kIrqSetActionMask, 0, 1)->ok());
    EXPECT_TRUE(client_.set_irqs(idx, kIrqSetDataNone | kIrqSetActionUnmask, 0, 1)->ok());
  }
  UniqueFd e(::eventfd(0, EFD_CLOEXEC));
  int f[1] = {e.get()};
  EXPECT_TRUE(client_.set_irqs(kErrIrq, kIrqSetDataEventfd | kIrqSetActionTrigger, 0, 1, f)->ok());
  EXPECT_TRUE(server_->irq_installed(kErrIrq, 0));
}

TEST_F(ServerTest, PostedWritesThenReadAreOrdered) {
  handshake();
  for (uint32_t i = 0; i < 200; ++i) {
    uint8_t v[4];
    store_le32(v, i);
    client_.region_write_posted(0, 0x100, v);
  }
  auto r = client_.region_read(0, 0x100, 4);
  ASSERT_TRUE(r && r->ok());
  auto a = decode_region_access(r->payload);
  EXPECT_EQ(a->offset, 0x100u);
  EXPECT_EQ(a->region, 0u);
  ASSERT_EQ(a->count, 4u);
  EXPECT_EQ(load_le32(a->data.data()), 199u);
  EXPECT_TRUE(client_.silent_for(100ms));  // no replies to the posted writes
  auto ops = backend_.ops();
  ASSERT_EQ(ops.size(), 201u);
  EXPECT_EQ(ops.back(), "R0@256");
}

TEST_F(ServerTest, NonPostedWriteIsAnsweredWithTheEcho) {
  handshake();
  std::vector<uint8_t> d = {1, 2, 3, 4, 5, 6, 7, 8};
  auto w = client_.region_write(7, 0x40, d);
  ASSERT_TRUE(w && w->ok());
  auto a = decode_region_access(w->payload);
  EXPECT_EQ(a->offset, 0x40u);
  EXPECT_EQ(a->region, 7u);
  EXPECT_EQ(a->count, 8u);
  EXPECT_TRUE(a->data.empty());
  auto r = client_.region_read(7, 0x40, 8);
  EXPECT_EQ(std::vector<uint8_t>(r->payload.begin() + 16, r->payload.end()), d);
}

TEST_F(ServerTest, DeviceResetIsOrderedWithRegionAccesses) {
  handshake();
  uint8_t v[4] = {9, 9, 9, 9};
  client_.region_write_posted(0, 0, v);
  auto rr = client_.reset();
  ASSERT_TRUE(rr && rr->ok());
  EXPECT_TRUE(rr->payload.empty());
  auto r = client_.region_read(0, 0, 4);
  EXPECT_EQ(load_le32(r->payload.data() + 16), 0u);
  EXPECT_EQ(backend_.resets.load(), 1);
  auto ops = backend_.ops();
  EXPECT_EQ(ops, (std::vector<std::string>{"W0@0", "RESET", "R0@0"}));
}

// ---- DMA --------------------------------------------------------------------------------------

UniqueFd memfd_with_pattern(size_t size) {
  UniqueFd fd(::memfd_create("guest-ram", MFD_CLOEXEC));
  std::vector<uint8_t> b(size);
  for (size_t i = 0; i < size; ++i) b[i] = uint8_t(i ^ (i >> 8));
  EXPECT_EQ(::pwrite(fd.get(), b.data(), size, 0), ssize_t(size));
  return fd;
}

TEST_F(ServerTest, DmaMapMemfdIsSharedWithHostMemory) {
  handshake();
  UniqueFd ram = memfd_with_pattern(0x10000);
  const int baseline = open_fd_count();
  auto r = client_.dma_map(0x100000, 0x8000, kDmaMapFlagRead | kDmaMapFlagWrite, ram.get(), 0x4000);
  ASSERT_TRUE(r && r->ok());
  EXPECT_TRUE(r->payload.empty());
  EXPECT_EQ(open_fd_count(), baseline);  // the server closed its dup after mmap
  std::vector<uint8_t> got(256);
  ASSERT_TRUE(server_->host_memory().read(0x100000 + 0x10, got));
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], uint8_t((0x4010 + i) ^ ((0x4010 + i) >> 8)));
  std::vector<uint8_t> put(64, 0xc3);
  ASSERT_TRUE(server_->host_memory().write(0x100000 + 0x7fc0, put));
  uint8_t back[64];
  ASSERT_EQ(::pread(ram.get(), back, 64, 0x4000 + 0x7fc0), 64);
  for (auto b : back) EXPECT_EQ(b, 0xc3);
  // One byte past the map: refused, nothing touched.
  EXPECT_FALSE(server_->host_memory().write(0x100000 + 0x7fc1, put));
  uint8_t after;
  ASSERT_EQ(::pread(ram.get(), &after, 1, 0x4000 + 0x8000), 1);
  EXPECT_EQ(after, uint8_t(0xc000 ^ 0xc0));
}

TEST_F(ServerTest, DmaUnmapAndUnmapAll) {
  handshake();
  UniqueFd ram = memfd_with_pattern(0x4000);
  ASSERT_TRUE(client_.dma_map(0x1000, 0x1000, kDmaMapFlagRead | kDmaMapFlagWrite, ram.get(), 0)->ok());
  ASSERT_TRUE(client_.dma_map(0x2000, 0x1000, kDmaMapFlagRead, ram.get(), 0x1000)->ok());
  std::vector<uint8_t> b(8);
  EXPECT_FALSE(server_->host_memory().write(0x2000, b));  // read-only map
  auto u = client_.dma_unmap(0x1000, 0x1000);
  ASSERT_TRUE(u && u->ok());
  auto echo = decode_dma_unmap(u->payload);
  ASSERT_TRUE(echo);
  EXPECT_EQ(echo->addr, 0x1000u);
  EXPECT_EQ(echo->size, 0x1000u);
  EXPECT_FALSE(server_->host_memory().read(0x1000, b));
  EXPECT_TRUE(server_->host_memory().read(0x2000, b));
  ASSERT_TRUE(client_.dma_unmap(0, 0, kDmaUnmapFlagAll)->ok());
  EXPECT_EQ(server_->dma_space().map_count(), 0u);
}

TEST_F(ServerTest, FdLessMapUsesDmaMessages) {
  handshake();
  ASSERT_TRUE(client_.dma_map(0xfffc0000, 0x40000, kDmaMapFlagRead | kDmaMapFlagWrite)->ok());
  client_.add_dma_memory(0xfffc0000, 0x40000);
  auto& mem = client_.dma_memory(0xfffc0000);
  for (size_t i = 0; i < 64; ++i) mem[0x100 + i] = uint8_t(0xa0 + i);

  std::vector<uint8_t> got(64);
  bool ok = false;
  std::thread kernel([&] { ok = server_->host_memory().read(0xfffc0100, got); });
  EXPECT_EQ(client_.serve_dma(1), 1);
  kernel.join();
  ASSERT_TRUE(ok);
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(got[i], uint8_t(0xa0 + i));

  std::vector<uint8_t> put(32, 0x77);
  std::thread writer([&] { ok = server_->host_memory().write(0xfffc1000, put); });
  EXPECT_EQ(client_.serve_dma(1), 1);
  writer.join();
  ASSERT_TRUE(ok);
  EXPECT_EQ(mem[0x1000], 0x77);
  EXPECT_EQ(mem[0x101f], 0x77);
  EXPECT_EQ(mem[0x1020], 0x00);
  expect_alive();  // commands and our requests shared the socket without confusion
}

TEST_F(ServerTest, FdLessDmaIsChunkedToTheClientsTransferSize) {
  auto r = client_.version(R"({"capabilities":{"max_data_xfer_size":4096}})");
  ASSERT_TRUE(r && r->ok());
  ASSERT_TRUE(client_.dma_map(0x10000, 0x10000, kDmaMapFlagRead | kDmaMapFlagWrite)->ok());
  client_.add_dma_memory(0x10000, 0x10000);
  std::vector<uint8_t> got(3 * 4096 + 5);
  bool ok = false;
  std::thread kernel([&] { ok = server_->host_memory().read(0x10000, got); });
  EXPECT_EQ(client_.serve_dma(4), 4);
  kernel.join();
  EXPECT_TRUE(ok);
}

TEST_F(ServerTest, FdLessDmaFromTheIoThreadIsRefused) {
  handshake();
  ASSERT_TRUE(client_.dma_map(0x10000, 0x1000, kDmaMapFlagRead)->ok());
  std::atomic<int> result{-1};
  backend_.on_io_thread_read = [&] {
    uint8_t b[4];
    result = server_->host_memory().read(0x10000, b) ? 1 : 0;
  };
  auto r = client_.region_read(0, 0, 4);
  ASSERT_TRUE(r && r->ok());
  EXPECT_EQ(result.load(), 0);  // refused at once instead of deadlocking
  backend_.on_io_thread_read = nullptr;
}

// A server of its own (options of the test's choosing) on a fresh socket, and a client that has
// connected and negotiated.
struct OwnServer {
  FakeBackend backend;
  std::filesystem::path dir;
  std::unique_ptr<VfioUserServer> server;
  TestClient client;
  explicit OwnServer(const ServerOptions& options) {
    char tmpl[] = "/tmp/hcaemu-vfu-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
    server = std::make_unique<VfioUserServer>(path(), backend, options);
    EXPECT_TRUE(client.connect(path()));
    EXPECT_TRUE(client.version()->ok());
  }
  ~OwnServer() {
    server->stop();
    std::filesystem::remove_all(dir);
  }
  std::string path() const { return (dir / "s.sock").string(); }
};

TEST(ServerDma, FdLessDmaTimesOutWhenTheClientIsSilent) {
  ServerOptions o;
  o.protocol.dma_timeout = 150ms;
  OwnServer own(o);
  VfioUserServer& server = *own.server;
  TestClient& c = own.client;
  ASSERT_TRUE(c.dma_map(0x10000, 0x1000, kDmaMapFlagRead)->ok());
  uint8_t b[4];
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(server.host_memory().read(0x10000, b));  // nobody answers
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 140ms);
  // The late request is still in the socket; a late reply is dropped as unexpected.
  EXPECT_EQ(c.serve_dma(1), 1);
  EXPECT_TRUE(c.get_info()->ok());
  EXPECT_EQ(server.rejects().get(Reject::kUnexpectedReply), 1u);
}

// Issue 14: replies used to be written with a blocking send (5 s timeout) on the thread that
// completed the access, which in hcaemu is the simulation thread every function shares: a client
// that stopped reading froze them all, again and again. Now a reply that the socket does not take
// waits in the connection's outbox, and the client is dropped when it lets the outbox fill.
TEST(ServerSend, AClientThatStopsReadingIsDroppedWithoutStallingTheCompletingThread) {
  ServerOptions o;
  o.max_outbox_bytes = 256 * 1024;
  o.send_timeout = 10s;  // the byte bound, not the timer, must do it here
  OwnServer own(o);
  VfioUserServer& server = *own.server;
  FakeBackend& backend = own.backend;
  TestClient& c = own.client;
  // 400 reads of 4 KiB, none of whose replies the client reads: far more than the socket buffer.
  for (int i = 0; i < 400; ++i) c.send(kCmdRegionRead, encode_region_access(0, 0, 4096, {}));
  const auto t0 = std::chrono::steady_clock::now();
  backend.drain();  // every reply was handed over: the completing thread never waited on the client
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_TRUE(eventually([&] { return !server.client_connected(); }));
  EXPECT_TRUE(c.peer_closed());

  TestClient next;  // the next client is served as usual
  ASSERT_TRUE(next.connect(own.path()));
  ASSERT_TRUE(next.version()->ok());
  auto r = next.region_read(0, 0, 8);
  EXPECT_TRUE(r && r->ok());
}

TEST(ServerSend, AClientThatDoesNotDrainItsRepliesInTimeIsDropped) {
  ServerOptions o;
  o.send_timeout = 300ms;  // the timer, not the byte bound
  OwnServer own(o);
  for (int i = 0; i < 200; ++i) own.client.send(kCmdRegionRead, encode_region_access(0, 0, 4096, {}));
  own.backend.drain();
  EXPECT_TRUE(eventually([&] { return !own.server->client_connected(); }));
}

// ---- connection lifecycle ------------------------------------------------------------------------

TEST_F(ServerTest, DisconnectDropsMapsAndIrqsButKeepsDeviceState) {
  const int baseline = open_fd_count();
  handshake();
  UniqueFd ram = memfd_with_pattern(0x1000);
  ASSERT_TRUE(client_.dma_map(0x1000, 0x1000, kDmaMapFlagRead | kDmaMapFlagWrite, ram.get(), 0)->ok());
  UniqueFd e(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  int f[1] = {e.get()};
  ASSERT_TRUE(client_.set_irqs(kMsixIrq, kIrqSetDataEventfd | kIrqSetActionTrigger, 1, 1, f)->ok());
  std::vector<uint8_t> d = {0xde, 0xad, 0xbe, 0xef};
  ASSERT_TRUE(client_.region_write(0, 0x20, d)->ok());

  client_.close();
  ASSERT_TRUE(eventually([&] { return !server_->client_connected(); }));
  EXPECT_EQ(server_->dma_space().map_count(), 0u);
  EXPECT_FALSE(server_->msix().signal(1));
  EXPECT_TRUE(eventually([&] { return open_fd_count() == baseline; }));  // both socket ends closed; ram and e opened meanwhile
  EXPECT_FALSE(server_->negotiated());

  ASSERT_TRUE(client_.connect(path_));
  expect_error(client_.get_info(), EINVAL);  // a new connection starts before VERSION again
  handshake();
  auto r = client_.region_read(0, 0x20, 4);
  ASSERT_TRUE(r && r->ok());
  EXPECT_EQ(std::vector<uint8_t>(r->payload.begin() + 16, r->payload.end()), d);
  ASSERT_TRUE(client_.dma_map(0x1000, 0x1000, kDmaMapFlagRead, ram.get(), 0)->ok());  // no EEXIST
  EXPECT_EQ(backend_.connection_events(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(server_->connections_accepted(), 2u);
}

TEST_F(ServerTest, SecondClientIsRefusedWhileOneIsConnected) {
  handshake();
  TestClient second;
  ASSERT_TRUE(second.connect(path_));
  EXPECT_TRUE(second.peer_closed());
  EXPECT_TRUE(eventually([&] { return rejected(Reject::kSecondClient) == 1; }));
  expect_alive();
}

TEST_F(ServerTest, StopRemovesTheSocketFile) {
  EXPECT_TRUE(std::filesystem::exists(path_));
  server_->stop();
  EXPECT_FALSE(std::filesystem::exists(path_));
  EXPECT_TRUE(client_.peer_closed());
}

TEST(ServerSetup, RefusesTooLongPathAndNonSocketFile) {
  FakeBackend backend;
  EXPECT_THROW(VfioUserServer(std::string(200, 'x'), backend), std::system_error);
  char tmpl[] = "/tmp/hcaemu-vfu-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string file = std::string(tmpl) + "/plain";
  { std::ofstream(file) << "x"; }
  EXPECT_THROW(VfioUserServer(file, backend), std::system_error);
  // A stale socket file is replaced.
  std::string sock = std::string(tmpl) + "/s.sock";
  { VfioUserServer first(sock, backend); }
  { int fd = ::socket(AF_UNIX, SOCK_STREAM, 0); sockaddr_un a{}; a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, sock.c_str()); ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)); ::close(fd); }
  EXPECT_TRUE(std::filesystem::exists(sock));
  EXPECT_NO_THROW(VfioUserServer(sock, backend));
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace hcaemu::vfio_user
