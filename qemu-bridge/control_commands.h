#pragma once
// What `hcactl` can ask of a running hcaemu: the commands, run on the SystemC kernel thread against
// the device and its uplink ports. Every word comes from a client: each is checked and a wrong one
// answered with an error that names it.
#include <string>
#include <vector>

#include "qemu-bridge/control_server.h"
#include "qemu-bridge/uplink_port.h"
#include "sriov/hca_device.h"

namespace hcaemu::bridge {

struct ControlTargets {
  // One device per physical port (its PF and VFs), in port order; vfs, vf and port address port
  // 0's unless the request starts with another PF's name ("pf1 vf 0 max_tx_rate 1000").
  std::vector<sriov::HcaDevice*> devices;
  std::vector<UplinkPort*> uplinks;
};

// Kernel thread.
ControlReply run_control_command(const std::vector<std::string>& words, ControlTargets& targets);

}  // namespace hcaemu::bridge
