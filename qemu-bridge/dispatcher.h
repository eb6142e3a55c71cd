#pragma once
// The vfio-user protocol core, without sockets: validates and handles complete client messages,
// tracks our own DMA_READ/WRITE requests, owns the DMA map table and the IRQ eventfds. The server
// (server.h) feeds it messages read from the socket; tests and the fuzzer feed it bytes through a
// StreamDecoder. Outgoing bytes leave through a MessageSink.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "pcie/host_port.h"
#include "qemu-bridge/device_backend.h"
#include "qemu-bridge/dma_space.h"
#include "qemu-bridge/protocol.h"
#include "qemu-bridge/unique_fd.h"

#include "common/log_limit.h"

namespace hcaemu::vfio_user {

// Why a message was rejected; one counter each (server.rejects()).
enum class Reject : uint8_t {
  kBadHeader,        // size < 16 or an invalid type field
  kTooLarge,         // size above the message limit
  kBeforeVersion,    // a command other than VERSION before a successful VERSION
  kBadVersion,       // wrong major, or VERSION sent twice
  kBadJson,          // capabilities JSON malformed, not NUL-terminated, or of the wrong shape
  kBadPayload,       // payload too short/long for the command, or argsz too small
  kBadIndex,         // region or IRQ index out of range, or region absent
  kOutOfRange,       // offset/count outside the region, or count above max_data_xfer_size
  kBadFlags,         // unknown or inconsistent flag bits
  kBadFds,           // fds where none belong, too many fds, fd count != IRQ count, or an IRQ fd that is no eventfd
  kDmaMap,           // DMA_MAP refused by the map table (overlap, mmap failure...)
  kDmaUnmap,         // DMA_UNMAP of a range that was not mapped exactly
  kUnknownCommand,   // command number we do not implement
  kUnexpectedReply,  // a reply that matches none of our pending DMA requests
  kSecondClient,     // a connection attempt while a client is connected
  kBackendError,     // the backend completed a region access or reset with an error
  kCount
};
std::string_view reject_name(Reject r);

class RejectCounters {
 public:
  uint64_t get(Reject r) const { return n_[size_t(r)].load(std::memory_order_relaxed); }
  uint64_t total() const;
  void add(Reject r) { n_[size_t(r)].fetch_add(1, std::memory_order_relaxed); }

 private:
  std::array<std::atomic<uint64_t>, size_t(Reject::kCount)> n_{};
};

struct ProtocolOptions {
  uint32_t max_msg_fds = kMaxMsgFds;                // advertised; more fds in one message are refused
  uint32_t max_data_xfer_size = kMaxDataXferSize;   // advertised; region access and DMA chunk limit
  uint32_t max_dma_maps = kMaxDmaMaps;
  uint64_t max_dma_mapped_bytes = kMaxDmaMappedBytes;  // address space one client's maps may take
  std::chrono::milliseconds dma_timeout{5000};      // wait for one DMA_READ/WRITE reply
};

// Largest message we accept: the biggest data transfer plus room for any fixed part.
inline constexpr uint32_t kMessageOverhead = 4096;

// One complete message as read from the socket.
struct Message {
  Header hdr;
  std::vector<uint8_t> payload;  // hdr.size - 16 bytes
  std::vector<UniqueFd> fds;     // SCM_RIGHTS fds that came with the header
  bool fds_bad = false;          // fds were truncated (too many) or arrived outside the header read
};

// Where outgoing messages go. `conn` is the connection generation the message belongs to; the
// sink drops it (returning false) when that connection is gone. Called from any thread.
class MessageSink {
 public:
  virtual ~MessageSink() = default;
  virtual bool send(uint64_t conn, std::vector<uint8_t> bytes) = 0;
  // A DMA request went out: the thread that reads replies should look at its deadline.
  virtual void dma_requested() {}
};

// How a thread that sent a DMA_READ/WRITE waits for its reply. Without one the thread blocks (a
// condition variable, at most dma_timeout). hcaemu gives its functions one that hands the SystemC
// kernel to the other functions meanwhile (qemu-bridge/dma_reply_waiter.h): a slow client then
// holds up only its own function.
class DmaWaiter {
 public:
  virtual ~DmaWaiter() = default;
  // Returns once done() holds. The dispatcher's I/O thread ends every wait: with the reply, with
  // an error when the connection goes, or with ETIMEDOUT at dma_timeout (expire_dma()).
  virtual void wait(const std::function<bool()>& done) = 0;
  // Any thread: something a waiter may be waiting for has happened.
  virtual void wake() = 0;
};

class MessageDispatcher final : public DmaMessenger, public pcie::MsixSender {
 public:
  MessageDispatcher(DeviceBackend& backend, MessageSink& sink, ProtocolOptions opts = {});
  ~MessageDispatcher() override;

  // Framing: what to do with the body of a message whose header was just read.
  enum class Framing { kAccept, kSkip, kDisconnect };
  // size < 16 cannot be resynchronised (the next header's position is unknown): disconnect.
  // size > limit: the body is skipped (size says how much), an E2BIG error reply is sent unless
  // NO_REPLY, and the stream carries on with the next header.
  Framing check_header(const Header& h);
  uint32_t max_message_size() const { return opts_.max_data_xfer_size + kMessageOverhead; }
  uint32_t max_msg_fds() const { return std::min(opts_.max_msg_fds, kMaxMsgFds); }
  // Stops all output: later completions and DMA requests go nowhere. Called by the owner of the
  // sink before the sink goes away.
  void detach_sink();

