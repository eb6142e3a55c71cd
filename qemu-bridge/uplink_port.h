#pragma once
// The HCA's physical port as hcaemu runs it: a NetdevLink (the socket), the faults injected on it
// both ways, its own pcap and fault log, and its administrative state, wired to the embedded
// switch. The link's I/O thread only posts into the SystemC kernel; everything else here runs on
// the kernel thread (hcactl's commands arrive there through the control queue).
#include <cstdint>
#include <filesystem>
#include <atomic>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "fabric/link_faults.h"
#include "qemu-bridge/kernel_queue.h"
#include "qemu-bridge/netdev_link.h"
#include "sriov/hca_device.h"
#include "traces/pcap_writer.h"

namespace hcaemu::bridge {

struct UplinkSettings {
  std::string name = "uplink0";
  LinkSpec spec;
  fabric::LinkFaultSettings faults;  // none by default
  std::filesystem::path pcap_file;   // empty: no capture of this port
  uint64_t pcap_limit_bytes = 0;
};

class UplinkPort {
 public:
  // Opens the socket and the pcap; throws std::runtime_error / std::system_error saying which failed.
  UplinkPort(UplinkSettings settings, sriov::HcaDevice& device, KernelQueue& control);
  ~UplinkPort();
  UplinkPort(const UplinkPort&) = delete;
  UplinkPort& operator=(const UplinkPort&) = delete;

  const std::string& name() const { return settings_.name; }
  // Kernel thread. Down: the port stops carrying frames both ways, every function sees its port go
  // down, and a stream link drops its peer (the far end loses its carrier, as over a cable); up
  // again once a peer is connected.
  void set_admin_up(bool up);
  bool admin_up() const { return admin_up_; }
  void set_faults(const fabric::LinkFaultSettings& faults);
  const fabric::LinkFaultSettings& faults() const { return out_.settings(); }

  std::string status() const;    // one line: state, endpoint, faults
  std::string counters() const;  // key=value lines
  void stop();                   // joins the I/O thread, closes the pcap; idempotent

 private:
  void arrived(std::vector<uint8_t> frame);  // I/O thread
  void send_out(std::span<const uint8_t> frame);
  void apply_link_state();
  // A line of the fault log: the faults that hit one frame and its number in the port's pcap (0: none).
  void log_faults(const char* direction, unsigned mask, uint64_t pcap_frame, size_t bytes);

  static constexpr size_t kMaxInFlight = 4096;  // frames from the link waiting for the kernel

  UplinkSettings settings_;
  sriov::HcaDevice& device_;
  KernelQueue& control_;
  fabric::LinkFaults out_, in_;  // one generator per direction, used in the order frames cross
  std::unique_ptr<traces::PcapWriter> pcap_;
  std::ofstream fault_log_;  // PCAP.faults.csv: which captured frames a fault touched
  bool admin_up_ = true;
  bool carrier_ = false;
  std::atomic<size_t> in_flight_{0};
  std::atomic<uint64_t> dropped_busy_{0};
  std::unique_ptr<NetdevLink> link_;  // last: its thread calls into the members above
};

}  // namespace hcaemu::bridge
