#!/bin/bash
# Coverage-guided fuzzing of the parsers that take untrusted input: vfio-user messages, command
# queue entries and mailboxes, send/receive WQEs and signature BSFs, RoCEv2 frames (alone and into live RC/UC/UD/XRC
# QPs), config space writes, the vfio-user server with fds and a late backend, packet captures and workload
# files. Builds the libFuzzer targets with clang (every library instrumented, ASan and UBSan on)
# into ${HCAEMU_FUZZ_BUILD_DIR:-build-fuzz} and runs each for a bounded time from its seed corpus
# (testbench/fuzz-corpus/TARGET); what a run finds goes to a scratch corpus, or with
# --update-corpus is merged back into the seeds (minimised). Prints the executions per target.
# Exit status 1 when a target crashed (its input is kept under BUILD/crashes/TARGET/).
# Usage: scripts/fuzz.sh [--seconds N] [--update-corpus] [TARGET ...]   (default: 60 s, all targets)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${HCAEMU_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
SECONDS_EACH=60
UPDATE=0
TARGETS=()
ALL=(fuzz_vfio_user_messages fuzz_command_queue fuzz_send_wqe fuzz_roce_packet fuzz_capture fuzz_workload fuzz_fabric fuzz_qp_table
     fuzz_rdma_wire fuzz_config_space fuzz_vfio_user_fds fuzz_stream_framing fuzz_link_control)
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    --update-corpus) UPDATE=1; shift ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL[@]}")
command -v clang++ > /dev/null || { echo "fuzz: clang++ is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }

mkdir -p "$BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHCAEMU_FUZZ=ON -DHCAEMU_BENCH=OFF -DHCAEMU_FULL_SYSTEM_TESTS=OFF > "$BUILD/fuzz-configure.log" 2>&1 ||
  { cat "$BUILD/fuzz-configure.log"; exit 1; }
echo "fuzz: building ${TARGETS[*]} in $BUILD" >&2
cmake --build "$BUILD" -j "$(nproc)" --target "${TARGETS[@]}" > "$BUILD/fuzz-build.log" 2>&1 ||
  { tail -40 "$BUILD/fuzz-build.log"; exit 1; }

status=0
for target in "${TARGETS[@]}"; do
  binary=$(find "$BUILD/testbench" -name "$target" -type f -executable | head -1)
  seeds="$ROOT/testbench/fuzz-corpus/$target"
  scratch="$BUILD/corpus/$target"
  crashes="$BUILD/crashes/$target"
  mkdir -p "$seeds" "$scratch" "$crashes"
  log="$BUILD/$target.log"
  # Inputs stay small (a few frames, a short workload) so that the seed corpus stays small too.
  case "$target" in
    fuzz_capture) max_len=(-max_len=16384) ;;
    fuzz_workload | fuzz_fabric | fuzz_qp_table) max_len=(-max_len=8192) ;;
    *) max_len=() ;;
  esac
  if "$binary" -max_total_time="$SECONDS_EACH" -timeout=10 -print_final_stats=1 -artifact_prefix="$crashes/" \
       "${max_len[@]}" "$scratch" "$seeds" > "$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz: $target: $runs executions in ${SECONDS_EACH} s, corpus $(ls "$scratch" | wc -l) new + $(ls "$seeds" | wc -l) seeds, no crash"
  else
    echo "fuzz: $target CRASHED (input kept in $crashes):"
    grep -E "ERROR|SUMMARY|runtime error" "$log" | head -5
    status=1
  fi
  if [ "$UPDATE" = 1 ]; then
    merged=$(mktemp -d)
    "$binary" -merge=1 "${max_len[@]}" "$merged" "$seeds" "$scratch" > "$BUILD/$target.merge.log" 2>&1
    rm -rf "${seeds:?}"/* && cp "$merged"/* "$seeds"/ 2>/dev/null || true
    rm -rf "$merged"
    echo "fuzz: $target: seed corpus now $(ls "$seeds" | wc -l) inputs"
  fi
done
exit $status
