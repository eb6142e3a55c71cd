#!/bin/bash
# hcareplay as a user runs it: a capture the engine wrote (engine_bench's lossy mix) is inspected
# (every RoCE frame mapped, retransmissions and RNR NAKs reported), lowered to a workload and
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
  [ "$(grep -c ',ok$' "$WORK/run-$timing/messages.csv")" = 400 ] || fail "--timing $timing: not 400 operations ok"
  head -1 "$WORK/run-$timing/links.csv" | grep -q "^port,bin_start_ns,bytes,gbps,max_queue_bytes$" || fail "links.csv header"
  [ "$(wc -l < "$WORK/run-$timing/qps.csv")" -gt 1 ] || fail "qps.csv is empty"
done
"$REPLAY" run "$WORK/mix.json" --out "$WORK/again" --timing asis --quiet > /dev/null
for f in messages.csv summary.txt links.csv qps.csv trace.csv trace.json wire.pcap; do
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
"$REPLAY" --help | grep -q "hcareplay run INPUT" || fail "--help"
echo "PASS: capture mapped and replayed four ways, examples done, outputs reproducible, errors clear"
