#!/bin/bash
# The figures of docs/replay.md, "An 8-to-1 incast": eight senders WRITE 300 x 64 KiB each to one
# host through one 100 Gb/s switch, replayed three ways (lossless with PFC and no congestion
# control; lossy, PFC off; DCQCN with the paper's parameters and ECN thresholds for 100 Gb/s), and
# 4,000 each with DCQCN; then `hcareplay plot` of each run; the queue and throughput plots and the
# runs' totals are copied into docs/figures/. Deterministic: running it again gives the same CSV files.
# Usage: scripts/replay_incast_figures.sh [HCAREPLAY] [OUT]   (default build/apps/hcareplay, docs/figures)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPLAY=${1:-$ROOT/build/apps/hcareplay}
OUT=${2:-$ROOT/docs/figures}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
python3 - "$WORK" <<'PY'
import json, sys
hosts = [{"name": f"h{i}", "ip": f"10.0.0.{i + 1}"} for i in range(9)]
for name, writes in (("incast", 300), ("incast-long", 4000)):
    qps = [{"host": f"h{i}", "peer": "h8", "service": "rc", "mtu": 4096,
            "ops": [{"op": "write", "bytes": 65536}] * writes} for i in range(8)]
    json.dump({"format": "hcareplay-workload/1", "hosts": hosts, "qps": qps}, open(f"{sys.argv[1]}/{name}.json", "w"))
PY
common=(--timing asap --no-pcap --no-trace --quiet)
run() {  # NAME WORKLOAD BIN_US OPTIONS...
  local name=$1 workload=$2 bin_us=$3; shift 3
  echo "replay_incast_figures: $name" >&2
  "$REPLAY" run "$WORK/$workload.json" --out "$WORK/$name" "${common[@]}" --bin-us "$bin_us" "$@" > "$WORK/$name.txt" || true
  for plot in queue_depth throughput; do
    cp "$WORK/$name/plots/$plot.png" "$OUT/incast-$name-$plot.png"  # the SVGs stay in the run directories
  done
  grep -E "^(packets|goodput_gbps|drops|ecn_marks|pause_frames|np_cnp_sent|rp_cnp_handled|incomplete)," \
    "$WORK/$name/totals.csv" | tr '\n' ' ' | sed "s/^/$name: /"
  echo
}
dcqcn=(--dcqcn=paper --set ecn.kmin_bytes=12500 --set ecn.kmax_bytes=500000)
run lossless incast 100
run lossy incast 100 --set pfc.enabled=false --set switch.buffer_bytes=1000000 --set qp.ack_timeout=8
run dcqcn incast 100 "${dcqcn[@]}"
# The same with 4,000 WRITEs per sender in 1 ms bins: the shares converge (docs/replay.md).
run dcqcn-long incast-long 1000 "${dcqcn[@]}"
