#!/bin/bash
# hcactl against a running hcaemu (no guest): link show/set/down/up, stats, VFs, errors and their
# exit codes, and the uplink's own pcap with its fault log. A datagram peer (python) sends frames in.
# Usage: hcactl_cli_test.sh HCAEMU HCACTL
set -uo pipefail
HCAEMU=$1 HCACTL=$2
WORK=$(mktemp -d /tmp/hcactl-test.XXXXXX)
EMU_PID=
cleanup() { [ -n "$EMU_PID" ] && kill "$EMU_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- hcaemu log" >&2; cat "$WORK/hcaemu.log" >&2; exit 1; }
export SC_COPYRIGHT_MESSAGE=DISABLE

# The uplink from the configuration file (the command line's --uplink-pcap joins it).
echo "{\"uplink\": {\"endpoint\": \"dgram,local=unix:$WORK/hca.dgram,remote=unix:$WORK/peer.dgram\"}}" > "$WORK/config.json"
"$HCAEMU" --socket-dir "$WORK/bad" --config "$WORK/config.json" --uplink "stream,listen=ftp:x" 2>"$WORK/err"
[ $? -eq 2 ] && grep -q "uplink stream,listen=ftp:x" "$WORK/err" || fail "a bad endpoint: exit 2 naming it"
"$HCAEMU" --socket-dir "$WORK/s" --config "$WORK/config.json" --uplink-pcap "$WORK/uplink.pcap" > "$WORK/hcaemu.log" 2>&1 &
EMU_PID=$!
for _ in $(seq 100); do [ -S "$WORK/s/control.sock" ] && break; sleep 0.1; done
ctl() { "$HCACTL" --socket-dir "$WORK/s" "$@"; }

out=$(ctl link show) || fail "link show: $out"
[[ $out == "uplink0: up (admin up, peer connected)"* ]] || fail "a datagram link is up: $out"
out=$(ctl link down uplink0) || fail "link down"
[[ $out == "uplink0: down (admin down"* ]] || fail "link down: $out"
out=$(ctl link up uplink0) && [[ $out == "uplink0: up"* ]] || fail "link up: $out"
out=$(ctl link set uplink0 loss 1% delay 100us rate=10gbit) || fail "link set: $out"
[[ $out == *"loss 1%"*"delay 100us, rate 10 Gb/s"* ]] || fail "link set: $out"
out=$(ctl link set uplink0 loss 0 delay 0ns rate 0 duplicate 100%) || fail "link set back: $out"

# Errors: exit 1 with the reason, 2 when hcaemu cannot be reached or the command line is wrong.
ctl link set uplink0 loss 2x 2>"$WORK/err"; [ $? -eq 1 ] && grep -q 'loss "2x" is not a probability' "$WORK/err" || fail "bad value"
ctl link down uplink9 2>"$WORK/err"; [ $? -eq 1 ] && grep -q 'no link "uplink9" (links: uplink0)' "$WORK/err" || fail "bad link"
ctl frobnicate 2>"$WORK/err"; [ $? -eq 1 ] && grep -q 'unknown command' "$WORK/err" || fail "bad command"
ctl vfs 99 2>"$WORK/err"; [ $? -eq 1 ] || fail "too many VFs"
"$HCACTL" --socket "$WORK/none.sock" stats 2>"$WORK/err"; [ $? -eq 2 ] && grep -q 'cannot reach' "$WORK/err" || fail "no hcaemu"
"$HCACTL" 2>/dev/null; [ $? -eq 2 ] || fail "no command"
"$HCACTL" --help | grep -q "link set NAME KEY VALUE" || fail "--help lists the commands"

