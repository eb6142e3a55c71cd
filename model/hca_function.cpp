#include "model/hca_function.h"

#include <algorithm>
#include <bit>

#include "common/log.h"
#include "model/work_items.h"
#include "transport/ethernet.h"
#include "pcie/model_time.h"

namespace hcaemu::model {

HcaFunction::HcaFunction(sc_core::sc_module_name name, uint64_t bar0_size, FunctionIdentity identity, FirmwareVersion fw,
                         HcaTiming timing)
    : sc_module(name),
      bar0("bar0"),
      bar0_size_(bar0_size),
      timing_(timing),
      init_segment_(fw),
      context_{.identity = identity},
      firmware_(context_),
      commands_([this](const CommandRequest& request, std::vector<uint8_t>& output) {
        firmware_.execute(request, output);
      }) {
  context_.bar0_size = bar0_size;
  context_.identity.lay_out_bar0(bar0_size);
  context_.place_device_memory();
  bar0.register_b_transport(this, &HcaFunction::b_transport);
  doorbells_.set_sq_hook([this](FunctionContext&, uint32_t, uint32_t, std::span<const uint8_t> data,
                                uint64_t written_ps) {
    if (context_.identity.sw_icm && eth_.names_sq(data) && defer_eth_doorbell(data, 0)) return;
    if (!eth_.doorbell(data) && !rdma_.doorbell(data, written_ps)) ++unclaimed_sq_doorbells_;
  });
  rdma_.set_timer_hook([this](const TimerDeadline& deadline) {
    if (deadline.wall) wall_timer_.arm(*deadline.wall);
    // A model deadline already passed with a wall floor still ahead waits for the wall timer alone
    // (notifying now would spin the kernel in delta cycles until then).
    const uint64_t now = pcie::to_ps(sc_core::sc_time_stamp());  // the event counts from the kernel's time
    if (deadline.model_ps > now)
      model_timer_.notify(pcie::from_ps(deadline.model_ps - now));
    else if (!deadline.wall)
      model_timer_.notify(sc_core::SC_ZERO_TIME);
  });
  rdma_.set_sq_scheduler(this);
  eth_.set_clock({.now_ps = [] { return pcie::to_ps(pcie::model_time()); },
                  .consume_ps = [](uint64_t ps) { pcie::consume_model_time(pcie::from_ps(ps)); }});
  context_.qp_moved_to_error = [this](uint32_t qpn) { rdma_.qp_moved_to_error(qpn); };
  context_.qp_ready = [this](uint32_t qpn) { rdma_.qp_ready(qpn); };
  context_.send_queue_resumed = [this](uint32_t qpn) { rdma_.send_queue_resumed(qpn); };
  context_.page_fault_resumed = [this](const PageFault& fault, uint32_t token, bool error) {
    rdma_.page_fault_resumed(fault, token, error);
  };
  context_.clock_ticks = [this] { return now_ticks(); };
  SC_THREAD(engine);
  SC_METHOD(timer_fired);
  sensitive << wall_timer_.fired() << model_timer_;
  dont_initialize();
  SC_METHOD(paced_due);
  sensitive << pace_;
  dont_initialize();
}

void HcaFunction::apply_timing(const TimingPreset& preset) {
  timing_.command_latency = sc_core::sc_time(preset.command_latency_us, sc_core::SC_US);
  timing_.wire_propagation = sc_core::sc_time(preset.propagation_ns, sc_core::SC_NS);
  rdma_.set_timing(RdmaTiming::from_preset(preset));
  eth_.set_link_gbps(preset.link_gbps);
}

void HcaFunction::attach_host(pcie::HostMemory* memory, pcie::MsixSender* msix) {
  context_.attach_memory(memory);
  host_faults_seen_ = memory != nullptr ? memory->host_faults() : 0;  // only new faults fail the function
  context_.msix = msix;
  if (pending_slots_ != 0 && !commands_queued_) {
    commands_queued_ = true;
    enqueue({.kind = WorkKind::kCommands});
  }
}

void HcaFunction::set_physical_link(bool up) {
  if (context_.port.set_link(up) && active_) enqueue({.kind = WorkKind::kPortChange});
}

void HcaFunction::set_active(bool active) {
  if (active_ == active) return;
  function_reset();
  active_ = active;
}

void HcaFunction::function_reset() {
  init_segment_.reset();
  doorbells_.reset();
  pending_slots_ = 0;
  commands_queued_ = false;
  clear_work();
  // The objects go at once, unless the engine is inside an item: then it still holds references
  // into them, and the reset runs as soon as that item is done, before anything posted after it.
  if (engine_busy_)
    enqueue({.kind = WorkKind::kReset});
  else
    firmware_.reset();
}

void HcaFunction::clear_work() {
  counters_.work_dropped_by_reset += work_.size() + paced_.size();
  work_.clear();
  paced_.clear();
  queued_frames_ = queued_frame_bytes_ = 0;
}

void HcaFunction::receive(std::span<const uint8_t> frame, std::optional<uint32_t> looped_from) {
  if (!active_) {
    ++counters_.rx_frames_dropped_inactive;
    return;
  }
  if (failed()) return void(++counters_.dropped_while_failed);
  if (queued_frames_ >= kMaxQueuedFrames || queued_frame_bytes_ + frame.size() > kMaxQueuedFrameBytes)
    return void(++counters_.rx_frames_dropped_queue_full);
  ++queued_frames_;
  queued_frame_bytes_ += frame.size();
  if (looped_from) ++counters_.rx_loopback_frames;
  enqueue({.kind = WorkKind::kFrame,
           .data = std::vector<uint8_t>(frame.begin(), frame.end()),
           .not_before = pcie::model_time() + timing_.wire_propagation,
           .looped_from = looped_from});
}

void HcaFunction::resume_later(const SqResume& resume) {
  // A reset queued behind the running item ends the SQ's work.
  if (std::any_of(work_.begin(), work_.end(), [](const WorkItem& item) { return item.kind == WorkKind::kReset; }))
    return;
  // Behind everything already queued: frames that arrived meanwhile (ACKs) go first, and a stream
  // on one QP cannot starve other QPs' doorbells, commands or timers (an SQ that always has WQEs
  // would otherwise keep its next message at the head for ever). A rate-limited QP's (DCQCN) waits
  // aside until its next message may go, so nothing queues behind it.
  const uint64_t now = pcie::to_ps(sc_core::sc_time_stamp());
  if (resume.not_before_ps > now) {
    if (const auto wake = paced_.hold(resume, now)) pace_.notify(pcie::from_ps(*wake));
    return;
  }
  enqueue({.kind = WorkKind::kSqResume, .sq = resume});
}

void HcaFunction::paced_due() {
  const uint64_t now = pcie::to_ps(sc_core::sc_time_stamp());
  const auto next = paced_.release_due(now, [this](const SqResume& r) { enqueue({.kind = WorkKind::kSqResume, .sq = r}); });
  if (next) pace_.notify(pcie::from_ps(*next));
}

bool HcaFunction::reread_queued(uint32_t qpn) {
  for (WorkItem& item : work_)
    if (item.kind == WorkKind::kSqResume && item.sq.qpn == qpn) return item.sq.reread = true;
  return paced_.reread(qpn);
}

void HcaFunction::deliver_frame(const WorkItem& item) {
  if (!active_ || rdma_.receive(item.data, pcie::to_ps(item.not_before))) return;
  // The vport's local-loopback switches govern the function's own Ethernet frames (RoCE between
  // its own QPs always loops back: the RDMA engine took those above).
  if (item.looped_from) {
    const VportState& v = context_.vport;
    if (transport::ethernet::to_group_address(item.data) ? v.disable_mc_local_lb : v.disable_uc_local_lb)
      return void(++counters_.rx_loopback_blocked);
  }
  eth_.receive(item.data, item.looped_from);
}

// With software steering, mlx5 DR writes its rules into steering ICM through a force-loopback RC
// QP and returns before they land; the raw packets a test sends next come through an Ethernet SQ,
// which would otherwise be served while the rule's RDMA WRITE is still on its way back to the
// function and be steered by the old rules. Such a doorbell waits behind the function's queued
// RDMA work and looped frames (a bounded number of times: a busy QP cannot hold it for ever).
bool HcaFunction::defer_eth_doorbell(std::span<const uint8_t> data, uint32_t deferrals) {
  if (deferrals >= kMaxEthDoorbellDeferrals) return false;
  const auto behind = after_queued(work_, sc_core::sc_time_stamp(), [](const WorkItem& item) {
    return (item.kind == WorkKind::kFrame && item.looped_from) || item.kind == WorkKind::kSqResume;
  });
  if (!behind) return false;
  ++counters_.eth_doorbells_deferred;
  enqueue({.kind = WorkKind::kEthDoorbell,
           .data = std::vector<uint8_t>(data.begin(), data.end()),
           .not_before = *behind,
           .deferrals = deferrals + 1});
  return true;
}

void HcaFunction::timer_fired() {
  if (active_) enqueue({.kind = WorkKind::kTimer});
}

void HcaFunction::enqueue(WorkItem item) {
  work_.push_back(std::move(item));
  work_event_.notify(sc_core::SC_ZERO_TIME);
}

uint64_t HcaFunction::now_ticks() const {
  return pcie::model_time_ps() / (1'000'000'000ull / init_seg::kInternalTimerKhz);  // ps per tick
}

void HcaFunction::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  const uint64_t offset = trans.get_address();
  const uint32_t length = trans.get_data_length();
  uint8_t* data = trans.get_data_ptr();
  delay += timing_.register_access;
  if (!active_ || length == 0 || length > 8 || offset >= bar0_size_ || length > bar0_size_ - offset ||
      trans.get_byte_enable_ptr() != nullptr) {
    ++counters_.rejected_accesses;
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
  if (context_.device_memory.contains(offset, length)) {
    // Device memory is plain memory: stores land at once, in the order the host made them, so a
    // WQE whose SGE names them (rung after them) sees them.
    ++counters_.device_memory_accesses;
    const uint64_t at = offset - context_.device_memory.window().bar_offset;
    if (trans.is_read())
      context_.device_memory.read(at, std::span(data, length));
    else
      context_.device_memory.write(at, std::span<const uint8_t>(data, length));
    return;
  }
  if (context_.device_memory.in_operations(offset, length)) {
    // MEMIC atomic operations: each access acts on device memory at once, as a load or store would.
    ++counters_.device_memory_accesses;
    if (!context_.device_memory.operate(offset, trans.is_read(), std::span(data, length)))
      ++counters_.device_memory_operations_ignored;
    return;
  }
  const bool in_init_segment = offset < init_seg::kSize;
  if (trans.is_read()) {
    ++counters_.bar_reads;
    if (in_init_segment && length <= init_seg::kSize - offset)
      init_segment_.read(uint32_t(offset), std::span(data, length), now_ticks());
    else
      std::fill(data, data + length, 0);  // UAR doorbells read as zero
    return;
  }
  ++counters_.bar_writes;
  if (!in_init_segment) {
    ++counters_.uar_writes;
    if (failed()) return void(++counters_.dropped_while_failed);
    // Stamped with its arrival: the doorbell rang then, however long other work keeps it queued.
    enqueue({.kind = WorkKind::kDoorbell,
             .offset = offset,
             .data = std::vector<uint8_t>(data, data + length),
             .not_before = pcie::model_time()});
    return;
  }
  if (length > init_seg::kSize - offset) {
    ++counters_.rejected_accesses;
    return;
  }
  InitSegmentEffect effect = init_segment_.write(uint32_t(offset), std::span<const uint8_t>(data, length));
  if (effect.doorbell_bits != 0 && failed()) {
    ++counters_.dropped_while_failed;  // mlx5 in its error state completes commands itself
  } else if (effect.doorbell_bits != 0) {
    constexpr uint64_t kSlotMask = (uint64_t(1) << (1u << init_seg::kLogCmdqSize)) - 1;
    pending_slots_ |= effect.doorbell_bits & uint32_t(kSlotMask);
    if (pending_slots_ != 0 && !commands_queued_) {
      commands_queued_ = true;
      enqueue({.kind = WorkKind::kCommands});
    }
  }
}

void HcaFunction::engine() {
  run_work_items(
      work_, work_event_,
      [this](WorkItem& item) {
        engine_busy_ = true;  // a reset meanwhile (a DMA waiting on its client) waits for the item
        run_item(item);
        engine_busy_ = false;
        fail_on_host_fault();
      },
      [] {});
}

void HcaFunction::run_item(WorkItem& item) {
  switch (item.kind) {
    case WorkKind::kCommands:
      commands_queued_ = false;
      run_commands();
      break;
    case WorkKind::kDoorbell:
      doorbells_.write(context_, item.offset, item.data, pcie::to_ps(item.not_before));
      break;
    case WorkKind::kEthDoorbell:
      if (!defer_eth_doorbell(item.data, item.deferrals)) eth_.doorbell(item.data);
      break;
    case WorkKind::kFrame:
      --queued_frames_;
      queued_frame_bytes_ -= item.data.size();
      deliver_frame(item);
      break;
    case WorkKind::kTimer:
      rdma_.on_timer();
      break;
    case WorkKind::kReset:
      firmware_.reset();
      break;
    case WorkKind::kSqResume:
      rdma_.resume_sq(item.sq);
      break;
    case WorkKind::kPortChange:
      if (context_.hca_initialized) post_port_change(context_);
      break;
  }
}

void HcaFunction::fail_on_host_fault() {
  if (context_.memory == nullptr) return;
  const uint64_t faults = context_.memory->host_faults();
  if (faults == host_faults_seen_) return;
  host_faults_seen_ = faults;
  if (failed()) return;
  ++counters_.failures;
  if (failure_log_.allow())
    log().warn("{}: a DMA failed through its client (shared memory gone or a DMA message unanswered): the function "
               "fails (NIC interface disabled, health syndrome {:#x}) until its driver sets it up again; {} failure(s)",
               name(), init_seg::kSyndromeFetchPciError, counters_.failures);
  doorbells_.reset();
  pending_slots_ = 0;
  commands_queued_ = false;
  clear_work();
  firmware_.reset();  // between items: nothing holds references into the objects
  init_segment_.fail(init_seg::kSyndromeFetchPciError);
}

void HcaFunction::run_commands() {
  while (pending_slots_ != 0 && context_.memory != nullptr) {
    const uint32_t slot = uint32_t(std::countr_zero(pending_slots_));
    pending_slots_ &= pending_slots_ - 1;
    pcie::consume_model_time(timing_.command_latency);
    // Checked after the firmware delay: a reset may have come in while a DMA waited on its client.
    if (!init_segment_.command_queue_configured() || context_.memory == nullptr) {
      if (doorbell_without_queue_log_.allow())
        log().warn("{}: command doorbell for slot {} without a command queue address; ignored", name(), slot);
      continue;
    }
    // Event mode once an EQ takes CMD events; the command that creates that EQ still completes
    // in polling mode (the driver switches to events only after it returns).
    const bool event_mode = eq_has_subscriber(context_, eqe::kCommand);
    if (commands_.execute(*context_.memory, init_segment_.command_queue_address(), slot) && event_mode) {
      post_command_completion(context_, 1u << slot);  // ownership bit already cleared
      ++counters_.command_events;
    }
  }
  if (pending_slots_ != 0 && context_.memory == nullptr) ++counters_.commands_while_detached;
}

}  // namespace hcaemu::model
