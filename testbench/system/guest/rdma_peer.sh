# Runs inside a guest (busybox sh, via hcavm): RDMA between two guests over RoCE v2. Expects these
# to be set above this text:
#   ROLE (server|client)  ME, PEER (host numbers on 10.9.0.0/24)
#   SETUP (mlx5: the emulated HCA's function | rxe: Soft-RoCE on a virtio-net NIC)
#   DEV (RDMA device: mlx5_0, rxe0)  NETDEV (its Ethernet interface: eth0)
#   RDMA_TESTS (words from: pingpong cm verbs perftest bench local interop rc-faults link-flap)
#   RDMA_GID (linklocal: the RoCE v2 GID fe80::..., the default | ipv4: the RoCE v2 GID ::ffff:10.9.0.ME)
# hca_verbs_check comes with hcavm --file. The server side runs each tool first; the client retries
# its connection until the server listens (rdma_cm tools: waits until it does, see CM_START). Each
# tool pair gets its own TCP port, so a pair that fails cannot disturb the next one, and every run
# has a timeout, so both sides stay in step.
status=0
check() {
  what=$1; shift
  if "$@" >/dev/null 2>&1; then echo "CHECK ok: $what"; else echo "CHECK FAILED: $what"; status=1; fi
}

# --- bring-up --------------------------------------------------------------------------------
# A kernel task the device leaves waiting (e.g. on a UMR completion) is reported after 20 s.
echo 20 > /proc/sys/kernel/hung_task_timeout_secs 2>/dev/null
if [ "$SETUP" = mlx5 ]; then
  modprobe mlx5_core
  modprobe mlx5_ib
else
  modprobe rdma_rxe
  modprobe crc32_generic
fi
for _ in $(seq 20); do [ -e /sys/class/net/$NETDEV ] && break; sleep 1; done
check "$NETDEV registered" test -e /sys/class/net/$NETDEV
ip link set $NETDEV up
ip addr add 10.9.0.$ME/24 dev $NETDEV
for _ in $(seq 20); do [ "$(cat /sys/class/net/$NETDEV/carrier 2>/dev/null)" = 1 ] && break; sleep 1; done
check "$NETDEV has carrier" test "$(cat /sys/class/net/$NETDEV/carrier 2>/dev/null)" = 1
[ "$SETUP" = rxe ] && rdma link add $DEV type rxe netdev $NETDEV
PORT_DIR=/sys/class/infiniband/$DEV/ports/1
for _ in $(seq 30); do grep -q ACTIVE $PORT_DIR/state 2>/dev/null && break; sleep 1; done
check "$DEV port 1 is ACTIVE" grep -q ACTIVE $PORT_DIR/state

# The RoCE v2 GID of the wanted kind (the table fills in as addresses appear: wait for it).
case ${RDMA_GID:-linklocal} in
  ipv4) WANT_GID=0000:0000:0000:0000:0000:ffff: ;;
  *) WANT_GID=fe80: ;;
esac
GIDX=
for _ in $(seq 20); do
  for t in $PORT_DIR/gid_attrs/types/*; do
    n=${t##*/}
    [ "$(cat $t 2>/dev/null)" = "RoCE v2" ] || continue
    case $(cat $PORT_DIR/gids/$n) in $WANT_GID*) GIDX=$n; break ;; esac
  done
  [ -n "$GIDX" ] && break
  sleep 1
done
check "a RoCE v2 GID of kind ${RDMA_GID:-linklocal} (index ${GIDX:-none}: $(cat $PORT_DIR/gids/${GIDX:-0} 2>/dev/null))" test -n "$GIDX"
GIDX=${GIDX:-0}

for _ in $(seq 60); do ping -c 1 -W 1 10.9.0.$PEER >/dev/null 2>&1 && break; done
check "IPv4 ping to the peer" ping -c 3 -W 2 10.9.0.$PEER
# WAIT_FOR (optional): an address to wait for before the tools run (the isolation test's
# attacker raises it once it listens and attacks, so the tools run under attack).
if [ -n "${WAIT_FOR:-}" ]; then
  for _ in $(seq 120); do ping -c 1 -W 1 "$WAIT_FOR" >/dev/null 2>&1 && break; done
  check "$WAIT_FOR answers (the attacker is at work)" ping -c 1 -W 2 "$WAIT_FOR"
fi

