#pragma once
// The RDMA data path of one function (ARCHITECTURE.md "Data flow of one RDMA WRITE"): RC QPs over
// RoCEv2. The requester fetches send WQEs on the SQ doorbell, checks their local keys, cuts the
// message into MTU packets with PSNs and hands the frames to the port; the completer retires WQEs
// on ACKs, READ responses and atomic ACKs and writes requester CQEs. The responder checks PSN,
// rkey, access and bounds, scatters into receive WQEs or the remote range, executes READs and
// atomics and answers with ACK/NAK. Errors end as IBA chapter 9 says: error CQEs, NAKs, the QP in
// ERR, outstanding work flushed. Per-QP state lives in QueuePair::rc; this class holds the port,
// the timer hook and counters.
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <vector>

#include "model/congestion/dcqcn.h"
#include "model/eth/queues.h"
#include "model/firmware/port_registers.h"
#include "model/objects/memory_protection.h"
#include "model/objects/signature_path.h"
#include "model/rdma/rc_state.h"
#include "model/timing_preset.h"
#include "model/objects/resources.h"
#include "traces/stage.h"
#include "transport/roce_packet.h"

namespace hcaemu::model {

struct FunctionContext;

// Stages of a message the latency trace stamps.
using RdmaStage = traces::Stage;
struct StageStamp {
  int32_t function = -1;  // vhca id the stamp belongs to; -1 = this function (remote delivery is
                          // stamped by the responder on the requester's message)
  uint64_t time_ps = 0;   // 0 = now
  uint32_t qpn = 0;
  uint64_t message = 0;
  uint8_t opcode = 0;   // mlx5 WQE opcode
  uint32_t bytes = 0;
  RdmaStage stage = RdmaStage::kDoorbell;
};
using StageHook = std::function<void(const StageStamp&)>;

// A QP as it became ready to receive (INIT to RTR) and to send (RTR to RTS): what shaped its
// timing without reaching the wire (its CQs and their sizes, its send queue, its retry settings),
// for the trace's QP table.
struct QpDescription {
  uint32_t qpn = 0;
  uint8_t service = 0;  // qp_st
  bool sending = false;  // RTS (else RTR)
  std::array<uint8_t, 16> address{};  // the source GID its address path names
  std::array<uint8_t, 6> mac{};       // and the function's MAC there
  uint32_t send_cq = 0, send_cq_entries = 0, recv_cq = 0, recv_cq_entries = 0;
  uint32_t sq_wqebbs = 0;
  uint32_t rq_stride = 0;  // bytes of one receive WQE (0: no receive queue of its own)
  uint32_t mtu = 0;        // 0: a datagram QP
  uint32_t ack_timeout = 0, retry_count = 0, rnr_retry = 0, max_rd_atomic = 0;
  uint32_t remote_qpn = 0;  // 0 for datagram QPs
};
using QpHook = std::function<void(const QpDescription&)>;

struct RdmaTiming {
  uint64_t per_packet_tx_ps = 20'000;   // pipeline per transmitted packet
  uint64_t per_packet_rx_ps = 20'000;   // pipeline per received packet
  uint64_t wqe_parse_ps = 10'000;
  double link_gbps = 100.0;             // wire serialisation of each frame

