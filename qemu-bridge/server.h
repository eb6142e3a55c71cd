#pragma once
// A vfio-user server for one PCIe function: listens on an AF_UNIX stream socket, serves one
// client (QEMU's vfio-user-pci) at a time, and connects it to a DeviceBackend.
//
// Threads:
//  * One I/O thread per server runs a poll loop over the listen socket, the client socket and an
//    eventfd (stop/wake). It reads messages, validates them and calls the backend
//    (region_info, irq_count, region_read/region_write/reset, connection_changed) in arrival order.
//  * Backend completions may run on any thread; the reply is written from there without ever
//    blocking: what the socket does not take at once waits in the connection's outbox, which the
//    I/O thread drains when the socket is writable. A client that lets its outbox grow past
//    max_outbox_bytes, or leaves it undrained for send_timeout, is dropped: a client that stops
//    reading can never stall the simulation thread (and with it every other function). A reply for
//    a connection that has gone away is dropped.
//  * host_memory() and msix() are callable from any thread (the SystemC kernel thread).
//    host_memory() on an fd-less map sends DMA_READ/WRITE and waits for the reply (the I/O thread
//    demultiplexes it, and fails it with ETIMEDOUT at dma_timeout); calling that from the I/O
//    thread itself is refused (EDEADLK -> false). With set_dma_waiter() a SystemC thread waits in
//    the kernel (dma_reply_waiter.h), so the other functions run meanwhile.
//  * Copies into fd-backed maps survive the client truncating the file (guarded_copy.h).
//
// Framing: a header with size < 16 drops the connection (the stream cannot be resynchronised); a
// size above max_data_xfer_size + 4096 gets an E2BIG reply and its body is skipped.
// Disconnect: DMA maps and IRQ fds are dropped, backend.connection_changed(false) is called, the
// device state stays, and the next client is accepted. A second client while one is connected is
// closed at once (and counted as Reject::kSecondClient).
#include <chrono>
#include <deque>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "pcie/host_port.h"
#include "qemu-bridge/device_backend.h"
#include "qemu-bridge/dispatcher.h"
#include "qemu-bridge/unique_fd.h"

namespace hcaemu::vfio_user {

struct ServerOptions {
  ProtocolOptions protocol;                     // advertised limits, DMA reply timeout
  std::chrono::milliseconds send_timeout{5000};  // a client that stops reading this long is dropped
  size_t max_outbox_bytes = 16u << 20;           // ... or that lets this much wait for it
  unsigned socket_mode = 0600;                   // the socket file: owner-only unless the admin says so
  bool same_user_only = true;                    // refuse a peer (SO_PEERCRED) of another uid than ours, root excepted
};

class VfioUserServer final : private MessageSink {
 public:
  // Binds and listens on socket_path (a stale socket file is unlinked first; any other existing
  // file, or a path longer than sun_path, is refused) and starts the I/O thread.
  // Throws std::system_error on failure.
  VfioUserServer(std::string socket_path, DeviceBackend& backend, ServerOptions options = {});
  ~VfioUserServer() override;
  VfioUserServer(const VfioUserServer&) = delete;
  VfioUserServer& operator=(const VfioUserServer&) = delete;

  // Joins the I/O thread, drops the client (as a disconnect) and removes the socket file. Idempotent.
  void stop();

  // Valid for the server's lifetime; thread-safe.
  pcie::HostMemory& host_memory() { return dispatcher_.dma(); }
  // How callers of host_memory() wait for message-based DMA (dispatcher.h); set before use. The
  // waiter must outlive the server.
  void set_dma_waiter(DmaWaiter* waiter) { dispatcher_.set_dma_waiter(waiter); }
  pcie::MsixSender& msix() { return dispatcher_; }
  uint64_t refused_peers() const { return refused_peers_; }
  uint64_t irq_writes_would_block() const { return dispatcher_.irq_writes_would_block(); }
  DmaSpace& dma_space() { return dispatcher_.dma(); }

  const std::string& socket_path() const { return path_; }
  const RejectCounters& rejects() const { return dispatcher_.rejects(); }
  bool client_connected() const;
  bool negotiated() const { return dispatcher_.negotiated(); }
  bool irq_installed(uint32_t index, uint32_t vector) const { return dispatcher_.irq_installed(index, vector); }
  uint64_t connections_accepted() const { return accepted_.load(); }

 private:
  bool send(uint64_t conn, std::vector<uint8_t> bytes) override;
  void dma_requested() override { wake(); }  // the poll timeout includes its deadline
  // With write_mu_ held: sends what the socket takes without blocking; false on a socket error.
  bool flush_outbox_locked();
  void break_connection_locked(const char* why);
  void run();
  void accept_client();
  bool read_client();  // false: drop the connection
  void drop_client(const char* why);
  void wake();

  const std::string path_;
  const ServerOptions opts_;
  MessageDispatcher dispatcher_;
  StreamDecoder decoder_;
  UniqueFd listen_fd_;
  uint64_t refused_peers_ = 0;
  std::chrono::steady_clock::time_point accept_paused_until_{};  // accept() ran out of fds: wait a little
  LogLimiter accept_log_;          // refused peers and second clients (I/O thread)
  LogLimiter send_failure_log_;    // guarded by write_mu_
  UniqueFd wake_fd_;

  mutable std::mutex write_mu_;  // guards client_fd_ writes, client_conn_, broken_, the outbox
  UniqueFd client_fd_;
  uint64_t client_conn_ = 0;
  bool broken_ = false;
  std::deque<std::vector<uint8_t>> outbox_;  // replies and requests the socket has not taken yet
  size_t outbox_sent_ = 0;                   // bytes of outbox_.front() already sent
  size_t outbox_bytes_ = 0;
  std::chrono::steady_clock::time_point outbox_since_{};  // when the outbox last became non-empty

  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> accepted_{0};
  std::thread thread_;
  std::vector<uint8_t> rx_buf_;
};

}  // namespace hcaemu::vfio_user