# --- one tool on both sides ------------------------------------------------------------------
PORT=18600
TIMEOUTS=0
# rdma_cm tools start in step: the client cannot simply retry a refused start, as a tool with two
# connections whose first REQ came before the server listened and whose second was accepted leaves
# the server half-connected (it sees the client's consumer reject, 28, and gives up). The server
# opens TCP port PORT+1000 once the kernel lists the tool's listening cm_id; the client waits for it.
CM_START=
announce_listening() {  # PORT SECONDS (server, in the background)
  seen=
  for _ in $(seq 100); do
    rdma resource show cm_id 2>/dev/null | grep -q "LISTEN.*:$1 " && seen=1 && break
    sleep 0.2
  done
  [ -n "$seen" ] || echo "NOTE: no listening cm_id on port $1 after 20 s; telling the client to start anyway"
  timeout "$2" nc -l -p $(($1 + 1000)) </dev/null >/dev/null 2>&1
}
wait_for_listener() {  # PORT SECONDS (client)
  for _ in $(seq "$2"); do
    timeout 5 nc 10.9.0.$PEER $(($1 + 1000)) </dev/null >/dev/null 2>&1 && return
    sleep 1
  done
  echo "no listening rdma_cm server on port $1 after $2 s"
}

# run_client TRIES SECONDS HOST TOOL ARGS...: the client side of a tool pair (-p PORT HOST appended),
# output in /tmp/out, exit status in rc. While the server's TCP exchange port is not open yet the
# client is started again, up to TRIES times, a second apart.
run_client() {
  max_tries=$1 csecs=$2 host=$3
  shift 3
  tries=0
  while :; do
    timeout "$csecs" "$@" -p $PORT "$host" > /tmp/out 2>&1
    rc=$?
    # (perftest's "Unable to Connect the HCA's through the link" is a QP set-up failure, not a server not up yet.)
    [ $rc -ne 0 ] && [ $tries -lt "$max_tries" ] && grep -qiE "couldn.t connect|unable to connect|refused" /tmp/out &&
      ! grep -q "Connect the HCA" /tmp/out || break
    tries=$((tries + 1))
    sleep 1
  done
}

# run NAME SECONDS RESULT_PATTERN TOOL ARGS...: runs the tool as server or client (with -p PORT and,
# on the client, the server's address), then reports its exit status and the last line of its
# output that matches RESULT_PATTERN. After 3 runs that timed out, the others are skipped (failed):
# the data path is broken and the whole test must stay bounded. With CM_START=1 the two sides
# start as described above instead of the client retrying.
run() {
  name=$1 secs=$2 pattern=$3
  shift 3
  PORT=$((PORT + 1))
  if [ $TIMEOUTS -ge 3 ]; then
    echo "CHECK FAILED: $name ($ROLE): skipped after 3 runs that timed out"
    status=1
    return
  fi
  echo "RUN: $* -p $PORT$([ "$ROLE" = client ] && echo " 10.9.0.$PEER")"
  if [ "$ROLE" = server ] && [ -n "$CM_START" ]; then
    timeout "$secs" "$@" -p $PORT > /tmp/out 2>&1 &
    tool=$!
    announce_listening $PORT "$secs" &
    wait $tool
    rc=$?
  elif [ "$ROLE" = server ]; then
    timeout "$secs" "$@" -p $PORT > /tmp/out 2>&1
    rc=$?
  elif [ -n "$CM_START" ]; then
    wait_for_listener $PORT "$secs" > /tmp/out
    timeout "$secs" "$@" -p $PORT 10.9.0.$PEER >> /tmp/out 2>&1
    rc=$?
  else
    run_client 40 "$secs" 10.9.0.$PEER "$@"
  fi
  last=$(grep -E "$pattern" /tmp/out | tail -n 1 | tr -s ' \t' ' ')
  if [ $rc -eq 0 ]; then
    echo "CHECK ok: $name ($ROLE): ${last:-no result line}"
  else
    echo "CHECK FAILED: $name ($ROLE) exit $rc$([ $rc -eq 124 ] && echo ' (timed out)'): ${last:-no result line}"
    [ $rc -eq 124 ] && TIMEOUTS=$((TIMEOUTS + 1))
    tail -n 40 /tmp/out | sed "s/^/OUT| /"  # the host shows these lines of a failed tool
    status=1
  fi
}