  static RdmaTiming from_preset(const TimingPreset& preset);
};

struct RdmaCounters {
  uint64_t sq_doorbells = 0, wqes = 0, messages_completed = 0;
  uint64_t tx_packets = 0, tx_bytes = 0, rx_packets = 0, rx_bytes = 0;
  uint64_t acks_sent = 0, naks_sent = 0, rnr_naks_sent = 0, acks_received = 0, naks_received = 0, rnr_naks_received = 0;
  uint64_t retransmits = 0, timeouts = 0, duplicates = 0, sequence_errors = 0;
  uint64_t requester_cqes = 0, responder_cqes = 0, error_cqes = 0, flushed_wqes = 0;
  uint64_t local_protection_errors = 0, remote_access_errors = 0, invalid_requests = 0, bad_wqes = 0;
  uint64_t rx_not_addressed = 0;  // a group MAC or a GID that is not in the function's table
  uint64_t multicast_received = 0;        // datagrams to a multicast group (one per group, not per QP)
  uint64_t multicast_no_member = 0;       // to a group none of the function's QPs attached
  uint64_t multicast_loopback_blocked = 0;  // own datagrams a QP with block_lb_mc did not take
  uint64_t rx_parse_errors = 0, rx_bad_icrc = 0, rx_unknown_qp = 0, rx_qp_not_ready = 0, rx_roce_v1_unsupported = 0,
           rx_wrong_service = 0;
  uint64_t rx_wrong_source = 0;  // to a connected QP from an address other than its path's
  uint64_t tx_no_port = 0, dma_faults = 0, unsupported_service = 0;
  uint64_t umr_wqes = 0, umr_errors = 0;  // the driver's UMR QP (rdma/umr_queue.cpp)
  uint64_t mw_binds = 0, mw_bind_errors = 0;  // UMR WQEs on user QPs: memory windows bound, keys invalidated
  uint64_t signature_errors = 0, signature_errors_reported = 0;  // block PI checks failed; SIGERR CQEs written
  uint64_t srq_limit_events = 0;  // SRQ_RQ_LIMIT events posted (ARM_RQ's limit reached)
  uint64_t remote_invalidations = 0;  // MKEYs freed by a SEND with Invalidate
  uint64_t uc_packets_dropped = 0;  // UC responder: a message lost to an error, a gap or no receive WQE
  uint64_t datagrams_sent = 0, datagrams_received = 0;
  uint64_t datagrams_dropped_no_receive = 0;  // UD/QP1: no receive WQE posted (IBA: silently dropped)
  uint64_t datagrams_too_long = 0;            // UD/QP1: the receive WQE completed with a length error
  uint64_t rx_bad_qkey = 0;                   // UD/QP1: the DETH Q_Key is not the QP's
  // DC (rdma/dc.cpp): connections a DCI opened and a DCT accepted or closed on an error; requests
  // with the wrong access key, or for no open connection (dropped: the DCI resends).
  uint64_t dc_connections_opened = 0, dc_connections_accepted = 0, dc_connections_failed = 0;
  uint64_t dc_key_violations = 0, dc_not_connected = 0;
  uint64_t dci_stream_errors = 0;  // WQEs that failed on a DCI stream and left the DCI in RTS
  // DCQCN (model/congestion/dcqcn.h), by the names mlx5's hw_counters give them.
  uint64_t np_ecn_marked_roce_packets = 0, np_cnp_sent = 0, rp_cnp_handled = 0, rp_cnp_ignored = 0;
  // ODP (rdma/odp.cpp): page faults raised, resumed by the driver, and work failed instead of
  // faulting (no EQ for the event, too many open, no progress, or resumed with the error bit).
  uint64_t page_faults = 0, page_fault_resumes = 0, page_fault_failures = 0;
};

// Where an SQ loop stands between two messages: the producer index it read at its doorbell and
// that doorbell's model time (latency trace), and whether the index must be read again.
struct SqResume {
  uint32_t qpn = 0;
  uint32_t producer = 0;
  uint64_t doorbell_ps = 0;
  bool reread = false;
  uint64_t not_before_ps = 0;  // the QP's rate limit (DCQCN) lets its next message go then
};

// What a QP's congestion control did, for whoever watches the run (hcareplay's timelines).
struct CongestionEvent {
  uint32_t qpn = 0;
  uint64_t time_ps = 0;
  double rate_gbps = 0;  // the QP's rate from now on
  bool cnp = false;      // a CNP arrived (else: a message went at this rate)
};

class RdmaEngine {
 public:
  static constexpr uint32_t kMaxWqeBytes = 64 * 64;  // ds is 6 bits: at most 63 x 16 bytes

