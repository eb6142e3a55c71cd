#pragma once
// A vfio-user test client: speaks the protocol as QEMU does (or deliberately does not). It can
// send every command, raw malformed bytes and SCM_RIGHTS fds, and it answers the server's
// DMA_READ/DMA_WRITE requests (QEMU's wire layout) from local buffers.
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qemu-bridge/protocol.h"
#include "qemu-bridge/unique_fd.h"

namespace hcaemu::vfio_user::test {

using namespace std::chrono_literals;

struct Received {
  Header hdr;
  std::vector<uint8_t> payload;
  std::vector<UniqueFd> fds;
  bool ok() const { return hdr.is_reply() && !hdr.is_error(); }
  uint32_t err() const { return hdr.is_error() ? hdr.error : 0; }
};

class TestClient {
 public:
  TestClient() = default;
  ~TestClient() { close(); }

  bool connect(const std::string& path);
  void close();
  bool connected() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }

  // Raw bytes (and fds) in one sendmsg.
  bool send_raw(std::span<const uint8_t> bytes, std::span<const int> fds = {});
  // A command with a fresh msg_id; returns the id.
  uint16_t send(uint16_t cmd, std::span<const uint8_t> payload, std::span<const int> fds = {}, uint32_t flags = 0);
  // Next message from the server, or nullopt on timeout / EOF (see peer_closed()).
  std::optional<Received> recv(std::chrono::milliseconds timeout = 2s);
  // Waits for the reply to `id`, answering DMA requests that arrive meanwhile.
  std::optional<Received> wait_reply(uint16_t id, std::chrono::milliseconds timeout = 2s);
  std::optional<Received> request(uint16_t cmd, std::span<const uint8_t> payload, std::span<const int> fds = {},
                                  uint32_t flags = 0, std::chrono::milliseconds timeout = 2s);
  // True once the server closed the connection (waits up to timeout for EOF).
  bool peer_closed(std::chrono::milliseconds timeout = 2s);
  // True when nothing arrives within `timeout` (no reply expected).
  bool silent_for(std::chrono::milliseconds timeout = 200ms);

  // ---- helpers for well-formed commands ----
  std::optional<Received> version(const std::string& json = default_caps_json(), uint16_t major = 0,
                                  uint16_t minor = 0);
  std::optional<Received> get_info(uint32_t argsz = kDeviceInfoSize);
  std::optional<Received> region_info(uint32_t index, uint32_t argsz = kRegionInfoSize);
  std::optional<Received> irq_info(uint32_t index);
  std::optional<Received> set_irqs(uint32_t index, uint32_t flags, uint32_t start, uint32_t count,
                                   std::span<const int> fds = {});
  std::optional<Received> region_read(uint32_t region, uint64_t offset, uint32_t count);
  std::optional<Received> region_write(uint32_t region, uint64_t offset, std::span<const uint8_t> data);
  uint16_t region_write_posted(uint32_t region, uint64_t offset, std::span<const uint8_t> data);
  std::optional<Received> dma_map(uint64_t iova, uint64_t size, uint32_t flags, int fd = -1, uint64_t offset = 0);
  std::optional<Received> dma_unmap(uint64_t iova, uint64_t size, uint32_t flags = 0);
  std::optional<Received> reset();
  static std::string default_caps_json();

  // ---- answering the server's DMA requests ----
  // Local memory that DMA_READ/WRITE at [iova, iova + size) reach.
  void add_dma_memory(uint64_t iova, size_t size);
  std::vector<uint8_t>& dma_memory(uint64_t iova) { return memory_.at(iova); }
  // Handles server requests until `count` were answered or timeout; returns how many.
  int serve_dma(int count, std::chrono::milliseconds timeout = 2s);
  int dma_requests_served() const { return dma_served_; }

 private:
  bool answer_if_request(Received& r);
  std::optional<Received> recv_one(std::chrono::milliseconds timeout);

  UniqueFd fd_;
  uint16_t next_id_ = 1;
  bool eof_ = false;
  std::deque<Received> stash_;  // replies read while waiting for another id
  std::map<uint64_t, std::vector<uint8_t>> memory_;
  int dma_served_ = 0;
};

}  // namespace hcaemu::vfio_user::test