# run_local NAME SECONDS RESULT_PATTERN TOOL ARGS...: two processes of this guest over its one
# function (the NIC's local loopback), server in the background and client to this guest's own
# address; no peer involved. Both must exit 0.
run_local() {
  name=$1 secs=$2 pattern=$3
  shift 3
  PORT=$((PORT + 1))
  echo "RUN: $* -p $PORT (server and client in this guest)"
  timeout "$secs" "$@" -p $PORT > /tmp/lsrv 2>&1 &
  srv=$!
  run_client 20 "$secs" 10.9.0.$ME "$@"
  wait $srv
  src=$?
  last=$(grep -E "$pattern" /tmp/out | tail -n 1 | tr -s ' \t' ' ')
  if [ $rc -eq 0 ] && [ $src -eq 0 ]; then
    echo "CHECK ok: $name (two processes in the $ROLE guest): ${last:-no result line}"
  else
    echo "CHECK FAILED: $name (two processes in the $ROLE guest): client exit $rc, server exit $src: ${last:-no result line}"
    tail -n 30 /tmp/out | sed "s/^/OUT| /"
    tail -n 30 /tmp/lsrv | sed "s/^/OUT| server: /"
    status=1
  fi
}

PP_RESULT='iters in'
PERF_RESULT='^ *[0-9]+ +[0-9]+ +[0-9.]+'
PERF="-d $DEV -x $GIDX -F"
for t in $RDMA_TESTS; do
  case $t in
  pingpong)
    run "ibv_rc_pingpong 4 KiB x 10" 60 "$PP_RESULT" ibv_rc_pingpong -d $DEV -g $GIDX -n 10 -c
    run "ibv_rc_pingpong -e 4 KiB x 10" 60 "$PP_RESULT" ibv_rc_pingpong -d $DEV -g $GIDX -n 10 -c -e
    # Four RC QPs receiving through one shared receive queue.
    run "ibv_srq_pingpong 4 QPs x 10" 60 "$PP_RESULT" ibv_srq_pingpong -d $DEV -g $GIDX -n 10 -q 4
    # XRC: each side's send QP reaches the other's XRC SRQ through its XRC target QP. Soft-RoCE
    # (Linux 6.1) has no XRC: ibv_open_xrcd fails with EOPNOTSUPP there.
    [ "$SETUP" = rxe ] ||
      run "ibv_xsrq_pingpong 4 KiB x 10" 60 'success' ibv_xsrq_pingpong -d $DEV -g $GIDX -n 10
    # UC: the same exchange without ACKs (4 KiB = four packets at the 1024 B path MTU).
    run "ibv_uc_pingpong 4 KiB x 10" 60 "$PP_RESULT" ibv_uc_pingpong -d $DEV -g $GIDX -n 10 -c
    # UD: datagrams through address handles; each receive holds the 40-byte GRH in front of the data.
    run "ibv_ud_pingpong 1 KiB x 10" 60 "$PP_RESULT" ibv_ud_pingpong -d $DEV -g $GIDX -n 10 -s 1024 -c
    ;;
  cm)
    # rdma_cm: connection setup through CM MADs on QP1 (UD), then RC; addresses are IPv4.
    modprobe rdma_ucm 2>/dev/null
    # run() ends a client's command line with "-p PORT PEER"; these tools want the peer as an option.
    cat > /tmp/cm_tool <<'SH'
#!/bin/sh
tool=$1 port=$3 peer=$4
case $tool in
  rping) if [ -n "$peer" ]; then rping -c -a "$peer" -p "$port" -C 10 -S 4096 -V
         else rping -s -a 0.0.0.0 -p "$port" -C 10 -S 4096 -V; fi || exit
         echo "rping: 10 pings of 4096 B, data validated" ;;
  ucmatose) if [ -n "$peer" ]; then exec ucmatose -s "$peer" -p "$port" -c 2 -C 10
            else exec ucmatose -p "$port" -c 2 -C 10; fi ;;