  // Reports its DCQCN counters to the function's firmware (QUERY_CONG_STATISTICS).
  explicit RdmaEngine(FunctionContext& function);

  void set_port(EthernetPort* port) { port_ = port; }
  void set_timing(const RdmaTiming& timing) { timing_ = timing; }
  void set_stage_hook(StageHook hook) { stage_hook_ = std::move(hook); }
  // Called with each QP that enters RTR or RTS (qp_ready(), which also starts a QP entering RTR
  // afresh in DCQCN: at line rate).
  void set_qp_hook(QpHook hook) { qp_hook_ = std::move(hook); }
  void qp_ready(uint32_t qpn);
  // SQD2RTS: a QP drained by a signature error (rdma/signature.cpp) runs its held WQEs.
  void send_queue_resumed(uint32_t qpn);
  // Maps a peer's MAC to its function (vhca id), -1 when unknown: lets the responder stamp the
  // remote delivery of a message on the requester's trace record.
  void set_peer_lookup(std::function<int32_t(const transport::Mac&)> lookup) { peer_lookup_ = std::move(lookup); }
  // Called with each deadline of a retransmission/RNR timer (model/rdma/transport_timer.h); the owner
  // calls on_timer() once it has passed (earlier calls do nothing).
  void set_timer_hook(std::function<void(const TimerDeadline&)> hook) { timer_hook_ = std::move(hook); }
  // Whether this run's timers also wait out a wall-clock floor (full-system runs), and their floors.
  void set_timer_policy(const TimerPolicy& policy) { timer_policy_ = policy; }
  // The model time timers count in (default: the SystemC kernel's); a test without a running
  // kernel gives its own clock.
  void set_timer_clock(std::function<uint64_t()> now_ps) { timer_clock_ = std::move(now_ps); }
  // Where an SQ is taken up again after each message. The owner queues the resumption as a work
  // item of its own (frames that have arrived may go first: the completer and responder of a real
  // HCA run beside its requester) and hands it back through resume_sq(). Without a scheduler, one
  // doorbell runs the SQ to its end.
  class SqScheduler {
   public:
    virtual ~SqScheduler() = default;
    virtual void resume_later(const SqResume& resume) = 0;
    // Asks a queued resumption of `qpn`, if any, to read the producer index again (new WQEs, an
    // error and its flush); false when none is queued.
    virtual bool reread_queued(uint32_t qpn) = 0;
  };
  void set_sq_scheduler(SqScheduler* scheduler) { sq_scheduler_ = scheduler; }
  // Until when the port takes no new message (a link paused by PFC, frames still waiting on it);
  // 0: it does now. With a scheduler, an SQ's next message waits for it (back-pressure).
  void set_transmit_gate(std::function<uint64_t(uint64_t now_ps)> gate) { transmit_gate_ = std::move(gate); }
  // DCQCN on this function's QPs: ECN-capable packets out, CNPs for marked packets in, a rate
  // limiter per sending QP (paced through the SQ scheduler). Null or not enabled: off.
  void set_congestion_control(const DcqcnParameters* parameters,
                              std::function<void(const CongestionEvent&)> observer = {}) {
    dcqcn_ = parameters != nullptr && parameters->enabled ? parameters : nullptr;
    congestion_observer_ = std::move(observer);
  }
  void resume_sq(const SqResume& resume);
  // A closed run's own wire (hcareplay: every frame from these engines, carried by a fabric model
  // that changes no covered bit): frames may go without their ICRC when nothing records them, and
  // come in unchecked. Full-system runs keep both: guests can put any frame on the wire.
  struct WireChecksums {
    bool compute = true;  // the ICRC (and an IPv6 UDP checksum) on every frame sent
    bool verify = true;   // the ICRC of every frame received
  };
  void set_wire_checksums(WireChecksums checksums) { checksums_ = checksums; }

