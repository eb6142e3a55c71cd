#include "replay/replayer.h"

#include <systemc>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <memory>

#include "hostsim/rdma_host.h"
#include "model/work_items.h"
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

// One host's device: its work items (doorbells, frames, timers, an SQ's next message) one at a
// time and in order on its own thread, each in model time with one wait at its end.
class ReplayHost : public sc_core::sc_module, private model::RdmaEngine::SqScheduler {
 public:
  SC_HAS_PROCESS(ReplayHost);
  ReplayHost(sc_core::sc_module_name name, RdmaNode& node, std::function<void()> after_item)
      : sc_module(name), node_(node), after_item_(std::move(after_item)) {
    node_.engine.set_sq_scheduler(this);
    node_.engine.set_timer_hook([this](const model::TimerDeadline& d) {
      const uint64_t now = kernel_ps();
      timer_.notify(d.model_ps > now ? sc_time(double(d.model_ps - now), SC_PS) : sc_core::SC_ZERO_TIME);
    });
    SC_THREAD(run);
    SC_METHOD(timer_fired);
    sensitive << timer_;
    dont_initialize();
  }
  ~ReplayHost() override { node_.engine.set_sq_scheduler(nullptr); }

  void doorbell(std::vector<uint8_t> bytes) { push({Kind::kDoorbell, std::move(bytes)}); }
  void frame(std::vector<uint8_t> bytes, sc_time arrival) { push({Kind::kFrame, std::move(bytes), arrival}); }

 private:
  enum class Kind : uint8_t { kDoorbell, kFrame, kTimer, kResume };
  struct Item {
    Kind kind;
    std::vector<uint8_t> data{};
    sc_time not_before{};
    model::SqResume sq{};
  };
  void push(Item item) {
    work_.push_back(std::move(item));
    work_event_.notify(sc_core::SC_ZERO_TIME);
  }
  void timer_fired() { push({Kind::kTimer}); }
  void resume_later(const model::SqResume& resume) override { push({Kind::kResume, {}, {}, resume}); }
  bool reread_queued(uint32_t qpn) override {
    for (Item& item : work_)
      if (item.kind == Kind::kResume && item.sq.qpn == qpn) return item.sq.reread = true;
    return false;
  }
  void run() {
    model::run_work_items(
        work_, work_event_,
        [this](Item& item) {
          switch (item.kind) {
            case Kind::kDoorbell: node_.engine.doorbell(item.data); break;
            case Kind::kFrame: node_.engine.receive(item.data); break;
            case Kind::kTimer: node_.engine.on_timer(); break;
            case Kind::kResume: node_.engine.resume_sq(item.sq); break;
          }
        },
        after_item_);  // the host polls its CQs at once: completions are seen when they land
  }

  RdmaNode& node_;
  std::function<void()> after_item_;
  std::deque<Item> work_;
  sc_core::sc_event work_event_, timer_;
};

// The network between the hosts: frames in model-time order (sriov::SwitchIngress) reach one
// output-queued, store-and-forward switch after the propagation delay; each host's port sends them
// on, in order, at the link rate (frames queue there when several senders aim at one host, with
// no limit: lossless), and the host has them when the last bit is out. A frame to its own sender
// turns around inside the NIC. Captured with the time it left its sender.
class Fabric {
 public:
  Fabric(std::vector<std::unique_ptr<ReplayHost>>& hosts, RdmaCluster& cluster, const ReplayOptions& o,
         traces::PcapWriter* pcap)
      : hosts_(hosts), cluster_(cluster), propagation_(o.preset.propagation_ns, sc_core::SC_NS), preset_(o.preset),
        switched_(o.switched), bin_ps_(std::max<uint64_t>(o.bin_ps, 1)), pcap_(pcap),
        ingress_("wire", [this](uint16_t from, std::vector<uint8_t>& frame) { deliver(from, frame); }) {
    for (size_t i = 0; i < cluster.size(); ++i) ports_.push_back(std::make_unique<Port>(*this, uint16_t(i)));
    for (size_t i = 0; i < cluster.size(); ++i) cluster.node(int(i)).engine.set_port(ports_[i].get());
    egress_.resize(cluster.size());
  }
  uint64_t packets = 0, bytes = 0;
  std::vector<PortResult> port_results() const {
    std::vector<PortResult> out;
    for (size_t i = 0; i < egress_.size(); ++i) out.push_back(egress_[i].stats);
    return out;
  }

