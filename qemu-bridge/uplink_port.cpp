#include "qemu-bridge/uplink_port.h"

#include <stdexcept>

#include "common/log.h"
#include "pcie/model_time.h"

namespace hcaemu::bridge {
namespace {

fabric::LinkFaultSettings inbound(fabric::LinkFaultSettings faults) {
  faults.seed ^= 0x696e;  // its own sequence, so the two directions do not lose the same frames
  return faults;
}

std::string fault_names(unsigned mask) {
  std::string out;
  for (const auto& [bit, name] : {std::pair{fabric::LinkFaults::kLost, "lost"}, {fabric::LinkFaults::kCorrupted, "corrupted"},
                                  {fabric::LinkFaults::kDuplicated, "duplicated"}, {fabric::LinkFaults::kHeldBack, "reordered"}})
    if (mask & bit) out += (out.empty() ? "" : "+") + std::string(name);
  return out;
}

}  // namespace

UplinkPort::UplinkPort(UplinkSettings settings, sriov::HcaDevice& device, KernelQueue& control)
    : settings_(std::move(settings)), device_(device), control_(control), out_(settings_.faults), in_(inbound(settings_.faults)) {
  if (!settings_.pcap_file.empty()) {
    std::string error;
    if (!(pcap_ = traces::PcapWriter::open(settings_.pcap_file.string(), &error)))
      throw std::runtime_error(settings_.pcap_file.string() + ": " + error);
    pcap_->set_limit(settings_.pcap_limit_bytes);
    const std::filesystem::path log_path = settings_.pcap_file.string() + ".faults.csv";
    fault_log_.open(log_path);
    if (!fault_log_) throw std::runtime_error(log_path.string() + ": cannot create");
    fault_log_ << "model_time_ns,direction,faults,pcap_frame,bytes\n";
  }
  auto carrier = [this](bool up) {
    control_.post([this, up] {
      carrier_ = up;
      log().info("{}: peer {}", name(), up ? "connected: link up" : "gone: link down");
      apply_link_state();
    });
  };
  link_ = std::make_unique<NetdevLink>(settings_.name, settings_.spec, [this](std::vector<uint8_t> f) { arrived(std::move(f)); },
                                       carrier);
  device_.eswitch().set_uplink([this](std::span<const uint8_t> frame) { send_out(frame); });
  set_faults(settings_.faults);
  carrier_ = link_->peer_connected();
  if (!carrier_) device_.set_physical_link(false);  // until a peer comes (elaboration: no EQE yet)
}

UplinkPort::~UplinkPort() { stop(); }

void UplinkPort::stop() {
  if (link_) link_->stop();
  if (pcap_) pcap_->flush();
  if (fault_log_.is_open()) fault_log_.flush();
}

void UplinkPort::arrived(std::vector<uint8_t> frame) {
  // Bounded: past kMaxInFlight waiting for the kernel, the link's frames are dropped and counted.
  if (in_flight_.load() >= kMaxInFlight) return void(++dropped_busy_);
  ++in_flight_;
  control_.post([this, frame = std::move(frame)] {
    --in_flight_;
    // Captured as the port receives them, after the link's faults.
    const auto carried = in_.carry(frame);
    const uint64_t first_captured = pcap_ ? pcap_->frames() + 1 : 0;
    for (const auto& f : carried) {
      if (pcap_) pcap_->write(pcie::model_time_ps(), f);
      device_.eswitch().receive_from_uplink(f);
    }
    log_faults("in", in_.last_faults(), carried.empty() ? 0 : first_captured, frame.size());
  });
}

void UplinkPort::send_out(std::span<const uint8_t> frame) {
  // Captured as the port sends it; the link's faults act after.
  if (pcap_) pcap_->write(pcie::model_time_ps(), frame);
  for (const auto& carried : out_.carry(frame)) link_->send(carried);
  log_faults("out", out_.last_faults(), pcap_ ? pcap_->frames() : 0, frame.size());
}

void UplinkPort::log_faults(const char* direction, unsigned mask, uint64_t pcap_frame, size_t bytes) {
  // The log ends where its pcap does (--pcap-limit-mib), so a flood cannot fill the disk through it.
  if (mask == 0 || !fault_log_.is_open() || pcap_->frames_over_limit() != 0) return;
  fault_log_ << pcie::model_time_ps() / 1000 << "," << direction << "," << fault_names(mask) << "," << pcap_frame << ","
             << bytes << "\n";
}

void UplinkPort::set_admin_up(bool up) {
  if (up == admin_up_) return;
  admin_up_ = up;
  log().info("{}: administratively {}", name(), up ? "up" : "down");
  link_->set_enabled(up);  // a stream link's far end loses its carrier too, as over a cable
  apply_link_state();
}

void UplinkPort::apply_link_state() { device_.set_physical_link(carrier_ && admin_up_); }

void UplinkPort::set_faults(const fabric::LinkFaultSettings& faults) {
  out_.reconfigure(faults);
  in_.reconfigure(inbound(faults));
  if (faults.shapes_time()) {
    auto shaper = std::make_shared<fabric::LinkShaper>(faults);
    link_->set_pace([shaper](uint64_t now_ns, size_t bytes) { return shaper->release_ns(now_ns, bytes); });
  } else {
    link_->set_pace({});
  }
  log().info("{}: faults: {}", name(), faults.text());
}

std::string UplinkPort::status() const {
  const bool up = carrier_ && admin_up_;
  return name() + ": " + (up ? "up" : "down") + " (admin " + (admin_up_ ? "up" : "down") + ", peer " +
         (carrier_ ? "connected" : "absent") + "), " + settings_.spec.text + "; " + out_.settings().text();
}

std::string UplinkPort::counters() const {
  const LinkCounters& c = link_->counters();
  const fabric::LinkFaultCounters& o = out_.counters();
  const fabric::LinkFaultCounters& i = in_.counters();
  std::string s;
  auto add = [&](const char* key, uint64_t value) { s += " " + std::string(key) + "=" + std::to_string(value); };
  add("tx_frames", c.tx_frames.load());
  add("rx_frames", c.rx_frames.load());
  add("tx_dropped_no_peer", c.tx_dropped_no_peer.load());
  add("tx_dropped_backlog", c.tx_dropped_backlog.load());
  add("rx_dropped_model_busy", dropped_busy_.load());
  add("rx_oversized", c.rx_oversized.load());
  add("rx_bad_framing", c.rx_bad_framing.load());
  add("rx_cut_frames", c.rx_cut_frames.load());
  add("connects", c.connects.load());
  add("disconnects", c.disconnects.load());
  add("second_peers_refused", c.second_peers_refused.load());
  add("out_lost", o.lost);
  add("out_corrupted", o.corrupted);
  add("out_duplicated", o.duplicated);
  add("out_reordered", o.reordered);
  add("in_lost", i.lost);
  add("in_corrupted", i.corrupted);
  add("in_duplicated", i.duplicated);
  add("in_reordered", i.reordered);
  if (pcap_) add("pcap_frames", pcap_->frames());
  return name() + s;
}

}  // namespace hcaemu::bridge
