#pragma once
// The switched network between hcareplay's hosts, in model time (picoseconds), as discrete events
// of its own: the caller hands in each frame when its last bit leaves a host's NIC and runs the
// network up to its clock; frames come out at the hosts they are addressed to (by destination
// MAC). Switches are output-queued and store-and-forward, with eight priorities served strictly
// (7 first); their buffer is shared or per port; ECN-capable packets are marked CE by RED on the
// egress queue; with PFC, an ingress port holding more than xoff bytes pauses its upstream sender
// with an 802.1Qbb frame (refreshed at half its quanta while still above xon, resumed with quanta
// 0 below xon), without PFC a full buffer drops. Equal-cost paths are chosen by a hash of the UDP
// source port. Deterministic: RED draws from a seeded generator and events of one time run in
// the order they were made.
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fabric/topology.h"

namespace hcaemu::fabric {

using Mac = std::array<uint8_t, 6>;

// One direction of a link: what it carried and what waited for it.
struct LinkStats {
  std::string name;  // "host0->switch0"
  uint64_t frames = 0, bytes = 0, busy_ps = 0;
  uint64_t max_queue_bytes = 0, max_queue_frames = 0;
  uint64_t drops = 0, ecn_marks = 0;
  uint64_t pause_frames = 0;  // PFC frames this sender sent (resumes included)
  uint64_t paused_ps = 0;     // time this sender had a priority paused with frames waiting
  struct Bin {
    uint64_t bytes = 0, max_queue_bytes = 0, ecn_marks = 0, pause_frames = 0, drops = 0;
  };
  std::map<uint64_t, Bin> timeline;  // per bin with anything in it
};

struct NetworkTotals {
  uint64_t frames_in = 0, frames_delivered = 0, drops = 0, unroutable = 0, ecn_marks = 0, pause_frames = 0;
};

class Network {
 public:
  struct Hooks {
    // A frame reaches host `host` (its last bit in) at `at_ps`; the receiver may take the buffer.
    // Called once the frame is on its last link, so `at_ps` may lie ahead of the network's time:
    // the receiver must not act on the frame before then. (frames_delivered counts it then too.)
    std::function<void(uint32_t host, std::vector<uint8_t>& frame, uint64_t at_ps)> deliver;
    // A frame the network itself sent (PFC), for the capture.
    std::function<void(uint64_t at_ps, std::span<const uint8_t> frame)> capture;
    // A frame handed in by send_at is taken now, at `at_ps` (for the caller's capture and counts).
    std::function<void(uint32_t host, std::span<const uint8_t> frame, uint64_t at_ps)> taken;
  };
  Network(const Topology& topology, std::vector<Mac> host_macs, uint64_t seed, uint64_t bin_ps, Hooks hooks);

  // Host `host`'s NIC finished sending `frame` at `at_ps` (not before the last run_until).
  void send(uint32_t host, std::vector<uint8_t>&& frame, uint64_t at_ps);
  // The same for a host that runs ahead of the network: `at_ps` may lie ahead of its time (not
  // before the last run_until). The network takes the frame then, behind its own events of that
  // time (frames of one time host by host, a host's in the order it handed them in): an event of
  // its own, so the caller needs no wake per frame to hand it in on time.
  void send_at(uint32_t host, std::vector<uint8_t>&& frame, uint64_t at_ps);
  // Runs every event due at or before `now_ps`.
  void run_until(uint64_t now_ps);
  std::optional<uint64_t> next_event_ps() const;
  // The same for the network's own events (a frame on a link, a transmitter done, a pause) and for
  // the frames of send_at not taken yet: a frame handed in shows nowhere before it has crossed a
  // link, so a caller that runs the network lazily may wait one link longer for those.
  std::optional<uint64_t> next_own_event_ps() const;
  std::optional<uint64_t> next_handed_in_ps() const;
  // How much longer than the network's own events a frame of send_at may wait to be taken: the
  // shortest propagation of a host's link when every host's links end at switches (a frame taken
  // shows first at the far end of its first link, as a switch's event), 0 with hosts linked directly.
  uint64_t handed_in_grace_ps() const { return handed_in_grace_; }
  // The time of the event running now (or of the last one run, or of the last send).
  uint64_t now_ps() const { return now_; }
  // Until when host `host`'s link takes nothing new (PFC paused it, or frames a pause held back
  // still wait); 0 when it is free at `now_ps`. The NIC holds its next message till then.
  uint64_t host_blocked_until(uint32_t host, uint64_t now_ps) const;

  // Statistics and timelines start again at zero, with time counted from `origin_ps` (the
  // workload's start after its probes); frames in flight stay.
  void restart_statistics(uint64_t origin_ps);

