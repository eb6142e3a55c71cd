#!/bin/bash
# Full-system baseline: the same RDMA checks as run_rdma_guests.sh (guest/rdma_peer.sh), between two
# VMs with Soft-RoCE (rdma_rxe) on virtio-net NICs joined by a QEMU dgram netdev; no hcaemu. It shows
# the guest-side scripts and tools work, and gives the Soft-RoCE numbers to compare with.
# Usage: [RDMA_TESTS=...] [RDMA_GID=linklocal|ipv4] run_rxe_guests.sh HCAVM HCA_VERBS_CHECK
set -uo pipefail
HCAVM=$1
VERBS_CHECK=$2
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/fullsys_lib.sh"
source "$HERE/rdma_lib.sh"
fail() { echo "FAIL: $*"; exit 1; }  # no hcaemu log here

rxe_nics
run_rdma_pair rxe rxe rxe0 eth0
rdma_pair_verdict rxe
echo "PASS"
