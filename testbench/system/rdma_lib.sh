# Shared by the RDMA full-system drivers (run_rdma_guests.sh, run_rxe_guests.sh) and
# bench/rdma_compare.sh; source it after fullsys_lib.sh, with HCAEMU (where used), HCAVM and VERBS_CHECK
# set. A pair is a server guest (10.9.0.1) and a client guest (10.9.0.2) running guest/rdma_peer.sh.
# Environment: RDMA_TESTS (default "pingpong cm verbs local perftest"), RDMA_GID (linklocal | ipv4),
# WAIT_FOR (an address both guests wait for before their tools run),
# HCAEMU_PCAP / HCAEMU_TRACE (passed to hcaemu as --pcap / --trace), HCAEMU_TEST_LOG_LEVEL.
RDMA_LIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RDMA_TESTS=${RDMA_TESTS:-pingpong cm verbs local perftest}

# start_hcaemu_rdma: hcaemu with one VF (the server guest goes on the PF, the client on VF0).
start_hcaemu_rdma() {
  local args=()
  [ -n "${HCAEMU_PCAP:-}" ] && args+=(--pcap "$HCAEMU_PCAP")
  [ -n "${HCAEMU_TRACE:-}" ] && args+=(--trace "$HCAEMU_TRACE")
  [ -n "${HCAEMU_DCQCN:-}" ] && args+=(--dcqcn="$HCAEMU_DCQCN")
  [ -n "${HCAEMU_TEST_LOG_LEVEL:-}" ] && args+=(--log-level "$HCAEMU_TEST_LOG_LEVEL")
  start_hcaemu 1 "${args[@]}"
  SERVER_VM=(--attach "$WORK/sockets/pf.sock")
  CLIENT_VM=(--attach "$WORK/sockets/vf0.sock")
}

stop_hcaemu() {
  kill -TERM "$HCAEMU_PID"
  wait "$HCAEMU_PID"
  HCAEMU_PID=
}

# rxe_nics: virtio-net NICs for the two guests, joined by a QEMU dgram netdev (one UDP port each on
# 127.0.0.1), with distinct MACs (Soft-RoCE's link-local GIDs come from them).
rxe_nics() {
  local base=$((20000 + $$ % 20000)) me
  for me in 1 2; do
    local nic=(--qemu-arg -netdev
      --qemu-arg "dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=$((base + me)),remote.type=inet,remote.host=127.0.0.1,remote.port=$((base + 3 - me))"
      --qemu-arg -device --qemu-arg "virtio-net-pci,netdev=n0,mac=52:54:00:09:00:0$me")
    # The wire as the server's NIC sees it (both directions), for hcareplay: RXE_PCAP=FILE.
    if [ $me = 1 ] && [ -n "${RXE_PCAP:-}" ]; then
      nic+=(--qemu-arg -object --qemu-arg "filter-dump,id=dump0,netdev=n0,file=$RXE_PCAP")
    fi
    if [ $me = 1 ]; then SERVER_VM=("${nic[@]}"); else CLIENT_VM=("${nic[@]}"); fi
  done
}

# run_rdma_pair LABEL SETUP DEV NETDEV: boots both guests (extra hcavm arguments in the arrays
# SERVER_VM and CLIENT_VM), waits for them, prints what they checked and ran; sets SERVER_RC and
# CLIENT_RC. Whole logs: $WORK/LABEL-server.log, $WORK/LABEL-client.log. SETUP and DEV may name the
# server's and the client's apart as SERVER/CLIENT (mlx5/rxe: the HCA against Soft-RoCE).
run_rdma_pair() {
  local label=$1 setup=$2 dev=$3 netdev=$4 role me peer pids=() my_setup my_dev
  for role in server client; do
    me=1 peer=2 my_setup=${setup%/*} my_dev=${dev%/*}
    [ $role = client ] && me=2 peer=1 my_setup=${setup#*/} my_dev=${dev#*/}
    {
      printf 'ROLE=%s\nME=%s\nPEER=%s\nSETUP=%s\nDEV=%s\nNETDEV=%s\n' $role $me $peer "$my_setup" "$my_dev" "$netdev"
      printf 'RDMA_TESTS="%s"\nRDMA_GID=%s\n' "$RDMA_TESTS" "${RDMA_GID:-linklocal}"
      printf 'WAIT_FOR=%s\n' "${WAIT_FOR:-}"
      printf 'CARRIER_CHECK=%s\n' "${CARRIER_CHECK:-}"
      printf 'BENCH_BW_ITERS=%s\nBENCH_LAT_ITERS=%s\n' "${BENCH_BW_ITERS:-2000}" "${BENCH_LAT_ITERS:-500}"
      cat "$RDMA_LIB_DIR/guest/rdma_peer.sh"
    } > "$WORK/$label-$role.sh"
  done
  echo "== $label: server guest on 10.9.0.1, client guest on 10.9.0.2, tests: $RDMA_TESTS"
  "$HCAVM" --name "$label-server" --script "$WORK/$label-server.sh" --file "$VERBS_CHECK" \
    --timeout "${RDMA_VM_TIMEOUT:-1100}" "${SERVER_VM[@]}" > "$WORK/$label-server.log" 2>&1 &
  pids+=($!)
  "$HCAVM" --name "$label-client" --script "$WORK/$label-client.sh" --file "$VERBS_CHECK" \
    --timeout "${RDMA_VM_TIMEOUT:-1100}" "${CLIENT_VM[@]}" > "$WORK/$label-client.log" 2>&1 &
  pids+=($!)
  wait "${pids[0]}"; SERVER_RC=$?
  wait "${pids[1]}"; CLIENT_RC=$?
  for role in server client; do
    echo "--- $label $role guest (exit $([ $role = server ] && echo $SERVER_RC || echo $CLIENT_RC))"
    grep -E "CHECK|RUN:|OUT\| |hcavm:|$label-$role:|^(server|client): |^hw_counters: " "$WORK/$label-$role.log"
  done
}

# rdma_pair_verdict LABEL: fail() unless both guests of the last pair passed.
rdma_pair_verdict() {
  [ "$SERVER_RC" -eq 0 ] || fail "$1: server guest checks failed (exit $SERVER_RC; log $WORK/$1-server.log)"
  [ "$CLIENT_RC" -eq 0 ] || fail "$1: client guest checks failed (exit $CLIENT_RC; log $WORK/$1-client.log)"
}
