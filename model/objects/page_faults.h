#pragma once
// On-demand paging (ODP) of explicit MRs. An ODP MR's MTT entries are 0 until the driver maps the
// pages (UMR loads on its UMR QP) and again after it zaps them. When the data path meets such an
// entry it stops that piece of work and raises a PAGE_FAULT event (type 0xC) on the EQ that
// subscribed to it; the driver maps the pages and sends PAGE_FAULT_RESUME naming the fault by its
// type, WQ number and token, and the work goes on (with the error bit: it completes in error).
// - WQE faults (subtype 0) name a WQE: a send WQE the requester holds at the head of its SQ
//   (type 1: SEND/WRITE, 3: READ/atomic; WQ = the QP), or the receive WQE the responder took
//   (type 2: the QP's RQ; type 0: an SRQ, WQ = the SRQ number). mlx5_ib reads that WQE and faults
//   in every SGE of it.
// - RDMA faults (subtype 1) name a remote range of an incoming WRITE, READ or atomic: r_key, VA and
//   length; the driver resumes it with WQ number = token. Meanwhile the responder answers RNR NAK
//   (the requester sends again after its RNR timer), as a ConnectX does.
// The layouts are mlx5_eqe_page_fault's (mlx5-layouts.md) and page_fault_resume_in's.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

namespace hcaemu::model {

namespace page_fault {
inline constexpr uint8_t kEventType = 0x0c;  // MLX5_EVENT_TYPE_PAGE_FAULT
enum Subtype : uint8_t { kWqe = 0, kRdma = 1 };
enum WqeType : uint8_t { kSrq = 0, kRequesterSend = 1, kResponderRq = 2, kRequesterReadAtomic = 3 };
// RDMA faults carry the kernel's fault flags: RDMA (4), plus WRITE (2) when the HCA writes.
inline constexpr uint8_t kRdmaRead = 0x4, kRdmaWrite = 0x6;
inline constexpr uint32_t kTokenMask = 0xffffff;  // PAGE_FAULT_RESUME carries 24 bits
inline constexpr uint8_t kMaxFaultsWithoutProgress = 8;  // then the work fails instead of faulting again
}  // namespace page_fault

struct PageFault {
  uint8_t subtype = page_fault::kWqe;
  uint8_t type = 0;
  uint32_t wq_number = 0;  // WQE faults: QPN or SRQ number; RDMA faults: set to the token
  uint32_t qpn = 0;        // the QP whose work waits
  bool requester = false;  // its SQ waits (else its responder)
  uint16_t wqe_index = 0;  // WQE faults
  uint32_t rkey = 0, length = 0;  // RDMA faults
  uint64_t va = 0;
};

// The 28 bytes of EQE data (at EQE + 0x20) that describe `fault` with its token.
std::array<uint8_t, 28> page_fault_event_data(const PageFault& fault, uint32_t token);

// A QP's side (requester or responder) waiting for a fault to be resumed.
struct PageFaultWait {
  uint32_t token = 0;   // the fault it waits for (0: not waiting)
  bool failed = false;  // resumed with the error bit: the work it held fails
  uint8_t faults = 0;   // consecutive faults without progress (bounded: kMaxFaultsWithoutProgress)

  // The work's memory translated: the faults behind it made progress. False when the last fault
  // was resumed with the error bit: the work it held fails even though its pages came meanwhile.
  bool progressed() {
    translated();
    return !std::exchange(failed, false);
  }
  // The memory of a message already on its way translated (a resend's payload, a response's
  // buffer): the count of faults without progress starts again; the error bit, if any, is the
  // resume's to act on (RdmaEngine::resend_after_fault).
  void translated() { faults = 0; }
};

// The faults of one function that wait for PAGE_FAULT_RESUME, by token.
class PageFaultTable {
 public:
  static constexpr size_t kMaxOpen = 4096;  // beyond it new faults fail their work instead

  // A token (1..2^24-1, not in use) for a new fault; nullopt when the table is full.
  std::optional<uint32_t> open(const PageFault& fault);
  // Takes the fault PAGE_FAULT_RESUME names (type, WQ number and token all match); nullopt: none.
  std::optional<PageFault> take(uint8_t type, uint32_t wq_number, uint32_t token);
  void forget(uint32_t token) { open_.erase(token); }
  void clear() { open_.clear(); }
  size_t size() const { return open_.size(); }

 private:
  std::map<uint32_t, PageFault> open_;
  uint32_t next_token_ = 1;
};

}  // namespace hcaemu::model
