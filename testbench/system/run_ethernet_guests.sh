#!/bin/bash
# Full-system test: Ethernet between two VMs through the emulated NIC. One VM on the PF, one on a
# VF of the same hcaemu; each brings up the unmodified mlx5e driver, they ping each other over IPv4
# and IPv6, the PF guest tries to take the VF's MAC with a macvlan (refused; the VF keeps its
# traffic), the VF guest sends from a macvlan with a made-up MAC (dropped by its spoof check) and, with TRANSFER=1 in the environment, they move a few MB over TCP checked by checksum.
# Usage: [TRANSFER=1] run_ethernet_guests.sh HCAEMU HCAVM
set -uo pipefail
HCAEMU=$1
HCAVM=$2
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KEEP_LOG=/tmp/last-eth-hcaemu.log  # the last run's log, for looking into a stall
source "$HERE/fullsys_lib.sh"

script() {  # script ROLE ME PEER
  printf 'ROLE=%s\nME=%s\nPEER=%s\nTRANSFER=%s\n' "$1" "$2" "$3" "${TRANSFER:-0}"
  cat "$HERE/guest/ethernet_peer.sh"
}
script server 1 2 > "$WORK/pf.sh"
script client 2 1 > "$WORK/vf.sh"

start_hcaemu 1 ${HCAEMU_TEST_LOG_LEVEL:+--log-level $HCAEMU_TEST_LOG_LEVEL}

"$HCAVM" --name pf-guest --attach "$WORK/sockets/pf.sock" --script "$WORK/pf.sh" --timeout 500 > "$WORK/pf.log" 2>&1 &
PF_VM=$!
"$HCAVM" --name vf-guest --attach "$WORK/sockets/vf0.sock" --script "$WORK/vf.sh" --timeout 500 > "$WORK/vf.log" 2>&1 &
VF_VM=$!
wait $PF_VM; PF_RC=$?
wait $VF_VM; VF_RC=$?
echo "--- PF guest (exit $PF_RC)"; grep -E "CHECK|received|hcavm:|mlx5" "$WORK/pf.log"
echo "--- VF guest (exit $VF_RC)"; grep -E "CHECK|hcavm:|mlx5" "$WORK/vf.log"
kill -TERM "$HCAEMU_PID"; wait "$HCAEMU_PID"; HCAEMU_PID=
grep -E "commands|eswitch" "$WORK/hcaemu.log"
# The VF guest's macvlan with a made-up MAC sent frames the VF's spoof check dropped.
spoofed=$(sed -n 's/.*eswitch:.*spoofed source \([0-9]*\).*/\1/p' "$WORK/hcaemu.log" | tail -n1)
[ "${spoofed:-0}" -gt 0 ] || fail "the switch dropped no spoofed frame from the VF (spoof check)"
[ $PF_RC -eq 0 ] || fail "PF guest checks failed (exit $PF_RC)"
[ $VF_RC -eq 0 ] || fail "VF guest checks failed (exit $VF_RC)"
echo "PASS"
