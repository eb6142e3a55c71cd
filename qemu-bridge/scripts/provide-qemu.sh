#!/usr/bin/env bash
# provide-qemu.sh - make a QEMU >= 10.1 with the vfio-user-pci device available.
#
# Prints, as the LAST line of stdout, the absolute path of an executable that runs
# qemu-system-x86_64 (either the system binary or a wrapper around a private prefix).
# Progress goes to stderr.
#
# Order of preference:
#   1. $HCAEMU_QEMU, if set (must be executable; it is trusted as is).
#   2. The system's qemu-system-x86_64, if it is >= 10.1 and lists vfio-user-pci.
#   3. A private prefix unpacked from Debian trixie-backports' qemu-system-x86 .debs,
#      downloaded with a private apt configuration (no root, system apt untouched).
#
# Environment:
#   HCAEMU_CACHE          cache dir (default ~/.cache/hcaemu)
#   HCAEMU_QEMU           use this QEMU binary, skip everything else
#   HCAEMU_DEBIAN_MIRROR  Debian mirror URL (default: the one the system's apt uses)
#   HCAEMU_DEBIAN_SECURITY_MIRROR  debian-security URL (default: derived likewise)
#   HCAEMU_FORCE_PRIVATE_QEMU=1    ignore the system QEMU even if it is new enough
set -euo pipefail

log() { printf 'provide-qemu: %s\n' "$*" >&2; }
die() { printf 'provide-qemu: ERROR: %s\n' "$*" >&2; exit 1; }

CACHE=${HCAEMU_CACHE:-$HOME/.cache/hcaemu}
QDIR=$CACHE/qemu
APTDIR=$QDIR/apt
PREFIX=$QDIR/prefix
WRAPPER=$QDIR/bin/qemu-system-x86_64
STAMP=$QDIR/.stamp
MIN_MAJOR=10
MIN_MINOR=1

SELF_HASH=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)

# --- helpers -----------------------------------------------------------------------

# qemu_ok BINARY: true if BINARY is QEMU >= 10.1 and knows vfio-user-pci.
qemu_ok() {
    local bin=$1 ver major minor
    ver=$("$bin" --version 2>/dev/null | sed -n 's/^QEMU emulator version \([0-9][0-9]*\)\.\([0-9][0-9]*\).*/\1 \2/p' | head -n1) || return 1
    [ -n "$ver" ] || return 1
    read -r major minor <<<"$ver"
    if [ "$major" -lt "$MIN_MAJOR" ] || { [ "$major" -eq "$MIN_MAJOR" ] && [ "$minor" -lt "$MIN_MINOR" ]; }; then
        return 1
    fi
    "$bin" -machine none -device help 2>/dev/null | grep -q '"vfio-user-pci"'
}

# Find the Debian mirror the system's apt uses: prints "MAIN_URI SECURITY_URI".
detect_mirror() {
    local uris="" f main="" sec=""
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -r "$f" ] || continue
        uris+=$(sed -n 's/^[[:space:]]*deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([a-z+]*:\/\/[^[:space:]]*\).*/\2/p' "$f")$'\n'
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -r "$f" ] || continue
        uris+=$(sed -n 's/^URIs:[[:space:]]*//p' "$f" | tr ' ' '\n')$'\n'
    done
    local u
    while read -r u; do
        [ -n "$u" ] || continue
        u=${u%/}
        case $u in
            */debian-security) [ -n "$sec" ] || sec=$u ;;
            */debian) [ -n "$main" ] || main=$u ;;
        esac
    done <<<"$uris"
    [ -n "$main" ] || main=http://deb.debian.org/debian
    if [ -z "$sec" ]; then
        # Same host as the main mirror.
        sec=${main%/debian}/debian-security
    fi
    printf '%s %s\n' "$main" "$sec"
}

