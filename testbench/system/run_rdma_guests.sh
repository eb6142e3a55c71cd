#!/bin/bash
# Full-system test: RDMA (RoCE v2, RC) between two VMs through the emulated HCA. One VM on the PF
# (server), one on VF0 (client) of the same hcaemu; each brings up the unmodified mlx5_core and
# mlx5_ib, and they run guest/rdma_peer.sh: ibv_rc_pingpong (polling and events), hca_verbs_check,
# and perftest's write/read/send/atomic bw and lat tests.
# Usage: [RDMA_TESTS="pingpong verbs perftest"] [RDMA_GID=linklocal|ipv4] [HCAEMU_PCAP=FILE]
#        [HCAEMU_TRACE=PREFIX] run_rdma_guests.sh HCAEMU HCAVM HCA_VERBS_CHECK
set -uo pipefail
HCAEMU=$1
HCAVM=$2
VERBS_CHECK=$3
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KEEP_LOG=/tmp/last-rdma-hcaemu.log
source "$HERE/fullsys_lib.sh"
source "$HERE/rdma_lib.sh"

start_hcaemu_rdma
run_rdma_pair hca mlx5 mlx5_0 eth0
stop_hcaemu
grep -E "commands|eswitch" "$WORK/hcaemu.log"
rdma_pair_verdict hca
echo "PASS"