  // UAR SQ doorbell bytes (DoorbellUnit::SqHook data), written at rung_ps (model time; 0 = now):
  // the WQEs the doorbell announces count as rung then. False when the QPN names no QP here.
  bool doorbell(std::span<const uint8_t> data, uint64_t rung_ps = 0);
  // A frame from the switch that arrived at arrival_ps (model time; 0 = now). False when it is not
  // RoCEv2 for this function (the Ethernet path takes it).
  bool receive(std::span<const uint8_t> frame, uint64_t arrival_ps = 0);
  // Retransmission and RNR timers that have expired.
  void on_timer();
  // The driver moved the QP to ERR by command (2ERR_QP or a modify to ERR): everything outstanding or
  // posted on its SQ and RQ completes with a flush error, as when the engine itself finds an error.
  void qp_moved_to_error(uint32_t qpn);
  // PAGE_FAULT_RESUME took fault `token` from the function's table (firmware/page_fault.cpp): the
  // work it held goes on, or (error) fails.
  void page_fault_resumed(const PageFault& fault, uint32_t token, bool error);

  const RdmaCounters& counters() const { return counters_; }

 private:
  // Requester.
  // rung_ps: the arrival of the doorbell that brought it here (0: none, now).
  void process_sq(uint32_t qpn, QueuePair& qp, uint64_t rung_ps = 0);
  // One WQE of the SQ loop: fetched, checked, admitted and sent (kPosted), flushed behind an
  // error (kFlushed), or the loop ends (kStop: an error, a fence, a fault).
  enum class SqStep : uint8_t { kPosted, kFlushed, kStop };
  SqStep next_wqe(uint32_t qpn, QueuePair& qp, uint32_t producer, uint64_t doorbell_ps, std::vector<uint8_t>& bytes);
  bool post_message(uint32_t qpn, QueuePair& qp, SendWqe&& wqe, uint64_t doorbell_ps, uint64_t parsed_ps);
  void run_sq(uint32_t qpn, QueuePair& qp, SqResume cursor);
  void process_umr_sq(uint32_t qpn, QueuePair& qp);  // the driver's UMR QP: MKEY changes (rdma/umr_queue.cpp)
  bool fetch_wqe(pcie::HostMemory& memory, QueuePair& qp, uint32_t block, std::vector<uint8_t>& out, uint8_t& ds);
  // Sends the message's packets from from_psn on; its payload reads are issued at issue_ps.
  void transmit(uint32_t qpn, QueuePair& qp, size_t index, uint32_t from_psn, uint64_t issue_ps);
  void retransmit_from(uint32_t qpn, QueuePair& qp, uint32_t psn);
  // Requester: the protocol is transport/rc/requester.*; RequesterPort gives it this function.
  class RequesterPort;
  static transport::rc::RequesterQp requester_qp(const QueuePair& qp);
  // Completer: the protocol is transport/rc/completer.*; CompleterPort gives it this function.
  class CompleterPort;
  static transport::rc::CompleterQp completer_qp(const QueuePair& qp);
  void handle_response(uint32_t qpn, QueuePair& qp, const transport::RocePacket& packet);
  void retire(uint32_t qpn, QueuePair& qp);
  void arm_timer(QueuePair& qp);

  // ODP (rdma/odp.cpp): a not-present page holds the work until PAGE_FAULT_RESUME. False when no
  // fault can be raised (no EQ subscribes to it, too many open, too many without progress, or the
  // last one was resumed with the error bit): the work then fails as on a protection error.
  bool raise_page_fault(const PageFault& fault, PageFaultWait& wait);
  bool hold_sq_for_pages(uint32_t qpn, QueuePair& qp, const SendWqe& wqe);
  // A message past its post meets a page not present: its PSN `psn` on waits for the resume.
  bool hold_message_for_pages(uint32_t qpn, QueuePair& qp, const SendWqe& wqe, uint32_t psn);
  // Where the responder's fault `token` waits: the QP's, or a DCT connection's.
  static PageFaultWait& responder_wait(QueuePair& qp, uint32_t token);
  // The fault resumed: the held PSNs are sent again, or their message fails (error resume).
  void resend_after_fault(uint32_t qpn, QueuePair& qp);

