#!/bin/bash
# Configures and builds hcaemu into ${HCAEMU_BUILD_DIR:-build} (ccache on), installing into
# ${HCAEMU_PREFIX:-<build>/install}. Extra arguments go to the CMake configure step.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${HCAEMU_BUILD_DIR:-$ROOT/build}"
PREFIX="${HCAEMU_PREFIX:-$BUILD/install}"
JOBS="${HCAEMU_JOBS:-$(nproc)}"
export CCACHE_DIR="${CCACHE_DIR:-${HCAEMU_CACHE:-$HOME/.cache/hcaemu}/ccache}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-2G}"
# CI builds a fresh clone in a new folder each time: hash paths relative to the checkout so the
# cache still hits.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"

echo "build: configuring $BUILD" >&2
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE="${HCAEMU_BUILD_TYPE:-RelWithDebInfo}" \
  -DCMAKE_INSTALL_PREFIX="$PREFIX" "$@" >/dev/null
echo "build: compiling with $JOBS jobs" >&2
cmake --build "$BUILD" -j "$JOBS"
cmake --install "$BUILD" >/dev/null
echo "build: installed into $PREFIX" >&2
