#include "replay/replayer.h"

#include <systemc>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <memory>

#include "hostsim/rdma_host.h"
#include "fabric/network.h"
#include "model/queues/completion_queue.h"
#include "model/rdma/paced_resumptions.h"
#include "model/work_items.h"
#include "replay/ideal.h"
#include "pcie/model_time.h"
#include "sriov/switch_ingress.h"
#include "traces/latency_trace.h"
#include "traces/pcap_writer.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"  // work requests name only what they use

namespace hcaemu::replay {

namespace {

using namespace hostsim;
using sc_core::sc_time;
using sc_core::SC_PS;

constexpr uint32_t kQkey = 0x11111111;
constexpr uint32_t kGrh = 40;  // a UD receive starts with the GRH

uint64_t kernel_ps() { return pcie::to_ps(sc_core::sc_time_stamp()); }

// Frame buffers handed back by the hosts once received, for the engines' next frames: a frame's
// bytes are then built in place once and never copied or allocated on the way (MTU-sized
// buffers are the replay's most frequent allocation).
class FramePool {
 public:
  void give(std::vector<uint8_t>&& buffer) {
    std::vector<std::vector<uint8_t>>& spare = buffer.size() >= kLong ? long_ : short_;
    if (spare.size() < kKept && buffer.capacity() != 0) spare.push_back(std::move(buffer));
  }
  // A sender's next buffer, in place of `buffer` (what the switch left it, perhaps nothing): one
  // that held a long frame if there is one. The sender reads its payload into the buffer as it
  // stands, and growing a short one (a received ACK's, or an emptied one) zeroes its bytes first.
  void renew(std::vector<uint8_t>& buffer) {
    if (buffer.size() >= kLong) return;
    std::vector<std::vector<uint8_t>>& spare = !long_.empty() ? long_ : short_;
    if (spare.empty()) return;
    std::vector<uint8_t> old = std::exchange(buffer, std::move(spare.back()));
    spare.pop_back();
    give(std::move(old));
  }

 private:
  static constexpr size_t kKept = 1024;  // frames on the wire at once rarely exceed it
  static constexpr size_t kLong = 1024;
  std::vector<std::vector<uint8_t>> long_, short_;
};

// One host's device: its work items (doorbells, frames, timers, an SQ's next message) one at a
// time and in order on its own thread, each in model time with one wait at its end.
class ReplayHost : public sc_core::sc_module, private model::RdmaEngine::SqScheduler {
 public:
  SC_HAS_PROCESS(ReplayHost);
  // frame_lead: how long before its arrival hcaemu's embedded switch queues a frame at its function
  // (the wire's propagation): the place in the queue a frame takes here.
  ReplayHost(sc_core::sc_module_name name, RdmaNode& node, FramePool& frames, sc_time frame_lead,
             std::function<void()> after_item)
      : sc_module(name), node_(node), frames_(frames), frame_lead_(frame_lead), after_item_(std::move(after_item)) {
    node_.engine.set_sq_scheduler(this);
    node_.engine.set_timer_hook([this](const model::TimerDeadline& d) {
      const uint64_t now = kernel_ps();
      timer_.notify(d.model_ps > now ? pcie::from_ps(d.model_ps - now) : sc_core::SC_ZERO_TIME);
    });
    SC_THREAD(run);
    SC_METHOD(timer_fired);
    sensitive << timer_;
    dont_initialize();
    SC_METHOD(paced_due);
    sensitive << pace_;
    dont_initialize();
  }
  ~ReplayHost() override { node_.engine.set_sq_scheduler(nullptr); }

  void doorbell(std::vector<uint8_t> bytes) { push({Kind::kDoorbell, std::move(bytes), pcie::model_time()}); }
  // A frame that arrives at `arrival`, handed over by the network at `handed_over` (model time;
  // the kernel may be past it already, never past the arrival): it takes its place in the queue as
  // if handed over then.
  void frame(std::vector<uint8_t> bytes, sc_time arrival, sc_time handed_over) {
    push({Kind::kFrame, std::move(bytes), arrival}, arrival > handed_over + frame_lead_ ? arrival - frame_lead_ : handed_over);
  }
  // Called before the host chooses its next item: the network, which runs lazily, hands over the
  // frames of times gone by first, so that which item goes first does not depend on when it ran.
  void set_before_choice(std::function<void()> f) { before_choice_ = std::move(f); }

 private:
  enum class Kind : uint8_t { kDoorbell, kFrame, kTimer, kResume };
  struct Item {
    Kind kind;
    std::vector<uint8_t> data{};
    sc_time not_before{};
    model::SqResume sq{};
    sc_time queued_at{};  // where it stands in the queue (push)
  };
  // Items queue in the order a live function (model/hca_function.cpp) would have queued them: a
  // doorbell, timer or resumption when pushed, a frame when the embedded switch hands it over (its
  // arrival less the wire's propagation), so a frame the network hands over earlier, while it is
  // still on the wire, takes that place as well. As there, the first item that is due runs: a frame
  // queued ahead of the SQ's next step runs before it once it has arrived. The thread is woken when
  // the item is due, not before (an event notified earlier stands).
  void push(Item item, std::optional<sc_time> queued_at = std::nullopt) {
    const sc_time now = sc_core::sc_time_stamp();
    item.queued_at = queued_at.value_or(now);
    const sc_time due = std::max(item.not_before, now);
    auto at = work_.end();
    while (at != work_.begin() && std::prev(at)->queued_at > item.queued_at) --at;
    work_.insert(at, std::move(item));
    work_event_.notify(due - now);
  }
  void timer_fired() { push({Kind::kTimer}); }
  // A rate-limited QP's (DCQCN) next message waits aside until it may go, so frames and other QPs'
  // work are not held behind it; then it joins the queue.
  void resume_later(const model::SqResume& resume) override {
    if (resume.not_before_ps <= kernel_ps()) return push({Kind::kResume, {}, {}, resume});
    if (const auto wake = paced_.hold(resume, kernel_ps())) pace_.notify(pcie::from_ps(*wake));
  }
  void paced_due() {
    const auto next = paced_.release_due(kernel_ps(), [this](const model::SqResume& r) { push({Kind::kResume, {}, {}, r}); });
    if (next) pace_.notify(pcie::from_ps(*next));
  }
  bool reread_queued(uint32_t qpn) override {
    for (Item& item : work_)
      if (item.kind == Kind::kResume && item.sq.qpn == qpn) return item.sq.reread = true;
    return paced_.reread(qpn);
  }
  void run() {
    model::run_work_items(
        work_, work_event_,
        [this](Item& item) {
          switch (item.kind) {
            case Kind::kDoorbell: node_.engine.doorbell(item.data, pcie::to_ps(item.not_before)); break;
            case Kind::kFrame:
              node_.engine.receive(item.data, pcie::to_ps(item.not_before));
              frames_.give(std::move(item.data));
              break;
            case Kind::kTimer: node_.engine.on_timer(); break;
            case Kind::kResume: node_.engine.resume_sq(item.sq); break;
          }
        },
        after_item_,  // the host polls its CQs at once: completions are seen when they land
        [this] {
          if (before_choice_) before_choice_();
        });
  }

