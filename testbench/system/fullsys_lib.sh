# Shared by the full-system test drivers (source it after setting HCAEMU): a work directory that
# goes away on exit (HCAEMU_TEST_KEEP_WORK=1 keeps it, for looking into a failure), fail(),
# start_hcaemu, and a second host's hcaemu (start_peer_hcaemu). KEEP_LOG=FILE keeps a copy of
# hcaemu's log.
WORK=$(mktemp -d /tmp/hcaemu-fullsys.XXXXXX)
HCAEMU_PID=
cleanup() {
  [ -n "$HCAEMU_PID" ] && kill "$HCAEMU_PID" 2>/dev/null
  [ -n "${KEEP_LOG:-}" ] && cp "$WORK/hcaemu.log" "$KEEP_LOG" 2>/dev/null
  if [ "${HCAEMU_TEST_KEEP_WORK:-0}" = 1 ]; then echo "work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
# fail MESSAGE: prints it and the log of every process the test started (hcaemu, a second host's
# hcaemu, hcafabric), then exits 1.
fail() {
  echo "FAIL: $*"
  echo "--- hcaemu log"
  cat "$WORK/hcaemu.log"
  for log in hcaemu-b.log hcafabric.log; do [ -s "$WORK/$log" ] && { echo "--- $log"; cat "$WORK/$log"; }; done
  exit 1
}

# start_hcaemu VFS [HCAEMU ARGS...]: serves sockets in $WORK/sockets, returns once the last one exists.
start_hcaemu() {
  local vfs=$1 last=pf.sock
  shift
  [ "$vfs" -gt 0 ] && last=vf$((vfs - 1)).sock
  export SC_COPYRIGHT_MESSAGE=DISABLE
  "$HCAEMU" --socket-dir "$WORK/sockets" --vfs "$vfs" "$@" > "$WORK/hcaemu.log" 2>&1 &
  HCAEMU_PID=$!
  for _ in $(seq 50); do [ -S "$WORK/sockets/$last" ] && break; sleep 0.1; done
  [ -S "$WORK/sockets/$last" ] || fail "hcaemu did not create its sockets"
}

# stop_hcaemu_cleanly: SIGTERM; fail() unless hcaemu was still running, exits 0, removes its
# sockets and logged no warning or error.
stop_hcaemu_cleanly() {
  kill -0 "$HCAEMU_PID" 2>/dev/null || fail "hcaemu is gone"
  kill -TERM "$HCAEMU_PID"
  wait "$HCAEMU_PID"
  local rc=$?
  HCAEMU_PID=
  [ $rc -eq 0 ] || fail "hcaemu exited with $rc on SIGTERM"
  [ ! -e "$WORK/sockets/pf.sock" ] || fail "socket files left behind"
  grep -E "\[(warning|error|critical)\]" "$WORK/hcaemu.log" && fail "unexpected warnings in the hcaemu log"
}

# stop_pid VAR: SIGTERM to the process whose PID VAR holds, then clear VAR; its exit status.
stop_pid() {
  local pid=${!1}
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null
  wait "$pid"
  local rc=$?
  printf -v "$1" ''
  return $rc
}

# start_peer_hcaemu LINK [HCAEMU ARGS...]: another host's hcaemu (its MACs from 02:c9:00:00:01:00,
# apart from the first one's) with its uplink on LINK, serving $WORK/sockets-b and logging to
# $WORK/hcaemu-b.log; returns once its PF socket exists. B_PID holds its PID (stop_pid B_PID).
start_peer_hcaemu() {
  local link=$1
  shift
  echo '{"mac_base": "02:c9:00:00:01:00"}' > "$WORK/b.json"
  "$HCAEMU" --socket-dir "$WORK/sockets-b" --config "$WORK/b.json" --uplink "$link" "$@" > "$WORK/hcaemu-b.log" 2>&1 &
  B_PID=$!
  for _ in $(seq 50); do [ -S "$WORK/sockets-b/pf.sock" ] && break; sleep 0.1; done
  [ -S "$WORK/sockets-b/pf.sock" ] || fail "host B's hcaemu did not create its socket"
}
