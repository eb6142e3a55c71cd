#!/bin/bash
# Replay speed (issue 13): simulated packets per wall-clock second per core of `hcareplay run`, for
# a two-host stream of 64 KiB RDMA WRITEs at MTU 4096, an 8-to-1 incast of 64 KiB WRITEs (PFC, no
# congestion control) and the same incast with DCQCN (the paper's parameters, ECN thresholds for
# 100 Gb/s), each run RUNS times (median printed), with the model-time throughput of the run.
# Usage: bench/replay_figures.sh [HCAREPLAY] [RUNS]   (default build/apps/hcareplay, 5)
set -euo pipefail
REPLAY=${1:-build/apps/hcareplay}
RUNS=${2:-5}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
def hosts(n): return [{"name": f"h{i}", "ip": f"10.0.0.{i + 1}"} for i in range(n)]
json.dump({"format": "hcareplay-workload/1", "hosts": hosts(2),
           "qps": [{"host": "h0", "peer": "h1", "service": "rc", "mtu": 4096,
                    "ops": [{"op": "write", "bytes": 65536}] * 40000}]}, open(f"{work}/stream.json", "w"))
json.dump({"format": "hcareplay-workload/1", "hosts": hosts(9),
           "qps": [{"host": f"h{i}", "peer": "h8", "service": "rc", "mtu": 4096,
                    "ops": [{"op": "write", "bytes": 65536}] * 5000} for i in range(8)]}, open(f"{work}/incast.json", "w"))
PY
for name in stream incast incast-dcqcn; do
  rates=()
  extra=()
  [ "$name" = incast-dcqcn ] && extra=(--dcqcn=paper --set ecn.kmin_bytes=12500 --set ecn.kmax_bytes=500000)
  for ((i = 0; i < RUNS; i++)); do
    start=$(date +%s.%N)
    "$REPLAY" run "$WORK/${name%-dcqcn}.json" --out "$WORK/out" --timing asap --no-pcap --no-trace --no-plots --quiet "${extra[@]}" \
      > "$WORK/summary.txt"
    end=$(date +%s.%N)
    packets=$(sed -n 's/^packets \([0-9]*\),.*/\1/p' "$WORK/summary.txt")
    rates+=("$(python3 -c "print(int($packets / ($end - $start)))")")
  done
  median=$(printf '%s\n' "${rates[@]}" | sort -n | sed -n "$(((RUNS + 1) / 2))p")
  echo "$name: $packets packets, $(grep -o 'payload .*' "$WORK/summary.txt") in model time;" \
       "simulated packets per wall-clock second: median $median (runs: ${rates[*]})"
done
