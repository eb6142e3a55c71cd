#!/bin/bash
# Full-system test (issue 16): rdma-core's own test suite (python3-pyverbs' tests, run_tests.py)
# in a guest on the PF and in a guest on VF0 of one hcaemu, one module at a time, each under a
# timeout, on the RoCE v2 GID of an IPv4 address. Prints a per-module table (rdma_suite_tally.py)
# for each function and fails on any failed, erroring, timed-out or missing module, on a skip that
# is not in rdma_suite_expected_skips.txt and on a task blocked in the guest kernel (mlx5_core's
# log of commands the tests make fail on purpose is shown, not judged). Needs the guest image variant with Python (HCAEMU_GUEST_VARIANT=pyverbs, built on
# first use). Usage: [SUITE_FUNCTIONS="pf vf"] [SUITE_MODULES="test_mr test_qp ..."]
#   [SUITE_MODULE_TIMEOUT=300] [SUITE_SOFTWARE_STEERING=0] run_rdma_suite.sh HCAEMU HCAVM
set -uo pipefail
HCAEMU=$1
HCAVM=$2
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KEEP_LOG=/tmp/last-suite-hcaemu.log
source "$HERE/fullsys_lib.sh"
export HCAEMU_GUEST_VARIANT=pyverbs
FUNCTIONS=${SUITE_FUNCTIONS:-pf vf}
MODULE_TIMEOUT=${SUITE_MODULE_TIMEOUT:-300}

# rdma-core's raw packet tests send frames from a made-up source MAC (PacketConsts.SRC_MAC), which
# the VF's source-MAC spoof check drops, as a ConnectX's does: the host admin turns it off for the
# VF under test, as `ip link set PF vf 0 spoofchk off` would.
# mlx5 DR software steering is hcaemu's default; SUITE_SOFTWARE_STEERING=0 turns it off
# (hcaemu --no-software-steering).
steering=$([ "${SUITE_SOFTWARE_STEERING:-1}" = 0 ] && echo ', "software_steering": false')
echo '{"vfs": {"0": {"spoofchk": false}}'"$steering"'}' > "$WORK/suite-config.json"
start_hcaemu 1 --config "$WORK/suite-config.json" ${HCAEMU_TEST_LOG_LEVEL:+--log-level $HCAEMU_TEST_LOG_LEVEL}
verdict=0
for fn in $FUNCTIONS; do
  case $fn in
    pf) socket=$WORK/sockets/pf.sock address=10.9.1.1 ;;
    vf) socket=$WORK/sockets/vf0.sock address=10.9.1.2 ;;
    *) fail "SUITE_FUNCTIONS: $fn is neither pf nor vf" ;;
  esac
  {
    printf 'MODULES="%s"\nMODULE_TIMEOUT=%s\nADDRESS=%s\n' "${SUITE_MODULES:-}" "$MODULE_TIMEOUT" "$address"
    cat "$HERE/guest/mlx5_lib.sh" "$HERE/guest/rdma_suite.sh"
  } > "$WORK/suite-$fn.sh"
  echo "== rdma-core suite in a guest on the $fn (modules: ${SUITE_MODULES:-all}, ${MODULE_TIMEOUT} s each)"
  start=$SECONDS
  "$HCAVM" --name "suite-$fn" --mem 2G --script "$WORK/suite-$fn.sh" --timeout "${SUITE_VM_TIMEOUT:-7200}" \
    --attach "$socket" > "$WORK/suite-$fn.log" 2>&1
  rc=$?
  echo "guest on the $fn: exit $rc after $((SECONDS - start)) s"
  grep -E "CHECK|SUITE-SETUP|SUITE-ERROR|SUITE-DMESG|blocked for more than" "$WORK/suite-$fn.log"
  [ -n "${SUITE_LOG_DIR:-}" ] && cp "$WORK/suite-$fn.log" "$SUITE_LOG_DIR/suite-$fn.log"
  python3 "$HERE/rdma_suite_tally.py" "$WORK/suite-$fn.log" "$HERE/rdma_suite_expected_skips.txt" "on the $fn" "$fn" || verdict=1
  [ $rc -eq 0 ] || verdict=1
done
kill -TERM "$HCAEMU_PID"; wait "$HCAEMU_PID"; HCAEMU_PID=
[ $verdict -eq 0 ] || fail "the rdma-core suite did not pass (tables above)"
echo "PASS"