  RdmaNode& node_;
  FramePool& frames_;
  sc_time frame_lead_;
  std::function<void()> after_item_;
  std::function<void()> before_choice_;
  std::deque<Item> work_;
  model::PacedResumptions paced_;
  sc_core::sc_event work_event_, timer_, pace_;
};

// The network between the hosts (fabric::Network) on the kernel's time: a host's frame is handed
// to it ahead, stamped with the model time its last bit leaves the NIC, and taken then as one of
// its events; its events run lazily, by their deadlines, and whoever looks (a host choosing its
// next item, a transmit gate, the capture, the statistics) runs them up to the kernel's time
// first, so no figure depends on when they ran (the latency trace, written as its stages happen,
// may list simultaneous hosts' rows in another order). Frames come out at their hosts as work items. A
// frame to its own sender turns around inside the NIC (sriov::SwitchIngress holds it for its model
// time). The capture holds each frame as it left its sender (and the PFC frames the switches
// send), from the workload's start on.
class Wire : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Wire);
  Wire(sc_core::sc_module_name name, std::vector<std::unique_ptr<ReplayHost>>& hosts, RdmaCluster& cluster,
       FramePool& frames, const fabric::Topology& topology, const ReplayOptions& o)
      : sc_module(name), hosts_(hosts), cluster_(cluster), frames_(frames),
        ingress_("ingress", [this](uint16_t from, std::vector<uint8_t>& frame, uint32_t) { forward(from, frame); }),
        network_(topology, macs(cluster), o.seed, std::max<uint64_t>(o.bin_ps, 1),
                 {.deliver = [this](uint32_t host, std::vector<uint8_t>& frame,
                                    uint64_t at) {
                    hosts_[host]->frame(std::move(frame), pcie::from_ps(at), pcie::from_ps(network_.now_ps()));
                  },
                  .capture = [this](uint64_t at, std::span<const uint8_t> frame) {
                    if (pcap_) pcap_->write(at - origin_ps_, frame);
                  },
                  .taken = [this](uint32_t, std::span<const uint8_t> frame, uint64_t at) { count(frame, at); }}) {
    for (size_t i = 0; i < cluster.size(); ++i) ports_.push_back(std::make_unique<Port>(*this, uint16_t(i)));
    for (size_t i = 0; i < cluster.size(); ++i) {
      hosts_[i]->set_before_choice([this] { catch_up(); });
      cluster.node(int(i)).engine.set_port(ports_[i].get());
      cluster.node(int(i)).engine.set_transmit_gate([this, i](uint64_t now) {
        catch_up();  // a pause may have reached the host since the network last ran
        return network_.host_blocked_until(uint32_t(i), now);
      });
      // Every frame here is one of these engines', and the fabric changes no bit the ICRC covers
      // (ECN is masked): nothing to verify, and the ICRC is worth computing only for the capture.
      cluster.node(int(i)).engine.set_wire_checksums({.compute = !o.pcap_path.empty(), .verify = false});
    }
    loopback_delay_ = sc_time(o.preset.propagation_ns, sc_core::SC_NS);
    // How long the network may leave an event unrun: nothing it does shows outside it sooner than
    // one link's propagation later (a frame at a host, a pause at a host's port), and whoever looks
    // earlier (a sender, a host's transmit gate, the capture, the statistics) runs it up to now
    // first. Events closer together than that then take one wake of the kernel, not one each.
    double shortest_ns = topology.links.empty() ? 0.0 : topology.links.front().propagation_ns;
    for (const fabric::Link& link : topology.links) shortest_ns = std::min(shortest_ns, link.propagation_ns);
    const uint64_t shortest_ps = uint64_t(std::llround(shortest_ns * 1000.0));
    slack_ps_ = shortest_ps > 0 ? shortest_ps - 1 : 0;
    SC_METHOD(step);
    sensitive << wake_;
    dont_initialize();
  }
  // From now on: the capture is written, and the statistics start again at zero.
  void start_workload(traces::PcapWriter* pcap) {
    catch_up();
    origin_ps_ = kernel_ps();
    pcap_ = pcap;
    packets = bytes = 0;
    network_.restart_statistics(origin_ps_);
  }
  uint64_t packets = 0, bytes = 0;
  const fabric::Network& network() const { return network_; }
  // Runs the network's events up to the kernel's time (what it may still hold back).
  void catch_up() {
    network_.run_until(kernel_ps());
    reschedule();
  }
  // The same once the simulation has ended (nothing to wake any more): the statistics are whole.
  void finish() { network_.run_until(kernel_ps()); }