# --- 1. explicit override ----------------------------------------------------------
if [ -n "${HCAEMU_QEMU:-}" ]; then
    [ -x "$HCAEMU_QEMU" ] || die "HCAEMU_QEMU=$HCAEMU_QEMU is not executable"
    log "using HCAEMU_QEMU=$HCAEMU_QEMU"
    printf '%s\n' "$(cd "$(dirname "$HCAEMU_QEMU")" && pwd)/$(basename "$HCAEMU_QEMU")"
    exit 0
fi

# --- 2. cached private prefix (fast path) ------------------------------------------
if [ -f "$STAMP" ] && [ -x "$WRAPPER" ] && [ "$(cat "$STAMP")" = "$SELF_HASH" ]; then
    printf '%s\n' "$WRAPPER"
    exit 0
fi

# --- 3. system QEMU ----------------------------------------------------------------
if [ "${HCAEMU_FORCE_PRIVATE_QEMU:-0}" != 1 ]; then
    if sysq=$(command -v qemu-system-x86_64 2>/dev/null); then
        if qemu_ok "$sysq"; then
            log "system QEMU is new enough: $sysq ($("$sysq" --version | head -n1))"
            printf '%s\n' "$sysq"
            exit 0
        fi
        log "system QEMU ($("$sysq" --version 2>/dev/null | head -n1)) is < $MIN_MAJOR.$MIN_MINOR or lacks vfio-user-pci"
    else
        log "no system qemu-system-x86_64"
    fi
fi

# --- 4. build the private prefix ---------------------------------------------------
command -v apt-get >/dev/null || die "apt-get not found (need a Debian-like host)"
command -v dpkg-deb >/dev/null || die "dpkg-deb not found"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$KEYRING" ] || die "$KEYRING missing (install debian-archive-keyring)"

mkdir -p "$QDIR"
exec 9>"$QDIR/.lock"
if command -v flock >/dev/null; then
    log "waiting for lock $QDIR/.lock"
    flock 9
fi
# Another process may have finished while we waited.
if [ -f "$STAMP" ] && [ -x "$WRAPPER" ] && [ "$(cat "$STAMP")" = "$SELF_HASH" ]; then
    printf '%s\n' "$WRAPPER"
    exit 0
fi

read -r MAIN_MIRROR SEC_MIRROR <<<"$(detect_mirror)"
MAIN_MIRROR=${HCAEMU_DEBIAN_MIRROR:-$MAIN_MIRROR}
SEC_MIRROR=${HCAEMU_DEBIAN_SECURITY_MIRROR:-$SEC_MIRROR}
log "Debian mirror: $MAIN_MIRROR (security: $SEC_MIRROR)"

mkdir -p "$APTDIR/state/lists/partial" "$APTDIR/cache/archives/partial" \
         "$APTDIR/preferences.d" "$APTDIR/apt.conf.d"
: >"$APTDIR/state/status"
cat >"$APTDIR/sources.list" <<EOF
deb [signed-by=$KEYRING] $MAIN_MIRROR trixie main
deb [signed-by=$KEYRING] $MAIN_MIRROR trixie-updates main
deb [signed-by=$KEYRING] $MAIN_MIRROR trixie-backports main
deb [signed-by=$KEYRING] $SEC_MIRROR trixie-security main
EOF
: >"$APTDIR/preferences"

APT=(apt-get
    -o "Dir::Etc::sourcelist=$APTDIR/sources.list"
    -o "Dir::Etc::sourceparts=-"
    -o "Dir::Etc::preferences=$APTDIR/preferences"
    -o "Dir::Etc::preferencesparts=$APTDIR/preferences.d"
    -o "Dir::State=$APTDIR/state"
    -o "Dir::State::status=$APTDIR/state/status"
    -o "Dir::Cache=$APTDIR/cache"
    -o "Dir::Cache::archives=$APTDIR/cache/archives"
    -o "Dir::Cache::pkgcache=$APTDIR/cache/pkgcache.bin"
    -o "Dir::Cache::srcpkgcache=$APTDIR/cache/srcpkgcache.bin"
    -o "Debug::NoLocking=1"
    -o "APT::Architecture=amd64"
    -o "APT::Architectures=amd64"
    -o "APT::Install-Recommends=0"
    -o "APT::Install-Suggests=0"
    -o "Acquire::Languages=none"
    -o "APT::Sandbox::User=$(id -un)"
)

