#pragma once
// The firmware's command dispatch: one handler per opcode, registered by the file that implements
// that group of commands (fw_*.cpp). A handler reads its input through model/prm/bits.h accessors,
// writes its output the same way, and reports failure with a PRM status and a syndrome. It never
// trusts a field: every index, size and ID from the driver is checked before use.
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/prm/bits.h"
#include "model/firmware/command_queue.h"

namespace hcaemu::model {

struct FunctionContext;

// Common input header fields (mbox_in) and output header fields (mbox_out).
namespace mbox {
inline constexpr Field kOpcode{0x00, 31, 16};
inline constexpr Field kUid{0x00, 15, 0};
inline constexpr Field kOpMod{0x04, 15, 0};
inline constexpr Field kStatus{0x00, 31, 24};
inline constexpr Field kSyndrome{0x04, 31, 0};
inline constexpr uint32_t kHeaderSize = 0x10;
}  // namespace mbox

// Who may send a command, by the uid in its header. The kernel driver sends uid 0. With DevX
// (log_max_uctx), mlx5_ib stamps a user context's uid on the commands of that process's objects and
// passes its read-only queries through with it, and marks the kernel objects every user context may
// use with kSharedResourceUid (objects/resources.h). Firmware::execute refuses any other uid.
enum class Senders : uint8_t {
  kKernel,        // uid 0 only
  kKernelShared,  // uid 0, or kSharedResourceUid for an object shared with user contexts
  kUser,          // uid 0 or a live user context
  kUserQuery,     // as kUser; a user context may not ask about another vport or function (the
                  // other_vport / other_function bit, bit 31 of the third dword, stays clear)
  kKernelForUsers,  // uid 0, kSharedResourceUid or a live user context: what the kernel sets up in
                    // a process's name (SET_PP_RATE_LIMIT for mlx5dv_pp_alloc)
};

class CommandCall {
 public:
  CommandCall(const CommandRequest& request, std::vector<uint8_t>& output, FunctionContext& function)
      : request_(request), output_(output), function_(function) {}

  std::span<const uint8_t> in() const { return request_.input; }
  std::span<uint8_t> out() { return output_; }
  uint16_t opcode() const { return request_.opcode; }
  uint16_t op_mod() const { return request_.op_mod; }
  // The sender's uid (Senders): 0 for the kernel driver.
  uint16_t uid() const;
  FunctionContext& function() { return function_; }

  // Output must hold at least `bytes` (the command's fixed output size); input at least `bytes`.
  bool need_input(uint32_t bytes);
  bool need_output(uint32_t bytes);

  // Ends the command with a failure status; the handler returns right after.
  void fail(CommandStatus status, uint32_t syndrome);
  bool failed() const { return failed_; }

 private:
  const CommandRequest& request_;
  std::vector<uint8_t>& output_;
  FunctionContext& function_;
  bool failed_ = false;
};

using CommandHandler2 = std::function<void(CommandCall&)>;

class CommandTable {
 public:
  void add(uint16_t opcode, std::string_view name, CommandHandler2 handler, Senders senders = Senders::kKernel);
  const CommandHandler2* find(uint16_t opcode) const;
  Senders senders(uint16_t opcode) const;
  std::string_view name(uint16_t opcode) const;
  size_t size() const { return handlers_.size(); }

 private:
  struct Entry {
    std::string_view name;
    CommandHandler2 handler;
    Senders senders = Senders::kKernel;
  };
  std::unordered_map<uint16_t, Entry> handlers_;
};

// Syndromes are stable numbers that name the check that failed (they appear in the guest's dmesg);
// each handler file uses its own range so a syndrome points at one place in the code.
inline uint32_t syndrome(uint16_t opcode, uint16_t check) { return (uint32_t(opcode) << 16) | check; }

}  // namespace hcaemu::model