  // Connection lifecycle, called on the thread that drives handle().
  uint64_t connect();   // returns the new connection generation; calls backend.connection_changed(true)
  void disconnect();    // drops maps and IRQ fds, fails pending DMA, calls connection_changed(false)
  uint64_t connection() const { return conn_.load(); }

  // Handles one complete message. Runs on one thread (the server's I/O thread).
  void handle(Message msg);
  // Message-based DMA from this thread is refused (EDEADLK): it is the thread that must read the reply.
  void set_io_thread(std::thread::id id) { io_thread_.store(id); }

  // Before any DMA: how callers wait for their replies (null: block).
  void set_dma_waiter(DmaWaiter* waiter) { waiter_ = waiter; }
  // I/O thread: fails the DMA requests older than dma_timeout with ETIMEDOUT; returns when the
  // oldest one left expires (time_point::max() when none waits).
  std::chrono::steady_clock::time_point expire_dma(std::chrono::steady_clock::time_point now);

  // DmaMessenger: DMA_READ/WRITE round trips, chunked to the client's max_data_xfer_size.
  int dma_read(uint64_t addr, std::span<uint8_t> dst) override;
  int dma_write(uint64_t addr, std::span<const uint8_t> src) override;
  // pcie::MsixSender: writes a u64 1 to the eventfd of MSI-X vector `vector`, never blocking: the
  // fds are checked to be eventfds and made non-blocking when installed; a counter the client lets
  // fill up (it never reads) already signals, and the write that would block is counted instead.
  bool signal(uint32_t vector) override;
  uint64_t irq_writes_would_block() const { return irq_would_block_.load(); }

  DmaSpace& dma() { return dma_; }
  const RejectCounters& rejects() const { return rejects_; }
  void count_reject(Reject r) { rejects_.add(r); }
  bool negotiated() const { return negotiated_.load(); }
  // True when an eventfd is installed for (index, vector). Tests.
  bool irq_installed(uint32_t index, uint32_t vector) const;

 private:
  struct Pending;
  // Shared with backend completions, so a completion that outlives the dispatcher is harmless.
  struct ReplyPath {
    std::mutex mu;
    MessageSink* sink = nullptr;
    RejectCounters* rejects = nullptr;
  };

  void reject(Message& m, Reject why, int err, std::string_view detail);
  void reply(const Header& req, std::span<const uint8_t> payload);
  void send(std::vector<uint8_t> bytes);
  void handle_reply(Message& m);

  void on_version(Message& m);
  void on_dma_map(Message& m);
  void on_dma_unmap(Message& m);
  void on_get_info(Message& m);
  void on_region_info(Message& m);
  void on_irq_info(Message& m);
  void on_set_irqs(Message& m);
  void on_region_read(Message& m);
  void on_region_write(Message& m);
  void on_reset(Message& m);

  int dma_round_trip(uint16_t cmd, uint64_t addr, std::span<uint8_t> dst, std::span<const uint8_t> src);
  void fail_pending(int err);
  void drop_irqs();

  DeviceBackend& backend_;
  ProtocolOptions opts_;
  RejectCounters rejects_;
  std::shared_ptr<ReplyPath> path_;
  DmaSpace dma_;

  std::atomic<uint64_t> conn_{0};
  std::atomic<bool> connected_{false};
  std::atomic<bool> negotiated_{false};
  std::atomic<uint32_t> peer_max_xfer_{kMaxDataXferSize};
  std::atomic<std::thread::id> io_thread_{};

  mutable std::mutex irq_mu_;
  std::array<std::vector<UniqueFd>, kNumIrqs> irqs_;
  std::atomic<uint64_t> irq_would_block_{0};
  std::array<LogLimiter, size_t(Reject::kCount)> reject_log_{};  // rejects_ keeps the totals
  std::atomic<uint64_t> dma_timeouts_{0};

  std::mutex pending_mu_;
  std::condition_variable pending_cv_;
  std::map<uint16_t, Pending*> pending_;
  DmaWaiter* waiter_ = nullptr;
  uint16_t next_dma_id_ = 0x8000;  // guarded by pending_mu_
};

// Splits a byte stream into messages for a dispatcher, applying its framing rules. The server
// reads at most want() bytes per recvmsg so that fds always attach to the message they came with.
class StreamDecoder {
 public:
  explicit StreamDecoder(MessageDispatcher& d) : d_(d) {}
  void reset();
  size_t want() const;
  // Feeds bytes (and the fds received with them). Returns false when the stream cannot continue
  // and the connection must be dropped.
  bool consume(std::span<const uint8_t> bytes, std::vector<UniqueFd> fds = {}, bool fds_truncated = false);

 private:
  enum class Phase { kHeader, kBody, kSkip };
  MessageDispatcher& d_;
  Phase phase_ = Phase::kHeader;
  uint8_t hdr_buf_[kHeaderSize] = {};
  size_t got_ = 0;
  uint64_t skip_left_ = 0;
  Message cur_;
};

}  // namespace hcaemu::vfio_user