 private:
  struct Port : transport::EthernetPort {
    Port(Fabric& f, uint16_t from) : fabric(f), from(from) {}
    void transmit(std::span<const uint8_t> frame) override {
      fabric.ingress_.submit(from, frame, pcie::model_time() + fabric.propagation_);
    }
    Fabric& fabric;
    uint16_t from;
  };
  // A switch port: when it is free again and the frames still waiting in it.
  struct Egress {
    sc_time free = sc_core::SC_ZERO_TIME;
    std::deque<std::pair<sc_time, uint32_t>> waiting;  // (done, bytes) of frames not yet sent
    uint64_t waiting_bytes = 0;
    PortResult stats;
  };
  // When the frame is out of the switch port to host `to` (queued behind the frames before it).
  sc_time egress(size_t to, size_t bytes) {
    Egress& e = egress_[to];
    const sc_time now = sc_core::sc_time_stamp();
    while (!e.waiting.empty() && e.waiting.front().first <= now) {
      e.waiting_bytes -= e.waiting.front().second;
      e.waiting.pop_front();
    }
    const sc_time serialise(preset_.wire_ns(uint32_t(bytes)), sc_core::SC_NS);
    e.free = std::max(e.free, now) + serialise;
    e.waiting.emplace_back(e.free, uint32_t(bytes));
    e.waiting_bytes += bytes;
    e.stats.frames += 1;
    e.stats.bytes += bytes;
    e.stats.busy_ps += pcie::to_ps(serialise);
    e.stats.max_queue_bytes = std::max(e.stats.max_queue_bytes, e.waiting_bytes);
    e.stats.max_queue_frames = std::max<uint64_t>(e.stats.max_queue_frames, e.waiting.size());
    PortResult::Bin& bin = e.stats.timeline[pcie::to_ps(e.free) / bin_ps_];
    bin.bytes += bytes;
    bin.max_queue_bytes = std::max(bin.max_queue_bytes, e.waiting_bytes);
    return e.free;
  }
  void deliver(uint16_t from, std::vector<uint8_t>& frame) {
    ++packets;
    bytes += frame.size();
    if (pcap_) pcap_->write(kernel_ps() - pcie::to_ps(propagation_), frame);
    for (size_t i = 0; i < cluster_.size() && frame.size() >= 6; ++i)
      if (std::equal(frame.begin(), frame.begin() + 6, cluster_.node(int(i)).mac.begin())) {  // its sender too: loopback
        const sc_time at = switched_ && i != from ? egress(i, frame.size()) : sc_core::sc_time_stamp();
        std::vector<uint8_t> taken;
        taken.swap(frame);
        hosts_[i]->frame(std::move(taken), at);
        return;
      }
  }

