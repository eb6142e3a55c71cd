#!/bin/bash
# The test command: installs what is missing, builds, provisions QEMU and the guest image, then
# runs every CTest suite (unit, systemc, full-system). Pass CTest arguments to narrow it down,
# e.g. scripts/run-tests.sh -L unit
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/install-deps.sh"
"$ROOT/scripts/build.sh"
BUILD="${HCAEMU_BUILD_DIR:-$ROOT/build}"
if [ "${HCAEMU_SKIP_FULL_SYSTEM:-0}" != 1 ]; then
  echo "run-tests: providing QEMU and the guest image (cached under ${HCAEMU_CACHE:-$HOME/.cache/hcaemu})" >&2
  "$ROOT/qemu-bridge/scripts/provide-qemu.sh" >/dev/null
  "$ROOT/qemu-bridge/scripts/build-guest-image.sh" >/dev/null
fi
cd "$BUILD"
export SC_COPYRIGHT_MESSAGE=DISABLE
ctest --output-on-failure -j "${HCAEMU_TEST_JOBS:-2}" --timeout 900 "$@"
