#pragma once
// Rebuilds a RoCEv2 workload from the frames of a capture (issue 13, "Inputs"): the hosts (by GID
// and MAC), the queue pairs, and per QP its messages from their FIRST/MIDDLE/LAST/ONLY packets,
// with the protocol's own packets (ACKs, NAKs, READ responses, atomic ACKs) tied to the messages
// they answer. RC carries no source QPN: a requester's QPN is the destination QPN of the responses
// that answer its PSNs. Retransmissions, duplicates, NAKs and RNR NAKs are counted as such, never
// as new messages. Every frame is either part of a message, a protocol packet, a connection set-up
// MAD on QP1, or listed as unmapped with the reason: nothing is guessed silently.
#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "transport/roce_packet.h"

namespace hcaemu::replay {

using transport::Gid;
using transport::Mac;

enum class Service : uint8_t { kRc, kUc, kUd, kXrc };
const char* service_name(Service service);

// What a message does, as a verbs user posts it.
enum class MessageKind : uint8_t { kSend, kSendImm, kSendInvalidate, kWrite, kWriteImm, kRead, kCompareSwap, kFetchAdd };
const char* message_kind_name(MessageKind kind);
std::optional<MessageKind> message_kind_from_name(const std::string& name);

struct Host {
  Gid gid{};
  Mac mac{};
  std::string name;  // "h0", "h1", ... in order of first appearance
};

struct QueuePair {
  size_t host = 0;       // index into hosts
  size_t peer_host = 0;
  uint32_t qpn = 0;      // 0: not on the wire (a UC requester)
  uint32_t peer_qpn = 0;
  Service service = Service::kRc;
  uint32_t mtu = 0;      // the largest payload of a non-last packet seen (0: none seen)
  uint32_t first_psn = 0;
  // From hcaemu's QP table of the same run (apply_qp_table), when known: the CQs each end
  // completed into, by their number in the captured function and their size.
  struct Cq {
    uint32_t number = 0, entries = 0;
    auto operator<=>(const Cq&) const = default;
  };
  std::optional<Cq> send_cq, recv_cq, peer_send_cq, peer_recv_cq;
  uint32_t sq_wqebbs = 0;  // the requester's send queue, in 64-byte blocks (0: not known)
  uint32_t max_rd_atomic = 0;  // the requester's READs/atomics in flight at most (0: not known)
  uint32_t peer_rq_stride = 0;  // the responder's receive WQE in bytes (0: not known, or an SRQ)
  std::optional<uint16_t> function;  // the requester's function (vhca id) in the trace
  // QP1's datagrams between two hosts: a connection manager's MADs. Not workload data, but work
  // the captured devices did (a WQE fetch, a payload read, a receive) that the replay repeats so
  // the data messages beside them wait as they did (docs/replay.md).
  bool connection_setup = false;
  uint32_t device_qpn = 0;  // the QP's number in its function when the wire shows another (QP1: the GSI QP's), from the QP table
};

struct Message {
  size_t qp = 0;                 // index into queue_pairs (the requester's)
  MessageKind kind = MessageKind::kSend;
  uint64_t bytes = 0;            // WRITE/READ: the RETH length; SEND: the payloads less pad
  uint32_t first_psn = 0, packets = 0;
  uint32_t last_psn = 0;         // of the request (a READ: of its last response)
  std::optional<uint32_t> immediate;  // ImmDt or the IETH's rkey
  uint64_t first_ns = 0;         // first request packet
  uint64_t last_ns = 0;          // last request packet (first transmission)
  uint64_t done_ns = 0;          // acknowledged / last response; UC, UD: last packet (0: never seen)
  uint32_t retransmitted = 0;    // request packets sent again
  uint32_t rnr_naks = 0, naks = 0;  // RNR NAKs and other NAKs naming one of its PSNs
  // From hcaemu's latency trace of the same run (apply_trace_timing), 0 when not known: the
  // doorbell that posted it and the CQE that completed it, model time in ps.
  uint64_t doorbell_ps = 0, cqe_ps = 0;  // cqe_ps 0 with a doorbell: posted unsignalled
  bool payload_dma = true;                // false: the trace saw no payload read (inline data)
  bool complete = false;         // every packet of the request was seen
};

struct Anomalies {
  uint64_t retransmitted_packets = 0;  // a request PSN seen again
  uint64_t duplicate_responses = 0;    // a response PSN seen again
  uint64_t psn_gaps = 0;               // a request PSN ahead of the next expected one (capture loss)
  uint64_t sequence_naks = 0, rnr_naks = 0, other_naks = 0;
  uint64_t acks = 0;
  uint64_t cm_mads = 0;                // UD datagrams to QP1: connection set-up, not data (messages of connection_setup QPs)
  uint64_t cnps = 0;                   // congestion notifications (DCQCN), not data
  uint64_t ecn_marked = 0;             // packets that arrived Congestion Experienced
};

struct Unmapped {
  uint64_t frame = 0;
  uint64_t time_ns = 0;
  std::string reason;
};

struct Reconstruction {
  std::vector<Host> hosts;
  std::vector<QueuePair> queue_pairs;
  std::vector<Message> messages;  // in order of first packet
  Anomalies anomalies;
  std::vector<Unmapped> unmapped;
  uint64_t frames = 0, roce_frames = 0;
  uint64_t mapped_roce_frames = 0;  // RoCE frames that are part of a message or answer one
};

class Reconstructor {
 public:
  // Frames in capture order.
  void add(uint64_t index, uint64_t time_ns, std::span<const uint8_t> frame);
  // Pairs the directions and builds the messages.
  Reconstruction finish();

 private:
  struct Packet {
    uint64_t frame = 0, time_ns = 0;
    transport::RocePacket header;  // payload dropped; its length kept
    uint32_t payload_bytes = 0;
  };
  // One direction of traffic between two hosts to one destination QP.
  struct StreamKey {
    size_t from = 0, to = 0;
    uint32_t dest_qp = 0;
    auto operator<=>(const StreamKey&) const = default;
  };
  struct StreamState;  // a request stream's messages by unwrapped PSN
  size_t host_of(const Gid& gid, const Mac& mac);
  void unmapped(uint64_t frame, uint64_t time_ns, std::string reason);
  // Which response stream answers which request stream: the one whose PSNs it names most.
  std::map<StreamKey, StreamKey> pair_streams() const;
  void build_messages(const StreamKey& key, const std::vector<Packet>& packets, uint32_t requester_qpn,
                      StreamState& state);
  void request_packet(const Packet& p, StreamState& state);
  void apply_responses(const std::vector<Packet>& packets, StreamState& state);
  void response_packet(const Packet& p, int64_t psn, StreamState& state);
  void add_datagrams(const std::vector<Packet>& datagrams, bool connection_setup);

  Reconstruction r_;
  std::map<StreamKey, std::vector<Packet>> requests_, responses_;
  std::vector<Packet> datagrams_, mads_;
};

// Reads a capture file through CaptureReader; `error` names the file and frame on failure.
std::optional<Reconstruction> reconstruct_capture(const std::string& path, std::string* error);

}  // namespace hcaemu::replay
