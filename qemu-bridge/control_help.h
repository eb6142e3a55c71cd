#pragma once
// The commands of hcaemu's control socket, as `hcactl help` and `hcactl --help` print them.
namespace hcaemu::bridge {

inline constexpr const char* kControlHelp = R"(Commands (hcactl [--socket PATH] COMMAND ...):
  stats                           counters of every function, the embedded switch and the uplinks
  link show [NAME]                the uplinks: state (admin and peer), endpoint, faults
  link up NAME | link down NAME   set a link administratively up or down; while down it carries no
                                  frame either way and every function's port is down (carrier,
                                  PORT_DOWN events); a stream link drops its peer, so the far
                                  end loses its carrier as over a cable
  link set NAME KEY VALUE ...     change the link's faults while running (keys not named keep their
                                  values): loss, corrupt, duplicate, reorder (probability per frame:
                                  1% or 0.01), delay, jitter (100us, 2ms), rate (10gbit, 0 = none),
                                  seed; e.g. link set uplink0 loss 1% corrupt 0.1%
  vfs [N]                         show the enabled VFs, or enable N (0 disables), as sriov_numvfs
  vf [show]                       each enabled VF's transmit rates
  vf N [max_tx_rate MBPS] [min_tx_rate MBPS]
                                  a VF's transmit rates in Mb/s (0: none), as ip link set PF vf N:
                                  the port's scheduler caps it at max_tx_rate and shares the port by
                                  the min_tx_rates (weights) in model time
  port [show]                     the port's traffic classes (trust, prio_tc, tsa, tcbw)
  port qos JSON                   change them, as the configuration's port_qos (no blanks), e.g.
                                  port qos {"trust":"dscp","prio_tc":[0,0,0,1,0,0,0,0],
                                  "tcbw":[30,70,0,0,0,0,0,0]}: DSCP 24..31 in class 1, 70% of the port
  help                            this text
With two physical ports (hcaemu --ports 2), vfs, vf and port address port 0's PF unless the request
starts with the PF's name: pf1 vfs 2, pf1 vf 0 max_tx_rate 1000, pf1 port show (pf or pf0 is port 0);
the links are uplink0 and uplink1.)";

}  // namespace hcaemu::bridge
