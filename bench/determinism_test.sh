#!/bin/bash
# The engine in a closed run is deterministic: the lossy mix workload (RC WRITE/READ/SEND/atomics,
# UD, receives posted late so RNR NAKs happen, losses so retransmissions happen), run twice with the
# same seed, gives byte-identical pcaps and latency traces; another seed gives another run.
# Usage: determinism_test.sh ENGINE_BENCH
set -euo pipefail
BENCH=$1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export SC_COPYRIGHT_MESSAGE=DISABLE
run() {  # NAME SEED
  "$BENCH" --workload mix --messages 1500 --loss 0.03 --seed "$2" --pcap "$WORK/$1.pcap" --trace "$WORK/$1" > "$WORK/$1.out"
  cat "$WORK/$1.out"
}
run first 11
run second 11
run other 12
grep -q "error CQEs 0" "$WORK/first.out" || { echo "FAIL: the mix run ended in error completions"; exit 1; }
grep -qE "retransmitted packets [1-9]" "$WORK/first.out" || { echo "FAIL: no retransmission happened"; exit 1; }
grep -qE "RNR NAKs [1-9]" "$WORK/first.out" || { echo "FAIL: no RNR NAK happened"; exit 1; }
for f in pcap json csv; do
  cmp "$WORK/first.$f" "$WORK/second.$f" || { echo "FAIL: the $f output differs between two runs of seed 11"; exit 1; }
  [ -s "$WORK/first.$f" ] || { echo "FAIL: empty $f output"; exit 1; }
done
if cmp -s "$WORK/first.pcap" "$WORK/other.pcap"; then echo "FAIL: seed 12 gave the same pcap as seed 11"; exit 1; fi
echo "PASS: same seed, byte-identical pcap ($(stat -c %s "$WORK/first.pcap") B) and trace ($(stat -c %s "$WORK/first.csv") B CSV)"
