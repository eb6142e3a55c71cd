#pragma once
// The HCA's physical port on a socket, in QEMU's netdev framing, so an ordinary VM (`-netdev
// stream` or `-netdev dgram` behind virtio-net, with Soft-RoCE or plain TCP), another hcaemu or a
// switch process shares the Ethernet segment with the emulated functions.
//
//   stream,listen=unix:PATH | stream,listen=tcp:HOST:PORT     wait for one peer (QEMU server=off)
//   stream,connect=unix:PATH | stream,connect=tcp:HOST:PORT   connect, retrying every second
//   dgram,local=udp:HOST:PORT,remote=udp:HOST:PORT            one frame per datagram (QEMU dgram)
//   dgram,local=unix:PATH,remote=unix:PATH
//
// Threads: one I/O thread per link polls its sockets and an eventfd. Frames that arrive are handed
// to `receive` on that thread (the owner posts them into the SystemC kernel); send() may be called
// from any thread and never blocks: frames wait in a bounded outbox that the I/O thread drains, and
// past its bound they are dropped and counted, so a peer that stops reading cannot stall the model.
// A peer that sends garbage framing (a length of 0 or above 68 KiB) is disconnected; a frame above
// max_frame is skipped; both are counted and logged at a bounded rate. A stream link's carrier is
// up while a peer is connected; a datagram link's is always up.
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <sys/socket.h>

#include "qemu-bridge/unique_fd.h"
#include "transport/stream_framing.h"

namespace hcaemu::bridge {

struct SocketAddress {
  enum class Family { kUnix, kInet };
  Family family = Family::kUnix;
  std::string path;  // kUnix
  std::string host;  // kInet
  uint16_t port = 0;
  std::string text() const;
};

struct LinkSpec {
  enum class Kind { kStreamListen, kStreamConnect, kDatagram };
  Kind kind = Kind::kStreamListen;
  SocketAddress local;   // listen / dgram local
  SocketAddress remote;  // connect / dgram remote
  std::string text;      // as given
};

// Parses an --uplink value; nullopt with `error` saying what is wrong.
std::optional<LinkSpec> parse_link_spec(std::string_view text, std::string& error);

struct LinkCounters {
  std::atomic<uint64_t> tx_frames{0}, rx_frames{0};
  std::atomic<uint64_t> tx_dropped_backlog{0};  // the outbox was full (a slow or absent peer)
  std::atomic<uint64_t> tx_dropped_no_peer{0};  // no peer connected (stream) or the peer refused (dgram)
  std::atomic<uint64_t> rx_oversized{0};        // frames above max_frame, skipped
  std::atomic<uint64_t> rx_bad_framing{0};      // connections dropped for garbage framing
  std::atomic<uint64_t> rx_cut_frames{0};       // a peer that went away in the middle of a frame
  std::atomic<uint64_t> connects{0}, disconnects{0}, second_peers_refused{0};
};

struct LinkOptions {
  uint32_t max_frame = 9216 + 18;       // jumbo MTU plus Ethernet and 802.1Q headers
  size_t max_outbox_bytes = 8u << 20;   // frames waiting for the peer
  unsigned reconnect_ms = 1000;
};

class NetdevLink {
 public:
  using Receive = std::function<void(std::vector<uint8_t> frame)>;  // I/O thread
  using Carrier = std::function<void(bool up)>;                     // I/O thread
  // When a frame of `bytes` handed to send() at `now_ns` (steady clock) may leave: a link that
  // shapes time (rate limit, delay, jitter: fabric::LinkShaper). Called under the outbox lock.
  using Pace = std::function<uint64_t(uint64_t now_ns, size_t bytes)>;

  // Opens the sockets (a listening UNIX socket replaces a stale socket file; any other file there is
  // refused) and starts the I/O thread. Throws std::system_error / std::runtime_error on failure.
  NetdevLink(std::string name, LinkSpec spec, Receive receive, Carrier carrier, LinkOptions options = {});
  ~NetdevLink();
  NetdevLink(const NetdevLink&) = delete;
  NetdevLink& operator=(const NetdevLink&) = delete;

  void send(std::span<const uint8_t> frame);  // any thread, never blocks
  void set_pace(Pace pace);                   // any thread; empty: frames leave at once
  // Administratively down (a port disabled: ip link set down on a real NIC's PHY): a stream link
  // drops its peer and takes none while down (a listening link closes its socket, a connecting one
  // stops trying), so the far end loses its carrier as over a cable; up again, it listens or
  // connects as before. A datagram link has no carrier to drop: unchanged. Any thread.
  void set_enabled(bool enabled);
  void stop();                                // joins the I/O thread; idempotent
  const LinkCounters& counters() const { return counters_; }
  const std::string& name() const { return name_; }
  const LinkSpec& spec() const { return spec_; }
  bool peer_connected() const { return connected_.load(); }

 private:
  void run();
  void open_sockets();
  void open_listener();
  void follow_enabled();  // I/O thread: what set_enabled asked for
  void try_connect();
  void accept_peer();
  void read_datagrams(std::vector<uint8_t>& buffer);
  void read_stream(std::vector<uint8_t>& buffer);
  void drain_outbox();
  int64_t poll_timeout_ns() const;  // until the next reconnect or the next paced frame; -1: none
  void drop_peer(const char* why);
  void set_carrier(bool up);
  void wake();

  std::string name_;
  LinkSpec spec_;
  Receive receive_;
  Carrier carrier_;
  LinkOptions options_;
  LinkCounters counters_;
  transport::StreamDecoder decoder_;  // I/O thread; reset whenever the peer goes

  vfio_user::UniqueFd listen_fd_, peer_fd_, wake_fd_;
  sockaddr_storage remote_{};  // a UNIX datagram link's remote (each datagram is addressed to it)
  socklen_t remote_length_ = 0;
  std::atomic<bool> connected_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> enabled_{true};
  bool carrier_up_ = false;
  bool was_enabled_ = true;  // I/O thread: enabled_ as last followed
  uint64_t next_connect_ms_ = 0;

  mutable std::mutex outbox_mutex_;
  struct Outgoing {
    std::vector<uint8_t> bytes;  // encoded stream bytes or a whole datagram
    uint64_t release_ns = 0;     // steady clock; 0: at once
  };
  std::deque<Outgoing> outbox_;
  Pace pace_;
  size_t outbox_bytes_ = 0;
  size_t head_written_ = 0;  // bytes of outbox_.front() already on a stream

  std::thread thread_;
};

}  // namespace hcaemu::bridge
