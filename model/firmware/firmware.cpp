#include "model/firmware/firmware.h"

#include <algorithm>

#include "common/endian.h"
#include "common/log.h"
#include "model/firmware/resource_helpers.h"
#include "model/prm/mkc_fields.h"

namespace hcaemu::model {

bool CommandCall::need_input(uint32_t bytes) {
  if (request_.input.size() >= bytes) return true;
  fail(CommandStatus::kBadInputLength, syndrome(request_.opcode, 0xff01));
  return false;
}

bool CommandCall::need_output(uint32_t bytes) {
  if (output_.size() >= bytes) return true;
  fail(CommandStatus::kBadOutputLength, syndrome(request_.opcode, 0xff02));
  return false;
}

uint16_t CommandCall::uid() const { return uint16_t(get(request_.input, mbox::kUid)); }

void CommandCall::fail(CommandStatus status, uint32_t syndrome_value) {
  failed_ = true;
  std::fill(output_.begin(), output_.end(), 0);
  set(output_, mbox::kStatus, uint32_t(status));
  set(output_, mbox::kSyndrome, syndrome_value);
}

void CommandTable::add(uint16_t opcode, std::string_view name, CommandHandler2 handler, Senders senders) {
  handlers_[opcode] = Entry{name, std::move(handler), senders};
}

Senders CommandTable::senders(uint16_t opcode) const {
  auto it = handlers_.find(opcode);
  return it == handlers_.end() ? Senders::kKernel : it->second.senders;
}

const CommandHandler2* CommandTable::find(uint16_t opcode) const {
  auto it = handlers_.find(opcode);
  return it == handlers_.end() ? nullptr : &it->second.handler;
}

std::string_view CommandTable::name(uint16_t opcode) const {
  auto it = handlers_.find(opcode);
  return it == handlers_.end() ? std::string_view("UNKNOWN") : it->second.name;
}

void FunctionContext::apply_quotas() {
  const ObjectQuotas& q = identity.quotas;
  resources.limits.log_max_qp = q.log_max_qp;
  resources.limits.log_max_cq = q.log_max_cq;
  resources.limits.log_max_mkey = q.log_max_mkey;
  resources.limits.log_max_srq = q.log_max_srq;
  caps.log_max_qp = std::min(caps.log_max_qp, q.log_max_qp);  // `cur` never above `max`
}

void FunctionContext::reset_objects() {
  hca_enabled = false;
  hca_initialized = false;
  issi = 0;
  pages.clear();
  eth.clear();        // Ethernet objects first: they reference CQs, PDs, TDs
  resources.clear();  // every UAR, PD, TD, XRCD, EQ, CQ, MKEY, SRQ, QP
  device_memory.release_all();
  sw_icm.clear();
  caps = HcaCapSettings{};  // caps `cur` back to `max`
  apply_quotas();
  port.reset();             // registers and port state back to power-on
  vport = VportState{};     // vport context, address lists, RoCE addresses
  q_counters.clear();
  // The engine's DCQCN counters run on across tenants: the next one starts from zero.
  congestion_cleared = congestion_statistics ? congestion_statistics() : CongestionStatistics{};
}

namespace {
// Whether the uid in the command's header may send it (Senders).
bool sender_allowed(const CommandCall& call, const CommandRequest& request, Senders senders, const FunctionContext& f) {
  const uint16_t uid = call.uid();  // an input too short for a header reads as the kernel's uid 0
  if (uid == kKernelUid) return true;
  switch (senders) {
    case Senders::kKernel:
      return false;
    case Senders::kKernelShared:
      return uid == kSharedResourceUid;
    case Senders::kUser:
      return f.resources.user_contexts.contains(uid);
    case Senders::kUserQuery:
      return f.resources.user_contexts.contains(uid) && get(request.input, Field{0x08, 31, 31}) == 0;
    case Senders::kKernelForUsers:
      return uid == kSharedResourceUid || f.resources.user_contexts.contains(uid);
  }
  return false;
}

// DevX passes a process's commands through with their umem_valid bits set (mlx5_ib forces them):
// the object's buffers are then in a UMEM the kernel pinned (objects/umem.h), never the command's
// PAS, which the process wrote. The queue create commands resolve their UMEMs themselves (CQ, QP,
// SQ, RQ: firmware/umem.h); a key whose translation is a UMEM, a CQ resized into one and a DevX
// RMP are not offered, so those are refused; honouring their PAS would let any guest process point the
// device at any memory of the guest. The kernel's own commands leave the bits clear.
struct UmemField {
  uint16_t opcode;
  Field valid;
};
constexpr UmemField kUmemValid[] = {
    {0x200, {0x0c, 30, 30}},  // CREATE_MKEY: mkey_umem_valid
    {0x403, {0x5c, 31, 31}},  // MODIFY_CQ: cq_umem_valid
    {0x90c, {0x74, 30, 30}},  // CREATE_RMP: wq.wq_umem_valid (a DevX SRQ; libmlx5's SRQs are the kernel's)
};

bool asks_for_umem(const CommandRequest& request) {
  for (const UmemField& u : kUmemValid) {
    if (u.opcode != request.opcode || request.input.size() < u.valid.offset + 4) continue;
    if (get(request.input, u.valid) == 0) return false;
    // mlx5dv_create_mkey's key has no translation to take (KLM, free, umr_en: UMR lays it out).
    if (request.opcode == 0x200 && request.input.size() >= 0x50) {
      const auto mkc = std::span<const uint8_t>(request.input).subspan(0x10, 0x40);
      const bool klm = get(mkc, mkc::kAccessMode10) == Mkey::kAccessKlm && get(mkc, mkc::kAccessMode42) == 0;
      if (klm && get(mkc, mkc::kFree) != 0 && get(mkc, mkc::kUmrEn) != 0) return false;
    }
    return true;
  }
  return false;
}

void register_all_commands(CommandTable& table) {
  register_lifecycle_commands(table);
  register_hca_commands(table);
  register_resource_commands(table);
  register_eth_commands(table);
  register_counter_commands(table);
  register_mad_commands(table);
  register_memic_commands(table);
  register_page_fault_commands(table);
  register_user_context_commands(table);
  register_general_object_commands(table);
  register_scheduling_element_commands(table);
  register_packet_pacing_commands(table);
  register_umem_commands(table);
  register_eswitch_manager_commands(table);
}
}  // namespace

Firmware::Firmware(FunctionContext& function) : function_(function) {
  register_all_commands(table_);
  function_.apply_quotas();  // the identity's quotas hold from the first command
}

std::string_view Firmware::command_name(uint16_t opcode) {
  static const CommandTable names = [] {
    CommandTable table;
    register_all_commands(table);
    return table;
  }();
  return names.name(opcode);
}

void Firmware::reset() { function_.reset_objects(); }

void Firmware::execute(const CommandRequest& request, std::vector<uint8_t>& output) {
  output.assign(std::max<uint32_t>(request.output_length, mbox::kHeaderSize), 0);
  const CommandHandler2* handler = table_.find(request.opcode);
  if (handler == nullptr) {
    ++unsupported_;
    if (reported_.insert(request.opcode).second)
      log().warn("firmware: command {:#06x} op_mod {:#x} is not supported; answering BAD_OPCODE", request.opcode,
                 request.op_mod);
    set(output, mbox::kStatus, uint32_t(CommandStatus::kBadOpcode));
    set(output, mbox::kSyndrome, unsupported_syndrome(request.opcode));
    return;
  }
  CommandCall call(request, output, function_);
  if (!sender_allowed(call, request, table_.senders(request.opcode), function_)) {
    call.fail(CommandStatus::kBadParameter, syndrome(request.opcode, fw::kCheckUid));
    ++failed_;
    log().debug("firmware: {} refused: uid {:#x} may not send it", table_.name(request.opcode), call.uid());
    return;
  }
  if (asks_for_umem(request)) {
    call.fail(CommandStatus::kBadParameter, syndrome(request.opcode, fw::kCheckUmem));
    ++failed_;
    log().debug("firmware: {} refused: its buffers are in a UMEM (not offered)", table_.name(request.opcode));
    return;
  }
  log().trace("firmware: {} op_mod {:#x} inlen {}", table_.name(request.opcode), request.op_mod, request.input.size());
  (*handler)(call);
  if (call.failed()) {
    ++failed_;
    log().debug("firmware: {} failed: status {:#x} syndrome {:#x}", table_.name(request.opcode),
                get(output, mbox::kStatus), get(output, mbox::kSyndrome));
    if (log().should_log(spdlog::level::trace)) {  // the input that failed, for the bring-up log
      std::string hex;
      for (size_t i = 0; i < std::min<size_t>(request.input.size(), 0x120); ++i)
        hex += fmt::format("{:02x}{}", request.input[i], (i % 16 == 15) ? "\n" : " ");
      log().trace("firmware: {} input:\n{}", table_.name(request.opcode), hex);
    }
  }
}

}  // namespace hcaemu::model