 private:
  static std::vector<fabric::Mac> macs(RdmaCluster& cluster) {
    std::vector<fabric::Mac> out;
    for (size_t i = 0; i < cluster.size(); ++i) out.push_back(cluster.node(int(i)).mac);
    return out;
  }
  // A host's frames go to the network as its events, at the model time the host sends them (ahead
  // of the kernel's), and wake nothing of their own; a frame to the host itself waits in the
  // ingress for the kernel's time instead.
  struct Port : transport::EthernetPort {
    Port(Wire& w, uint16_t from) : wire(w), from(from) {}
    void transmit(std::span<const uint8_t> frame) override {
      if (wire.to_itself(from, frame)) return wire.ingress_.submit(from, frame, pcie::model_time());
      wire.to_network(from, std::vector<uint8_t>(frame.begin(), frame.end()));
    }
    void transmit_buffer(std::vector<uint8_t>& frame) override {
      if (wire.to_itself(from, frame))
        wire.ingress_.submit_buffer(from, frame, pcie::model_time());
      else
        wire.to_network(from, std::exchange(frame, {}));
      wire.frames_.renew(frame);
    }
    Wire& wire;
    uint16_t from;
  };
  void to_network(uint16_t from, std::vector<uint8_t>&& frame) {
    network_.send_at(from, std::move(frame), pcie::model_time_ps());
    reschedule();
  }
  bool to_itself(uint16_t from, std::span<const uint8_t> frame) const {
    const auto& own = cluster_.node(int(from)).mac;
    return frame.size() >= 6 && std::equal(own.begin(), own.end(), frame.begin());
  }
  void count(std::span<const uint8_t> frame, uint64_t at_ps) {
    ++packets;
    bytes += frame.size();
    if (pcap_) pcap_->write(at_ps - origin_ps_, frame);
  }
  // Loopback inside the NIC, at the kernel's time: after the wire's propagation, as hcaemu's
  // embedded switch delivers every frame (its sender's own too: HcaFunction::receive), so a
  // capture of it replays alike.
  void forward(uint16_t from, std::vector<uint8_t>& frame) {
    network_.run_until(kernel_ps());  // the frames of earlier times go into the capture first
    count(frame, kernel_ps());
    std::vector<uint8_t> taken;
    taken.swap(frame);
    hosts_[from]->frame(std::move(taken), sc_core::sc_time_stamp() + loopback_delay_, sc_core::sc_time_stamp());
    reschedule();
  }
  void step() {
    scheduled_ps_.reset();  // the wake that ran this
    network_.run_until(kernel_ps());
    reschedule();
  }
  // One timed notification, for the latest time the network's next event may run (slack_ps_ after
  // it; a host's frame not taken yet one link longer: Network::handed_in_grace_ps); none again for
  // the same or a later time (the kernel's timed queue is a large part of a replay's cost).
  void reschedule() {
    std::optional<uint64_t> next_due;
    if (const auto own = network_.next_own_event_ps()) next_due = *own + slack_ps_;
    if (const auto handed = network_.next_handed_in_ps()) {
      const uint64_t d = *handed + slack_ps_ + network_.handed_in_grace_ps();
      next_due = next_due ? std::min(*next_due, d) : d;
    }
    if (!next_due) return;
    const uint64_t due = *next_due;
    if (scheduled_ps_ && *scheduled_ps_ <= due) return;
    const uint64_t now = kernel_ps();
    wake_.notify(pcie::from_ps(due - std::min(due, now)));
    scheduled_ps_ = std::max(due, now);
  }

  std::vector<std::unique_ptr<ReplayHost>>& hosts_;
  RdmaCluster& cluster_;
  FramePool& frames_;
  sriov::SwitchIngress ingress_;
  fabric::Network network_;
  std::vector<std::unique_ptr<Port>> ports_;
  traces::PcapWriter* pcap_ = nullptr;
  uint64_t origin_ps_ = 0;
  std::optional<uint64_t> scheduled_ps_;  // the pending wake's time
  uint64_t slack_ps_ = 0;                 // how long an event may wait to be run (catch_up)
  sc_core::sc_event wake_;
  sc_time loopback_delay_;
};

uint8_t wqe_opcode(MessageKind kind) {
  switch (kind) {
    case MessageKind::kSend: return model::wqe_op::kSend;
    case MessageKind::kSendImm: return model::wqe_op::kSendImm;
    // The rkey a SEND with Invalidate names is the capture's, not an MKEY here: the replay sends the
    // same bytes with a 4-byte immediate instead of the 4-byte IETH (the same packet length).
    case MessageKind::kSendInvalidate: return model::wqe_op::kSendImm;
    case MessageKind::kWrite: return model::wqe_op::kRdmaWrite;
    case MessageKind::kWriteImm: return model::wqe_op::kRdmaWriteImm;
    case MessageKind::kRead: return model::wqe_op::kRdmaRead;
    case MessageKind::kCompareSwap: return model::wqe_op::kAtomicCs;
    case MessageKind::kFetchAdd: return model::wqe_op::kAtomicFa;
  }
  return model::wqe_op::kSend;
}

uint8_t ib_mtu(uint32_t bytes) {  // IB enum: 1 = 256 ... 5 = 4096
  uint8_t e = 1;
  for (uint32_t m = 256; m < bytes && e < 5; m *= 2) ++e;
  return e;
}

bool is_send(MessageKind k) {
  return k == MessageKind::kSend || k == MessageKind::kSendImm || k == MessageKind::kSendInvalidate;
}

// What the driver keeps of one QP (of a probe or of the workload).
struct QpRun {
  const WorkloadQp* spec = nullptr;
  bool probe = false;
  size_t first_result = 0;     // index of its operation 0 in the results
  Qp* qp = nullptr;            // the requester, on spec->host
  Qp* peer = nullptr;          // its responder (RC, UC, XRC) or the datagram receiver (UD), on spec->peer
  std::array<uint8_t, 48> av{};
  size_t room = 16;            // operations it may have in flight (shape_of)
  size_t next = 0;             // the next operation to post
  std::deque<size_t> in_flight;  // posted, not completed (operation indices, in posting order)
  size_t signalled_in_flight = 0;  // of them, those that will bring a completion
  uint64_t last_done_ps = 0;
  size_t next_doorbell = 0;                   // the operation the engine takes up next
  std::map<uint64_t, size_t> op_of_message;   // the engine's message ids of operations not yet completed
};

