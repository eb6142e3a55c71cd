// On-demand paging on the data path (objects/page_faults.h): the requester holds a send WQE whose
// SGEs meet a not-present page at the head of its SQ, the responder answers RNR NAK for a request
// whose memory is not present; both until the driver's PAGE_FAULT_RESUME. A message already on its
// way stops at the packet whose pages went (the driver invalidated them meanwhile) and is sent
// again from there after the resume, as a READ whose response found its buffer gone.
#include <optional>
#include <utility>

#include "model/function_context.h"
#include "model/rdma/engine.h"
#include "model/rdma/internal.h"

namespace hcaemu::model {

using namespace rdma_internal;

bool RdmaEngine::raise_page_fault(const PageFault& fault, PageFaultWait& wait) {
  if (wait.token != 0) return true;  // still waiting for this one: no second event
  const bool failed = std::exchange(wait.failed, false);
  std::optional<uint32_t> token;
  if (!failed && wait.faults < page_fault::kMaxFaultsWithoutProgress && eq_has_subscriber(f_, page_fault::kEventType))
    token = f_.resources.page_faults.open(fault);
  if (token && eq_post(f_, page_fault::kEventType, fault.subtype, page_fault_event_data(fault, *token)) == 0) {
    f_.resources.page_faults.forget(*token);  // the EQ is full or its DMA failed
    token.reset();
  }
  if (!token) {
    ++counters_.page_fault_failures;
    wait.faults = 0;
    return false;
  }
  wait.token = *token;
  ++wait.faults;
  ++counters_.page_faults;
  return true;
}

bool RdmaEngine::hold_sq_for_pages(uint32_t qpn, QueuePair& qp, const SendWqe& wqe) {
  const PageFault fault{.subtype = page_fault::kWqe,
                        .type = is_read(wqe.opcode) || is_atomic(wqe.opcode) ? page_fault::kRequesterReadAtomic
                                                                               : page_fault::kRequesterSend,
                        .wq_number = qpn,
                        .qpn = qpn,
                        .requester = true,
                        .wqe_index = wqe.wqe_index};
  return raise_page_fault(fault, qp.rc.req.page_fault);
}

bool RdmaEngine::hold_message_for_pages(uint32_t qpn, QueuePair& qp, const SendWqe& wqe, uint32_t psn) {
  if (!hold_sq_for_pages(qpn, qp, wqe)) return false;
  qp.rc.req.resend_after_fault_from(psn);
  return true;
}

void RdmaEngine::resend_after_fault(uint32_t qpn, QueuePair& qp) {
  RcRequester& req = qp.rc.req;
  const uint32_t psn = *std::exchange(req.fault_resend_psn, std::nullopt);
  if (!std::exchange(req.page_fault.failed, false)) return retransmit_from(qpn, qp, psn);
  // Resumed with the error bit: the message holding that PSN fails (older ones are flushed).
  ++counters_.page_fault_failures;
  req.page_fault.faults = 0;
  for (const SendMessage& message : req.outstanding)
    if (message.holds(psn)) return requester_error(qpn, qp, message.wqe, syndrome::kLocalProtection);
}

PageFaultWait& RdmaEngine::responder_wait(QueuePair& qp, uint32_t token) {
  // A DCT's faults wait in the connection whose request met them (rdma/dc.cpp).
  for (DcConnection& connection : qp.rc.dct.connections)
    if (connection.resp.page_fault.token == token) return connection.resp.page_fault;
  return qp.rc.resp.page_fault;
}

void RdmaEngine::page_fault_resumed(const PageFault& fault, uint32_t token, bool error) {
  ++counters_.page_fault_resumes;
  QueuePair* qp = f_.resources.qps.find(fault.qpn);
  if (qp == nullptr) return;  // destroyed meanwhile
  PageFaultWait& wait = fault.requester ? qp->rc.req.page_fault : responder_wait(*qp, token);
  if (wait.token != token) return;  // the QP was reset meanwhile: nothing of it waits
  wait.token = 0;
  wait.failed = error;
  // The responder's side goes on when the request comes again (after the RNR NAK); the SQ is
  // taken up again from the WQE it held.
  if (!fault.requester) return;
  const SqResume resume{.qpn = fault.qpn, .reread = true};
  if (sq_scheduler_ != nullptr)
    sq_scheduler_->resume_later(resume);
  else
    resume_sq(resume);
}

}  // namespace hcaemu::model