  std::vector<std::unique_ptr<ReplayHost>>& hosts_;
  RdmaCluster& cluster_;
  sc_time propagation_;
  const model::TimingPreset& preset_;
  bool switched_;
  uint64_t bin_ps_;
  traces::PcapWriter* pcap_;
  sriov::SwitchIngress ingress_;
  std::vector<std::unique_ptr<Port>> ports_;
  std::vector<Egress> egress_;
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

// What the driver keeps of one workload QP.
struct QpRun {
  const WorkloadQp* spec = nullptr;
  size_t first_result = 0;     // index of its operation 0 in the results
  Qp* qp = nullptr;            // the requester, on spec->host
  Qp* peer = nullptr;          // its responder (RC, UC, XRC) or the datagram receiver (UD), on spec->peer
  std::array<uint8_t, 48> av{};
  size_t next = 0;             // the next operation to post
  std::deque<size_t> in_flight;  // posted, not completed (operation indices, in posting order)
  uint64_t last_done_ps = 0;
};

// Posts the workload's operations and collects their completions.
class Driver : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Driver);
  Driver(sc_core::sc_module_name name, const Workload& w, const ReplayOptions& o, RdmaCluster& cluster,
         std::vector<std::unique_ptr<ReplayHost>>& hosts, const std::vector<Mr>& src, const std::vector<Mr>& dst,
         std::vector<QpRun>& runs, ReplayResult& result)
      : sc_module(name), o_(o), cluster_(cluster), hosts_(hosts), src_(src), dst_(dst), runs_(runs), result_(result) {
    base_ns_ = UINT64_MAX;
    for (const WorkloadQp& qp : w.qps)
      for (const WorkloadOp& op : qp.ops)
        if (op.post_ns) base_ns_ = std::min(base_ns_, *op.post_ns);
    if (base_ns_ == UINT64_MAX) base_ns_ = 0;
    SC_THREAD(run);
  }
  // A host finished a work item: its completions are read now.
  void poll(size_t host) {
    for (QpRun& r : runs_) {
      RdmaNode& peer = cluster_.node(int(r.spec->peer));
      if (r.spec->peer == host) peer.drain(*r.peer->rcq);  // receives are posted per SEND and not looked at
      if (r.spec->host == host) take_completions(r);
    }
  }

 private:
  OpResult& result(const QpRun& r, size_t op) { return result_.ops[r.first_result + op]; }
  bool done(const OpRef& ref) { return result(runs_[ref.qp], ref.op).done_ps != 0; }

  void take_completions(QpRun& r) {
    RdmaNode& node = cluster_.node(int(r.spec->host));
    for (const Cqe& cqe : node.drain(*r.qp->scq)) {
      // A completion also completes the unsignalled operations posted before it.
      while (!r.in_flight.empty()) {
        const size_t op = r.in_flight.front();
        r.in_flight.pop_front();
        OpResult& res = result(r, op);
        res.done_ps = std::max<uint64_t>(kernel_ps(), 1);
        r.last_done_ps = res.done_ps;
        ++completed_;
        if (uint16_t(res_index_[r.first_result + op]) == cqe.wqe_counter) {
          if (cqe.opcode != 0) res.status = cqe.syndrome != 0 ? cqe.syndrome : 0xff;
          break;
        }
      }
    }
    progressed_.notify(sc_core::SC_ZERO_TIME);
  }

  // When operation `next` of `r` may be posted (model ps); nullopt while it must wait for a
  // completion (its QP's room, a dependency, the previous operation for a think time).
  std::optional<uint64_t> post_time(const QpRun& r) {
    const WorkloadOp& op = r.spec->ops[r.next];
    if (r.in_flight.size() >= o_.max_outstanding) return std::nullopt;
    for (const OpRef& dep : op.after)
      if (!done(dep)) return std::nullopt;
    const auto captured = [&](double factor) -> std::optional<uint64_t> {
      return op.post_ns ? std::optional<uint64_t>(uint64_t(double(*op.post_ns - base_ns_) * 1000.0 * factor)) : std::nullopt;
    };
    switch (o_.timing) {
      case TimingMode::kAsap: return 0;
      case TimingMode::kAsis: if (auto t = captured(1.0)) return t; break;
      case TimingMode::kScale: if (auto t = captured(o_.scale)) return t; break;
      case TimingMode::kThink: break;
    }
    if (op.think_ns && r.next > 0) {  // after the previous operation of this QP has completed
      if (result(r, r.next - 1).done_ps == 0) return std::nullopt;
      return r.last_done_ps + *op.think_ns * 1000;
    }
    if (r.next == 0 && op.post_ns && o_.timing == TimingMode::kThink) return captured(1.0);
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
    wr.signalled = op.signalled || r.next + 1 == r.spec->ops.size();  // the last one always completes
    if (r.spec->service == Service::kUd) {
      wr.av = r.av;
      peer.post_recv(*r.peer, {{dst.va(0), uint32_t(op.bytes) + kGrh, dst.key}});
    } else if (is_send(op.kind) || op.kind == MessageKind::kWriteImm) {  // these take a receive WQE
      peer.post_recv(*r.peer, {{dst.va(0), uint32_t(std::max<uint64_t>(op.bytes, 1)), dst.key}});
    }
    const uint16_t index = node.post_send(*r.qp, wr, false);
    hosts_[r.spec->host]->doorbell(node.publish(*r.qp));
    res_index_[r.first_result + r.next] = index;
    result(r, r.next).post_ps = kernel_ps();
    r.in_flight.push_back(r.next);
    ++r.next;
  }

  void run() {
    res_index_.assign(result_.ops.size(), 0);
    const size_t total = result_.ops.size();
    auto last_report = std::chrono::steady_clock::now();
    for (;;) {
      std::optional<uint64_t> wake;
      bool waiting_for_completion = false;
      for (QpRun& r : runs_) {
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
        }
        if (!r.in_flight.empty()) waiting_for_completion = true;
      }
      if (o_.progress && std::chrono::steady_clock::now() - last_report > std::chrono::seconds(1)) {
        last_report = std::chrono::steady_clock::now();
        o_.progress(kernel_ps(), fabric_packets ? fabric_packets() : 0, completed_, total);
      }
      if (completed_ == total) break;
      const bool in_flight = std::any_of(runs_.begin(), runs_.end(), [](const QpRun& r) { return !r.in_flight.empty(); });
      if (in_flight && kernel_ps() - last_progress_ps_ >= o_.stall_ps) {
        result_.stalled = true;  // operations in flight, none completing: stop rather than spin
        sc_core::sc_stop();
        break;
      }
      if (in_flight) wake = std::min(wake.value_or(UINT64_MAX), last_progress_ps_ + o_.stall_ps);
      const size_t before = completed_;
      if (wake && waiting_for_completion)
        wait(sc_time(double(*wake - kernel_ps()), SC_PS), progressed_);
      else if (wake)
        wait(sc_time(double(*wake - kernel_ps()), SC_PS));
      else if (waiting_for_completion)
        wait(progressed_);
      else
        break;  // nothing left that could ever be posted
      if (completed_ != before) last_progress_ps_ = kernel_ps();
    }
    result_.end_ps = kernel_ps();
  }

 public:
  std::function<uint64_t()> fabric_packets;

 private:
  const ReplayOptions& o_;
  RdmaCluster& cluster_;
  std::vector<std::unique_ptr<ReplayHost>>& hosts_;
  const std::vector<Mr>& src_;
  const std::vector<Mr>& dst_;
  std::vector<QpRun>& runs_;
  ReplayResult& result_;
  std::vector<uint32_t> res_index_;  // the WQE index each operation was posted at
  uint64_t base_ns_ = 0;
  size_t completed_ = 0;
  uint64_t last_progress_ps_ = 0;  // model time of the last completion (or the start)
  sc_core::sc_event progressed_;
};

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