  // Datagram services, UD and QP1 (rdma/datagram.cpp).
  static bool is_datagram(const QueuePair& qp);
  QueuePair* gsi_qp(uint32_t& qpn);  // the function's QP1 (answers to QPN 1 on the wire) and its QPN
  bool datagram_address(const UdAddress& av, transport::RocePacket& packet);
  void transmit_datagram(uint32_t qpn, QueuePair& qp, SendMessage& message, uint64_t issue_ps);
  void receive_datagram(uint32_t qpn, QueuePair& qp, const transport::RocePacket& packet,
                        std::span<const uint8_t> frame);
  // A datagram to QPN 0xffffff and a multicast GID: every attached QP of the function gets a copy.
  void receive_multicast(const transport::RocePacket& packet, std::span<const uint8_t> frame);

  // DC (rdma/dc.cpp). A DCI's or DCT's packet address: the DCI's DCT, or the DCI a DCT serves.
  bool dc_address(QueuePair& qp, transport::RocePacket& packet);
  // Whether a DCI's WQE may go now: to its connected DCT, or to another once nothing is outstanding
  // (the connection then moves there). False: the WQE waits, as behind a fence, or (its stream is
  // in error) was flushed.
  bool dci_ready_for(uint32_t qpn, QueuePair& qp, const SendWqe& wqe);
  static void dc_request_header(const QueuePair& qp, transport::RocePacket& packet);  // DCETH's connect flag
  // DCI streams: a WQE that failed at its post errs its stream only (its error CQE), and the DCI
  // goes to ERR once as many streams are in error as its qpc allows. False: not a stream error.
  bool dci_stream_error(uint32_t qpn, QueuePair& qp, const SendWqe& wqe, uint8_t syndrome);
  void receive_dc_request(uint32_t dctn, QueuePair& dct, const transport::RocePacket& packet);
  DcConnection* dc_connection(uint32_t dctn, QueuePair& dct, const transport::RocePacket& packet);  // null: none open

  // A frame for a connected service's QP (RC, UC, XRC, DCI, DCT): its service, state and source
  // checked, then to the completer or the responder. `receiving`: the QP takes requests now.
  void receive_connected(uint32_t qpn, QueuePair& qp, const transport::RocePacket& packet, bool receiving);

  // Responder: the protocol is transport/rc/responder.*; ResponderPort gives it this function.
  class ResponderPort;
  static transport::rc::ResponderQp responder_qp(const QueuePair& qp);
  void handle_request(uint32_t qpn, QueuePair& qp, const transport::RocePacket& packet);
  bool take_receive_wqe(QueuePair& qp);
  bool take_srq_wqe(QueuePair& qp, uint32_t srqn);  // basic SRQ / RMP / XRC SRQ: the driver-linked list of WQEs
  // The WQE in `slot` of a receive ring (RQ or SRQ) when the driver's doorbell record at `record`
  // is past `consumed`; false when none is posted or a DMA fails (counted).
  // `posted`: the doorbell record's receive counter as read.
  bool read_posted_receive(uint64_t record, uint32_t consumed, const PageList& ring, uint32_t log_stride,
                           uint32_t slot, std::vector<uint8_t>& bytes, uint32_t& posted);
  void srq_limit_reached(uint32_t srqn, SharedReceiveQueue& srq);  // the armed SRQ limit event
  void send_ack(uint32_t qpn, QueuePair& qp, uint32_t psn, uint8_t syndrome);
  void send_read_responses(uint32_t qpn, QueuePair& qp, uint32_t psn, uint64_t va, uint32_t rkey, uint32_t length);

