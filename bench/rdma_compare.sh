#!/bin/bash
# The side-by-side RDMA figure, measured in this run: two VMs on the emulated HCA (PF + VF0 of one
# hcaemu) and two VMs with Soft-RoCE on virtio-net (a QEMU dgram netdev between them), each pair
# running ib_write_bw -s 65536 and ib_write_lat -s 64 (guest/rdma_peer.sh, RDMA_TESTS=bench).
# Prints a table: bandwidth (Gb/s, average) and latency (typical and 99th percentile, µs), and the
# client commands used. A pair whose tool failed shows "failed" and the reason below the table.
# Usage: bench/rdma_compare.sh HCAEMU HCAVM HCA_VERBS_CHECK   (scripts/run-bench.sh passes them)
# Environment: BENCH_BW_ITERS (default 2000: at 3 Gb/s 200 x 64 KiB is over in ~40 ms, too short to measure), BENCH_LAT_ITERS (default 500), RDMA_GID, HCAEMU_PCAP,
# HCAEMU_TRACE (see testbench/system/rdma_lib.sh).
set -uo pipefail
HCAEMU=$1
HCAVM=$2
VERBS_CHECK=$3
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/testbench/system/fullsys_lib.sh"
source "$ROOT/testbench/system/rdma_lib.sh"
RDMA_TESTS=bench
RDMA_VM_TIMEOUT=600

start_hcaemu_rdma
run_rdma_pair hca mlx5 mlx5_0 eth0 > "$WORK/hca.out"
stop_hcaemu
rxe_nics
run_rdma_pair rxe rxe rxe0 eth0 > "$WORK/rxe.out"

result() {  # result LABEL TOOL: the client's result columns of that tool
  sed -n "s/^CHECK ok: $2 (client): *//p" "$WORK/$1-client.log"
}
echo "figure: RDMA between two VMs (TCG, 2 vCPUs each, path MTU from the port), ib_write_bw 64 KiB and ib_write_lat 64 B"
printf '%-46s %22s %18s %12s\n' "pair" "write_bw avg [Gb/s]" "write_lat typ [us]" "p99 [us]"
for pair in "hca emulated HCA, PF + VF0 (mlx5)" "rxe Soft-RoCE on virtio-net (rxe)"; do
  label=${pair%% *}
  bw=$(result "$label" "ib_write_bw -s 65536" | awk '{print $4}')
  typ=$(result "$label" "ib_write_lat -s 64" | awk '{print $5}')
  p99=$(result "$label" "ib_write_lat -s 64" | awk '{print $8}')
  printf '%-46s %22s %18s %12s\n' "${pair#* }" "${bw:-failed}" "${typ:-failed}" "${p99:-failed}"
done
echo "commands (client side; the server runs the same without the address):"
grep -h "^RUN:" "$WORK/hca-client.log" "$WORK/rxe-client.log" | sed 's/^RUN:/ /'
for label in hca rxe; do
  grep -q "CHECK FAILED" "$WORK/$label.out" && { echo "--- $label pair failures:"; grep -E "CHECK FAILED|hcavm:" "$WORK/$label.out"; }
done
exit 0