APTLOG=$QDIR/apt.log
: >"$APTLOG"
apt_logged() { # run apt-get quietly; show its log on failure
    if ! "${APT[@]}" -q "$@" >>"$APTLOG" 2>&1; then
        tail -n 20 "$APTLOG" >&2
        return 1
    fi
}
log "apt update (private config in $APTDIR, log in $APTLOG)"
if ! apt_logged update; then
    log "apt update failed once; retrying"
    sleep 2
    apt_logged update || die "private apt update failed twice"
fi

log "downloading qemu-system-x86 from trixie-backports (+ full dependency closure)"
apt_logged -y --download-only -t trixie-backports install qemu-system-x86 \
    || die "apt-get --download-only install qemu-system-x86 failed"

shopt -s nullglob
debs=("$APTDIR"/cache/archives/*.deb)
[ "${#debs[@]}" -gt 0 ] || die "no .debs downloaded"
log "unpacking ${#debs[@]} .debs into $PREFIX"
rm -rf "$PREFIX.new"
mkdir -p "$PREFIX.new"
for d in "${debs[@]}"; do
    dpkg-deb -x "$d" "$PREFIX.new" || die "dpkg-deb -x $d failed"
done
rm -rf "$PREFIX"
mv "$PREFIX.new" "$PREFIX"

LIBDIR=$PREFIX/usr/lib/x86_64-linux-gnu
LDSO=$LIBDIR/ld-linux-x86-64.so.2
[ -e "$LDSO" ] || LDSO=$PREFIX/lib64/ld-linux-x86-64.so.2
[ -e "$LDSO" ] || die "no ld-linux-x86-64.so.2 in the prefix"
[ -x "$PREFIX/usr/bin/qemu-system-x86_64" ] || die "qemu-system-x86_64 missing from the prefix"

mkdir -p "$QDIR/bin"
cat >"$WRAPPER.new" <<EOF
#!/bin/sh
# Generated by provide-qemu.sh: runs QEMU from the private trixie-backports prefix
# through the prefix's own dynamic loader (the host's glibc is too old).
P='$PREFIX'
QEMU_MODULE_DIR="\$P/usr/lib/x86_64-linux-gnu/qemu"
export QEMU_MODULE_DIR
exec "\$P/${LDSO#"$PREFIX"/}" --argv0 qemu-system-x86_64 \\
    --library-path "\$P/usr/lib/x86_64-linux-gnu:\$P/usr/lib/x86_64-linux-gnu/pulseaudio" \\
    "\$P/usr/bin/qemu-system-x86_64" \\
    -L "\$P/usr/share/qemu" -L "\$P/usr/share/seabios" -L "\$P/usr/lib/ipxe/qemu" \\
    "\$@"
EOF
chmod +x "$WRAPPER.new"
mv "$WRAPPER.new" "$WRAPPER"

log "verifying"
"$WRAPPER" --version | head -n1 >&2 || die "wrapper does not run"
qemu_ok "$WRAPPER" || die "private QEMU is too old or lacks vfio-user-pci"
"$WRAPPER" -machine none -device help | grep vfio-user-pci >&2

# Downloaded .debs are no longer needed (the prefix is what counts).
rm -f "$APTDIR"/cache/archives/*.deb "$APTDIR"/cache/*.bin
printf '%s\n' "$SELF_HASH" >"$STAMP"
log "done: $WRAPPER"
printf '%s\n' "$WRAPPER"
