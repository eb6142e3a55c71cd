#pragma once
// Shared fixture: a FakeBackend behind a real VfioUserServer on a temp socket, and a TestClient.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "qemu-bridge/server.h"
#include "testbench/vfio_user/client.h"
#include "testbench/vfio_user/fake_backend.h"

namespace hcaemu::vfio_user {

using namespace std::chrono_literals;
using test::FakeBackend;
using test::open_fd_count;
using test::Received;
using test::TestClient;

template <typename Pred>
bool eventually(Pred p, std::chrono::milliseconds timeout = 2s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (p()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return p();
}

inline uint64_t read_eventfd(int fd) {
  uint64_t v = 0;
  if (::read(fd, &v, sizeof(v)) != sizeof(v)) return 0;
  return v;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override { start({}); }
  void TearDown() override {
    client_.close();
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  void start(ServerOptions opts) {
    char tmpl[] = "/tmp/hcaemu-vfu-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/pf0.sock";
    server_ = std::make_unique<VfioUserServer>(path_, backend_, opts);
    ASSERT_TRUE(client_.connect(path_));
    ASSERT_TRUE(eventually([&] { return server_->client_connected(); }));
  }
  void handshake() {
    auto r = client_.version();
    ASSERT_TRUE(r && r->ok()) << (r ? r->err() : 0);
  }
  // The connection still serves a well-formed request.
  void expect_alive() {
    auto r = client_.get_info();
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(r->ok());
  }
  void expect_error(const std::optional<Received>& r, uint32_t err) {
    ASSERT_TRUE(r.has_value()) << "no reply";
    EXPECT_TRUE(r->hdr.is_reply());
    EXPECT_TRUE(r->hdr.is_error());
    EXPECT_EQ(r->hdr.error, err);
    EXPECT_EQ(r->hdr.size, kHeaderSize);
  }
  uint64_t rejected(Reject r) const { return server_->rejects().get(r); }

  FakeBackend backend_;
  std::string dir_, path_;
  std::unique_ptr<VfioUserServer> server_;
  TestClient client_;
};

}  // namespace hcaemu::vfio_user
