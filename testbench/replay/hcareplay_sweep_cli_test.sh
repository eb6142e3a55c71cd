#!/bin/bash
# hcareplay sweep, collect and plot with the real binary: three points of the 8-to-1 incast over
# the ECN threshold Kmin, two at a time, one of them refused by run (Kmin above the default
# Kmax) and so failing alone; results.csv holds the other two; a sweep's plot and a run's plots
# are drawn when gnuplot is installed, and their scripts written either way.
# Usage: hcareplay_sweep_cli_test.sh HCAREPLAY EXAMPLES_DIR
set -euo pipefail
REPLAY=$1 EXAMPLES=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export SC_COPYRIGHT_MESSAGE=DISABLE
fail() { echo "FAIL: $*"; exit 1; }
OUT="$WORK/kmin sweep"

status=0
"$REPLAY" sweep "$EXAMPLES/incast_8to1.json" --out "$OUT" --set ecn.kmin_bytes=12500,50000,600000 -j 2 \
  --timing asap --no-pcap --no-trace --quiet 2> "$WORK/sweep.err" || status=$?
[ "$status" -eq 1 ] || { cat "$WORK/sweep.err"; fail "a failed point should make the sweep exit 1, not $status"; }
grep -q "1 of 3 points failed: p0003 (exit 2)" "$WORK/sweep.err" || { cat "$WORK/sweep.err"; fail "the failure is not listed"; }
grep -q "kmax" "$OUT/p0003/log.txt" || fail "p0003's log does not say why"
[ "$(cat "$OUT/points.csv")" = $'point,ecn.kmin_bytes\np0001,12500\np0002,50000\np0003,600000' ] || fail "points.csv"
[ "$(grep -c '^p000[12],' "$OUT/results.csv")" -ge 2 ] || fail "results.csv lacks the points that ran"
! grep -q '^p0003,' "$OUT/results.csv" || fail "the failed point is in results.csv"
head -1 "$OUT/results.csv" | grep -q '^point,ecn.kmin_bytes,opcode,size,count,fct_p50_ns,' || fail "results.csv header"

"$REPLAY" collect "$OUT" 2> /dev/null || fail "collect on a sweep with a failed point"
"$REPLAY" plot "$OUT" --x nothing --y fct_p99_ns 2> "$WORK/plot.err" && fail "an unknown key should fail"
grep -q "the sweep's keys: ecn.kmin_bytes" "$WORK/plot.err" || fail "the known keys are not listed"

if command -v gnuplot > /dev/null; then
  "$REPLAY" plot "$OUT" --x ecn.kmin_bytes --y fct_p99_ns 2> /dev/null || fail "plot of the sweep"
  [ -s "$OUT/plot-fct_p99_ns-vs-ecn.kmin_bytes.png" ] && [ -s "$OUT/plot-fct_p99_ns-vs-ecn.kmin_bytes.svg" ] || fail "no image"
  "$REPLAY" plot "$OUT/p0001" 2> /dev/null || fail "plots of a run"
  for name in fct_cdf slowdown_by_size throughput queue_depth; do
    [ -s "$OUT/p0001/plots/$name.png" ] && [ -s "$OUT/p0001/plots/$name.svg" ] || fail "no $name image"
  done
else
  "$REPLAY" plot "$OUT/p0001" 2> "$WORK/plot.err" && fail "plot without gnuplot should fail"
  grep -q "gnuplot not found" "$WORK/plot.err" || fail "no word of the missing gnuplot"
  [ -s "$OUT/p0001/plots/fct_cdf.gp" ] || fail "the scripts are not written without gnuplot"
fi
echo "hcareplay sweep/collect/plot: OK"