// Posts the operations (the probes first, one after another, then the workload's) and collects
// their completions. Times are the kernel's; the workload's start (`origin`) is when the last
// probe completed.
class Driver : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Driver);
  Driver(sc_core::sc_module_name name, const Workload& w, const ReplayOptions& o, RdmaCluster& cluster,
         std::vector<std::unique_ptr<ReplayHost>>& hosts, const std::vector<Mr>& src, const std::vector<Mr>& dst,
         std::vector<QpRun>& runs, std::vector<OpResult>& results, size_t probe_ops, std::function<void()> on_start)
      : sc_module(name), o_(o), cluster_(cluster), hosts_(hosts), src_(src), dst_(dst), runs_(runs), results_(results),
        probe_ops_(probe_ops), on_start_(std::move(on_start)) {
    base_ps_ = UINT64_MAX;
    for (const WorkloadQp& qp : w.qps)
      for (const WorkloadOp& op : qp.ops)
        if (op.post_ps) base_ps_ = std::min(base_ps_, *op.post_ps);
    if (base_ps_ == UINT64_MAX) base_ps_ = 0;
    for (QpRun& r : runs_) {
      by_qpn_[{r.spec->host, r.qp->qpn}] = &r;
      probe_qps_ += r.probe;
      for (Cq* cq : {r.qp->scq, r.qp->rcq}) add_cq(r.spec->host, cq);
      for (Cq* cq : {r.peer->scq, r.peer->rcq}) add_cq(r.spec->peer, cq);
    }
    SC_THREAD(run);
  }
  // A host finished a work item: its completions are read now, CQ by CQ (QPs may share one, as the
  // captured software shared them). Receive completions are not looked at (the receives are posted
  // per SEND).
  void poll(size_t host) {
    if (host >= cqs_on_host_.size()) return;
    RdmaNode& node = cluster_.node(int(host));
    const size_t before = completed_;
    const bool was_started = started_;
    for (Cq* cq : cqs_on_host_[host])
      while (const auto cqe = node.poll(*cq)) {  // after every work item: no list of them built
        if (cqe->opcode != model::cqe::kRequester && cqe->opcode != model::cqe::kRequesterError) continue;
        if (const auto it = by_qpn_.find({host, cqe->qpn}); it != by_qpn_.end()) complete(*it->second, *cqe);
      }
    if (!started_ && probes_done_ == probe_ops_) start();
    // The driver's thread runs again only when something it waits for happened: a wake per work
    // item was a thread switch per frame (and a timed wait set again each time).
    if (completed_ != before || started_ != was_started) progressed_.notify(sc_core::SC_ZERO_TIME);
  }
  // A stage of one of host `host`'s messages as its engine stamps it: the doorbell names the
  // message (the QP's operations are taken in posting order), later stages find it by name.
  void stage(size_t host, const model::StageStamp& s, uint64_t at_ps) {
    const auto it = by_qpn_.find({host, s.qpn});
    if (it == by_qpn_.end()) return;
    QpRun& r = *it->second;
    if (s.stage == model::RdmaStage::kDoorbell) {
      if (r.next_doorbell < r.next) {
        result(r, r.next_doorbell).device_post_ps = at_ps;
        r.op_of_message[s.message] = r.next_doorbell++;
      }
      return;
    }
    const auto m = r.op_of_message.find(s.message);
    if (m == r.op_of_message.end()) return;
    OpResult& res = result(r, m->second);
    if (s.stage == model::RdmaStage::kWireFirstPacket && res.first_packet_ps == 0) res.first_packet_ps = at_ps;  // not a resend
    if (s.stage == model::RdmaStage::kCqeWrite) {
      res.device_done_ps = at_ps;
      r.op_of_message.erase(m);
    }
  }
  // What host `host`'s congestion control did to one of its QPs.
  void congestion(size_t host, const model::CongestionEvent& e, std::vector<QpCongestion>& out) {
    const auto it = by_qpn_.find({host, e.qpn});
    if (!started_ || it == by_qpn_.end() || it->second->probe) return;
    const size_t qp = size_t(it->second - &runs_[probe_qps_]);
    QpCongestion::Bin& bin = out[qp].timeline[(e.time_ps - std::min(e.time_ps, origin_ps_)) / std::max<uint64_t>(o_.bin_ps, 1)];
    bin.rate_gbps = e.rate_gbps;
    if (e.cnp) ++bin.cnps, ++out[qp].cnps;
  }
  bool started() const { return started_; }
  uint64_t origin_ps() const { return origin_ps_; }
  uint64_t end_ps() const { return end_ps_; }
  bool stalled() const { return stalled_; }
  std::function<uint64_t()> fabric_packets;

 private:
  OpResult& result(const QpRun& r, size_t op) { return results_[r.first_result + op]; }
  // A dependency of an operation of `from`: workload references count the workload's QPs only.
  bool done(const QpRun& from, const OpRef& ref) {
    const size_t qp = from.probe ? ref.qp : ref.qp + probe_qps_;
    return qp < runs_.size() && result(runs_[qp], ref.op).done_ps != 0;
  }

  void add_cq(size_t host, Cq* cq) {
    if (host >= cqs_on_host_.size()) cqs_on_host_.resize(host + 1);
    auto& cqs = cqs_on_host_[host];
    if (std::find(cqs.begin(), cqs.end(), cq) == cqs.end()) cqs.push_back(cq);
  }

  // A send completion of `r`'s QP; it also completes the unsignalled operations posted before it.
  void complete(QpRun& r, const Cqe& cqe) {
    while (!r.in_flight.empty()) {
      const size_t op = r.in_flight.front();
      r.in_flight.pop_front();
      OpResult& res = result(r, op);
      res.done_ps = std::max<uint64_t>(kernel_ps(), 1);
      r.last_done_ps = res.done_ps;
      ++completed_;
      if (r.probe) ++probes_done_;
      if (uint16_t(res_index_[r.first_result + op]) == cqe.wqe_counter) {
        r.signalled_in_flight -= std::min<size_t>(r.signalled_in_flight, 1);
        if (cqe.opcode != model::cqe::kRequester) res.status = cqe.syndrome != 0 ? cqe.syndrome : 0xff;
        break;
      }
    }
  }
  void start() {
    started_ = true;
    origin_ps_ = kernel_ps();
    if (on_start_) on_start_();
  }

  // When operation `next` of `r` may be posted (model ps); nullopt while it must wait for a
  // completion (the probes, its QP's room, a dependency, the previous operation for a think time).
  std::optional<uint64_t> post_time(const QpRun& r) {
    if (!r.probe && !started_) return std::nullopt;
    const WorkloadOp& op = r.spec->ops[r.next];
    if (r.in_flight.size() >= r.room) return std::nullopt;
    for (const OpRef& dep : op.after)
      if (!done(r, dep)) return std::nullopt;
    if (r.probe) return 0;
    const auto captured = [&](double factor) -> std::optional<uint64_t> {
      if (!op.post_ps) return std::nullopt;
      const uint64_t since = *op.post_ps - base_ps_;
      return origin_ps_ + (factor == 1.0 ? since : uint64_t(double(since) * factor));
    };
    switch (o_.timing) {
      case TimingMode::kAsap: return 0;
      case TimingMode::kAsis: if (auto t = captured(1.0)) return t; break;
      case TimingMode::kScale: if (auto t = captured(o_.scale)) return t; break;
      case TimingMode::kThink: break;
    }
    if (op.think_ps && r.next > 0) {  // after the previous operation of this QP has completed
      if (result(r, r.next - 1).done_ps == 0) return std::nullopt;
      return r.last_done_ps + *op.think_ps;
    }
    if (r.next == 0 && op.post_ps && o_.timing == TimingMode::kThink) return captured(1.0);
    return 0;
  }

  void post(QpRun& r) {
    const WorkloadOp& op = r.spec->ops[r.next];
    RdmaNode& node = cluster_.node(int(r.spec->host));
    RdmaNode& peer = cluster_.node(int(r.spec->peer));
    const Mr& src = src_[r.spec->host];
    const Mr& dst = dst_[r.spec->peer];
    const bool atomic = op.kind == MessageKind::kCompareSwap || op.kind == MessageKind::kFetchAdd;
    Wr wr{.opcode = wqe_opcode(op.kind)};
    if (op.inline_data) wr.inline_data = std::vector<uint8_t>(op.bytes, 0x5a);
    else if (op.bytes != 0) wr.sges = {{src.va(0), uint32_t(op.bytes), src.key}};
    if (!is_send(op.kind)) {
      wr.remote_va = dst.va(0);
      wr.rkey = dst.key;
    }
    if (atomic) wr.swap_add = 1;
    wr.imm = op.immediate.value_or(0);
    // The last one always completes, and so does one that fills the QP's room: unsignalled
    // operations hold their SQ slots until a later completion, which must come.
    wr.signalled = op.signalled || r.next + 1 == r.spec->ops.size() || r.in_flight.size() + 1 >= r.room;
    r.signalled_in_flight += wr.signalled;
    if (r.spec->service == Service::kUd) {
      wr.av = r.av;
      peer.post_recv(*r.peer, {{dst.va(0), uint32_t(op.bytes) + kGrh, dst.key}});
    } else if (is_send(op.kind) || op.kind == MessageKind::kWriteImm) {  // these take a receive WQE
      peer.post_recv(*r.peer, {{dst.va(0), uint32_t(std::max<uint64_t>(op.bytes, 1)), dst.key}});
    }
    const uint16_t index = node.post_send(*r.qp, wr, false);
    res_index_[r.first_result + r.next] = index;
    result(r, r.next).post_ps = kernel_ps();
    last_progress_ps_ = kernel_ps();  // the stall clock starts at a post too (after an idle gap, say)
    r.in_flight.push_back(r.next);
    ++r.next;
  }

  void ring(QpRun& r) { hosts_[r.spec->host]->doorbell(cluster_.node(int(r.spec->host)).publish(*r.qp)); }
  // The operation just posted and the next one have the same captured post time (asis, scale).
  bool shares_doorbell_with_next(const QpRun& r) const {
    if (o_.timing != TimingMode::kAsis && o_.timing != TimingMode::kScale) return false;
    if (r.next == 0 || r.next >= r.spec->ops.size()) return false;
    const auto& now = r.spec->ops[r.next - 1].post_ps;
    return now && r.spec->ops[r.next].post_ps == now;
  }

  void run() {
    res_index_.assign(results_.size(), 0);
    if (probe_ops_ == 0) start();
    const size_t total = results_.size();
    auto last_report = std::chrono::steady_clock::now();
    for (;;) {
      std::optional<uint64_t> wake;
      bool waiting_for_completion = false;
      for (QpRun& r : runs_) {
        // One doorbell per operation, as a driver posting them one by one rings, but captured
        // operations that one doorbell brought (one ibv_post_send of a list: they share its time)
        // go in one.
        bool unrung = false;
        while (r.next < r.spec->ops.size()) {
          const auto at = post_time(r);
          if (!at) {
            waiting_for_completion = true;
            break;
          }
          if (*at > kernel_ps()) {
            wake = std::min(wake.value_or(UINT64_MAX), *at);
            break;
          }
          post(r);
          unrung = true;
          if (!shares_doorbell_with_next(r)) ring(r), unrung = false;
        }
        if (unrung) ring(r);
        if (!r.in_flight.empty()) waiting_for_completion = true;
      }
      if (o_.progress && std::chrono::steady_clock::now() - last_report > std::chrono::seconds(1)) {
        last_report = std::chrono::steady_clock::now();
        o_.progress(kernel_ps() - origin_ps_, fabric_packets ? fabric_packets() : 0, completed_ - probes_done_,
                    total - probe_ops_);
      }
      if (completed_ == total) break;
      // A stall is a completion that should come and does not: unsignalled operations alone wait
      // for their QP's next signalled one, which may be far off (asis).
      const bool in_flight =
          std::any_of(runs_.begin(), runs_.end(), [](const QpRun& r) { return r.signalled_in_flight != 0; });
      if (in_flight && kernel_ps() - last_progress_ps_ >= stall_ps()) {
        stalled_ = true;  // operations in flight, none completing: stop rather than spin
        break;
      }
      if (in_flight) arm_stall_check();
      const size_t before = completed_;
      if (wake && waiting_for_completion)  // (operations in flight are waited for too)
        wait(pcie::from_ps(*wake - kernel_ps()), progressed_ | stall_check_);
      else if (wake)
        wait(pcie::from_ps(*wake - kernel_ps()));
      else if (waiting_for_completion)
        wait(progressed_ | stall_check_);
      else
        break;  // nothing left that could ever be posted
      if (completed_ != before) last_progress_ps_ = kernel_ps();
    }
    end_ps_ = kernel_ps();
    sc_core::sc_stop();
  }

  // Nothing completing for this long ends the run.
  uint64_t stall_ps() const { return stall_limit(o_); }
  // One pending check at a time, at the stall deadline of the progress seen when it was set; a
  // check that finds progress since is set again for the new deadline. (A timed wait per loop
  // would leave one cancelled timeout per completion in the kernel's timed queue for a whole
  // stall limit: tens of thousands of entries that every later notification sifts through.)
  void arm_stall_check() {
    const uint64_t now = kernel_ps();
    if (stall_check_ps_ && *stall_check_ps_ > now) return;  // the pending one comes first
    const uint64_t deadline = last_progress_ps_ + stall_ps();
    stall_check_.notify(pcie::from_ps(deadline - std::min(deadline, now)));
    stall_check_ps_ = deadline;
  }

  const ReplayOptions& o_;
  RdmaCluster& cluster_;
  std::vector<std::unique_ptr<ReplayHost>>& hosts_;
  const std::vector<Mr>& src_;
  const std::vector<Mr>& dst_;
  std::vector<QpRun>& runs_;
  std::vector<OpResult>& results_;
  size_t probe_ops_, probe_qps_ = 0;
  std::function<void()> on_start_;
  std::map<std::pair<size_t, uint32_t>, QpRun*> by_qpn_;
  std::vector<std::vector<Cq*>> cqs_on_host_;  // per host, the CQs of the QP ends on it, in run order
  std::vector<uint32_t> res_index_;  // the WQE index each operation was posted at
  uint64_t base_ps_ = 0;
  size_t completed_ = 0, probes_done_ = 0;
  bool started_ = false, stalled_ = false;
  uint64_t origin_ps_ = 0, end_ps_ = 0;
  uint64_t last_progress_ps_ = 0;  // model time of the last completion or post (or the start)
  sc_core::sc_event progressed_;
  sc_core::sc_event stall_check_;
  std::optional<uint64_t> stall_check_ps_;  // the pending stall check's model time
};

}  // namespace

