#!/bin/bash
# Installs every Debian 12 package that building hcaemu, its tests and its full-system tooling need.
# Idempotent: packages already present are left alone, and apt is only asked when something is missing.
set -euo pipefail

PACKAGES=(
  # build
  build-essential cmake pkg-config ccache git
  libsystemc-dev libboost-dev libboost-program-options-dev nlohmann-json3-dev
  libspdlog-dev libfmt-dev libpcap-dev zlib1g-dev libisal-dev
  libibverbs-dev  # hca_verbs_check, carried into the RDMA test guests
  # tests and benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  tshark  # traces_tshark_test: Wireshark's dissectors judge our RoCEv2 frames and pcaps
  # hcareplay plot/sweep draw their PNG (pngcairo) and SVG plots through gnuplot (the replay tool
  # tests draw them too); -nox: no X11. Without it the CSV files and .gp scripts are still written.
  gnuplot-nox
  clang libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer targets (CI runs each for a bounded time)
  # full-system tooling (QEMU provisioning, guest image, VM launcher)
  ca-certificates debian-archive-keyring apt-utils dpkg-dev cpio zstd xz-utils gzip file binutils
  util-linux procps coreutils iproute2 python3
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present" >&2
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run this script as root (or install them with apt-get)" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# wireshark-common (pulled in by tshark) asks whether non-root users may capture: answer no.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -qq || { sleep 2; apt-get update -qq; }
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done" >&2