std::optional<ReplayResult> replay(const Workload& w, const ReplayOptions& o, std::string* error) {
  if (const std::string why = unsupported(w); !why.empty()) {
    if (error) *error = why;
    return std::nullopt;
  }
  try {
    RdmaCluster cluster(int(w.hosts.size()));
    std::vector<std::unique_ptr<pcie::TimedHostMemory>> dma;
    std::vector<Mr> src, dst;
    for (size_t i = 0; i < w.hosts.size(); ++i) {
      dma.push_back(cluster.node(int(i)).attach_timed_dma(o.preset));
      src.push_back(cluster.node(int(i)).reg_mr(kMaxReplayMessage));
      dst.push_back(cluster.node(int(i)).reg_mr(kMaxReplayMessage));
    }
    ReplayResult result;
    std::vector<QpRun> runs;
    for (size_t q = 0; q < w.qps.size(); ++q) {
      const WorkloadQp& spec = w.qps[q];
      RdmaNode& a = cluster.node(int(spec.host));
      RdmaNode& b = cluster.node(int(spec.peer));
      QpRun r{.spec = &spec, .first_result = result.ops.size()};
      for (size_t i = 0; i < spec.ops.size(); ++i)
        result.ops.push_back({.qp = q, .op = i, .kind = spec.ops[i].kind, .bytes = spec.ops[i].bytes});
      const uint8_t service = spec.service == Service::kUd ? model::qp_st::kUd
                              : spec.service == Service::kUc ? model::qp_st::kUc : model::qp_st::kRc;
      r.qp = &a.create_qp(a.make_cq(10), a.make_cq(4), 0, service);
      r.peer = &b.create_qp(b.make_cq(4), b.make_cq(10), 0, service);
      if (spec.service == Service::kUd) {
        a.bring_up_ud(*r.qp, kQkey);
        b.bring_up_ud(*r.peer, kQkey);
        r.av = a.address_vector(b, r.peer->qpn, kQkey);
      } else {
        RcAttributes attr;
        attr.mtu = ib_mtu(spec.mtu);
        RdmaCluster::bring_up(a, *r.qp, b, *r.peer, attr);
      }
      runs.push_back(r);
    }
    std::unique_ptr<traces::PcapWriter> pcap;
    if (!o.pcap_path.empty()) {
      std::string why;
      pcap = traces::PcapWriter::open(o.pcap_path, &why);
      if (!pcap) throw std::runtime_error(why);
    }
    // The latency trace: every stage of every message, as hcaemu --trace writes it (host = function).
    std::unique_ptr<traces::LatencyTrace> trace;
    if (!o.trace_prefix.empty()) {
      std::string why;
      trace = traces::LatencyTrace::open(o.trace_prefix, &why);
      if (!trace) throw std::runtime_error(why);
      for (size_t i = 0; i < w.hosts.size(); ++i)
        cluster.node(int(i)).engine.set_stage_hook([&trace, i](const model::StageStamp& s) {
          trace->record({.time_ps = s.time_ps != 0 ? s.time_ps : pcie::model_time_ps(),
                         .function = uint16_t(s.function >= 0 ? s.function : int32_t(i)), .qpn = s.qpn,
                         .message = s.message, .opcode = s.opcode, .bytes = s.bytes, .stage = s.stage});
        });
    }
    std::vector<std::unique_ptr<ReplayHost>> hosts;
    Driver* driver = nullptr;
    for (size_t i = 0; i < w.hosts.size(); ++i)
      hosts.push_back(std::make_unique<ReplayHost>(("host" + std::to_string(i)).c_str(), cluster.node(int(i)),
                                                   [&driver, i] { driver->poll(i); }));
    Fabric fabric(hosts, cluster, o, pcap.get());
    Driver d("driver", w, o, cluster, hosts, src, dst, runs, result);
    driver = &d;
    d.fabric_packets = [&fabric] { return fabric.packets; };
    // Bounded: a workload that never finishes (an RNR retry count of 7 retries for ever) stops here
    // and its operations are reported incomplete.
    sc_core::sc_start(sc_time(double(o.max_model_time_ps), SC_PS));
    result.packets = fabric.packets;
    result.ports = fabric.port_results();
    result.wire_bytes = fabric.bytes;
    result.incomplete = size_t(std::count_if(result.ops.begin(), result.ops.end(), [](const OpResult& r) { return r.done_ps == 0; }));
    return result;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return std::nullopt;
  }
}

}  // namespace hcaemu::replay
