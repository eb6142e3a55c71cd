#pragma once
// One HCA function (PF or VF) as a SystemC module: BAR0 behind a TLM-2.0 target socket (init
// segment, then UAR pages), the command interface, and the hooks the PCIe face calls on reset.
// Model state lives here; PCIe config space lives in pcie/ and is composed by sriov/.
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "common/log_limit.h"
#include "model/firmware/command_queue.h"
#include "model/queues/doorbell_unit.h"
#include "model/eth/queues.h"
#include "model/firmware/firmware.h"
#include "model/function_context.h"
#include "model/firmware/init_segment.h"
#include "model/rdma/engine.h"
#include "model/rdma/paced_resumptions.h"
#include "model/timing_preset.h"
#include "model/wall_timer.h"
#include "pcie/host_port.h"

namespace hcaemu::model {

struct HcaTiming {
  sc_core::sc_time register_access = sc_core::sc_time(20, sc_core::SC_NS);  // BAR0 register decode
  sc_core::sc_time command_latency = sc_core::sc_time(2, sc_core::SC_US);   // firmware per command
  sc_core::sc_time wire_propagation = sc_core::sc_time(100, sc_core::SC_NS);  // switch hop to another function
};

struct HcaFunctionCounters {
  uint64_t bar_reads = 0;
  uint64_t bar_writes = 0;
  uint64_t uar_writes = 0;        // BAR0 writes past the init segment, routed to the doorbell unit
  uint64_t device_memory_accesses = 0;  // loads and stores to the MEMIC window of BAR0 and its operation mirrors
  uint64_t device_memory_operations_ignored = 0;  // at an operation address not turned on, or not one byte
  uint64_t command_events = 0;    // CMD EQEs posted for completed commands (event mode)
  uint64_t rejected_accesses = 0;  // outside BAR0, bad size, or while the function is inactive
  uint64_t commands_while_detached = 0;
  uint64_t rx_frames_dropped_inactive = 0;
  uint64_t rx_loopback_frames = 0;
  uint64_t rx_loopback_blocked = 0;      // own non-RoCE frames the vport's disable_*_local_lb stopped
  uint64_t eth_doorbells_deferred = 0;   // Ethernet SQ doorbells that waited behind looped work (software steering)
  uint64_t work_dropped_by_reset = 0;  // doorbells/frames queued when a reset came
  uint64_t rx_frames_dropped_queue_full = 0;  // frames that found kMaxQueuedFrames (or bytes) waiting
  uint64_t failures = 0;               // times the function failed on a host fault (see fail())
  uint64_t dropped_while_failed = 0;   // doorbells, command doorbells and frames of a failed function
};

class HcaFunction : public sc_core::sc_module, private RdmaEngine::SqScheduler {
 public:
  SC_HAS_PROCESS(HcaFunction);
  HcaFunction(sc_core::sc_module_name name, uint64_t bar0_size, FunctionIdentity identity, FirmwareVersion fw = {},
              HcaTiming timing = {});

  tlm_utils::simple_target_socket<HcaFunction> bar0;

  // Where DMA and interrupts go. May be null (no host attached): commands then wait.
  void attach_host(pcie::HostMemory* memory, pcie::MsixSender* msix);

  // A VF exists only while its PF has VF Enable set; an inactive function ignores its BARs.
  void set_active(bool active);
  bool active() const { return active_; }

  // The physical link (the uplink's carrier) came up or went down: the port's operational state
  // follows at once, and the driver hears it through a PORT_CHANGE EQE (kernel thread).
  void set_physical_link(bool up);

  // Function-level reset (FLR, DEVICE_RESET, VF disable): every piece of function state goes.
  void function_reset();
  // A DMA failed through the host's fault (host_port.h: a client truncated its memory or left a DMA
  // message unanswered): the function fails as a ConnectX does on a fatal PCIe error. Its objects
  // go, its NIC interface reads disabled with a health syndrome, and it ignores doorbells and
  // frames until the driver sets its command queue up again (mlx5's health recovery). Only this
  // function: the others, on their own clients, go on.
  bool failed() const { return init_segment_.failed(); }

  uint64_t bar0_size() const { return bar0_size_; }
  const HcaFunctionCounters& counters() const { return counters_; }
  const CommandQueueCounters& command_counters() const { return commands_.counters(); }
  const InitSegment& init_segment() const { return init_segment_; }
  const FunctionContext& context() const { return context_; }
  const Firmware& firmware() const { return firmware_; }
  const DoorbellCounters& doorbell_counters() const { return doorbells_.counters(); }