  // Signature keys (objects/signature_path.h): a SET_PSV WQE (false: no PSV of the QP's PD), and a
  // failed PI check, reported by a SIGERR CQE into `cqn` while the key is armed.
  bool set_psv(const QueuePair& qp, std::span<const uint8_t> wqe);
  void signature_error(uint32_t qpn, QueuePair& qp, uint32_t cqn, const SignatureError& error);
  // A fenced WQE after a reported signature error on a QP with drain_sigerr: waits for the WQEs
  // before it, then the QP goes to SQD there and raises SQ_DRAINED. True: the WQE does not run now.
  bool drains_for_signature_error(uint32_t qpn, QueuePair& qp, const SendWqe& wqe);

  // Errors and completions.
  void requester_error(uint32_t qpn, QueuePair& qp, const SendWqe& wqe, uint8_t syndrome);
  void responder_error(uint32_t qpn, QueuePair& qp, uint8_t syndrome, bool consumed_wqe);
  void enter_error(uint32_t qpn, QueuePair& qp);
  // UC and UD/QP1: a send error stops only the send queue (SQE, IBA 10.3.1); receives go on and
  // SQERR2RTS restarts it.
  void enter_send_queue_error(uint32_t qpn, QueuePair& qp);
  static bool send_queue_stopped(const QueuePair& qp);  // ERR or SQE: posted sends are flushed
  // The data path moves a QP to `state`: the engine's view and the qpc QUERY_QP returns together.
  static void move_to(QueuePair& qp, QpState state);
  void flush(uint32_t qpn, QueuePair& qp);             // of a QP in ERR: outstanding and posted WQEs
  void flush_send_queue(uint32_t qpn, QueuePair& qp);
  void requester_cqe(uint32_t qpn, QueuePair& qp, const SendMessage& message);
  // user_index: what the CQE names its QP (or XRC SRQ) by (user_index_of, ReceiveTarget::user_index).
  void error_cqe(uint32_t cqn, uint32_t qpn, uint8_t opcode, uint16_t wqe_index, uint8_t syndrome, bool responder,
                 uint32_t user_index);
  // Queue counters (objects/queue_counters.h): one more in the set the QP is bound to, if any.
  void count(const QueuePair& qp, uint32_t offset);
  void count_error_cqe(uint32_t qpn, uint8_t syndrome, bool responder);
  // Where a QP's receive completions go and the SRQ they name (0: none). An XRC target QP takes
  // both from the XRC SRQ its current request named.
  // Where a receive completes: the CQ, the SRQ its WQE came from (0: the QP's own RQ) and the user
  // index its CQE carries (cqe_version 1: the QP's, or an XRC SRQ's for what came through one).
  struct ReceiveTarget {
    uint32_t cqn = 0, srqn = 0, user_index = 0;
  };
  ReceiveTarget receive_target(const QueuePair& qp);
  // XRC: the XRC SRQ a request's XRCETH names, when it is one of this QP's XRC domain.
  SharedReceiveQueue* xrc_srq_for(const QueuePair& qp, uint32_t xrc_srqn);
  // The PD remote keys and receive buffers are checked against: the QP's, or for an XRC target QP
  // the PD of the XRC SRQ its current request named (IBA A14).
  uint32_t responder_pd(const QueuePair& qp);

