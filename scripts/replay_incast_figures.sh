#!/bin/bash
# The figures of docs/replay.md, "An 8-to-1 incast": eight senders WRITE 300 x 64 KiB each to one
# host through one 100 Gb/s switch, replayed three ways (lossless with PFC and no congestion
# control; lossy, PFC off; DCQCN with the paper's parameters and ECN thresholds for 100 Gb/s),
# then `hcareplay plot` of each run; the queue and throughput plots and the runs' totals are
# copied into docs/figures/. Deterministic: running it again gives the same CSV files.
# Usage: scripts/replay_incast_figures.sh [HCAREPLAY] [OUT]   (default build/apps/hcareplay, docs/figures)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPLAY=${1:-$ROOT/build/apps/hcareplay}
OUT=${2:-$ROOT/docs/figures}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
python3 - "$WORK/incast.json" <<'PY'
import json, sys
hosts = [{"name": f"h{i}", "ip": f"10.0.0.{i + 1}"} for i in range(9)]
qps = [{"host": f"h{i}", "peer": "h8", "service": "rc", "mtu": 4096,
        "ops": [{"op": "write", "bytes": 65536}] * 300} for i in range(8)]
json.dump({"format": "hcareplay-workload/1", "hosts": hosts, "qps": qps}, open(sys.argv[1], "w"))
PY
common=(--timing asap --bin-us 100 --no-pcap --no-trace --quiet)
run() {  # NAME OPTIONS...
  local name=$1; shift
  echo "replay_incast_figures: $name" >&2
  "$REPLAY" run "$WORK/incast.json" --out "$WORK/$name" "${common[@]}" "$@" > "$WORK/$name.txt" || true
  for plot in queue_depth throughput; do
    cp "$WORK/$name/plots/$plot.png" "$OUT/incast-$name-$plot.png"  # the SVGs stay in the run directories
  done
  grep -E "^(packets|goodput_gbps|drops|ecn_marks|pause_frames|np_cnp_sent|rp_cnp_handled|incomplete)," \
    "$WORK/$name/totals.csv" | tr '\n' ' ' | sed "s/^/$name: /"
  echo
}
run lossless
run lossy --set pfc.enabled=false --set switch.buffer_bytes=1000000 --set qp.ack_timeout=8
run dcqcn --dcqcn=paper --set ecn.kmin_bytes=12500 --set ecn.kmax_bytes=500000
