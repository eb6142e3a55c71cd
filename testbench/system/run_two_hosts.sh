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
# With LINK_FLAP=1 host A's uplink is shut for 2 s (hcactl link down/up) twice while the client
# writes (RDMA_TESTS=link-flap): a QP whose retry budget outlasts the outage recovers, one whose
# budget is shorter ends with retry exceeded, nothing hangs, the server guest sees carrier and port
# state follow. With FABRIC=1 the hosts are not joined directly but each to a port of hcafabric.
# With TWO_PORTS=1 there is one hcaemu with two physical ports (two PFs, as a dual-port ConnectX-6
# Dx) whose uplinks are cabled to each other: one guest on each port's PF.
# Usage: [LINK_FAULTS=...] [LINK_FLAP=1] [FABRIC=1] [TWO_PORTS=1] run_two_hosts.sh HCAEMU HCAVM HCA_VERBS_CHECK [HCACTL [HCAFABRIC]]
set -uo pipefail
HCAEMU=$1
HCAVM=$2
VERBS_CHECK=$3
HCACTL=${4:-}
HCAFABRIC=${5:-}
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KEEP_LOG=/tmp/last-two-hosts-hcaemu.log
EXTRA_A=() EXTRA_B=()
if [ -n "${LINK_FAULTS:-}" ]; then
  export RDMA_TESTS=${RDMA_TESTS:-rc-faults}
  EXTRA_A+=(--uplink-faults "$LINK_FAULTS")
elif [ -n "${LINK_FLAP:-}" ]; then
  export RDMA_TESTS=${RDMA_TESTS:-link-flap}
  # The client's requester (host B) times out after max(QP timeout, 100 ms) of wall clock: perftest's
  # default QP (timeout 14, retry 7) has ~0.8 s in all, well inside the 2 s outage.
  EXTRA_A+=(--retransmit-floor-ms 100)
  EXTRA_B+=(--retransmit-floor-ms 100)
else
  export RDMA_TESTS=${RDMA_TESTS:-pingpong cm verbs perftest}
fi
source "$HERE/fullsys_lib.sh"
source "$HERE/rdma_lib.sh"

B_PID= FABRIC_PID= FLAPPER_PID=
stop_b() { stop_pid B_PID; }  # host B's hcaemu
stop_fabric() { stop_pid FABRIC_PID; }
trap '[ -n "$FLAPPER_PID" ] && kill $FLAPPER_PID 2>/dev/null; stop_b; stop_fabric; cleanup' EXIT
[ -n "${LINK_FLAP:-}" ] && EXTRA_A+=(--uplink-pcap "$WORK/a-uplink.pcap")

if [ -n "${FABRIC:-}" ]; then
  # Both hosts connect to a switch process, host A over a UNIX socket, host B over TCP (as from
  # another machine); a third port stays free (flooding must not trip on it).
  TCP_PORT=$((30000 + $$ % 20000))
  "$HCAFABRIC" --port "stream,listen=unix:$WORK/p0.sock" --port "stream,listen=tcp:127.0.0.1:$TCP_PORT" \
    --port "stream,listen=unix:$WORK/p2.sock" > "$WORK/hcafabric.log" 2>&1 &
  FABRIC_PID=$!
  for _ in $(seq 50); do [ -S "$WORK/p2.sock" ] && break; sleep 0.1; done
  [ -S "$WORK/p2.sock" ] || fail "hcafabric did not create its sockets"
  LINK_A="stream,connect=unix:$WORK/p0.sock" LINK_B="stream,connect=tcp:127.0.0.1:$TCP_PORT"
else
  LINK_A="stream,listen=unix:$WORK/link.sock" LINK_B="stream,connect=unix:$WORK/link.sock"