esac
SH
    chmod +x /tmp/cm_tool
    CM_START=1
    run "rping 4 KiB x 10 (rdma_cm)" 60 'rping:' /tmp/cm_tool rping
    run "ucmatose 2 connections (rdma_cm)" 60 'test complete|return status' /tmp/cm_tool ucmatose
    CM_START=
    ;;
  verbs)
    # The client sleeps on completion events, the server busy-polls: both ways get tested.
    mode=; [ "$ROLE" = client ] && mode=-e
    # Soft-RoCE fails a UD send with a wrong lkey as a local QP operation error and has no SQE state.
    [ "$SETUP" = rxe ] && mode="$mode -U -S"
    run "hca_verbs_check" 240 ' -> (PASS|FAIL)' /tmp/hcavm/hca_verbs_check -d $DEV -g $GIDX $mode
    ;;
  perftest)
    for tool in write read send; do
      for size in 64 65536; do
        run "ib_${tool}_bw -s $size" 60 "$PERF_RESULT" ib_${tool}_bw $PERF -s $size -n 20 --report_gbits
        run "ib_${tool}_lat -s $size" 60 "$PERF_RESULT" ib_${tool}_lat $PERF -s $size -n 50
      done
    done
    run "ib_atomic_bw (8 B)" 60 "$PERF_RESULT" ib_atomic_bw $PERF -n 20 --report_gbits
    run "ib_atomic_lat (8 B)" 60 "$PERF_RESULT" ib_atomic_lat $PERF -n 50
    # The other connection types perftest offers: UD SENDs (one MTU-sized datagram each) and UC.
    run "ib_send_bw -c UD -s 1024" 60 "$PERF_RESULT" ib_send_bw $PERF -c UD -s 1024 -n 20 --report_gbits
    run "ib_send_lat -c UD -s 1024" 60 "$PERF_RESULT" ib_send_lat $PERF -c UD -s 1024 -n 50
    run "ib_write_bw -c UC -s 65536" 60 "$PERF_RESULT" ib_write_bw $PERF -c UC -s 65536 -n 20 --report_gbits
    run "ib_send_lat -c UC -s 64" 60 "$PERF_RESULT" ib_send_lat $PERF -c UC -s 64 -n 50
    # Connections set up by rdma_cm (-R) instead of perftest's own TCP exchange: the QP attributes
    # come from the kernel's CM (RC, and a UD QP with its address handle from the CM's SIDR).
    modprobe rdma_ucm 2>/dev/null
    CM_START=1
    run "ib_write_bw -R -s 65536" 60 "$PERF_RESULT" ib_write_bw $PERF -R -s 65536 -n 20 --report_gbits
    run "ib_send_lat -R -c UD -s 1024" 60 "$PERF_RESULT" ib_send_lat $PERF -R -c UD -s 1024 -n 50
    CM_START=
    ;;
  interop)
    # Against another implementation (issue 15: the emulated HCA and Soft-RoCE on one Ethernet through
    # hcaemu's uplink): perftest's RC WRITE, READ, SEND and atomics and UD SENDs, every transfer
    # between the two devices; perftest's own TCP exchange sets the connections up. READ and atomics
    # take -o 16: perftest gives the requester the server's outstanding-read count, and Soft-RoCE's
    # (128) is above what a ConnectX requester takes (16, log_max_ra_res_qp 4), as with real hardware.
    run "ib_write_bw -s 65536" 60 "$PERF_RESULT" ib_write_bw $PERF -s 65536 -n 20 --report_gbits
    run "ib_read_bw -s 65536" 60 "$PERF_RESULT" ib_read_bw $PERF -s 65536 -n 20 -o 16 --report_gbits
    run "ib_send_lat -s 64" 60 "$PERF_RESULT" ib_send_lat $PERF -s 64 -n 50
    run "ib_atomic_bw (8 B)" 60 "$PERF_RESULT" ib_atomic_bw $PERF -n 20 -o 16 --report_gbits
    run "ib_send_bw -c UD -s 1024" 60 "$PERF_RESULT" ib_send_bw $PERF -c UD -s 1024 -n 20 --report_gbits
    ;;
  rc-faults)
    # Over a link that loses and corrupts frames (issue 15): RC recovers by retransmission. The
    # pingpong and rping check every buffer they receive; perftest's WRITE, READ, SEND and atomics
    # must complete.
    run "ibv_rc_pingpong 4 KiB x 50" 120 "$PP_RESULT" ibv_rc_pingpong -d $DEV -g $GIDX -n 50 -c
    modprobe rdma_ucm 2>/dev/null
    cat > /tmp/rping_tool <<'SH'