uint64_t stall_limit(const ReplayOptions& o) {
  if (o.stall_ps != 0) return o.stall_ps;
  const uint64_t timeout_ps = (uint64_t(4096) << std::min<uint8_t>(o.ack_timeout, 31)) * 1000;
  return std::max<uint64_t>(20'000'000'000, 3 * timeout_ps);
}

namespace {

// What the headless hosts cannot take, before anything runs.
std::string unsupported(const Workload& w) {
  for (size_t q = 0; q < w.qps.size(); ++q) {
    for (size_t i = 0; i < w.qps[q].ops.size(); ++i) {
      const WorkloadOp& op = w.qps[q].ops[i];
      const std::string place = "qps[" + std::to_string(q) + "].ops[" + std::to_string(i) + "]";
      if (op.bytes > kMaxReplayMessage) return place + ": " + std::to_string(op.bytes) + " bytes; the headless hosts take up to " + std::to_string(kMaxReplayMessage);
      if (op.inline_data && op.bytes > 512) return place + ": inline data above 512 bytes does not fit a send WQE";
      if (w.qps[q].service == Service::kUd && op.bytes + kGrh > w.qps[q].mtu + kGrh && op.bytes > w.qps[q].mtu)
        return place + ": a datagram longer than the QP's MTU";
    }
  }
  return {};
}

}  // namespace

namespace {

// The network of the run: the given topology, or every host on one switch at the preset's rate.
fabric::Topology network_of(const Workload& w, const ReplayOptions& o) {
  if (o.topology) return *o.topology;
  return fabric::single_switch(uint32_t(w.hosts.size()), o.preset.link_gbps, o.preset.propagation_ns / 2);
}

// How far into the run the last captured post time lands (timing asis or scale=K; else 0).
uint64_t captured_span_ps(const Workload& w, const ReplayOptions& o) {
  if (o.timing != TimingMode::kAsis && o.timing != TimingMode::kScale) return 0;
  uint64_t first = UINT64_MAX, last = 0;
  for (const WorkloadQp& qp : w.qps)
    for (const WorkloadOp& op : qp.ops)
      if (op.post_ps) first = std::min(first, *op.post_ps), last = std::max(last, *op.post_ps);
  if (first == UINT64_MAX) return 0;
  return uint64_t(double(last - first) * (o.timing == TimingMode::kScale ? o.scale : 1.0));
}

// Host memory enough for every host's share: its two message buffers and, per QP end on it, the
// rings and CQs hostsim gives it (about 90 KiB: a 1024-entry CQ, a small one, the SQ and RQ).
// The 64-byte blocks an operation's WQE takes, laid out as the hosts build it (hostsim's
// build_wqe: ctrl, the datagram's address vector, raddr, atomic, then inline data or one pointer).
uint32_t wqebbs_of(const WorkloadQp& qp, const WorkloadOp& op) {
  const bool atomic = op.kind == MessageKind::kCompareSwap || op.kind == MessageKind::kFetchAdd;
  uint64_t bytes = 16;
  if (qp.service == Service::kUd) bytes += 48;
  if (!is_send(op.kind)) bytes += 16;
  if (atomic) bytes += 16;
  if (op.inline_data) bytes += (4 + op.bytes + 15) / 16 * 16;
  else if (op.bytes != 0) bytes += 16;
  return uint32_t((bytes + 63) / 64);
}

// How many operations a QP may have in flight and the rings that hold them: the captured send
// queue when the workload gives it (as many of its largest WQEs as fit), else --max-outstanding;
// the responder's receive queue holds a receive for each.
struct QpShape {
  size_t room = 1;
  hostsim::QueueSizes requester, responder;
};

QpShape shape_of(const WorkloadQp& qp, const ReplayOptions& o) {
  uint32_t largest = 1;
  for (const WorkloadOp& op : qp.ops) largest = std::max(largest, wqebbs_of(qp, op));
  QpShape shape;
  shape.room = qp.sq_wqebbs ? std::max<size_t>(1, *qp.sq_wqebbs / largest) : o.max_outstanding;
  const uint64_t blocks = qp.sq_wqebbs ? *qp.sq_wqebbs : shape.room * largest;
  shape.requester.log_sq_size = std::max(6u, uint32_t(std::bit_width(std::bit_ceil(blocks)) - 1));
  shape.responder.log_rq_size = std::max(4u, uint32_t(std::bit_width(std::bit_ceil(uint64_t(shape.room))) - 1));
  if (qp.peer_rq_stride) shape.responder.log_rq_stride = uint32_t(std::countr_zero(*qp.peer_rq_stride)) - 4;
  return shape;
}

uint64_t host_memory_bytes(const std::vector<const WorkloadQp*>& qps, const std::vector<WorkloadHost>& hosts,
                           const ReplayOptions& o) {
  constexpr uint64_t kPerQpEnd = 128 << 10, kFixed = 2 * kMaxReplayMessage + (3 << 20), kPerCqEntry = 64;
  std::vector<uint64_t> bytes(hosts.size(), 0);
  for (const WorkloadQp* qp : qps) {
    const QpShape shape = shape_of(*qp, o);
    bytes[qp->host] += kPerQpEnd + (uint64_t(64) << shape.requester.log_sq_size);
    bytes[qp->peer] += kPerQpEnd + ((uint64_t(16) << shape.responder.log_rq_stride) << shape.responder.log_rq_size);
  }
  for (size_t i = 0; i < hosts.size(); ++i)
    for (const WorkloadCq& cq : hosts[i].cqs) bytes[i] += cq.entries * kPerCqEntry + 4096;  // ring and record
  const uint64_t most = bytes.empty() ? 0 : *std::max_element(bytes.begin(), bytes.end());
  return std::max<uint64_t>(hostsim::HostFunction::kDefaultMemory, kFixed + most);
}

// Workload times from its start; done 0 stays "never".
void shift(std::vector<OpResult>& ops, uint64_t origin) {
  for (OpResult& op : ops) {
    op.post_ps -= std::min(op.post_ps, origin);
    if (op.first_packet_ps != 0) op.first_packet_ps = std::max<uint64_t>(op.first_packet_ps - std::min(op.first_packet_ps, origin), 1);
    if (op.done_ps != 0) op.done_ps = std::max<uint64_t>(op.done_ps - std::min(op.done_ps, origin), 1);
    if (op.device_post_ps != 0) op.device_post_ps = std::max<uint64_t>(op.device_post_ps - std::min(op.device_post_ps, origin), 1);
    if (op.device_done_ps != 0) op.device_done_ps = std::max<uint64_t>(op.device_done_ps - std::min(op.device_done_ps, origin), 1);
  }
}

}  // namespace

namespace {

// Why the network cannot carry the workload (empty: it can).
std::string network_problem(const Workload& w, const fabric::Topology& topology) {
  if (topology.hosts != w.hosts.size())
    return "the topology has " + std::to_string(topology.hosts) + " hosts, the workload " + std::to_string(w.hosts.size());
  if (const std::string why = fabric::validate(topology); !why.empty()) return "topology: " + why;
  return {};
}

// A QP pair per spec (the first `probe_qps` are probes), up and ready, and a result row per
// operation, QP by QP.
// The hosts' own addresses: an IPv6 GID makes each frame 20 bytes longer than an IPv4 one. A MAC
// that an earlier host has too (a captured function with an IPv4 and an IPv6 GID is two hosts of
// the workload) stays the node's own, or the wire could not tell the two apart.
void set_addresses(const Workload& w, RdmaCluster& cluster) {
  for (size_t i = 0; i < w.hosts.size(); ++i) {
    const auto same_mac = [&](const WorkloadHost& other) { return other.mac == w.hosts[i].mac; };
    const bool shared = std::any_of(w.hosts.begin(), w.hosts.begin() + std::ptrdiff_t(i), same_mac);
    RdmaNode& node = cluster.node(int(i));
    Mac mac = w.hosts[i].mac;
    // Shared: a locally administered address no host of the workload and no node before has.
    const auto taken = [&](const Mac& m) {
      return std::any_of(w.hosts.begin(), w.hosts.end(), [&](const WorkloadHost& h) { return h.mac == m; }) ||
             std::any_of(cluster.nodes.begin(), cluster.nodes.begin() + std::ptrdiff_t(i),
                         [&](const RdmaNode& n) { return n.mac == m; });
    };
    for (uint32_t n = uint32_t(i); shared && taken(mac); ++n)
      mac = {0x06, 0, uint8_t(n >> 24), uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)};
    node.set_address(w.hosts[i].gid, mac);
  }
}

// The CQs the hosts declare, made once and shared by every QP end naming them; an end naming none
// has CQs of its own (`log_size` entries).
class CompletionQueues {
 public:
  CompletionQueues(const std::vector<WorkloadHost>& hosts, RdmaCluster& cluster)
      : hosts_(hosts), cluster_(cluster), made_(hosts.size()) {}
  Cq& get(size_t host, const std::optional<uint32_t>& id, uint32_t log_size) {
    RdmaNode& node = cluster_.node(int(host));
    if (!id) return node.make_cq(log_size);
    auto [it, added] = made_[host].emplace(*id, nullptr);
    if (added) it->second = &node.make_cq(uint32_t(std::countr_zero(hosts_[host].cq(*id)->entries)));
    return *it->second;
  }

 private:
  const std::vector<WorkloadHost>& hosts_;
  RdmaCluster& cluster_;
  std::vector<std::map<uint32_t, Cq*>> made_;
};

void create_qps(const std::vector<const WorkloadQp*>& specs, size_t probe_qps, RdmaCluster& cluster,
                const ReplayOptions& o, std::vector<QpRun>& runs, std::vector<OpResult>& results,
                CompletionQueues& cqs) {
  for (size_t q = 0; q < specs.size(); ++q) {
    const WorkloadQp& spec = *specs[q];
    const bool probe = q < probe_qps;
    RdmaNode& a = cluster.node(int(spec.host));
    RdmaNode& b = cluster.node(int(spec.peer));
    QpRun r{.spec = &spec, .probe = probe, .first_result = results.size()};
    for (size_t i = 0; i < spec.ops.size(); ++i)
      results.push_back({.qp = probe ? q : q - probe_qps, .op = i, .kind = spec.ops[i].kind, .bytes = spec.ops[i].bytes});
    const uint8_t service = spec.service == Service::kUd ? model::qp_st::kUd
                            : spec.service == Service::kUc ? model::qp_st::kUc : model::qp_st::kRc;
    const QpShape shape = shape_of(spec, o);
    r.room = shape.room;
    Cq& send = cqs.get(spec.host, spec.cqs.send, 10);
    Cq& recv = cqs.get(spec.host, spec.cqs.recv, 4);
    r.qp = &a.create_qp(send, recv, 0, service, nullptr, 0, shape.requester);
    Cq& peer_send = cqs.get(spec.peer, spec.cqs.peer_send, 4);
    Cq& peer_recv = cqs.get(spec.peer, spec.cqs.peer_recv, 10);
    r.peer = &b.create_qp(peer_send, peer_recv, 0, service, nullptr, 0, shape.responder);
    if (spec.service == Service::kUd) {
      a.bring_up_ud(*r.qp, kQkey);
      b.bring_up_ud(*r.peer, kQkey);
      r.av = a.address_vector(b, r.peer->qpn, kQkey);
    } else {
      RcAttributes attr;
      attr.mtu = ib_mtu(spec.mtu);
      attr.ack_timeout = o.ack_timeout;
      if (spec.max_rd_atomic) attr.log_max_rd_atomic = uint8_t(std::countr_zero(*spec.max_rd_atomic));
      RdmaCluster::bring_up(a, *r.qp, b, *r.peer, attr);
    }
    runs.push_back(r);
  }
}

// A writer (PcapWriter, LatencyTrace) at `path`, none for an empty path; throws what stops it.
template <typename Writer>
std::unique_ptr<Writer> open_writer(const std::string& path) {
  if (path.empty()) return nullptr;
  std::string why;
  auto writer = Writer::open(path, &why);
  if (!writer) throw std::runtime_error(why);
  return writer;
}

// The engines tell the driver each stage of each message (its first packet, its device-side
// times), the latency trace every stage of the workload's messages as hcaemu --trace writes it
// (host = function), and what their congestion control does.
void hook_engines(RdmaCluster& cluster, Driver& d, traces::LatencyTrace* trace, const ReplayOptions& o,
                  std::vector<QpCongestion>& congestion) {
  for (size_t i = 0; i < cluster.size(); ++i) {
    model::RdmaEngine& engine = cluster.node(int(i)).engine;
    engine.set_stage_hook([trace, &d, i](const model::StageStamp& s) {
      const uint64_t at = s.time_ps != 0 ? s.time_ps : pcie::model_time_ps();
      if (s.function < 0) d.stage(i, s, at);
      if (trace && d.started())
        trace->record({.time_ps = at - std::min(at, d.origin_ps()),
                       .function = uint16_t(s.function >= 0 ? s.function : int32_t(i)), .qpn = s.qpn,
                       .message = s.message, .opcode = s.opcode, .bytes = s.bytes, .stage = s.stage});
    });
    // The responder stamps a message's remote delivery on its requester's host, found by MAC.
    engine.set_peer_lookup([&cluster](const transport::Mac& mac) -> int32_t {
      for (size_t n = 0; n < cluster.size(); ++n)
        if (cluster.node(int(n)).mac == mac) return int32_t(n);
      return -1;
    });
    engine.set_congestion_control(
        &o.dcqcn, [&d, &congestion, i](const model::CongestionEvent& e) { d.congestion(i, e, congestion); });
  }
}

// Unhooks the engines and sums their DCQCN counters.
CongestionTotals unhook_engines(RdmaCluster& cluster) {
  CongestionTotals cc;
  for (size_t i = 0; i < cluster.size(); ++i) {
    model::RdmaEngine& engine = cluster.node(int(i)).engine;
    engine.set_stage_hook({});
    engine.set_peer_lookup({});
    engine.set_congestion_control(nullptr);
    cc.np_ecn_marked_roce_packets += engine.counters().np_ecn_marked_roce_packets;
    cc.np_cnp_sent += engine.counters().np_cnp_sent;
    cc.rp_cnp_handled += engine.counters().rp_cnp_handled;
    cc.rp_cnp_ignored += engine.counters().rp_cnp_ignored;
  }
  return cc;
}

// The workload's operations out of all rows (the probes' come first), each with its ideal FCT
// from the probes' and the FCT its capture saw.
std::vector<OpResult> workload_results(const Workload& w, const IdealProbes& probes, const std::vector<OpResult>& rows) {
  const size_t probe_ops = probes.probes.size();
  std::vector<uint64_t> probe_fct;
  for (size_t i = 0; i < probe_ops; ++i)
    probe_fct.push_back(rows[i].done_ps != 0 && rows[i].status == 0 ? rows[i].done_ps - rows[i].post_ps : 0);
  std::vector<OpResult> ops(rows.begin() + std::ptrdiff_t(probe_ops), rows.end());
  for (OpResult& op : ops) {
    const WorkloadOp& spec = w.qps[op.qp].ops[op.op];
    op.ideal_ps = ideal_fct(probes, probe_fct, w.qps[op.qp], spec);
    op.captured_fct_ps = spec.captured_fct_ns.value_or(0) * 1000;
    op.captured_anomalies = spec.captured_anomalies;
  }
  return ops;
}

}  // namespace

