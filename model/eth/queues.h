#pragma once
// The Ethernet data path of one function (mlx5-device-bringup.md sections 4.4 and 7): the SQ
// engine (doorbell -> WQEs from the ring -> frame -> port, TX CQEs) and the RQ side (steering ->
// RQ -> scatter into the posted receive WQE -> RX CQE with byte count and checksum flags). State
// lives in the function's objects (FunctionContext::eth); this class holds the port and counters.
//
// Send WQE (64-byte WQEBBs, ds x 16 bytes, wrapping at the ring end):
//   ctrl (16 B): opmod_idx_opcode, qpn_ds (SQN << 8 | ds), signature, fm_ce_se (CE = bits 3:2)
//   eth  (16 B + inline): cs_flags @4, mss @6, inline_hdr_sz @12 (or VLAN insert: 0x8000 | tci @14),
//        inline header bytes from @14, the segment padded to 16 bytes
//   data (16 B each): byte_count (bit 31 = inline data follows), lkey, addr
// Opcodes handled: NOP (0x00) and SEND (0x0a). Anything else, a bad ds, a bad lkey or a buffer the
// host refuses ends the WQE with an error CQE and puts the SQ into ERR; the WQEs behind it are
// flushed (one flush CQE naming the last one), as the driver's recovery expects.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "common/log_limit.h"
#include "model/eth/frame.h"
#include "model/eth/objects.h"
#include "model/queues/send_wqe.h"
#include "model/steering/ste_v1.h"
#include "transport/ethernet.h"

namespace hcaemu::model {

struct FunctionContext;

using transport::EthernetPort;

// What only Ethernet SQ WQEs carry (the shared WQE format is model/queues/send_wqe.h's wqe_format).
namespace wqe {
inline constexpr uint8_t kOpNop = 0x00, kOpSend = 0x0a, kOpTso = 0x0e;
inline constexpr uint8_t kCsumL3 = 0x40, kCsumL4 = 0x80;
inline constexpr uint16_t kInsertVlan = 0x8000;
}  // namespace wqe

// RX CQE checksum/header-type bytes.
namespace cqe_eth {
inline constexpr uint32_t kChecksum = 0x14;     // BE16 one's complement sum of the bytes after the L2 header
inline constexpr uint32_t kHdsIpExt = 0x1c;     // bit0 L2 ok, bit1 L3 ok, bit2 L4 ok
inline constexpr uint32_t kL4L3HdrType = 0x1d;  // [6:4] L4 (1 TCP, 2 UDP), [3:2] L3 (1 IPv6, 2 IPv4), [0] VLAN stripped
inline constexpr uint32_t kVlanInfo = 0x1e;
inline constexpr uint8_t kL2Ok = 0x1, kL3Ok = 0x2, kL4Ok = 0x4;
inline constexpr uint8_t kL4Tcp = 1, kL4Udp = 2, kL3Ipv6 = 1, kL3Ipv4 = 2;
}  // namespace cqe_eth

struct EthCounters {
  // TX
  uint64_t doorbells = 0;
  uint64_t doorbell_unknown_sq = 0;   // the SQN names no SQ of this function
  uint64_t doorbell_not_ready = 0;    // SQ in RST
  uint64_t doorbell_in_error = 0;     // SQ in ERR: WQEs flushed
  uint64_t dbr_faults = 0;            // doorbell record unreadable
  uint64_t producer_overrun = 0;      // producer more than a ring ahead of the consumer
  uint64_t tx_wqes = 0, tx_nops = 0, tx_frames = 0, tx_bytes = 0, tx_cqes = 0;
  uint64_t tx_no_port = 0;            // frame built but nobody to hand it to
  uint64_t tx_paced = 0;              // frames that waited for their SQ's packet pacing rate
  uint64_t tx_steering_drop = 0;      // frames a NIC TX flow entry dropped
  uint64_t tx_reformatted = 0;        // frames a NIC TX flow entry encapsulated
  uint64_t rx_decapsulated = 0;       // frames a NIC RX flow entry took out of their tunnel
  uint64_t rx_not_tunnelled = 0;      // frames a NIC RX decap found without the tunnel it removes (dropped)
  uint64_t header_modified = 0;       // frames a flow entry's modify header rewrote (RX and TX)
  uint64_t tx_bad_ds = 0, tx_bad_opcode = 0, tx_bad_lkey = 0, tx_dma_faults = 0, tx_too_long = 0;
  uint64_t tx_error_cqes = 0, tx_flushed_wqes = 0, tx_cqe_failures = 0;
  uint64_t tx_physical_lkey = 0;      // no MKEY table: addresses used as physical
  uint64_t tx_tso_wqes = 0, tx_bad_tso = 0;  // LSO WQEs cut into segments / not TCP or no MSS
  // RX
  uint64_t rx_frames = 0, rx_bytes = 0, rx_cqes = 0;
  uint64_t rx_steering_miss = 0, rx_steering_drop = 0;
  uint64_t rx_no_rq = 0, rx_rq_not_ready = 0, rx_unsupported_rq = 0, rx_no_wqe = 0, rx_too_big = 0;
  uint64_t rx_bad_lkey = 0, rx_dma_faults = 0, rx_dbr_faults = 0, rx_error_cqes = 0, rx_cqe_failures = 0;
  uint64_t rx_runt = 0;               // shorter than an Ethernet header
  uint64_t rx_self_loopback_blocked = 0;  // own frames a TIR of the sending domain refused
  // Software-owned tables (mlx5 DR): walks through steering ICM, and walks the model could not end
  // (an entry outside ICM, a lookup type or action it does not offer, a loop): the frame dropped.
  uint64_t sw_steering_walks = 0, sw_steering_faults = 0;
};

class EthQueues {
 public:
  static constexpr uint32_t kMaxFrame = 16384;  // jumbo MTU 9978 + headers fits
  static constexpr uint32_t kMaxTsoFrame = 262144;  // one LSO WQE: headers + up to 256 KiB of payload

