#!/bin/bash
# Full-system test (issue 15): two hosts, each an hcaemu process with its own PF (distinct MACs from
# their configurations), joined by a link between their uplinks: host A listens (stream over a UNIX
# socket), host B connects. A guest on each PF runs the RDMA checks of the single-host test across
# the link (guest/rdma_peer.sh: pingpongs, rdma_cm, the verbs checker, perftest; RDMA_TESTS to
# narrow them); each host's pcap must dissect cleanly and hold the other host's frames.
# With LINK_FAULTS (hcaemu --uplink-faults, e.g. loss=1%,corrupt=0.1%) host A's uplink loses and
# corrupts frames both ways and the guests run RC only (RDMA_TESTS=rc-faults: data-checking pingpong
# and rping, perftest WRITE/READ/SEND/atomics): they must complete, the requesters must have
# retransmitted and a receiver must have dropped frames on their ICRC.
# Usage: [LINK_FAULTS=...] run_two_hosts.sh HCAEMU HCAVM HCA_VERBS_CHECK
set -uo pipefail
HCAEMU=$1
HCAVM=$2
VERBS_CHECK=$3
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KEEP_LOG=/tmp/last-two-hosts-hcaemu.log
if [ -n "${LINK_FAULTS:-}" ]; then
  export RDMA_TESTS=${RDMA_TESTS:-rc-faults}
  FAULT_ARGS=(--uplink-faults "$LINK_FAULTS")
else
  export RDMA_TESTS=${RDMA_TESTS:-pingpong cm verbs perftest}
  FAULT_ARGS=()
fi
source "$HERE/fullsys_lib.sh"
source "$HERE/rdma_lib.sh"

B_PID=
stop_b() {  # SIGTERM to host B's hcaemu; returns its exit status
  [ -n "$B_PID" ] || return 0
  kill -TERM "$B_PID" 2>/dev/null
  wait "$B_PID"
  local rc=$?
  B_PID=
  return $rc
}
trap 'stop_b; cleanup' EXIT

start_hcaemu 0 --uplink "stream,listen=unix:$WORK/link.sock" --pcap "$WORK/a.pcap" "${FAULT_ARGS[@]}"
echo '{"mac_base": "02:c9:00:00:01:00"}' > "$WORK/b.json"
"$HCAEMU" --socket-dir "$WORK/sockets-b" --config "$WORK/b.json" --uplink "stream,connect=unix:$WORK/link.sock" \
  --pcap "$WORK/b.pcap" > "$WORK/hcaemu-b.log" 2>&1 &
B_PID=$!
for _ in $(seq 50); do [ -S "$WORK/sockets-b/pf.sock" ] && break; sleep 0.1; done
[ -S "$WORK/sockets-b/pf.sock" ] || fail "host B's hcaemu did not create its socket"

SERVER_VM=(--attach "$WORK/sockets/pf.sock")
CLIENT_VM=(--attach "$WORK/sockets-b/pf.sock")
run_rdma_pair two-hosts mlx5 mlx5_0 eth0
stop_b
rc_b=$?
stop_hcaemu_cleanly
grep -E "uplink" "$WORK/hcaemu.log" "$WORK/hcaemu-b.log"
rdma_pair_verdict two-hosts
[ $rc_b -eq 0 ] || fail "host B's hcaemu exited with $rc_b"
grep -E "\[(warning|error|critical)\]" "$WORK/hcaemu-b.log" && fail "warnings in host B's log"

if [ -n "${LINK_FAULTS:-}" ]; then
  grep -E "faults|retransmits|bad ICRC" "$WORK/hcaemu.log" "$WORK/hcaemu-b.log"
  lost=$(sed -n 's/.*uplink0 faults \(in\|out\): [0-9]* frames, lost \([0-9]*\).*/\2/p' "$WORK/hcaemu.log" | awk '{s += $1} END {print s + 0}')
  corrupted=$(sed -n 's/.*uplink0 faults .*, corrupted \([0-9]*\).*/\1/p' "$WORK/hcaemu.log" | awk '{s += $1} END {print s + 0}')
  retransmits=$(sed -n 's/.*retransmits \([0-9]*\),.*/\1/p' "$WORK/hcaemu.log" "$WORK/hcaemu-b.log" | awk '{s += $1} END {print s + 0}')
  bad_icrc=$(sed -n 's/.*bad ICRC \([0-9]*\),.*/\1/p' "$WORK/hcaemu.log" "$WORK/hcaemu-b.log" | awk '{s += $1} END {print s + 0}')
  echo "faults: lost ${lost:-0}, corrupted ${corrupted:-0}; requesters retransmitted ${retransmits:-0}, receivers dropped ${bad_icrc:-0} on the ICRC"
  [ "${lost:-0}" -gt 0 ] || fail "the link lost no frame"
  [ "${retransmits:-0}" -gt 0 ] || fail "no requester retransmitted"
  if [ "${corrupted:-0}" -gt 0 ]; then [ "${bad_icrc:-0}" -gt 0 ] || fail "corrupted frames that no receiver dropped on the ICRC"; fi
fi
for host in a b; do
  roce=$(tshark -r "$WORK/$host.pcap" --disable-protocol rpcordma -Y "infiniband" 2>/dev/null | wc -l)
  other=$(tshark -r "$WORK/$host.pcap" --disable-protocol rpcordma -Y "infiniband && eth.src == 02:c9:00:00:0$([ $host = a ] && echo 1 || echo 0):00" 2>/dev/null | wc -l)
  expert=$(tshark -r "$WORK/$host.pcap" --disable-protocol rpcordma -q -z expert,error 2>/dev/null | grep -ciE "malformed|error")
  echo "host $host pcap: $roce RoCE frames, $other from the other host, $expert expert errors"
  [ "$other" -gt 0 ] || fail "host $host's pcap holds no RoCE frame of the other host"
  [ "$expert" -eq 0 ] || fail "tshark reports malformed or erroneous frames in host $host's pcap"
done
echo "PASS"
