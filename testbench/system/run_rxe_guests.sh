#!/bin/bash
# Full-system baseline: the same RDMA checks as run_rdma_guests.sh (guest/rdma_peer.sh), between two
# VMs with Soft-RoCE (rdma_rxe) on virtio-net NICs joined by a QEMU dgram netdev; no hcaemu. It shows
# the guest-side scripts and tools work, and gives the Soft-RoCE numbers to compare with.
# With HCAREPLAY, QEMU's filter-dump records the wire and hcareplay must map at least 99% of its
# RoCE frames into messages, reporting retransmissions and NAKs as such (issue 13).
# Usage: [RDMA_TESTS=...] [RDMA_GID=linklocal|ipv4] [RXE_PCAP=FILE] run_rxe_guests.sh HCAVM HCA_VERBS_CHECK [HCAREPLAY]
set -uo pipefail
HCAVM=$1
VERBS_CHECK=$2
HCAREPLAY=${3:-}
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/fullsys_lib.sh"
source "$HERE/rdma_lib.sh"
fail() { echo "FAIL: $*"; exit 1; }  # no hcaemu log here

[ -n "$HCAREPLAY" ] && export RXE_PCAP=${RXE_PCAP:-$WORK/rxe.pcap}
rxe_nics
run_rdma_pair rxe rxe rxe0 eth0
rdma_pair_verdict rxe
if [ -n "$HCAREPLAY" ]; then
  "$HCAREPLAY" inspect "$RXE_PCAP" > "$WORK/replay.txt" || fail "hcareplay cannot read the Soft-RoCE capture"
  sed -n '1p;/messages;/p;/^protocol/p' "$WORK/replay.txt"
  share=$(sed -n 's/.*mapped [0-9]* (\([0-9.]*\)% of RoCEv2).*/\1/p' "$WORK/replay.txt")
  python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 99.0 else 1)" "${share:-0}" ||
    fail "hcareplay mapped only ${share:-0}% of the Soft-RoCE capture's RoCE frames"
fi
echo "PASS"