  explicit EthQueues(FunctionContext& function) : f_(function) {}

  void set_port(EthernetPort* port) { port_ = port; }
  void set_link_gbps(double gbps) { link_gbps_ = gbps; }
  // Model time, for frames on a shared port (EthernetPort::shared): the engine's clock and a wait
  // on it. Without one, such a frame leaves at once.
  struct Clock {
    std::function<uint64_t()> now_ps;
    std::function<void(uint64_t ps)> consume_ps;
  };
  void set_clock(Clock clock) { clock_ = std::move(clock); }

  // The bytes the driver wrote at UAR + 0x800.. (DoorbellUnit::SqHook data). Returns false when the
  // SQN in them names no SQ of this function (then it is a QP doorbell for the RDMA path).
  bool doorbell(std::span<const uint8_t> data);
  bool names_sq(std::span<const uint8_t> data) const;  // whether doorbell() would take it
  static std::optional<uint32_t> doorbell_sqn(std::span<const uint8_t> data);
  // Processes SQ `sqn` up to the producer counter in its doorbell record.
  void process_sq(uint32_t sqn);

  // A frame for this function from the wire/eswitch: flow steering picks the RQ. `looped_from`: the
  // frame is this function's own, sent by an SQ of that transport domain (0: none) and turned back
  // inside the NIC; a TIR of the same domain takes it only where its self-loopback bits allow.
  void receive(std::span<const uint8_t> frame, std::optional<uint32_t> looped_from = std::nullopt);
  // Steering alone: the RQ the NIC RX tables send `frame` to and the flow tag they gave it (the
  // RX CQE carries it), nullopt when dropped or missed.
  struct Steered {
    uint32_t rqn = 0;
    uint32_t flow_tag = 0;
    std::vector<uint8_t> rewritten;  // the frame as software steering rewrote it (VLAN pop); empty: as it came
  };
  // Every RQ a frame goes to (an entry naming several TIRs copies it to each), into `out`.
  void steer_frame(std::span<const uint8_t> frame, std::optional<uint32_t> looped_from, std::vector<Steered>& out);
  // The first of them.
  std::optional<uint32_t> steer(std::span<const uint8_t> frame, std::optional<uint32_t> looped_from = std::nullopt) {
    steer_frame(frame, looped_from, steered_);
    return steered_.empty() ? std::nullopt : std::optional<uint32_t>(steered_.front().rqn);
  }
  // Delivery to one RQ (no steering). False when the frame was dropped.
  bool deliver(uint32_t rqn, std::span<const uint8_t> frame, uint32_t flow_tag = 0);

  const EthCounters& counters() const { return counters_; }

 private:
  // The receive path of deliver(), one step each: checks and VLAN strip, the receive WQE and its
  // capacity, the scatter, the CQE (or an error CQE that stops the RQ).
  struct Arrival;
  bool admit(Arrival& a, std::span<const uint8_t> frame);
  bool take_receive_wqe(Arrival& a);
  bool scatter(Arrival& a);
  bool fail_receive(Arrival& a, uint8_t syndrome);
  bool complete_receive(Arrival& a);
  LogLimiter sq_error_log_;  // a guest can fail SQ after SQ
  struct Chunk {
    uint64_t address;
    uint32_t length;
  };
  enum class Fault { kNone, kBadLkey, kDma, kLength, kOpcode, kDs };