fi
# Host B's PF socket, its switch's pcap and its PF's MAC.
if [ -n "${TWO_PORTS:-}" ]; then
  # Port 1's PF takes mac_base + 0x8000 (docs/configuration.md) and writes a.port1.pcap.
  start_hcaemu 0 --ports 2 --uplink "$LINK_A" --uplink1 "$LINK_B" --pcap "$WORK/a.pcap" "${EXTRA_A[@]}"
  B_SOCKET=$WORK/sockets/pf1.sock PCAP_B=$WORK/a.port1.pcap MAC_B=02:c9:00:00:80:00
else
  start_hcaemu 0 --uplink "$LINK_A" --pcap "$WORK/a.pcap" "${EXTRA_A[@]}"
  start_peer_hcaemu "$LINK_B" --pcap "$WORK/b.pcap" "${EXTRA_B[@]}"
  B_SOCKET=$WORK/sockets-b/pf.sock PCAP_B=$WORK/b.pcap MAC_B=02:c9:00:00:01:00
fi
[ -S "$B_SOCKET" ] || fail "no socket $B_SOCKET"

# LINK_FLAP: host A's uplink goes down for 2 s once the client's transfer runs: the client says
# "FLAP: go N" as it starts its tool, and host B's counters (hcactl stats) show its WRITEs flowing.
tx_packets_b() { "$HCACTL" --socket-dir "$WORK/sockets-b" stats | sed -n 's/^pf rdma_tx_packets=\([0-9]*\).*/\1/p'; }
flapper() {
  local n start now
  for n in 1 2; do
    for _ in $(seq 3000); do grep -q "FLAP: go $n" "$WORK/two-hosts-client.log" 2>/dev/null && break; sleep 0.2; done
    grep -q "FLAP: go $n" "$WORK/two-hosts-client.log" || { echo "flapper: the client never said FLAP: go $n"; return; }
    start=$(tx_packets_b)
    for _ in $(seq 600); do
      now=$(tx_packets_b)
      [ "${now:-0}" -gt $((${start:-0} + 2000)) ] && break
      sleep 0.1
    done
    echo "host: transfer $n under way (host B sent $((${now:-0} - ${start:-0})) RDMA packets since it started)"
    echo "host: $("$HCACTL" --socket-dir "$WORK/sockets" link down uplink0)"
    sleep 2
    echo "host: $("$HCACTL" --socket-dir "$WORK/sockets" link up uplink0)"
  done
}
if [ -n "${LINK_FLAP:-}" ]; then
  flapper > "$WORK/flapper.log" 2>&1 &
  FLAPPER_PID=$!
fi

SERVER_VM=(--attach "$WORK/sockets/pf.sock")
CLIENT_VM=(--attach "$B_SOCKET")
run_rdma_pair two-hosts mlx5 mlx5_0 eth0
if [ -n "$FLAPPER_PID" ]; then wait "$FLAPPER_PID"; FLAPPER_PID=; cat "$WORK/flapper.log"; fi
stop_b
rc_b=$?
stop_fabric
rc_fabric=$?
stop_hcaemu_cleanly
grep -E "uplink" "$WORK/hcaemu.log" "$WORK/hcaemu-b.log"
rdma_pair_verdict two-hosts
[ $rc_b -eq 0 ] || fail "host B's hcaemu exited with $rc_b"
if [ -n "${FABRIC:-}" ]; then
  grep -E "port[0-9]|learned|switch" "$WORK/hcafabric.log" | tail -n 8
  [ $rc_fabric -eq 0 ] || fail "hcafabric exited with $rc_fabric"
