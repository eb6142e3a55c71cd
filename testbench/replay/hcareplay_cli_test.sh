#!/bin/bash
# hcareplay as a user runs it: a capture the engine wrote (engine_bench's lossy mix) is inspected
# (every RoCE frame mapped, retransmissions and RNR NAKs reported), so is a Soft-RoCE capture
# (at least 99% mapped, its NAK and retransmissions reported), the first is lowered to a workload and
# replayed; the example workloads replay with every operation done; the same input and options
# give byte-identical outputs; malformed inputs are clear errors (exit 1), wrong usage exit 2.
# Usage: hcareplay_cli_test.sh HCAREPLAY ENGINE_BENCH EXAMPLES_DIR
set -euo pipefail
REPLAY=$1 BENCH=$2 EXAMPLES=$3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export SC_COPYRIGHT_MESSAGE=DISABLE
ulimit -f 1000000  # 512 MB per file at most: a runaway run fails here, not on a full disk
fail() { echo "FAIL: $*"; exit 1; }

"$BENCH" --workload mix --messages 400 --loss 0.02 --seed 3 --pcap "$WORK/mix.pcap" > /dev/null
"$REPLAY" inspect "$WORK/mix.pcap" > "$WORK/inspect.txt"
grep -q "(100.00% of RoCEv2), unmapped 0" "$WORK/inspect.txt" || { cat "$WORK/inspect.txt"; fail "not every frame mapped"; }
grep -qE "[1-9][0-9]* retransmitted packets" "$WORK/inspect.txt" || fail "retransmissions not reported"
grep -qE "[1-9][0-9]* RNR NAKs" "$WORK/inspect.txt" || fail "RNR NAKs not reported"
grep -q "400 messages; 0 with packets missing" "$WORK/inspect.txt" || { cat "$WORK/inspect.txt"; fail "not 400 messages"; }

# An independent implementation's wire: Soft-RoCE between two guests (testbench/replay/fixtures/).
xz -dc "$(dirname "$0")/fixtures/rxe-perftest-tail.pcap.xz" > "$WORK/rxe.pcap"
"$REPLAY" inspect "$WORK/rxe.pcap" > "$WORK/rxe.txt"
share=$(sed -n 's/.*mapped [0-9]* (\([0-9.]*\)% of RoCEv2).*/\1/p' "$WORK/rxe.txt")
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 99.0 else 1)" "${share:-0}" ||
  { cat "$WORK/rxe.txt"; fail "only ${share:-0}% of the Soft-RoCE capture mapped"; }
grep -qE "[1-9][0-9]* PSN sequence NAKs" "$WORK/rxe.txt" || fail "the Soft-RoCE NAK not reported"
grep -qE "[1-9][0-9]* retransmitted packets" "$WORK/rxe.txt" || fail "Soft-RoCE retransmissions not reported"

# pcapng (what Wireshark and tshark write by default) reads the same.
if command -v editcap > /dev/null; then
  editcap -F pcapng "$WORK/mix.pcap" "$WORK/mix.pcapng"
  "$REPLAY" inspect "$WORK/mix.pcapng" | cmp - "$WORK/inspect.txt" || fail "the pcapng copy reads differently"
fi

"$REPLAY" lower "$WORK/mix.pcap" -o "$WORK/mix.json"
"$REPLAY" inspect "$WORK/mix.json" | grep -q "400 operations" || fail "the lowered workload has not 400 operations"
for timing in asis think asap scale=2; do
  "$REPLAY" run "$WORK/mix.pcap" --out "$WORK/run-$timing" --timing "$timing" --quiet > /dev/null ||
    fail "replay of the capture with --timing $timing"
  [ "$(grep -c ',ok,' "$WORK/run-$timing/messages.csv")" = 400 ] || fail "--timing $timing: not 400 operations ok"
  head -1 "$WORK/run-$timing/links.csv" | grep -q "^link,bin_start_ns,bytes,gbps,queue_bytes,ecn_marks,pause_frames,drops$" ||
    fail "links.csv header"
  [ "$(wc -l < "$WORK/run-$timing/qps.csv")" -gt 1 ] || fail "qps.csv is empty"
