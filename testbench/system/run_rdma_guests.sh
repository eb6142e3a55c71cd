#!/bin/bash
# Full-system test: RDMA (RoCE v2, RC) between two VMs through the emulated HCA. One VM on the PF
# (server), one on VF0 (client) of the same hcaemu; each brings up the unmodified mlx5_core and
# mlx5_ib, and they run guest/rdma_peer.sh: ibv_rc_pingpong (polling and events), ibv_srq/uc/ud_pingpong,
# rping and ucmatose (two connections) over rdma_cm, hca_verbs_check (RC, UC, UD),
# the pingpongs and hca_verbs_check between two processes of one guest (local loopback),
# and perftest's write/read/send/atomic bw and lat tests.
# hcaemu writes a pcap and a latency trace of the run: tshark must dissect every RoCE frame without
# a malformed packet or an error, the trace JSON must parse, and hcatrace must summarise it;
# hcareplay must rebuild every RoCE frame of the capture into a message (or an answer to one).
# Usage: [RDMA_TESTS="pingpong cm verbs local perftest"] [RDMA_GID=linklocal|ipv4] [HCAEMU_PCAP=FILE]
#        [HCAEMU_TRACE=PREFIX] [HCAEMU_DCQCN=connectx|paper] run_rdma_guests.sh HCAEMU HCAVM HCA_VERBS_CHECK [HCATRACE [HCAREPLAY]]
set -uo pipefail
HCAEMU=$1
HCAVM=$2
VERBS_CHECK=$3
HCATRACE=${4:-}
HCAREPLAY=${5:-}
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KEEP_LOG=/tmp/last-rdma-hcaemu.log
source "$HERE/fullsys_lib.sh"
source "$HERE/rdma_lib.sh"

HCAEMU_PCAP=${HCAEMU_PCAP:-$WORK/run.pcap}
HCAEMU_TRACE=${HCAEMU_TRACE:-$WORK/trace}
start_hcaemu_rdma
run_rdma_pair hca mlx5 mlx5_0 eth0
stop_hcaemu
grep -E "commands|eswitch|rdma|pcap|trace" "$WORK/hcaemu.log"
rdma_pair_verdict hca

# The wire: RoCE frames tshark dissects cleanly (Wireshark's RPC-over-RDMA heuristic misreads short
# SEND payloads as malformed RPC, so it is switched off).
if command -v tshark >/dev/null; then
  roce=$(tshark -r "$HCAEMU_PCAP" --disable-protocol rpcordma -Y infiniband 2>/dev/null | wc -l)
  expert=$(tshark -r "$HCAEMU_PCAP" --disable-protocol rpcordma -q -z expert,error 2>/dev/null | grep -ciE "malformed|error")
  echo "pcap: $roce RoCE frames, $expert expert errors"
  [ "$roce" -gt 0 ] || fail "no RoCE frame in the pcap"
  [ "$expert" -eq 0 ] || fail "tshark reports malformed or erroneous frames"
  if [ -n "${HCAEMU_DCQCN:-}" ]; then  # DCQCN on: every RoCE frame ECN-capable, ECT(0)
    not_ect=$(tshark -r "$HCAEMU_PCAP" --disable-protocol rpcordma \
      -Y "infiniband && !(ip.dsfield.ecn == 2 || ipv6.tclass.ecn == 2)" 2>/dev/null | wc -l)
    echo "pcap: DCQCN on, $not_ect RoCE frames not ECT(0)"
    [ "$not_ect" -eq 0 ] || fail "RoCE frames without ECT(0) while DCQCN is on"
  fi
else
  fail "tshark is not installed (scripts/install-deps.sh installs it)"
fi
# The latency trace: valid trace-event JSON and a summary.
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["traceEvents"], "no events"' "$HCAEMU_TRACE.json" ||
  fail "the latency trace is not valid trace-event JSON"
if [ -n "$HCATRACE" ]; then
  "$HCATRACE" summary "$HCAEMU_TRACE.csv" | tee "$WORK/summary.txt" | head -20
  grep -q "end_to_end" "$WORK/summary.txt" || fail "hcatrace summary shows no message latency"
fi
# The capture rebuilt by hcareplay: every RoCE frame part of a message or an answer, none left over
# but the guests' other Ethernet traffic (ARP, neighbour discovery, ...).
if [ -n "$HCAREPLAY" ]; then
  "$HCAREPLAY" inspect "$HCAEMU_PCAP" > "$WORK/replay.txt" || fail "hcareplay cannot read the capture"
  sed -n '1p;/messages;/p;/^protocol/p' "$WORK/replay.txt"
  grep -q "(100.00% of RoCEv2)" "$WORK/replay.txt" || fail "hcareplay left RoCE frames unmapped"
  if sed -n '/^unmapped frames/,$p' "$WORK/replay.txt" | grep -E '^ +[0-9]+  ' | grep -qv "not RoCEv2"; then
    fail "hcareplay lists unmapped RoCE frames"
  fi
  # The run replayed headless as it was captured: each message posted at its doorbell (from the
  # latency trace), with the CQs and send queues of the trace's QP table, its FCT set against the
  # FCT the run itself saw. Every message must be timed, and REPLAY_WITHIN_1PCT percent of them
  # (default 97) within 1% (measured with the CM MADs replayed: the perftest part alone 1,009-1,010
  # of 1,010, the whole run 1,517 of 1,528; the rest: RNR NAKs of the capture the replay does not
  # repeat, e.g. an ODP page fault's, and guest memory the device reads at wall-clock moments,
  # docs/replay.md).
  within=${REPLAY_WITHIN_1PCT:-97}
  if "$HCAREPLAY" run "$HCAEMU_PCAP" --hcaemu-trace "$HCAEMU_TRACE.csv" --timing asis --out "$WORK/replayed" \
       --quiet --no-pcap --no-trace > "$WORK/replayed.txt" 2> "$WORK/replayed.err"; then
    grep "latency trace\|QP ends" "$WORK/replayed.err" "$WORK/replayed.txt" || true
  else
    cat "$WORK/replayed.err"
    fail "hcareplay cannot replay the capture with its latency trace"
  fi
  grep -qE ": ([0-9]+) of \1 messages timed" "$WORK/replayed.err" || fail "messages the latency trace did not time"
  # messages.csv: fct_error is column 14 (empty for an operation without a captured FCT), and
  # captured_anomalies column 15 (what the capture showed that the replay does not repeat).
  awk -F, 'NR > 1 && $14 != "" && ($14 > 0.01 || $14 < -0.01) && shown++ < 20 {
             printf "  beyond 1%%: qp %s op %s %s %s B, error %s %s\n", $1, $2, $3, $4, $14, $15 }' \
    "$WORK/replayed/messages.csv"
  awk -F, 'NR > 1 && $14 != "" { n++; if ($14 <= 0.01 && $14 >= -0.01) ok++ }
           END { printf "replayed FCT within 1%% of the captured run: %d of %d\n", ok, n; exit !(n > 0 && ok * 100 >= within * n) }' \
    within="$within" "$WORK/replayed/messages.csv" || fail "fewer than $within% of the replayed FCTs within 1% of the captured run"
fi
echo "PASS"
