#!/bin/bash
# Full-system test: one hcaemu with 2 VFs; a guest on the PF and a guest on VF0 at the same time,
# each checking what it sees (IDs, BARs, capabilities, mlx5_core reading the init segment). Then a
# guest on VF1 is killed while it boots, and another guest on VF1 must still work: hcaemu survives.
# Usage: run_pf_vf_guests.sh HCAEMU HCAVM
set -uo pipefail
HCAEMU=$1
HCAVM=$2
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/fullsys_lib.sh"

guest_script() {  # guest_script DEVICE BAR0 VECTORS > file
  printf 'EXPECT_DEVICE=%s\nEXPECT_BAR0=%s\nEXPECT_VECTORS=%s\nEXPECT_FW=22.35.1012\n' "$1" "$2" "$3"
  cat "$HERE/guest/check_identity.sh"
}
guest_script 101d $((32 << 20)) 64 > "$WORK/pf.sh"
guest_script 101e $((2 << 20)) 16 > "$WORK/vf.sh"

start_hcaemu 2

echo "== PF guest and VF0 guest at the same time"
"$HCAVM" --name pf-guest --attach "$WORK/sockets/pf.sock" --script "$WORK/pf.sh" --timeout 400 > "$WORK/pf-guest.log" 2>&1 &
PF_VM=$!
"$HCAVM" --name vf-guest --attach "$WORK/sockets/vf0.sock" --script "$WORK/vf.sh" --timeout 400 > "$WORK/vf-guest.log" 2>&1 &
VF_VM=$!
wait $PF_VM; PF_RC=$?
wait $VF_VM; VF_RC=$?
echo "--- PF guest (exit $PF_RC)"; grep -E "CHECK|hcavm:|mlx5" "$WORK/pf-guest.log"
echo "--- VF guest (exit $VF_RC)"; grep -E "CHECK|hcavm:|mlx5" "$WORK/vf-guest.log"
[ $PF_RC -eq 0 ] || fail "PF guest checks failed (exit $PF_RC)"
[ $VF_RC -eq 0 ] || fail "VF guest checks failed (exit $VF_RC)"

echo "== a guest on VF1 killed while it boots"
"$HCAVM" --name killed-guest --attach "$WORK/sockets/vf1.sock" --cmd 'sleep 60' --timeout 400 > "$WORK/killed.log" 2>&1 &
KILLED_VM=$!
for _ in $(seq 100); do grep -q "client connected on $WORK/sockets/vf1.sock" "$WORK/hcaemu.log" && break; sleep 0.2; done
sleep 2
pkill -KILL -f "qemu.*$WORK/sockets/vf1.sock"
wait $KILLED_VM
kill -0 "$HCAEMU_PID" 2>/dev/null || fail "hcaemu died with the killed guest"
for _ in $(seq 50); do grep -q "client disconnected from $WORK/sockets/vf1.sock" "$WORK/hcaemu.log" && break; sleep 0.2; done
grep -q "client disconnected from $WORK/sockets/vf1.sock" "$WORK/hcaemu.log" || fail "hcaemu did not notice the killed guest"

echo "== a new guest on VF1 after the kill"
"$HCAVM" --name vf1-guest --attach "$WORK/sockets/vf1.sock" --script "$WORK/vf.sh" --timeout 400 > "$WORK/vf1-guest.log" 2>&1
RC=$?
grep -E "CHECK|hcavm:" "$WORK/vf1-guest.log"
[ $RC -eq 0 ] || fail "guest after the kill failed (exit $RC)"

echo "== clean shutdown"
stop_hcaemu_cleanly
echo "PASS"