done
"$REPLAY" run "$WORK/mix.json" --out "$WORK/again" --timing asis --quiet > /dev/null
for f in messages.csv summary.txt summary.csv totals.csv links.csv qps.csv trace.csv trace.json wire.pcap; do
  cmp "$WORK/run-asis/$f" "$WORK/again/$f" || fail "$f differs between the capture and its workload replayed the same way"
done
"$REPLAY" inspect "$WORK/run-asap/wire.pcap" | grep -q "400 messages" || fail "the replayed wire does not carry 400 messages"
[ "$(grep -c ',doorbell$' "$WORK/run-asap/trace.csv")" = 400 ] || fail "the latency trace has not 400 doorbells"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["traceEvents"]' "$WORK/run-asap/trace.json" ||
  fail "trace.json is not trace-event JSON"

for example in "$EXAMPLES"/*.json; do
  name=$(basename "$example" .json)
  "$REPLAY" run "$example" --out "$WORK/$name" --quiet > "$WORK/$name.txt" || fail "example $name"
  grep -q "errors 0, incomplete 0" "$WORK/$name.txt" || { cat "$WORK/$name.txt"; fail "example $name did not complete"; }
done

# The network: an 8-to-1 incast fills the switch buffer and PFC pauses the senders (lossless); with
# PFC off and a small buffer it drops and RC recovers; with DCQCN the receivers send CNPs and the
# senders slow down. Same seed, same bytes.
incast="$EXAMPLES/incast_8to1.json"
total() { grep "^$2," "$1/totals.csv" | cut -d, -f2; }
"$REPLAY" run "$incast" --out "$WORK/lossless" --quiet > /dev/null
[ "$(total "$WORK/lossless" pause_frames)" -gt 0 ] || fail "no PFC pause in a lossless incast"
[ "$(total "$WORK/lossless" drops)" = 0 ] || fail "drops in a lossless incast"
"$REPLAY" inspect "$WORK/lossless/wire.pcap" > /dev/null
if command -v tshark > /dev/null; then  # Wireshark reads the pause frames as 802.1Qbb
  tshark -r "$WORK/lossless/wire.pcap" -Y macc > "$WORK/pfc.txt" 2>/dev/null
  grep -q "Class Based Flow Control" "$WORK/pfc.txt" || fail "tshark sees no PFC frame"
fi
"$REPLAY" run "$incast" --out "$WORK/lossy" --quiet --set pfc.enabled=false --set switch.buffer_bytes=300000 \
  --set qp.ack_timeout=8 > /dev/null ||
  fail "a lossy incast did not complete"
[ "$(total "$WORK/lossy" drops)" -gt 0 ] || fail "no drop in a lossy incast with a small buffer"
[ "$(total "$WORK/lossy" incomplete)" = 0 ] || fail "RC did not recover the drops"
"$REPLAY" run "$incast" --out "$WORK/dcqcn" --quiet --dcqcn --no-pcap > /dev/null || true
[ "$(total "$WORK/dcqcn" np_cnp_sent)" -gt 0 ] || fail "no CNP with DCQCN"
[ "$(total "$WORK/dcqcn" rp_cnp_handled)" -gt 0 ] || fail "no CNP acted on with DCQCN"
grep -q "^0,.*,[0-9.]*,[1-9]" "$WORK/dcqcn/qps.csv" || fail "qps.csv shows no rate and CNP"
"$REPLAY" run "$incast" --out "$WORK/dcqcn2" --quiet --dcqcn --no-pcap > /dev/null || true
for f in messages.csv links.csv qps.csv totals.csv; do cmp "$WORK/dcqcn/$f" "$WORK/dcqcn2/$f" || fail "$f differs between two DCQCN runs"; done
cat > "$WORK/leafspine.json" <<'JSON'
{"format": "hcareplay-topology/1", "leaf_spine": {"leaves": 2, "spines": 2, "hosts_per_leaf": 2}}
JSON
"$REPLAY" run "$EXAMPLES/alltoall_4.json" --out "$WORK/ls" --topology "$WORK/leafspine.json" --quiet > "$WORK/ls.txt" ||
  fail "all-to-all on a leaf-spine"
grep -q "4 hosts, 4 switches" "$WORK/ls.txt" || fail "the leaf-spine is not what ran"
grep -q "^leaf0->spine0," "$WORK/ls/links.csv" && grep -q "^leaf0->spine1," "$WORK/ls/links.csv" || fail "ECMP used one spine only"

# Many QPs (a full-system capture has a hundred and more): the hosts' memory grows with them.
python3 -c '
import json
hosts = [{"name": "a", "ip": "10.0.0.1"}, {"name": "b", "ip": "10.0.0.2"}]
qps = [{"host": "a", "peer": "b", "service": "rc", "mtu": 1024, "ops": [{"op": "send", "bytes": 100 + q}]} for q in range(300)]
print(json.dumps({"format": "hcareplay-workload/1", "hosts": hosts, "qps": qps}))' > "$WORK/many.json"
"$REPLAY" run "$WORK/many.json" --out "$WORK/many" --quiet --no-plots > "$WORK/many.txt" 2>&1 || { cat "$WORK/many.txt"; fail "300 QPs"; }
[ "$(grep -c ',ok,' "$WORK/many/messages.csv")" = 300 ] || fail "not 300 operations ok with 300 QPs"

# Posted after a long quiet gap (asis): neither taken for a stall nor cut by the model-time limit.
cat > "$WORK/gap.json" <<'JSON'
{"format": "hcareplay-workload/1", "hosts": [{"name": "a", "ip": "10.0.0.1"}, {"name": "b", "ip": "10.0.0.2"}],
 "qps": [{"host": "a", "peer": "b", "service": "rc", "ops": [{"op": "write", "bytes": 4096, "post_ns": 0},
         {"op": "write", "bytes": 4096, "post_ns": 12000000000}]}]}
JSON
"$REPLAY" run "$WORK/gap.json" --out "$WORK/gap" --timing asis --quiet > "$WORK/gap.txt" || { cat "$WORK/gap.txt"; fail "a post after a 12 s gap"; }
[ "$(grep -c ',ok,' "$WORK/gap/messages.csv")" = 2 ] || fail "the operation after the gap did not complete"

# Malformed inputs: exit 1 and a message naming the place; usage errors: exit 2.
expect() {  # STATUS PATTERN COMMAND...
  local want=$1 pattern=$2; shift 2
  set +e; "$@" > "$WORK/out.txt" 2>&1; local got=$?; set -e
  [ "$got" = "$want" ] || { cat "$WORK/out.txt"; fail "$* exited $got, not $want"; }
  grep -q -- "$pattern" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "$*: no \"$pattern\" in its message"; }
}
sed 's/"bytes": 65536/"bites": 65536/' "$EXAMPLES/write_stream.json" > "$WORK/bad.json"
expect 1 'qps\[0\].ops\[0\].bites: unknown key' "$REPLAY" inspect "$WORK/bad.json"
head -c 3000 "$WORK/mix.pcap" > "$WORK/cut.pcap"
expect 1 "truncated" "$REPLAY" inspect "$WORK/cut.pcap"
echo "not a capture" > "$WORK/text.pcap"
expect 1 "text.pcap" "$REPLAY" run "$WORK/text.pcap" --out "$WORK/x"
expect 2 "run needs --out DIR" "$REPLAY" run "$WORK/mix.pcap"
expect 2 "--timing must be" "$REPLAY" run "$WORK/mix.pcap" --out "$WORK/x" --timing later
expect 2 "unknown timing preset" "$REPLAY" run "$WORK/mix.pcap" --out "$WORK/x" --timing-preset nope
expect 2 "unknown topology parameter ecn.kmax" "$REPLAY" run "$incast" --out "$WORK/x" --set ecn.kmax=1
expect 2 "unknown DCQCN parameter dcqcn.g" "$REPLAY" run "$incast" --out "$WORK/x" --set dcqcn.g=1
echo '{"format": "hcareplay-topology/1", "swtich": {}}' > "$WORK/badtopo.json"
expect 2 "topology.swtich: unknown key" "$REPLAY" run "$incast" --out "$WORK/x" --topology "$WORK/badtopo.json"
"$REPLAY" --help > "$WORK/help.txt" && grep -q "hcareplay run INPUT" "$WORK/help.txt" || fail "--help"
echo "PASS: capture mapped and replayed four ways, examples done, PFC, drops, DCQCN and ECMP seen, outputs reproducible, errors clear"
