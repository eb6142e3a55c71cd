#!/bin/bash
# Full-system test (issue 15): one hcaemu with two physical ports (--ports 2: two PFs, as a
# dual-port ConnectX-6 Dx) whose uplinks are cabled to each other, and one guest with both PFs
# (guest/dual_port.sh): mlx5_0 and mlx5_1 bind with a node GUID each and one system image GUID,
# RC/UD pingpongs (data checked) and ib_write_bw cross the cable, and `hcactl link down uplink0`
# takes both ports down (port 1 loses its carrier with the far end), `link up` brings both back.
# Each port's switch pcap must hold the other port's RoCE frames and dissect cleanly.
# Usage: run_dual_port_guest.sh HCAEMU HCAVM HCACTL
set -uo pipefail
HCAEMU=$1
HCAVM=$2
HCACTL=$3
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/fullsys_lib.sh"

start_hcaemu 0 --ports 2 --uplink "stream,listen=unix:$WORK/cable.sock" --uplink1 "stream,connect=unix:$WORK/cable.sock" \
  --pcap "$WORK/switch.pcap"
[ -S "$WORK/sockets/pf1.sock" ] || fail "no pf1.sock"
cat "$HERE/guest/mlx5_lib.sh" "$HERE/guest/dual_port.sh" > "$WORK/guest.sh"
"$HCAVM" --name dual-port --attach "$WORK/sockets/pf.sock" --attach "$WORK/sockets/pf1.sock" \
  --script "$WORK/guest.sh" --timeout 600 > "$WORK/guest.log" 2>&1 &
VM_PID=$!
ctl() { "$HCACTL" --socket-dir "$WORK/sockets" "$@"; }
wait_for() {  # wait_for TEXT: until the guest says it (or has stopped)
  while kill -0 $VM_PID 2>/dev/null && ! grep -q "$1" "$WORK/guest.log"; do sleep 0.2; done
  grep -q "$1" "$WORK/guest.log"
}
if wait_for "DUALPORT: shut port 0"; then
  echo "host: $(ctl link down uplink0)"
  wait_for "DUALPORT: open port 0" && sleep 1
  echo "host: link uplink1 while port 0 was shut: $(ctl link show uplink1)"
  echo "host: $(ctl link up uplink0)"
fi
wait $VM_PID
RC=$?
grep -E "^(CHECK|mlx5_|link-local|dmesg:|DUALPORT|[a-z_ ]+(client|port [01]).*:|hcavm:)" "$WORK/guest.log"
[ $RC -eq 0 ] || fail "guest checks failed (exit $RC)"
grep -q "CHECK FAILED" "$WORK/guest.log" && fail "guest checks failed"
grep -E "uplink[01]: (peer|administratively|not listening|listening again)|eswitch1? uplink:" "$WORK/hcaemu.log" | cut -c1-160
stop_hcaemu_cleanly
grep -q "uplink1: peer disconnected" "$WORK/hcaemu.log" || fail "port 1's link did not lose its peer while port 0 was shut"
[ "$(grep -cE "eswitch1? uplink: sent [1-9]" "$WORK/hcaemu.log")" -eq 2 ] || fail "not both ports sent through their uplinks"
for port in 0 1; do
  pcap=$WORK/switch.pcap other=02:c9:00:00:80:00
  [ $port = 1 ] && pcap=$WORK/switch.port1.pcap other=02:c9:00:00:00:00
  other_frames=$(tshark -r "$pcap" -Y "infiniband && eth.src == $other" 2>/dev/null | wc -l)
  expert=$(tshark -r "$pcap" -q -z expert,error 2>/dev/null | grep -ciE "malformed|error")
  echo "port $port switch pcap: $other_frames RoCE frames from the other port, $expert expert errors"
  [ "$other_frames" -gt 0 ] || fail "port $port's pcap holds no RoCE frame of the other port"
  [ "$expert" -eq 0 ] || fail "tshark reports malformed or erroneous frames in port $port's pcap"
done
echo "PASS"
