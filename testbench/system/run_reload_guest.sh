#!/bin/bash
# Full-system test: driver reload and guest reboot on the PF. One guest (hcavm --reboots 1) brings
# mlx5_core + mlx5_ib up, unloads both and loads them again, then reboots: QEMU resets the machine,
# so hcaemu gets DEVICE_RESET, and on the second boot the drivers come up once more
# (guest/reload_reboot.sh). hcaemu must see the reset, survive it and log no warning.
# Usage: run_reload_guest.sh HCAEMU HCAVM
set -uo pipefail
HCAEMU=$1
HCAVM=$2
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/fullsys_lib.sh"

cat "$HERE/guest/mlx5_lib.sh" "$HERE/guest/reload_reboot.sh" > "$WORK/guest.sh"
truncate -s 1M "$WORK/scratch.img"  # the guest's boot marker (/dev/vda)
start_hcaemu 0

"$HCAVM" --name reload-guest --attach "$WORK/sockets/pf.sock" --script "$WORK/guest.sh" --reboots 1 \
  --timeout 500 --qemu-arg -drive --qemu-arg "file=$WORK/scratch.img,if=none,id=scratch,format=raw" \
  --qemu-arg -device --qemu-arg virtio-blk-pci,drive=scratch > "$WORK/guest.log" 2>&1
RC=$?
grep -E "^(BOOT|CHECK|REBOOTING|mlx5_up:|dmesg:|hcavm:)" "$WORK/guest.log"
resets=$(grep -c "pf: device reset requested by the client" "$WORK/hcaemu.log")
connections=$(grep -c "pf: client connected" "$WORK/hcaemu.log")
echo "hcaemu: $resets device resets over $connections connection(s)"
[ $RC -eq 0 ] || fail "guest checks failed (exit $RC)"
[ "$(grep -c '^BOOT [12]$' "$WORK/guest.log")" = 2 ] || fail "the guest did not boot twice"
# Kernel trouble on the console (the shutdown before the reboot prints nowhere else).
grep -v "^CHECK" "$WORK/guest.log" | grep -E "Kernel panic|Oops|BUG:|WARNING:|Call Trace|mlx5.*(error|fail|timeout)" \
  && fail "kernel errors on the guest console"
# QEMU resets the device when it starts the machine and again on the reboot, over one connection.
[ "$resets" -ge 2 ] || fail "hcaemu saw $resets DEVICE_RESET, expected one at start and more at the reboot"
[ "$connections" = 1 ] || fail "QEMU connected $connections times; the reboot should reuse the connection"
stop_hcaemu_cleanly
echo "PASS"
