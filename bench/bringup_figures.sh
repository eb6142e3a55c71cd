#!/bin/bash
# The driver bring-up figure, measured in this run: in one guest on the PF, RUNS cycles of
# modprobe mlx5_core -> eth0 registered -> `ip link set up` -> carrier, then modprobe mlx5_ib ->
# RoCE port ACTIVE, then rmmod of both (bench/guest/bringup_times.sh). Prints the median, the first
# cycle (which also reads the modules from the initramfs) and the range.
# Usage: bench/bringup_figures.sh HCAEMU HCAVM [RUNS]   (default 5; scripts/run-bench.sh passes them)
set -uo pipefail
HCAEMU=$1 HCAVM=$2 RUNS=${3:-5}
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/testbench/system/fullsys_lib.sh"

{ echo "RUNS=$RUNS"; cat "$ROOT/testbench/system/guest/mlx5_lib.sh" "$ROOT/bench/guest/bringup_times.sh"; } > "$WORK/guest.sh"
start_hcaemu 0 --log-level warn
"$HCAVM" --name bringup --attach "$WORK/sockets/pf.sock" --script "$WORK/guest.sh" --timeout 1200 \
  > "$WORK/guest.log" 2>&1 || { grep -E "CHECK|run:|hcavm:" "$WORK/guest.log"; fail "bringup guest failed"; }

column() {  # column N: "median first min max" of field N of the run lines
  local values; values=$(awk -v n="$1" '/^run: / { print $n }' "$WORK/guest.log")
  sort -n <<<"$values" | awk -v first="$(head -1 <<<"$values")" \
    '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
       printf "median %.2f s (first %.2f s, min %.2f s, max %.2f s)", m, first, v[1], v[NR] }'
}
echo "figure: mlx5 bring-up in a PF guest (TCG, 2 vCPUs), $RUNS load cycles (modprobe, then rmmod)"
echo "  modprobe mlx5_core -> netdev registered:                $(column 3)"
echo "  modprobe mlx5_core -> carrier (ip link set up at once): $(column 4)"
echo "  modprobe mlx5_ib -> RoCE port ACTIVE:                   $(column 5)"