  // The function's Ethernet port: frames its SQs send go to `port` (the embedded switch); frames
  // the switch delivers enter through receive(). An inactive function receives nothing.
  void set_port(EthernetPort* port) {
    eth_.set_port(port);
    rdma_.set_port(port);
  }
  void set_stage_hook(StageHook hook) { rdma_.set_stage_hook(std::move(hook)); }
  void set_qp_hook(QpHook hook) { rdma_.set_qp_hook(std::move(hook)); }
  void set_peer_lookup(std::function<int32_t(const transport::Mac&)> lookup) {
    rdma_.set_peer_lookup(std::move(lookup));
  }
  // Pipeline, firmware and wire costs of a timing preset (the PCIe link is the device config's).
  void apply_timing(const TimingPreset& preset);
  // Transport timers in model time only (the default: closed runs), or with a wall-clock floor
  // (full-system runs with live guests).
  void set_timer_policy(const TimerPolicy& policy) { rdma_.set_timer_policy(policy); }
  // hcaemu's memory budget for the function's MKEY translation tables (entries; device config).
  void set_translation_budget(uint64_t entries) { context_.resources.limits.max_translation_entries = entries; }
  // DCQCN in this function's RDMA engine (ECN-capable data, CNPs for marked packets, a rate limiter
  // per QP); null: off. The parameters outlive the function.
  void set_congestion_control(const DcqcnParameters* parameters) { rdma_.set_congestion_control(parameters); }
  // The embedded switch's owner says which unicast addresses belong to other functions.
  void set_unicast_owner_check(std::function<bool(const std::array<uint8_t, 6>&)> owned_elsewhere) {
    context_.unicast_owned_elsewhere = std::move(owned_elsewhere);
  }
  const RdmaCounters& rdma_counters() const { return rdma_.counters(); }
  // `looped_from`: the function's own frame, turned around inside the NIC (RoCE between its own QPs,
  // raw packet QPs of two processes), sent by an SQ of that transport domain (0: none, RDMA).
  void receive(std::span<const uint8_t> frame, std::optional<uint32_t> looped_from = std::nullopt);
  const EthCounters& eth_counters() const { return eth_.counters(); }
  uint64_t unclaimed_sq_doorbells() const { return unclaimed_sq_doorbells_; }
  uint16_t vhca_id() const { return context_.identity.vhca_id; }

 private:
  LogLimiter doorbell_without_queue_log_;
  // Everything that changes the function's objects runs on one SystemC thread, one item at a
  // time: command slots, UAR doorbells, frames from the switch, timers and the next message of an
  // SQ. An item runs decoupled (pcie/model_time.h): its costs move a local clock, and the thread
  // waits them out once when the item is done, so no handler ever finds its objects changed under
  // it. Serialising the items keeps one function's queues, CQs and EQs from being advanced by two
  // processes at once (a lost EQE stalled mlx5e before).
  enum class WorkKind : uint8_t { kCommands, kDoorbell, kFrame, kReset, kTimer, kSqResume, kPortChange, kEthDoorbell };
  struct WorkItem {
    WorkKind kind;
    uint64_t offset = 0;                 // doorbell: BAR0 offset
    std::vector<uint8_t> data{};         // doorbell bytes or the frame
    sc_core::sc_time not_before{};       // frames: arrival on this function's port; doorbells: their write
    std::optional<uint32_t> looped_from{}; // frames: sent by this function to itself (sender's domain)
    SqResume sq{};                       // kSqResume: where the SQ stands
    uint32_t deferrals = 0;              // kEthDoorbell: times it waited behind looped work
  };

  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  void engine();  // SC_THREAD: the work queue
  void run_commands();
  void enqueue(WorkItem item);
  void timer_fired();  // SC_METHOD on the transport timers (model time, or the wall-clock floor)
  void run_item(WorkItem& item);
  void deliver_frame(const WorkItem& item);
  bool defer_eth_doorbell(std::span<const uint8_t> data, uint32_t deferrals);
  void fail_on_host_fault();  // after each work item
  // RdmaEngine::SqScheduler: an SQ's next message waits its turn at the back of the queue.
  void resume_later(const SqResume& resume) override;
  bool reread_queued(uint32_t qpn) override;
  uint64_t now_ticks() const;
  void paced_due();  // SC_METHOD: held resumptions whose time has come join the queue

  uint64_t host_faults_seen_ = 0;
  LogLimiter failure_log_;
  uint64_t bar0_size_;
  HcaTiming timing_;
  InitSegment init_segment_;
  FunctionContext context_;
  Firmware firmware_;
  EthQueues eth_{context_};
  RdmaEngine rdma_{context_};
  WallTimer wall_timer_{"wall_timer"};
  sc_core::sc_event model_timer_;  // the earliest transport deadline in model time
  CommandQueue commands_;
  DoorbellUnit doorbells_;
  bool active_ = true;
  uint64_t unclaimed_sq_doorbells_ = 0;  // SQ doorbells naming neither an Ethernet SQ nor a QP
  uint32_t pending_slots_ = 0;
  bool commands_queued_ = false;         // a kCommands item is in work_
  bool engine_busy_ = false;             // the engine is inside an item (it may be waiting on DMA)
  std::deque<WorkItem> work_;
  // Frames from the switch waiting in work_: bounded, as a NIC's receive buffer is, so senders
  // faster than this function (a broadcast TSO storm of MSS 1) cost dropped frames, not memory.
  static constexpr size_t kMaxQueuedFrames = 65536;
  static constexpr uint32_t kMaxEthDoorbellDeferrals = 64;
  static constexpr size_t kMaxQueuedFrameBytes = size_t(64) << 20;
  size_t queued_frames_ = 0, queued_frame_bytes_ = 0;
  void clear_work();  // drops every queued item (reset, failure), counted
  sc_core::sc_event work_event_;
  PacedResumptions paced_;       // rate-limited SQ resumptions, aside until due
  sc_core::sc_event pace_;
  HcaFunctionCounters counters_;
};

}  // namespace hcaemu::model