  // Puts a packet on the wire once its inputs (payload bytes) are there at inputs_ready_ps (0 =
  // now) and the pipeline has built it; the wire serialises it at the port rate.
  bool send_frame(transport::RocePacket& packet, uint64_t inputs_ready_ps = 0);
  bool address(QueuePair& qp, transport::RocePacket& packet);  // L2/L3/L4 fields from the QP path
  bool source_address(uint32_t gid_index, transport::RocePacket& packet);  // ours, from the GID table
  // A force-loopback QP (ads.fl, what mlx5 DR connects to itself): from and to the function's
  // first RoCE v2 address, whatever the path says, so the switch turns the packet back to it.
  const RoceAddress* loopback_source() const;
  // Whether a connected QP takes `packet`: it comes from the other end of the QP's path.
  bool from_path(const QueuePair& qp, const transport::RocePacket& packet) const;
  void stamp(uint32_t qpn, const SendMessage& message, RdmaStage stage, uint64_t time_ps = 0);
  // Responder side: stamps a message's remote delivery on the requester's trace record.
  void stamp_remote_delivery(const QueuePair& qp, const transport::Mac& requester_mac, uint32_t last_psn,
                             uint8_t opcode, uint32_t bytes);
  void send_atomic_ack(QueuePair& qp, uint32_t psn, uint64_t original);
  // DCQCN (rdma/congestion.cpp).
  struct Congestion {
    explicit Congestion(const DcqcnParameters& p, double gbps) : reaction(p, gbps) {}
    ReactionPoint reaction;
    NotificationPoint notification;
  };
  Congestion& congestion(uint32_t qpn);
  // A marked packet came in on `qp`: a CNP to its sender, at most one per interval.
  void notify_congestion(uint32_t qpn, QueuePair& qp);
  void receive_cnp(uint32_t qpn);
  // When the QP's next message may start (0: now): the port's gate, DCQCN's rate and its queue
  // group's limits; and, once one started, its bytes charged to its queue group.
  uint64_t paced_until(uint32_t qpn, const QueuePair& qp);
  void paced_message(QueuePair& qp, uint64_t length, uint64_t start_ps);
  // DCQCN paces packet by packet, as a ConnectX does: each packet's bytes are charged to the QP's
  // rate once it left, and the rest of a message waits while the rate holds the next one
  // (RequesterHost::paced), its continuation queued through the SQ scheduler.
  void paced_packet(uint32_t qpn, uint64_t wire_bytes, uint64_t start_ps);
  uint64_t packet_paced_until(uint32_t qpn);  // 0: the next packet may go now
  // Queues the continuation of a paused message (RcRequester::paced_psn) for when the rate allows;
  // true if the SQ waits for it (new WQEs are taken after it).
  bool hold_for_pace(uint32_t qpn, QueuePair& qp, SqResume cursor);

  FunctionContext& f_;
  EthernetPort* port_ = nullptr;
  RdmaTiming timing_;
  StageHook stage_hook_;
  QpHook qp_hook_;
  std::function<int32_t(const transport::Mac&)> peer_lookup_;
  std::function<void(const TimerDeadline&)> timer_hook_;
  TimerPolicy timer_policy_;
  std::function<uint64_t()> timer_clock_;
  uint64_t timer_now_ps() const;
  SqScheduler* sq_scheduler_ = nullptr;
  std::function<uint64_t(uint64_t)> transmit_gate_;
  WireChecksums checksums_;
  const DcqcnParameters* dcqcn_ = nullptr;
  std::function<void(const CongestionEvent&)> congestion_observer_;
  std::map<uint32_t, Congestion> congestion_;  // per QPN, made on its first use
  uint64_t next_message_id_ = 1;
  // The send engine reads one message ahead: the next message's WQE and payload reads are not
  // issued before the current message's first packet has left (a bounded prefetch that hides the
  // PCIe read latency behind the wire, as a real HCA's pipeline does).
  uint64_t prefetch_floor_ps_ = 0;
  uint64_t rx_arrival_ps_ = 0;  // of the frame being received
  RdmaCounters counters_;
  // Per-packet buffers used again for every packet (no allocation on the data path).
  std::vector<uint8_t> tx_frame_, tx_header_frame_;
  std::vector<DmaChunk> rx_chunks_;  // where a request packet's bytes go (translated per packet)
  transport::rc::Responder responder_;
  transport::rc::Completer completer_;
  transport::rc::Requester requester_;
};

}  // namespace hcaemu::model