out=$(ctl vfs 2) && [[ $out == "pf: 2 VFs enabled" ]] || fail "vfs 2: $out"
[ -S "$WORK/s/vf1.sock" ] || fail "vf1.sock served after vfs 2"
out=$(ctl vf 0 max_tx_rate 10000) && [[ $out == "vf0: max_tx_rate 10000 Mb/s, min_tx_rate none" ]] || fail "vf 0 rate: $out"
out=$(ctl vf 1 min_tx_rate 30000) && [[ $out == "vf1: max_tx_rate none, min_tx_rate 30000 Mb/s" ]] || fail "vf 1 rate: $out"
ctl vf 1 max_tx_rate 20000 2>"$WORK/err"; [ $? -eq 1 ] && grep -q "min_tx_rate above max_tx_rate" "$WORK/err" || fail "min above max"
ctl vf 5 max_tx_rate 1 2>"$WORK/err"; [ $? -eq 1 ] && grep -q 'no enabled VF "5"' "$WORK/err" || fail "vf 5"
ctl vf 0 max_tx_rate 200000 2>"$WORK/err"; [ $? -eq 1 ] && grep -q "above the port" "$WORK/err" || fail "rate above the port"
out=$(ctl port qos '{"trust":"dscp","prio_tc":[0,0,0,1,0,0,0,0],"tcbw":[30,70,0,0,0,0,0,0]}') &&
  [[ $out == 'port_qos {"prio_tc":[0,0,0,1,0,0,0,0],"tcbw":[30,70,0,0,0,0,0,0],"trust":"dscp",'* ]] || fail "port qos: $out"
ctl port qos '{"tcbw":[50,0,0,0,0,0,0,0]}' 2>"$WORK/err"; [ $? -eq 1 ] && grep -q "add up to 50" "$WORK/err" || fail "port qos bad tcbw"
out=$(ctl port show) && [[ $out == *'"trust":"dscp"'* ]] || fail "port show: $out"
out=$(ctl vf show) && [[ $out == *"vf0: max_tx_rate 10000 Mb/s"*"vf1: max_tx_rate none, min_tx_rate 30000 Mb/s"* ]] || fail "vf show: $out"

# A broadcast frame in from the peer: with duplicate=100% the port receives it twice (pcap) and the
# fault log names the faults and the frame's number in the pcap.
python3 - "$WORK" <<'PY' || fail "peer send"
import socket, sys, os
w = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(os.path.join(w, "peer.dgram"))
frame = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x09" + b"\x08\x06" + bytes(46)
s.sendto(frame, os.path.join(w, "hca.dgram"))
PY
for _ in $(seq 50); do ctl stats | grep -q "in_duplicated=1" && break; sleep 0.1; done
out=$(ctl stats) || fail "stats"
grep -q "^pf rdma_tx_packets=" <<<"$out" || fail "stats has the PF: $out"
grep -q "^vf1 " <<<"$out" || fail "stats has the VFs: $out"
grep -q "^eswitch .*uplink_rx=2" <<<"$out" || fail "the switch took both copies: $out"
grep -q "^uplink0 .*rx_frames=1 .*in_duplicated=1 .*pcap_frames=2" <<<"$out" || fail "uplink counters: $out"

kill -TERM "$EMU_PID"; wait "$EMU_PID"; rc=$?; EMU_PID=
[ $rc -eq 0 ] || fail "hcaemu exit $rc"
python3 - "$WORK/uplink.pcap" <<'PY' || fail "uplink pcap"
import struct, sys
data = open(sys.argv[1], "rb").read()
assert struct.unpack("<I", data[:4])[0] == 0xa1b23c4d, "nanosecond pcap"
n, off = 0, 24
while off < len(data):
    incl = struct.unpack("<I", data[off + 8:off + 12])[0]
    off += 16 + incl
    n += 1
