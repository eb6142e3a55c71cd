#!/bin/bash
# The test command: installs what is missing, builds, provisions QEMU and the guest image, then
# runs every CTest suite (unit, systemc, full-system). Under CI (CI=true) or with
# HCAEMU_SANITIZE_TESTS=1 it also builds an ASan/UBSan tree and runs the unit and SystemC suites
# in it, and runs every libFuzzer target for a bounded time (HCAEMU_FUZZ_SECONDS each, default 20;
# scripts/fuzz.sh runs longer campaigns). A full-system test that fails is run once more; the
# summary at the end names every failure of the main run, with its FAIL line, and any test that
# passed only on the retry. Extra arguments go to the main CTest run, e.g.
# scripts/run-tests.sh -L unit
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${HCAEMU_BUILD_DIR:-$ROOT/build}"
export SC_COPYRIGHT_MESSAGE=DISABLE

"$ROOT/scripts/install-deps.sh"
"$ROOT/scripts/build.sh"
if [ "${HCAEMU_SKIP_FULL_SYSTEM:-0}" != 1 ]; then
  echo "run-tests: providing QEMU and the guest image (cached under ${HCAEMU_CACHE:-$HOME/.cache/hcaemu})" >&2
  "$ROOT/qemu-bridge/scripts/provide-qemu.sh" >/dev/null
  "$ROOT/qemu-bridge/scripts/build-guest-image.sh" >/dev/null
  # Every full-system test runs on a Debian 13 guest too (NAME_debian13: kernel 6.12, rdma-core 56).
  HCAEMU_GUEST_RELEASE=13 "$ROOT/qemu-bridge/scripts/build-guest-image.sh" >/dev/null
fi

status=0
# Tests labelled "experimental" are known to be unstable (see their CMake comment); run them with
# scripts/run-tests.sh -L experimental. rdma-core's own test suite in PF and VF guests (label
# rdma-suite, about 11 minutes per guest image; Debian 13's test_flow_meter still errs: issue 16)
# runs with scripts/run-tests.sh -L rdma-suite.
if [ $# -eq 0 ]; then set -- -LE "experimental|rdma-suite"; fi
(cd "$BUILD" && ctest --output-on-failure -j "${HCAEMU_TEST_JOBS:-2}" --timeout 1200 "$@") || status=$?

# A full-system test boots TCG guests whose timing the host's load sways; one that fails is run
# once more and named in the summary at the end either way. Unit and SystemC tests are
# deterministic: a failure there stands. HCAEMU_RETRY_FULL_SYSTEM=0 turns the retry off.
summary=()
temporary="$BUILD/Testing/Temporary"
if [ $status -ne 0 ] && [ -s "$temporary/LastTestsFailed.log" ]; then
  mapfile -t failed < <(cut -d: -f2- "$temporary/LastTestsFailed.log")
  cp "$temporary/LastTest.log" "$temporary/LastTest.first-run.log"
  for name in "${failed[@]}"; do
    reason=$(awk -v t="$name" '$0 ~ "^[0-9]+/[0-9]+ Testing: " t "$" {on = 1} on && /^FAIL: / {print; exit}' \
      "$temporary/LastTest.first-run.log")
    summary+=("failed: $name${reason:+ ($reason)}")
  done
  full_system=$(cd "$BUILD" && ctest -N -L full-system | sed -n 's/^ *Test *#[0-9]*: //p')
  only_full_system=1
  for name in "${failed[@]}"; do grep -qxF "$name" <<< "$full_system" || only_full_system=0; done
  if [ "${HCAEMU_RETRY_FULL_SYSTEM:-1}" = 1 ] && [ $only_full_system = 1 ]; then
    echo "run-tests: running the failed full-system tests once more: ${failed[*]}" >&2
    if (cd "$BUILD" && ctest --output-on-failure --rerun-failed --timeout 1200); then
      status=0
      summary+=("passed on the retry: ${failed[*]} (flaky: the first run's output is above)")
    else
      summary+=("failed again on the retry")
    fi
  fi
fi

if [ "${CI:-}" = true ] || [ "${HCAEMU_SANITIZE_TESTS:-0}" = 1 ]; then
  echo "run-tests: ASan/UBSan build of the unit and SystemC suites" >&2
  HCAEMU_BUILD_DIR="$BUILD-asan" "$ROOT/scripts/build.sh" -DHCAEMU_SANITIZE=ON -DHCAEMU_BENCH=OFF \
    -DHCAEMU_FULL_SYSTEM_TESTS=OFF
  (cd "$BUILD-asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j "${HCAEMU_TEST_JOBS:-2}" -L "unit|systemc") || status=$?
  echo "run-tests: fuzzing each parser for ${HCAEMU_FUZZ_SECONDS:-20} s" >&2
  HCAEMU_FUZZ_BUILD_DIR="$BUILD-fuzz" "$ROOT/scripts/fuzz.sh" --seconds "${HCAEMU_FUZZ_SECONDS:-20}" || status=$?
fi
if [ ${#summary[@]} -gt 0 ]; then
  echo "run-tests: summary of the main CTest run:"
  printf '  %s\n' "${summary[@]}"
fi
exit $status