std::optional<ReplayResult> replay(const Workload& w, const ReplayOptions& o, std::string* error) {
  const fabric::Topology topology = network_of(w, o);
  std::string why = unsupported(w);
  if (why.empty()) why = network_problem(w, topology);
  if (!why.empty()) {
    if (error) *error = why;
    return std::nullopt;
  }
  try {
    const IdealProbes probes = o.ideal ? plan_probes(w) : IdealProbes{};
    std::vector<const WorkloadQp*> specs;
    for (const WorkloadQp& qp : probes.workload.qps) specs.push_back(&qp);
    for (const WorkloadQp& qp : w.qps) specs.push_back(&qp);
    RdmaCluster cluster(int(w.hosts.size()), host_memory_bytes(specs, w.hosts, o));
    set_addresses(w, cluster);
    std::vector<std::unique_ptr<pcie::TimedHostMemory>> dma;
    std::vector<Mr> src, dst;
    for (size_t i = 0; i < w.hosts.size(); ++i) {
      dma.push_back(cluster.node(int(i)).attach_timed_dma(o.preset));
      src.push_back(cluster.node(int(i)).reg_mr(kMaxReplayMessage));
      dst.push_back(cluster.node(int(i)).reg_mr(kMaxReplayMessage));
    }
    std::vector<OpResult> rows;
    std::vector<QpRun> runs;
    CompletionQueues cqs(w.hosts, cluster);
    create_qps(specs, probes.workload.qps.size(), cluster, o, runs, rows, cqs);
    const auto pcap = open_writer<traces::PcapWriter>(o.pcap_path);
    const auto trace = open_writer<traces::LatencyTrace>(o.trace_prefix);
    FramePool frames;
    std::vector<std::unique_ptr<ReplayHost>> hosts;
    Driver* driver = nullptr;
    for (size_t i = 0; i < w.hosts.size(); ++i)
      hosts.push_back(std::make_unique<ReplayHost>(("host" + std::to_string(i)).c_str(), cluster.node(int(i)), frames,
                                                   sc_time(o.preset.propagation_ns, sc_core::SC_NS),
                                                   [&driver, i] { driver->poll(i); }));
    Wire wire("wire", hosts, cluster, frames, topology, o);
    Driver d("driver", w, o, cluster, hosts, src, dst, runs, rows, probes.probes.size(),
             [&] { wire.start_workload(pcap.get()); });
    driver = &d;
    d.fabric_packets = [&wire] { return wire.packets; };
    std::vector<QpCongestion> congestion(w.qps.size());
    hook_engines(cluster, d, trace.get(), o, congestion);
    // Bounded: a workload that never finishes (an RNR retry count of 7 retries for ever) stops here
    // and its operations are reported incomplete.
    sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    sc_core::sc_start(pcie::from_ps(o.max_model_time_ps + captured_span_ps(w, o)));
    wire.finish();
    ReplayResult result;
    result.cc = unhook_engines(cluster);
    result.congestion = std::move(congestion);
    result.ops = workload_results(w, probes, rows);
    const uint64_t origin = d.started() ? d.origin_ps() : d.end_ps();
    shift(result.ops, origin);
    result.stalled = d.stalled();
    result.stall_limit_ps = stall_limit(o);
    result.end_ps = (d.end_ps() != 0 ? d.end_ps() : kernel_ps()) - origin;
    result.packets = wire.packets;
    result.wire_bytes = wire.bytes;
    result.links = wire.network().links();
    result.network = wire.network().totals();
    result.topology = topology.describe();
    // The capture's connection set-up MADs took device time beside the data; they are not data.
    std::erase_if(result.ops, [&](const OpResult& op) {
      if (!w.qps[op.qp].connection_setup) return false;
      ++result.connection_setup_ops;
      result.connection_setup_incomplete += op.done_ps == 0;
      return true;
    });
    result.incomplete = size_t(std::count_if(result.ops.begin(), result.ops.end(), [](const OpResult& r) { return r.done_ps == 0; }));
    return result;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return std::nullopt;
  }
}

}  // namespace hcaemu::replay