  Fault translate(uint32_t lkey, uint64_t va, uint32_t length, bool write, std::vector<Chunk>& out);
  Fault execute(EthSendQueue& sq, uint32_t sqn, std::span<const uint8_t> wqe);
  Fault build_frame(std::span<const uint8_t> wqe, std::vector<uint8_t>& frame, uint32_t max_size = kMaxFrame);
  bool read_ring(const WorkQueueRing& ring, uint32_t first_block, uint32_t bytes, std::vector<uint8_t>& out);
  bool read_ctrl(const WorkQueueRing& ring, uint32_t first_block, SendWqe& ctrl);  // the control segment
  void sq_error(EthSendQueue& sq, uint32_t sqn, uint16_t wqe_index, uint8_t opcode, Fault fault);
  void flush(EthSendQueue& sq, uint32_t sqn, uint32_t producer);
  void write_tx_cqe(EthSendQueue& sq, uint32_t sqn, uint16_t wqe_index, uint8_t opcode, bool error, uint8_t syndrome,
                    bool solicited);
  std::optional<uint32_t> rq_of_tir(uint32_t tirn, std::span<const uint8_t> frame);
  // The RQ a TIR destination takes `frame` to, its own frames' loopback rule applied.
  std::optional<Steered> to_tir(uint32_t tirn, std::span<const uint8_t> frame, std::optional<uint32_t> looped_from,
                                uint32_t flow_tag);
  bool self_loopback_allowed(uint32_t tirn, std::span<const uint8_t> frame, std::optional<uint32_t> looped_from) const;
  uint32_t transport_domain(const EthSendQueue& sq) const;  // its TIS's, 0 without one
  // One frame of `sq` out of the port: on a shared port (QoS) once its share of the wire has taken
  // it, in model time; else at once. Counts a frame without a port.
  void send_frame(EthSendQueue& sq, std::span<const uint8_t> frame);
  // NIC TX steering: the root NIC TX table's entries count a frame, drop it (false) or put a tunnel
  // header before it (into `reformatted`, left empty otherwise); a frame no entry drops leaves.
  bool steer_tx(std::span<const uint8_t> frame, std::vector<uint8_t>& reformatted);
  bool rewrite_tx(const FlowEntry& entry, std::span<const uint8_t>& frame, std::vector<uint8_t>& out, bool& rewritten);
  const PacketReformat* reformat_of(const FlowEntry& entry) const;
  bool decapsulate_rx(const FlowEntry& entry, std::span<const uint8_t> frame, std::vector<uint8_t>& out,
                      bool& rewritten);
  bool modify_header(const FlowEntry& entry, std::span<const uint8_t> frame, std::vector<uint8_t>& out,
                     bool& rewritten);
  // A software-owned table's verdict on a frame (steering/ste_v1.h), its counters counted, a fault
  // counted and logged.
  // Counts a frame of `bytes` in each of the flow counters named (those that still exist).
  void count_flow(std::span<const uint32_t> counters, size_t bytes);
  steering::SteVerdict walk_software_table(const FlowTable& table, std::span<const uint8_t> frame);
  struct RxSteering;
  void steer_to_tir(RxSteering& s, uint32_t tirn);
  uint32_t steer_software(RxSteering& s, const FlowTable& table);
  uint32_t through_sampler(RxSteering& s, uint32_t id);
  uint32_t steer_firmware(RxSteering& s, const FlowTable& table, const frame::MatchKey& key, bool& dropped);
  LogLimiter sw_steering_log_;
  // The root table of a type (SET_FLOW_TABLE_ROOT), or its lowest-level table when none was set.
  uint32_t root_table(uint8_t type) const;
  // Packet pacing: waits, in model time, until the SQ's rate limit entry (sqc.
  // packet_pacing_rate_limit_index, firmware/packet_pacing.cpp) and its queue group's rates (sqc.
  // qos_queue_group_id, objects/scheduling_elements.h) let a frame of `wire_bytes` go.
  void pace(EthSendQueue& sq, uint64_t wire_bytes);

  FunctionContext& f_;
  EthernetPort* port_ = nullptr;
  double link_gbps_ = 100;
  Clock clock_;
  EthCounters counters_;
  bool physical_reported_ = false;
  std::vector<uint8_t> ctrl_bytes_;  // read_ctrl's buffer
  std::vector<uint8_t> tx_reformatted_;  // steer_tx's encapsulated frame
  std::vector<Steered> steered_;         // receive()'s deliveries
};

}  // namespace hcaemu::model