assert n == 2, f"{n} frames"
PY
grep -q "^model_time_ns,direction,faults,pcap_frame,bytes$" "$WORK/uplink.pcap.faults.csv" || fail "fault log header"
grep -q "^[0-9]*,in,duplicated,1,60$" "$WORK/uplink.pcap.faults.csv" || fail "fault log: $(cat "$WORK/uplink.pcap.faults.csv")"
[ ! -e "$WORK/s/control.sock" ] || fail "control socket removed at exit"
# Two physical ports (issue 15): two PFs, each with its sockets, VFs, switch and uplink; hcactl
# names port 1's PF first. Port 0's uplink is cabled to port 1's.
"$HCAEMU" --socket-dir "$WORK/bad" --vfs1 1 2>"$WORK/err"
[ $? -eq 2 ] && grep -q "need two physical ports" "$WORK/err" || fail "--vfs1 on one port: exit 2 saying why"
"$HCAEMU" --socket-dir "$WORK/bad" --ports 3 2>"$WORK/err"
[ $? -eq 2 ] && grep -q "ports takes 1 or 2" "$WORK/err" || fail "--ports 3: exit 2"
"$HCAEMU" --socket-dir "$WORK/p" --ports 2 --vfs1 1 --uplink "stream,listen=unix:$WORK/cable.sock" \
  --uplink1 "stream,connect=unix:$WORK/cable.sock" --pcap "$WORK/sw.pcap" > "$WORK/hcaemu.log" 2>&1 &
EMU_PID=$!
for _ in $(seq 100); do [ -S "$WORK/p/pf1-vf0.sock" ] && break; sleep 0.1; done
ctl() { "$HCACTL" --socket-dir "$WORK/p" "$@"; }
[ -S "$WORK/p/pf.sock" ] && [ -S "$WORK/p/pf1.sock" ] && [ -S "$WORK/p/pf1-vf0.sock" ] || fail "sockets of two ports: $(ls "$WORK/p")"
[ ! -e "$WORK/p/vf0.sock" ] || fail "--vfs1 enabled a VF of port 0"
for _ in $(seq 50); do [ "$(ctl link show | grep -c ': up (admin up, peer connected)')" -eq 2 ] && break; sleep 0.1; done
out=$(ctl link show) && [[ $out == "uplink0: up"*"uplink1: up"* ]] || fail "both uplinks, cabled to each other, up: $out"
out=$(ctl pf1 vfs) && [[ $out == "pf1: 1 of 8 VFs enabled" ]] || fail "pf1 vfs: $out"
out=$(ctl vfs) && [[ $out == "pf: 0 of 8 VFs enabled" ]] || fail "vfs (port 0): $out"
out=$(ctl pf1 vf 0 max_tx_rate 2000) && [[ $out == "pf1-vf0: max_tx_rate 2000 Mb/s, min_tx_rate none" ]] || fail "pf1 vf 0: $out"
out=$(ctl pf1 port qos '{"trust":"dscp"}') && [[ $out == *'"trust":"dscp"'* ]] || fail "pf1 port qos: $out"
out=$(ctl pf0 port show) && [[ $out == *'"trust":"pcp"'* ]] || fail "port 0's classes untouched: $out"
out=$(ctl pf1 vfs 2) && [[ $out == "pf1: 2 VFs enabled" ]] || fail "pf1 vfs 2: $out"
[ -S "$WORK/p/pf1-vf1.sock" ] || fail "pf1-vf1.sock after pf1 vfs 2"
ctl pf2 vfs 2>"$WORK/err"; [ $? -eq 1 ] && grep -q 'no PF "pf2" (PFs: pf, pf1)' "$WORK/err" || fail "pf2"
ctl pf1 link show 2>"$WORK/err"; [ $? -eq 1 ] || fail "pf1 link: links are not per PF"
out=$(ctl stats) || fail "stats"
grep -q "^pf1-vf1 rdma_tx_packets=" <<<"$out" && grep -q "^eswitch1 " <<<"$out" && grep -q "^uplink1 " <<<"$out" ||
  fail "stats of both ports: $out"
kill -TERM "$EMU_PID"; wait "$EMU_PID"; rc=$?; EMU_PID=
[ $rc -eq 0 ] || fail "hcaemu with two ports: exit $rc"
[ -s "$WORK/sw.pcap" ] && [ -s "$WORK/sw.port1.pcap" ] || fail "a switch pcap per port: $(ls "$WORK")"
grep -q "eswitch1 uplink: sent" "$WORK/hcaemu.log" || fail "port 1's switch counters at exit"
echo "hcactl CLI: all checks passed"
