#!/bin/bash
# The TCP figure, measured in this run: two VMs, one on the PF and one on VF0 of one hcaemu, each
# also given a virtio-net NIC joined to the other's by a QEMU dgram netdev. The client VM fetches an
# MB MiB file over HTTP (busybox httpd -> wget) from the server VM through the emulated NIC and
# through virtio-net, alternating, twice each (bench/guest/tcp_peer.sh). Prints Mbit/s for both.
# Usage: bench/tcp_compare.sh HCAEMU HCAVM [MB]   (default 64; scripts/run-bench.sh passes them)
set -uo pipefail
HCAEMU=$1 HCAVM=$2 MB=${3:-64}
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/testbench/system/fullsys_lib.sh"
source "$ROOT/testbench/system/rdma_lib.sh"  # rxe_nics: the virtio-net NICs and their dgram netdev

for role in server client; do
  me=1 peer=2
  [ $role = client ] && me=2 peer=1
  { printf 'ROLE=%s\nME=%s\nPEER=%s\nMB=%s\n' $role $me $peer "$MB"
    cat "$ROOT/testbench/system/guest/mlx5_lib.sh" "$ROOT/bench/guest/tcp_peer.sh"; } > "$WORK/$role.sh"
done
start_hcaemu 1 --log-level warn
rxe_nics
"$HCAVM" --name tcp-server --attach "$WORK/sockets/pf.sock" "${SERVER_VM[@]}" --script "$WORK/server.sh" \
  --timeout 900 > "$WORK/server.log" 2>&1 &
SERVER=$!
"$HCAVM" --name tcp-client --attach "$WORK/sockets/vf0.sock" "${CLIENT_VM[@]}" --script "$WORK/client.sh" \
  --timeout 900 > "$WORK/client.log" 2>&1
CLIENT_RC=$?
wait $SERVER
SERVER_RC=$?
if [ $CLIENT_RC -ne 0 ] || [ $SERVER_RC -ne 0 ]; then
  for role in server client; do echo "--- $role guest, last lines"; tail -n 40 "$WORK/$role.log"; done
  fail "guests failed (client $CLIENT_RC, server $SERVER_RC)"
fi

echo "figure: TCP between two VMs (TCG, 2 vCPUs each), HTTP GET of $MB MiB (busybox httpd -> wget -O - | wc -c), two runs each"
for pair in "hca emulated NIC, PF VM <- VF0 VM (mlx5e, embedded switch)" "virtio virtio-net, QEMU dgram netdev between the same VMs"; do
  awk -v p="${pair%% *}" -v label="${pair#* }" '$1 == "tcp:" && $2 == p { r = r sprintf(" %.1f", $3 * 8 / $4 / 1e6) }
    END { printf "  %-60s Mbit/s:%s\n", label, r }' "$WORK/client.log"
done