#!/bin/sh
port=$2 peer=$3
if [ -n "$peer" ]; then rping -c -a "$peer" -p "$port" -C 50 -S 4096 -V; else rping -s -a 0.0.0.0 -p "$port" -C 50 -S 4096 -V; fi || exit
echo "rping: 50 pings of 4096 B, data validated"
SH
    chmod +x /tmp/rping_tool
    CM_START=1
    run "rping 4 KiB x 50 (rdma_cm)" 120 'rping:' /tmp/rping_tool
    CM_START=
    for tool in write read send; do
      run "ib_${tool}_bw -s 65536" 120 "$PERF_RESULT" ib_${tool}_bw $PERF -s 65536 -n 20 --report_gbits
    done
    run "ib_atomic_bw (8 B)" 120 "$PERF_RESULT" ib_atomic_bw $PERF -n 50 --report_gbits
    # The verbs checker's reliable steps (RC and XRC: UC and UD lose a message with a packet, by design).
    run "hca_verbs_check -L (RC, XRC)" 400 ' -> (PASS|FAIL)' /tmp/hcavm/hca_verbs_check -d $DEV -g $GIDX -L
    ;;
  link-flap)
    # The host shuts the server's uplink for 2 s in the middle of a transfer, twice (issue 15; the
    # client says "FLAP: go N" as it starts ib_write_bw, the host acts once the WRITEs flow). First a QP whose
    # retry budget outlasts the outage (-u 20: 4.3 s per timeout) must recover and finish; then one
    # with perftest's default timeout (14; the host's 100 ms floor: ~0.8 s in all) must end with
    # retry exceeded (status 12) and exit; the server guest must see carrier and port go down and
    # come back, and RC must work again afterwards. 8 KiB messages, 16 in flight: a retransmission
    # (go-back-N from the oldest unacknowledged PSN) is ~128 packets, so the retry budget is mostly
    # the timer's, not the time to resend a deep window.
    if [ "$ROLE" = server ]; then
      ( while :; do echo "$(cat /sys/class/net/$NETDEV/carrier 2>/dev/null) $(cut -d' ' -f2 $PORT_DIR/state 2>/dev/null)"
          sleep 0.2; done ) > /tmp/linkstate 2>/dev/null &
      sampler=$!
    fi
    for n in 1 2; do
      PORT=$((PORT + 1))
      qp_timeout=; [ $n = 1 ] && qp_timeout="-u 20"
      flap_args="-s 8192 -t 16 -D 12 $qp_timeout"
      echo "RUN: ib_write_bw $PERF $flap_args -p $PORT (link down for 2 s during it)"
      if [ "$ROLE" = server ]; then
        timeout 120 ib_write_bw $PERF $flap_args -p $PORT > /tmp/out 2>&1
        rc=$?
      else
        rm -f /tmp/rc /tmp/out
        echo "FLAP: go $n"
        ( run_client 40 120 10.9.0.$PEER ib_write_bw $PERF $flap_args; echo $rc > /tmp/rc ) &
        wait
        rc=$(cat /tmp/rc)
      fi
      last=$(grep -E "$PERF_RESULT|status" /tmp/out | tail -n 1 | tr -s ' \t' ' ')
      if [ $n = 1 ]; then
        if [ "$rc" -eq 0 ]; then echo "CHECK ok: flap 1 ($ROLE): the QP within its retry budget recovered: $last"
        else echo "CHECK FAILED: flap 1 ($ROLE): exit $rc: $last"; tail -n 20 /tmp/out | sed "s/^/OUT| /"; status=1; fi
      elif [ "$ROLE" = client ]; then
        if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q "status 12" /tmp/out; then
          echo "CHECK ok: flap 2 (client): retry exceeded (IBV_WC_RETRY_EXC_ERR), the tool exited: $last"
        else echo "CHECK FAILED: flap 2 (client): exit $rc, wanted an error completion with status 12"; tail -n 20 /tmp/out | sed "s/^/OUT| /"; status=1; fi
      else
        if [ "$rc" -ne 124 ]; then echo "CHECK ok: flap 2 (server): exited ($rc) once its client failed"
        else echo "CHECK FAILED: flap 2 (server): still waiting after 120 s"; status=1; fi
      fi
    done
    if [ "$ROLE" = server ]; then
      kill $sampler 2>/dev/null
      check "$NETDEV carrier and port 1 went down during the outage ($(grep -c '^0 DOWN' /tmp/linkstate) samples)" grep -q '^0 DOWN' /tmp/linkstate
      for _ in $(seq 20); do grep -q ACTIVE $PORT_DIR/state && [ "$(cat /sys/class/net/$NETDEV/carrier)" = 1 ] && break; sleep 0.5; done
      check "$NETDEV carrier and port 1 came back ($(cat /sys/class/net/$NETDEV/carrier) $(cat $PORT_DIR/state))" grep -q ACTIVE $PORT_DIR/state
    fi
    run "ibv_rc_pingpong 4 KiB x 10 after the outages" 60 "$PP_RESULT" ibv_rc_pingpong -d $DEV -g $GIDX -n 10 -c
    ;;
  local)
    # RDMA between two QPs of one function: two processes in this guest (MPI/NCCL-style programs and
    # rdma-core's own tests do this). Each guest runs these by itself.
    run_local "ibv_rc_pingpong 4 KiB x 10, local" 60 "$PP_RESULT" ibv_rc_pingpong -d $DEV -g $GIDX -n 10 -c
    run_local "ibv_uc_pingpong 4 KiB x 10, local" 60 "$PP_RESULT" ibv_uc_pingpong -d $DEV -g $GIDX -n 10 -c
    run_local "ibv_ud_pingpong 1 KiB x 10, local" 60 "$PP_RESULT" ibv_ud_pingpong -d $DEV -g $GIDX -n 10 -s 1024 -c
    mode=; [ "$SETUP" = rxe ] && mode="-U -S"
    run_local "hca_verbs_check, local" 240 ' -> (PASS|FAIL)' /tmp/hcavm/hca_verbs_check -d $DEV -g $GIDX $mode
    ;;
  bench)  # the figures of bench/rdma_compare.sh
    run "ib_write_bw -s 65536" 120 "$PERF_RESULT" ib_write_bw $PERF -s 65536 -n ${BENCH_BW_ITERS:-2000} --report_gbits
    run "ib_write_lat -s 64" 120 "$PERF_RESULT" ib_write_lat $PERF -s 64 -n ${BENCH_LAT_ITERS:-500}
    ;;
  *) echo "CHECK FAILED: unknown test set '$t' in RDMA_TESTS"; status=1 ;;
  esac
