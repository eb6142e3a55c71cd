#!/bin/bash
# Prints every benchmark figure of the project in one run (nothing here is a pass/fail test):
# the model-side bridge and command-engine benchmarks, another function's delay under a misbehaving
# client, then the guest-side figures (MMIO round
# trip, posted writes, hcaemu idle CPU/RSS, guest boot time, mlx5 bring-up times), TCP between two
# VMs through the emulated NIC beside virtio-net, then RDMA between two VMs on the emulated HCA
# beside Soft-RoCE (bench/rdma_compare.sh). Each figure is preceded by the command that produced
# it. Builds and provisions what is missing first.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${HCAEMU_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/install-deps.sh"
"$ROOT/scripts/build.sh" >/dev/null
"$ROOT/qemu-bridge/scripts/provide-qemu.sh" >/dev/null
"$ROOT/qemu-bridge/scripts/build-guest-image.sh" >/dev/null
export SC_COPYRIGHT_MESSAGE=DISABLE
echo "== host: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
run() {  # prints the command, then its figures; a failed benchmark does not stop the others
  echo "\$ $*"
  "$@" || echo "(failed with status $?)"
}
run "$BUILD/bench/bridge_bench"
run "$BUILD/bench/command_bench"
run "$BUILD/bench/engine_bench"
run "$BUILD/bench/isolation_delay" "$BUILD/install/bin/hcaemu"
run "$ROOT/bench/guest_figures.sh" "$BUILD/install/bin/hcaemu" "$BUILD/install/bin/hcavm" "$BUILD/bench/mmio_probe"
run "$ROOT/bench/bringup_figures.sh" "$BUILD/install/bin/hcaemu" "$BUILD/install/bin/hcavm"
run "$ROOT/bench/tcp_compare.sh" "$BUILD/install/bin/hcaemu" "$BUILD/install/bin/hcavm"
run "$ROOT/bench/rdma_compare.sh" "$BUILD/install/bin/hcaemu" "$BUILD/install/bin/hcavm" \
  "$BUILD/testbench/system/verbs/hca_verbs_check"
