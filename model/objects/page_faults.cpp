#include "model/objects/page_faults.h"

#include "common/endian.h"

namespace hcaemu::model {

std::array<uint8_t, 28> page_fault_event_data(const PageFault& fault, uint32_t token) {
  std::array<uint8_t, 28> data{};  // bytes_committed (0) at 0: nothing of the work was done
  token &= page_fault::kTokenMask;
  if (fault.subtype == page_fault::kRdma) {
    store_be32(&data[4], fault.rkey);
    store_be32(&data[12], fault.length);  // rdma_op_len
    store_be64(&data[16], fault.va);
    store_be32(&data[24], (uint32_t(fault.type) << 24) | token);  // pftype_token
  } else {
    store_be16(&data[6], fault.wqe_index);
    store_be32(&data[12], token);
    store_be32(&data[24], (uint32_t(fault.type & 7) << 24) | (fault.wq_number & 0xffffff));  // pftype_wq
  }
  return data;
}

std::optional<uint32_t> PageFaultTable::open(const PageFault& fault) {
  if (open_.size() >= kMaxOpen) return std::nullopt;
  const auto after = [](uint32_t t) { return t >= page_fault::kTokenMask ? 1u : t + 1; };
  uint32_t token = next_token_;
  while (open_.contains(token)) token = after(token);  // ends: far fewer open than tokens
  next_token_ = after(token);
  PageFault& stored = open_[token] = fault;
  if (fault.subtype == page_fault::kRdma) stored.wq_number = token;
  return token;
}

std::optional<PageFault> PageFaultTable::take(uint8_t type, uint32_t wq_number, uint32_t token) {
  const auto it = open_.find(token);
  if (it == open_.end() || it->second.type != type || it->second.wq_number != wq_number) return std::nullopt;
  PageFault fault = it->second;
  open_.erase(it);
  return fault;
}

}  // namespace hcaemu::model