done

if [ "$SETUP" = mlx5 ]; then
  # The queue counters mlx5_ib reads from the device (QUERY_Q_COUNTER) for its hw_counters. With
  # perftest or the verbs check behind us, the server has been the target of RDMA WRITEs.
  HW=$PORT_DIR/hw_counters
  echo "hw_counters: $(for c in rx_write_requests rx_read_requests rx_atomic_requests out_of_buffer out_of_sequence \
    duplicate_request packet_seq_err rnr_nak_retry_err local_ack_timeout_err req_cqe_error resp_cqe_error \
    np_ecn_marked_roce_packets np_cnp_sent rp_cnp_handled rp_cnp_ignored; do
      printf '%s=%s ' $c "$(cat $HW/$c 2>/dev/null)"; done)"
  # DCQCN's counters (QUERY_CONG_STATISTICS, cc_query_allowed) are readable, DCQCN on or off.
  check "hw_counters: DCQCN counters readable (np_cnp_sent=$(cat $HW/np_cnp_sent 2>/dev/null))" \
    test -r "$HW/np_cnp_sent" -a -r "$HW/rp_cnp_handled"
  case " $RDMA_TESTS " in
    *" perftest "*|*" verbs "*)
      [ "$ROLE" = server ] && check "hw_counters: RDMA WRITEs were counted ($(cat $HW/rx_write_requests 2>/dev/null))" \
        test "$(cat $HW/rx_write_requests 2>/dev/null || echo 0)" -gt 0 ;;
  esac
  bad=$(dmesg | grep mlx5 | grep -iE "error|fail|timeout")
  check "no mlx5 errors in dmesg" test -z "$bad"
  [ -n "$bad" ] && echo "$bad"
fi
# CARRIER_CHECK=1 (the HCA's server on an uplink whose only peer is the client's VM): once the
# client's VM is gone, the link is down, and the netdev's carrier and the RDMA port must follow.
if [ -n "${CARRIER_CHECK:-}" ] && [ "$SETUP" = mlx5 ] && [ "$ROLE" = server ]; then
  for _ in $(seq 90); do [ "$(cat /sys/class/net/$NETDEV/carrier 2>/dev/null)" = 0 ] && break; sleep 1; done
  check "$NETDEV lost its carrier when the uplink's peer went away" test "$(cat /sys/class/net/$NETDEV/carrier 2>/dev/null)" = 0
  for _ in $(seq 10); do grep -q DOWN $PORT_DIR/state 2>/dev/null && break; sleep 1; done
  check "$DEV port 1 went DOWN with it ($(cat $PORT_DIR/state 2>/dev/null))" grep -q DOWN $PORT_DIR/state
fi
blocked=$(dmesg | grep -A3 "blocked for more than")
check "no kernel task blocked (hung task detector)" test -z "$blocked"
[ -n "$blocked" ] && echo "$blocked"
[ $status -ne 0 ] && rdma statistic show link $DEV/1 2>/dev/null
exit $status
