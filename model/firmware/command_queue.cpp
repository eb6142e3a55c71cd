#include "model/firmware/command_queue.h"

#include <array>
#include <cstring>

#include "common/endian.h"
#include "common/log.h"

namespace hcaemu::model {

using namespace cmdq;

namespace {
// Entry layout (struct mlx5_cmd_layout).
constexpr uint32_t kType = 0x00;
constexpr uint32_t kInputLength = 0x04;
constexpr uint32_t kInputPointer = 0x08;
constexpr uint32_t kInputInline = 0x10;
constexpr uint32_t kOutputInline = 0x20;
constexpr uint32_t kOutputPointer = 0x30;
constexpr uint32_t kOutputLength = 0x38;
constexpr uint32_t kToken = 0x3c;
constexpr uint32_t kStatusOwn = 0x3f;
constexpr uint8_t kOwnedByHardware = 0x1;

}  // namespace

bool CommandQueue::gather_input(pcie::HostMemory& memory, uint64_t block_address, uint32_t length, uint8_t token,
                                std::vector<uint8_t>& input, Delivery& error) {
  std::array<uint8_t, kMailboxSize> block{};
  uint32_t copied = kInlineBytes;
  for (uint32_t index = 0; copied < length; ++index) {
    if (block_address == 0 || (block_address & 0x3ff) != 0) {  // blocks come from a 1 KiB aligned pool
      error = Delivery::kBadInputPointer;
      return false;
    }
    if (!memory.read(block_address, block)) {
      ++counters_.dma_faults;
      error = Delivery::kBadInputPointer;
      return false;
    }
    if (load_be32(&block[kMailboxBlockNum]) != index) {
      error = Delivery::kBadBlockNumber;
      return false;
    }
    if (block[kMailboxToken] != token) {
      error = Delivery::kTokenError;
      return false;
    }
    uint32_t chunk = std::min(kMailboxData, length - copied);
    std::memcpy(input.data() + copied, block.data(), chunk);
    copied += chunk;
    block_address = load_be64(&block[kMailboxNext]);
  }
  return true;
}

bool CommandQueue::scatter_output(pcie::HostMemory& memory, uint64_t block_address,
                                  const std::vector<uint8_t>& output, uint8_t token, Delivery& error) {
  std::array<uint8_t, kMailboxSize> block{};
  uint32_t written = kInlineBytes;
  for (uint32_t index = 0; written < output.size(); ++index) {
    if (block_address == 0 || (block_address & 0x3ff) != 0) {
      error = Delivery::kBadOutputPointer;
      return false;
    }
    // Read first: only the data part is ours to write, the chain links are the driver's.
    if (!memory.read(block_address, block)) {
      ++counters_.dma_faults;
      error = Delivery::kBadOutputPointer;
      return false;
    }
    if (load_be32(&block[kMailboxBlockNum]) != index) {
      error = Delivery::kBadBlockNumber;
      return false;
    }
    uint32_t chunk = std::min<uint32_t>(kMailboxData, uint32_t(output.size()) - written);
    if (!memory.write(block_address, std::span(output.data() + written, chunk))) {
      ++counters_.dma_faults;
      error = Delivery::kBadOutputPointer;
      return false;
    }
    written += chunk;
    block_address = load_be64(&block[kMailboxNext]);
  }
  return true;
}

bool CommandQueue::execute(pcie::HostMemory& memory, uint64_t queue_address, uint32_t slot) {
  const uint64_t entry_address = queue_address + uint64_t(slot) * kEntrySize;
  std::array<uint8_t, kEntrySize> entry{};
  if (!memory.read(entry_address, entry)) {
    ++counters_.dma_faults;
    if (bad_entry_log_.allow())
      log().warn("cmdq: entry {} at {:#x} is outside the function's memory ({} so far)", slot, entry_address,
                 counters_.dma_faults);
    return false;
  }
  if ((entry[kStatusOwn] & kOwnedByHardware) == 0) {
    ++counters_.not_owned;
    if (not_owned_log_.allow()) log().warn("cmdq: doorbell for entry {} which the driver still owns; ignored", slot);
    return false;
  }

  Delivery delivery = Delivery::kOk;
  std::vector<uint8_t> output;
  const uint8_t token = entry[kToken];
  const uint32_t input_length = load_be32(&entry[kInputLength]);
  const uint32_t output_length = load_be32(&entry[kOutputLength]);
  if (entry[kType] != kTypePciTransport) {
    delivery = Delivery::kBadCommandType;
  } else if (input_length < 8 || input_length > kMaxMessageBytes) {
    delivery = Delivery::kBadInputLength;
  } else if (output_length < 8 || output_length > kMaxMessageBytes) {
    delivery = Delivery::kBadOutputLength;
  } else {
    CommandRequest request;
    request.input.assign(std::max(input_length, kInlineBytes), 0);
    std::memcpy(request.input.data(), &entry[kInputInline], kInlineBytes);
    if (gather_input(memory, load_be64(&entry[kInputPointer]), input_length, token, request.input, delivery)) {
      request.input.resize(input_length);
      request.opcode = load_be16(&request.input[0]);
      request.op_mod = load_be16(&request.input[6]);
      request.output_length = output_length;
      handler_(request, output);
      output.resize(std::min<size_t>(std::max<size_t>(output.size(), 8), output_length));
      if (output.size() > kInlineBytes)
        scatter_output(memory, load_be64(&entry[kOutputPointer]), output, token, delivery);
    }
  }

  if (delivery != Delivery::kOk) ++counters_.delivery_errors;
  // Output first, ownership last: the driver may look at out[] as soon as the bit flips.
  std::array<uint8_t, kInlineBytes> inline_out{};
  if (!output.empty())  // a delivery error leaves no output at all
    std::memcpy(inline_out.data(), output.data(), std::min<size_t>(output.size(), kInlineBytes));
  const uint8_t status_own = uint8_t(uint8_t(delivery) << 1);
  if (!memory.write(entry_address + kOutputInline, inline_out) ||
      !memory.write(entry_address + kStatusOwn, std::span(&status_own, 1))) {
    ++counters_.dma_faults;
    return false;
  }
  ++counters_.executed;
  return true;
}

}  // namespace hcaemu::model
