#pragma once
// The command queue transport (mlx5-device-bringup.md section 3): 64-byte entries in host memory,
// ownership bit, delivery status, mailbox chains. It moves a command's input from host memory to a
// handler and the handler's output back, and reports delivery errors the way the PRM defines them.
// What a command *means* is the handler's business.
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "common/log_limit.h"
#include "pcie/host_port.h"

namespace hcaemu::model {

namespace cmdq {
inline constexpr uint32_t kEntrySize = 64;
inline constexpr uint32_t kInlineBytes = 16;       // in[] and out[] inside the entry
inline constexpr uint32_t kMailboxData = 512;
inline constexpr uint32_t kMailboxSize = 576;
inline constexpr uint32_t kMailboxNext = 0x230;
inline constexpr uint32_t kMailboxBlockNum = 0x238;
inline constexpr uint32_t kMailboxToken = 0x23d;
inline constexpr uint8_t kTypePciTransport = 0x7;
inline constexpr uint32_t kMaxMessageBytes = 1u << 20;  // bound on any command's in/out length

// Delivery status, written to status_own[7:1] (core/cmd.c's enum).
enum class Delivery : uint8_t {
  kOk = 0x0,
  kSignatureError = 0x1,
  kTokenError = 0x2,
  kBadBlockNumber = 0x3,
  kBadOutputPointer = 0x4,
  kBadInputPointer = 0x5,
  kInternalError = 0x6,
  kBadInputLength = 0x7,
  kBadOutputLength = 0x8,
  kReservedNotZero = 0x9,
  kBadCommandType = 0x10,
};
}  // namespace cmdq

// A command's status in the output header (device.h MLX5_CMD_STAT_*).
enum class CommandStatus : uint8_t {
  kOk = 0x0,
  kInternalError = 0x1,
  kBadOpcode = 0x2,
  kBadParameter = 0x3,
  kBadSystemState = 0x4,
  kBadResource = 0x5,
  kResourceBusy = 0x6,
  kExceedLimit = 0x8,
  kBadResourceState = 0x9,
  kBadIndex = 0xa,
  kNoResources = 0xf,
  kBadQpState = 0x10,
  kBadInputLength = 0x50,
  kBadOutputLength = 0x51,
};


struct CommandRequest {
  uint16_t opcode = 0;
  uint16_t op_mod = 0;
  std::vector<uint8_t> input;  // the whole input, header included (inlen bytes)
  uint32_t output_length = 0;  // what the driver allows (outlen bytes)
};

// The handler fills `output` (resized to at most output_length); byte 0 holds the status and
// bytes 4..7 the syndrome, as every mlx5 command output does.
using CommandHandler = std::function<void(const CommandRequest&, std::vector<uint8_t>& output)>;

struct CommandQueueCounters {
  uint64_t executed = 0;
  uint64_t not_owned = 0;        // doorbell for an entry the hardware does not own
  uint64_t dma_faults = 0;       // entry or mailbox outside the function's memory
  uint64_t delivery_errors = 0;  // bad type, lengths, mailbox chain
};

class CommandQueue {
 public:
  explicit CommandQueue(CommandHandler handler) : handler_(std::move(handler)) {}

  // Executes entry `slot` of the queue at `queue_address` (entry stride 64 B). Returns true when
  // the entry was completed (ownership handed back), false when nothing could be written back.
  bool execute(pcie::HostMemory& memory, uint64_t queue_address, uint32_t slot);

  const CommandQueueCounters& counters() const { return counters_; }

 private:
  bool gather_input(pcie::HostMemory& memory, uint64_t first_block, uint32_t length, uint8_t token,
                    std::vector<uint8_t>& input, cmdq::Delivery& error);
  bool scatter_output(pcie::HostMemory& memory, uint64_t first_block, const std::vector<uint8_t>& output,
                      uint8_t token, cmdq::Delivery& error);

  CommandHandler handler_;
  CommandQueueCounters counters_;
  LogLimiter bad_entry_log_, not_owned_log_;  // the driver's doorbells trigger these
};

}  // namespace hcaemu::model
