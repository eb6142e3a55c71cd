#!/bin/bash
# The demo: builds hcaemu, starts one emulated ConnectX-6 Dx with a PF and 2 VFs, boots one VM on the
# PF and one on VF0 at the same time, and shows what each guest sees: the PCIe function, its BARs and
# capabilities, and the unmodified mlx5_core driver reading the device's firmware. Run as root on
# Debian 12; the first run downloads QEMU and the guest image into ${HCAEMU_CACHE:-~/.cache/hcaemu}.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${HCAEMU_BUILD_DIR:-$ROOT/build}"
PREFIX="${HCAEMU_PREFIX:-$BUILD/install}"
VFS="${HCAEMU_DEMO_VFS:-2}"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "1/5 Debian packages"
"$ROOT/scripts/install-deps.sh"
step "2/5 building hcaemu (into $BUILD)"
"$ROOT/scripts/build.sh" >/dev/null
step "3/5 QEMU >= 10.1 with vfio-user and the guest image"
QEMU=$("$ROOT/qemu-bridge/scripts/provide-qemu.sh" | tail -1)
"$QEMU" --version | head -1
"$ROOT/qemu-bridge/scripts/build-guest-image.sh" | tail -2

WORK=$(mktemp -d /tmp/hcaemu-demo.XXXXXX)
HCAEMU_PID=
cleanup() {
  [ -n "$HCAEMU_PID" ] && kill "$HCAEMU_PID" 2>/dev/null && wait "$HCAEMU_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

step "4/5 hcaemu: one HCA, PF + $VFS VFs enabled through SR-IOV (sockets in $WORK/sockets)"
export SC_COPYRIGHT_MESSAGE=DISABLE
"$PREFIX/bin/hcaemu" --socket-dir "$WORK/sockets" --vfs "$VFS" > "$WORK/hcaemu.log" 2>&1 &
HCAEMU_PID=$!
for _ in $(seq 50); do grep -q "hcaemu ready" "$WORK/hcaemu.log" && break; sleep 0.1; done
cat "$WORK/hcaemu.log"
ls -l "$WORK/sockets"

cat > "$WORK/guest.sh" <<'GUEST'
dev=
for d in /sys/bus/pci/devices/*; do [ "$(cat $d/vendor)" = 0x15b3 ] && dev=$d; done
[ -n "$dev" ] || { echo "no Mellanox function in this guest"; exit 1; }
bdf=${dev##*/}
echo "--- lspci: the emulated function as this guest sees it"
lspci -nn -vv -s "$bdf" | grep -E "^[0-9a-f]|Region|Capabilities|LnkSta:|Subsystem"
echo "--- sysfs: vendor $(cat $dev/vendor) device $(cat $dev/device) class $(cat $dev/class)"
echo "--- modprobe mlx5_core (unmodified Debian 12 driver)"
modprobe mlx5_core
sleep 1
dmesg | grep mlx5_core | sed 's/^\[[ 0-9.]*\] //'
GUEST

step "5/5 two VMs at once: one on the PF, one on VF0 (TCG, about 20-40 s)"
"$PREFIX/bin/hcavm" --name pf-vm --attach "$WORK/sockets/pf.sock" --script "$WORK/guest.sh" --timeout 300 \
  2>&1 | grep -v -E "^(SeaBIOS|Booting|\s*$)" | sed -u 's/^/[pf-vm] /' &
PF_VM=$!
"$PREFIX/bin/hcavm" --name vf-vm --attach "$WORK/sockets/vf0.sock" --script "$WORK/guest.sh" --timeout 300 \
  2>&1 | grep -v -E "^(SeaBIOS|Booting|\s*$)" | sed -u 's/^/[vf-vm] /' &
VF_VM=$!
wait $PF_VM $VF_VM || true

step "hcaemu's view of the session"
cat "$WORK/hcaemu.log"
echo
echo "The guests' mlx5_core read firmware 22.35.1012 from the init segment and sent ENABLE_HCA through"
echo "the command queue; hcaemu answers every command with BAD_OPCODE until the firmware personality"
echo "(issue 3) lands, so the probe stops there by design."
