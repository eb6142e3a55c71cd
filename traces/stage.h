#pragma once
// The stages a work request's latency is stamped at: one enum for the engine that stamps them
// (model/rdma) and the trace that writes them (latency_trace.h). Header-only, no dependencies.
#include <cstddef>
#include <cstdint>

namespace hcaemu::traces {

// The stages of one work request, in the order an RDMA WRITE passes them (ARCHITECTURE.md,
// "Data flow of one RDMA WRITE"). Other opcodes may record them in another order (an RDMA READ
// writes its payload after the response arrives) or skip some (a polled CQ has no interrupt).
enum class Stage : uint8_t {
  kDoorbell,         // the UAR doorbell write reached the doorbell unit
  kWqeFetch,         // the WQE was read from host memory and parsed
  kPayloadDma,       // the payload DMA finished (read for a requester, write for a READ response)
  kWireFirstPacket,  // the first packet of the message left the port
  kRemoteDelivery,   // the responder wrote the payload into its host memory
  kAck,              // the acknowledgement (or READ response) reached the requester
  kCqeWrite,         // the CQE was written to host memory
  kInterrupt,        // the EQE and MSI-X for the CQE went out (armed CQs only)
};
inline constexpr size_t kStageCount = 8;

}  // namespace hcaemu::traces