  const std::vector<LinkStats>& links() const { return stats_; }
  const NetworkTotals& totals() const { return totals_; }
  const Topology& topology() const { return topology_; }

 private:
  struct Queued {
    uint32_t frame;      // slot in frames_
    uint32_t bytes;
    int32_t in_port;     // the switch port it came in through (-1: from its host)
    uint8_t priority;
  };
  // One direction of a link: node -> peer.
  struct Transmitter {
    uint32_t node = 0, peer = 0;   // node numbers: hosts first, then switches
    uint32_t peer_port = 0;        // index of the reverse transmitter at the peer (its in-port)
    double gbps = 100.0;
    uint64_t propagation_ps = 0;
    std::array<std::deque<Queued>, 8> queues;
    uint64_t queued_bytes = 0;
    uint32_t queued_frames = 0;
    bool busy = false;
    uint64_t free_ps = 0;                   // a host's: when its NIC's last frame was out
    std::array<uint64_t, 8> paused_until{};  // PFC from the peer, per priority
    uint64_t pause_started_ps = 0;
    bool waiting_paused = false;
    Queued current{};  // the frame on the wire while busy
  };
  struct Node {
    bool is_host = true;
    std::vector<uint32_t> ports;  // transmitter numbers, in link order
    uint64_t buffer_used = 0;     // a switch's shared buffer
    // PFC per in-port and priority: bytes held, and whether the upstream is paused.
    std::vector<std::array<uint64_t, 8>> ingress_bytes;
    std::vector<std::array<bool, 8>> pausing;
    std::vector<std::array<uint64_t, 8>> refresh_due;  // the refresh of a pause still wanted
    std::vector<std::vector<uint32_t>> routes;  // per destination host: candidate ports
  };
  enum class EventKind : uint8_t { kArrive, kTxDone, kPause, kWake, kRefresh };
  struct Event {
    uint64_t at, order;
    EventKind kind;
    uint32_t a = 0, b = 0;  // kArrive: node, in-port; kTxDone/kWake: transmitter; kPause: transmitter, priority;
                            // kRefresh: node, in-port * 8 + priority
    uint32_t frame = 0;     // kArrive: slot; kPause: quanta
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : order > o.order; }
  };
  struct HandedIn {  // a frame of send_at
    uint64_t at, order;
    uint32_t host, slot;
    bool operator>(const HandedIn& o) const { return at != o.at ? at > o.at : order > o.order; }
  };

  void build(const Topology& topology);
  void schedule(uint64_t at, EventKind kind, uint32_t a, uint32_t b, uint32_t frame);
  uint32_t store(std::vector<uint8_t>&& frame);
  void take_from_host(uint32_t host, uint32_t slot);
  void run_event(const Event& e);
  void arrive(uint32_t node, uint32_t in_port, uint32_t slot, uint64_t at);
  void enqueue(uint32_t transmitter, uint32_t slot, int32_t in_port);
  void start(uint32_t transmitter);
  void tx_done(uint32_t transmitter);
  void release(Node& n, uint32_t node, const Queued& q);
  void send_pause(uint32_t node, uint32_t in_port, uint8_t priority, bool pause);
  void pause_arrived(uint32_t transmitter, uint8_t priority, uint16_t quanta);
  std::optional<uint32_t> route(uint32_t node, uint32_t slot);
  uint64_t serialise_ps(const Transmitter& t, uint64_t bytes) const;
  LinkStats::Bin& bin(uint32_t transmitter);
  void note_queue(uint32_t transmitter);
  double draw();

  Topology topology_;
  std::vector<Mac> host_macs_;
  uint64_t bin_ps_;
  Hooks hooks_;
  uint64_t rng_;
  uint64_t tiebreak_;  // seeds the order of frames that arrive at one node at the same time
  uint64_t now_ = 0, next_order_ = 0, origin_ = 0;
  std::vector<Node> nodes_;
  std::vector<Transmitter> tx_;
  std::vector<LinkStats> stats_;
  // Per link: the bin written last (time only moves on, so most writes hit it again).
  std::vector<std::pair<uint64_t, LinkStats::Bin*>> last_bin_;
  std::vector<Event> events_;  // a min-heap on (at, order)
  std::vector<HandedIn> handed_in_;  // a min-heap on (at, order)
  uint64_t next_handed_in_ = 0;
  uint64_t handed_in_grace_ = 0;
  std::vector<std::vector<uint8_t>> frames_;
  std::vector<uint32_t> free_slots_;
  NetworkTotals totals_;
};

}  // namespace hcaemu::fabric
