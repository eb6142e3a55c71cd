#pragma once
// The firmware personality: what each command opcode does to a function. Handlers live in fw_*.cpp,
// one file per group of commands; an opcode nobody registered is answered with the PRM's
// BAD_OPCODE status and a syndrome that names it, and is logged once by name.
#include <cstdint>
#include <set>
#include <vector>

#include "model/firmware/command_queue.h"
#include "model/firmware/command_table.h"
#include "model/function_context.h"

namespace hcaemu::model {

// Registration functions of the handler files (one per fw_*.cpp).
void register_lifecycle_commands(CommandTable& table);  // firmware/lifecycle.cpp
void register_hca_commands(CommandTable& table);  // firmware/hca.cpp: caps, INIT/TEARDOWN, adapter, registers, vports, RoCE
void register_resource_commands(CommandTable& table);  // firmware/uar_pd_eq_cq.cpp: UAR, PD, TD, XRCD, EQ, CQ, MKEY, SRQ, QP
void register_eth_commands(CommandTable& table);  // firmware/eth.cpp + firmware/eth_flow.cpp: TIS, TIR, RQT, RQ, SQ, flow steering
void register_counter_commands(CommandTable& table);  // firmware/counters.cpp: Q counter sets
void register_mad_commands(CommandTable& table);      // firmware/mad.cpp: MAD_IFC (no SMA on RoCE)
void register_memic_commands(CommandTable& table);    // firmware/memic.cpp: ALLOC/DEALLOC_MEMIC
void register_page_fault_commands(CommandTable& table);  // firmware/page_fault.cpp: PAGE_FAULT_RESUME (ODP)
void register_user_context_commands(CommandTable& table);  // firmware/user_context.cpp: CREATE/DESTROY_UCTX (DevX)
void register_general_object_commands(CommandTable& table);  // firmware/general_objects.cpp: reserved QP numbers
void register_scheduling_element_commands(CommandTable& table);  // firmware/scheduling_elements.cpp
void register_packet_pacing_commands(CommandTable& table);  // firmware/packet_pacing.cpp: SET_PP_RATE_LIMIT
void register_eswitch_manager_commands(CommandTable& table);  // firmware/eswitch_manager.cpp: ESW vport, MPFS
void register_umem_commands(CommandTable& table);  // firmware/umem.cpp: CREATE/DESTROY_UMEM (DevX)

// A PORT_CHANGE EQE (ACTIVE or DOWN, as the port now is) on the EQs that asked for them: after a
// PAOS write or the physical link changing (firmware/hca.cpp).
void post_port_change(FunctionContext& f);

class Firmware {
 public:
  explicit Firmware(FunctionContext& function);

  void execute(const CommandRequest& request, std::vector<uint8_t>& output);

  // Syndrome reported for an opcode we do not implement (stable, so logs can be matched).
  static uint32_t unsupported_syndrome(uint16_t opcode) { return 0x0bad0000u | opcode; }

  // Function-level reset: every object of the function goes, lifecycle back to the start.
  void reset();
  uint64_t unsupported_commands() const { return unsupported_; }
  uint64_t failed_commands() const { return failed_; }
  const CommandTable& table() const { return table_; }
  // The name the firmware knows a command by ("ENABLE_HCA"), "UNKNOWN" for one it does not implement.
  static std::string_view command_name(uint16_t opcode);

 private:
  FunctionContext& function_;
  CommandTable table_;
  std::set<uint16_t> reported_;
  uint64_t unsupported_ = 0;
  uint64_t failed_ = 0;
};

}  // namespace hcaemu::model
