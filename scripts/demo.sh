#!/bin/bash
# The demo: builds hcaemu, starts one emulated ConnectX-6 Dx with a PF and 2 VFs, boots one VM on the
# PF and one on VF0 at the same time, and shows what each guest sees: the PCIe function, the unmodified
# mlx5 drivers bringing up a netdev and an RDMA device on it, the two VMs pinging each other, then RDMA
# between them (ibv_rc_pingpong, ib_write_bw over RoCE v2), with the wire in a pcap and a latency trace
# in model time, summarised at the end. Run as root on
# Debian 12; the first run downloads QEMU and the guest image into ${HCAEMU_CACHE:-~/.cache/hcaemu}.
# HCAEMU_DEMO_OUT=DIR keeps the pcap and trace there (default: a temporary directory, removed).
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
OUT="${HCAEMU_DEMO_OUT:-$WORK}"
mkdir -p "$OUT"

step "4/5 hcaemu: one HCA, PF + $VFS VFs enabled through SR-IOV (sockets in $WORK/sockets)"
export SC_COPYRIGHT_MESSAGE=DISABLE
"$PREFIX/bin/hcaemu" --socket-dir "$WORK/sockets" --vfs "$VFS" --pcap "$OUT/demo.pcap" --trace "$OUT/demo-trace" \
  > "$WORK/hcaemu.log" 2>&1 &
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
echo "--- modprobe mlx5_core mlx5_ib (unmodified Debian 12 drivers)"
modprobe mlx5_core && modprobe mlx5_ib
sleep 1
dmesg | grep -E "mlx5_core|mlx5_ib" | sed 's/^\[[ 0-9.]*\] //'
ip link set eth0 up
ip addr add 10.9.0.$ME/24 dev eth0
for _ in 1 2 3 4 5 6 7 8 9 10; do ibv_devinfo 2>/dev/null | grep -q PORT_ACTIVE && break; sleep 1; done
echo "--- the netdev and the RDMA device on this function"
ip -br link show eth0
ibv_devinfo -v | grep -E "hca_id|fw_ver|vendor_part_id|state|link_layer|GID"
rdma link
echo "--- ping the other VM through the emulated NIC's embedded switch"
for _ in $(seq 30); do ping -c 1 -W 1 10.9.0.$PEER >/dev/null 2>&1 && break; done
ping -c 3 10.9.0.$PEER
sleep 3  # let the other VM finish its pings too
echo "--- RDMA over RoCE v2 between the VMs: ibv_rc_pingpong, then ib_write_bw 64 KiB"
gid=1  # the RoCE v2 link-local GID
if [ "$ME" = 1 ]; then
  ibv_rc_pingpong -d mlx5_0 -g $gid -n 10 | tail -2
  ib_write_bw -d mlx5_0 -x $gid -F -s 65536 -n 100 --report_gbits | grep -A1 "#bytes"
else
  sleep 3; ibv_rc_pingpong -d mlx5_0 -g $gid -n 10 10.9.0.$PEER | tail -2
  sleep 3; ib_write_bw -d mlx5_0 -x $gid -F -s 65536 -n 100 --report_gbits 10.9.0.$PEER | grep -A1 "#bytes"
fi
GUEST
(echo "ME=1 PEER=2"; cat "$WORK/guest.sh") > "$WORK/pf-guest.sh"
(echo "ME=2 PEER=1"; cat "$WORK/guest.sh") > "$WORK/vf-guest.sh"

step "5/5 two VMs at once: one on the PF, one on VF0 (TCG, about 40-60 s)"
"$PREFIX/bin/hcavm" --name pf-vm --attach "$WORK/sockets/pf.sock" --script "$WORK/pf-guest.sh" --timeout 300 \
  2>&1 | grep -v -E "^(SeaBIOS|Booting|\s*$)" | sed -u 's/^/[pf-vm] /' &
PF_VM=$!
"$PREFIX/bin/hcavm" --name vf-vm --attach "$WORK/sockets/vf0.sock" --script "$WORK/vf-guest.sh" --timeout 300 \
  2>&1 | grep -v -E "^(SeaBIOS|Booting|\s*$)" | sed -u 's/^/[vf-vm] /' &
VF_VM=$!
wait $PF_VM $VF_VM || true

step "hcaemu's view of the session (counters are printed at shutdown)"
kill -TERM "$HCAEMU_PID"; wait "$HCAEMU_PID" || true; HCAEMU_PID=
cat "$WORK/hcaemu.log"
step "the wire: $OUT/demo.pcap through tshark (RoCE v2 frames by opcode)"
if command -v tshark >/dev/null; then
  tshark -r "$OUT/demo.pcap" --disable-protocol rpcordma -Y infiniband -T fields -e _ws.col.Info 2>/dev/null |
    sed -E 's/ QP=.*//' | sort | uniq -c | sort -rn | head -12
fi
step "the latency trace in model time ($OUT/demo-trace.json opens in ui.perfetto.dev)"
"$PREFIX/bin/hcatrace" summary "$OUT/demo-trace.csv" | head -24
echo
echo "Both guests' unmodified mlx5 drivers brought the emulated ConnectX-6 Dx up: a netdev (mlx5e) and an"
echo "RDMA device (mlx5_ib, RoCE port ACTIVE) on the PF and on a VF; the VMs reached each other through the"
echo "emulated NIC and moved RDMA traffic (RC over RoCE v2) through its embedded switch."