fi
if [ -n "${LINK_FLAP:-}" ]; then
  [ "$(grep -c "link down uplink0\|: down (admin down" "$WORK/flapper.log")" -eq 2 ] || fail "the link was not shut twice"
  grep -q "administratively down" "$WORK/hcaemu.log" || fail "hcaemu did not log the link going down"
  # The client's requester (host B): one timeout in the first outage (4.3 s > 2 s), 1 + retry_cnt 7 in
  # the second, then retry exceeded and the rest of its send queue flushed.
  timeouts=$(sed -n 's/.*pf: rdma .*timeouts \([0-9]*\),.*/\1/p' "$WORK/hcaemu-b.log")
  errors=$(sed -n 's/.*pf: rdma .*error CQEs \([0-9]*\), flushed \([0-9]*\).*/\1 \2/p' "$WORK/hcaemu-b.log")
  echo "host B's requester: timeouts ${timeouts:-?}, error CQEs and flushed: ${errors:-?}"
  [ "${timeouts:-0}" -ge 9 ] || fail "host B's requester timed out ${timeouts:-0} times, expected at least 9"
  [ "${errors%% *}" -ge 1 ] 2>/dev/null || fail "no error completion on host B"
  frames=$(tshark -r "$WORK/a-uplink.pcap" 2>/dev/null | wc -l)
  echo "host A's uplink pcap: $frames frames"
  [ "$frames" -gt 0 ] || fail "the uplink's own pcap is empty"
fi
[ -z "${TWO_PORTS:-}" ] && grep -E "\[(warning|error|critical)\]" "$WORK/hcaemu-b.log" && fail "warnings in host B's log"
if [ -n "${TWO_PORTS:-}" ]; then
  # Both ports' switches and uplinks carried the traffic, each its own way.
  grep -E "eswitch1? uplink: sent" "$WORK/hcaemu.log"
  [ "$(grep -cE "eswitch1? uplink: sent [1-9]" "$WORK/hcaemu.log")" -eq 2 ] || fail "not both ports sent through their uplinks"
fi

if [ -n "${LINK_FAULTS:-}" ]; then
  grep -E "faults|retransmits|bad ICRC" "$WORK/hcaemu.log" "$WORK/hcaemu-b.log"
  # hcaemu's uplink counters at exit: uplink0 ... out_lost=N ... in_lost=N ...
  count() { grep -o " $1=[0-9]*" "$WORK/hcaemu.log" | tail -n 1 | cut -d= -f2; }
  lost=$(( $(count out_lost) + $(count in_lost) ))
  corrupted=$(( $(count out_corrupted) + $(count in_corrupted) ))
  retransmits=$(sed -n 's/.*retransmits \([0-9]*\),.*/\1/p' "$WORK/hcaemu.log" "$WORK/hcaemu-b.log" | awk '{s += $1} END {print s + 0}')
  bad_icrc=$(sed -n 's/.*bad ICRC \([0-9]*\),.*/\1/p' "$WORK/hcaemu.log" "$WORK/hcaemu-b.log" | awk '{s += $1} END {print s + 0}')
  echo "faults: lost ${lost:-0}, corrupted ${corrupted:-0}; requesters retransmitted ${retransmits:-0}, receivers dropped ${bad_icrc:-0} on the ICRC"
  [ "${lost:-0}" -gt 0 ] || fail "the link lost no frame"
  [ "${retransmits:-0}" -gt 0 ] || fail "no requester retransmitted"
  if [ "${corrupted:-0}" -gt 0 ]; then [ "${bad_icrc:-0}" -gt 0 ] || fail "corrupted frames that no receiver dropped on the ICRC"; fi
fi
for host in a b; do
  if [ $host = a ]; then pcap=$WORK/a.pcap other_mac=$MAC_B; else pcap=$PCAP_B other_mac=02:c9:00:00:00:00; fi
  roce=$(tshark -r "$pcap" --disable-protocol rpcordma -Y "infiniband" 2>/dev/null | wc -l)
  other=$(tshark -r "$pcap" --disable-protocol rpcordma -Y "infiniband && eth.src == $other_mac" 2>/dev/null | wc -l)
  expert=$(tshark -r "$pcap" --disable-protocol rpcordma -q -z expert,error 2>/dev/null | grep -ciE "malformed|error")
  echo "host $host pcap: $roce RoCE frames, $other from the other host, $expert expert errors"
  [ "$other" -gt 0 ] || fail "host $host's pcap holds no RoCE frame of the other host"
  [ "$expert" -eq 0 ] || fail "tshark reports malformed or erroneous frames in host $host's pcap"
done
echo "PASS"
