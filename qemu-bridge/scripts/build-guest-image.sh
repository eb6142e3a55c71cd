#!/usr/bin/env bash
# build-guest-image.sh - build the default hcavm guest: an uncompressed ELF vmlinux (PVH
# direct boot) and an uncompressed initramfs.cpio, both from Debian 12 packages only.
#
# Output (into $CACHE/guest/):
#   vmlinux          ELF kernel extracted from linux-image-6.1.0-*-amd64's bzImage
#   initramfs.cpio   busybox + kernel modules + RDMA userspace + /init
#   kernel-version   e.g. "6.1.0-57-amd64 6.1.192-3"
# Prints on stdout (last three lines):
#   HCAVM_VMLINUX=/abs/path/vmlinux
#   HCAVM_INITRD=/abs/path/initramfs.cpio
#   HCAVM_KERNEL=<uname -r of the guest>
# Progress goes to stderr. Fast (no apt access) when the stamp matches.
#
# Environment:
#   HCAEMU_CACHE           cache dir (default ~/.cache/hcaemu)
#   HCAEMU_GUEST_RELEASE   12 (default: Debian 12, kernel 6.1, rdma-core 44) or 13 (Debian 13:
#                          kernel 6.12, rdma-core 56, from trixie through a private apt
#                          configuration in $CACHE/apt-trixie; the system's apt is untouched);
#                          built into $CACHE/guest13[-pyverbs]/
#   HCAEMU_GUEST_KERNEL    pin the kernel ABI, e.g. 6.1.0-57-amd64 (default: newest in apt)
#   HCAEMU_GUEST_REBUILD=1 rebuild even if the stamp matches (e.g. to pick up a new kernel)
#   HCAEMU_GUEST_VARIANT   "pyverbs": the same image plus Python 3.11, python3-pyverbs, scapy and
#                          rdma-core's own test suite (run_tests.py and its modules, unzipped)
#                          in /usr/share/rdma-core-tests; built into $CACHE/guest-pyverbs/
#
# Uses the system's apt (Debian 12 lists) for `apt-cache` and `apt-get download`; needs
# dpkg-deb, cpio and the decompressor of the kernel payload (xz on Debian 12) on the host.
set -euo pipefail

log() { printf 'build-guest-image: [%ss] %s\n' "$SECONDS" "$*" >&2; }
die() { printf 'build-guest-image: ERROR: %s\n' "$*" >&2; exit 1; }

CACHE=${HCAEMU_CACHE:-$HOME/.cache/hcaemu}
VARIANT=${HCAEMU_GUEST_VARIANT:-}
RELEASE=${HCAEMU_GUEST_RELEASE:-12}
case $RELEASE in
    12) GDIR=$CACHE/guest ;;
    13) GDIR=$CACHE/guest13 ;;
    *) die "HCAEMU_GUEST_RELEASE=$RELEASE: the releases are 12 and 13" ;;
esac
case $VARIANT in
    "") ;;
    pyverbs) GDIR=$GDIR-pyverbs ;;
    *) die "HCAEMU_GUEST_VARIANT=$VARIANT: the variants are pyverbs (or none)" ;;
esac
STAMP=$GDIR/.stamp
SELF_HASH=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)

print_paths() {
    printf 'HCAVM_VMLINUX=%s\n' "$GDIR/vmlinux"
    printf 'HCAVM_INITRD=%s\n' "$GDIR/initramfs.cpio"
    printf 'HCAVM_KERNEL=%s\n' "$(cut -d' ' -f1 "$GDIR/kernel-version")"
}

stamp_ok() {
    [ "${HCAEMU_GUEST_REBUILD:-0}" != 1 ] && [ -f "$STAMP" ] && [ -f "$GDIR/vmlinux" ] \
        && [ -f "$GDIR/initramfs.cpio" ] && [ -f "$GDIR/kernel-version" ] \
        && [ "$(head -n1 "$STAMP")" = "$SELF_HASH ${HCAEMU_GUEST_KERNEL:-newest}${VARIANT:+ $VARIANT} $RELEASE" ]
}

if stamp_ok; then
    print_paths
    exit 0
fi

for t in apt-get apt-cache dpkg-deb cpio sha256sum od; do
    command -v "$t" >/dev/null || die "host tool '$t' not found"
done

mkdir -p "$GDIR"
exec 9>"$GDIR/.lock"
if command -v flock >/dev/null; then
    log "waiting for lock $GDIR/.lock"
    flock 9
fi
if stamp_ok; then
    print_paths
    exit 0
fi
HCAEMU_GUEST_REBUILD=0

# --- apt: the system's for Debian 12, a private one for Debian 13 ---------------------
APT_GET=(apt-get)
APT_CACHE=(apt-cache)
KERNEL_PATTERN='^linux-image-6\.1\.0-[0-9]+-amd64$'
if [ "$RELEASE" = 13 ]; then
    KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
    [ -r "$KEYRING" ] || die "$KEYRING missing (install debian-archive-keyring)"
    APTDIR=$CACHE/apt-trixie
    mirror=$(sed -n 's/^URIs:[[:space:]]*\(.*\/debian\)\/*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)
    mirror=${HCAEMU_DEBIAN_MIRROR:-${mirror:-http://deb.debian.org/debian}}
    mkdir -p "$APTDIR/state/lists/partial" "$APTDIR/cache/archives/partial" "$APTDIR/parts"
    [ -f "$APTDIR/state/status" ] || : >"$APTDIR/state/status"
    printf 'deb [signed-by=%s] %s trixie main\ndeb [signed-by=%s] %s trixie-updates main\n' \
        "$KEYRING" "$mirror" "$KEYRING" "$mirror" >"$APTDIR/sources.list"
    opts=(-o "Dir::Etc::sourcelist=$APTDIR/sources.list" -o "Dir::Etc::sourceparts=$APTDIR/parts"
          -o "Dir::Etc::preferences=/dev/null" -o "Dir::Etc::preferencesparts=$APTDIR/parts"
          -o "Dir::State=$APTDIR/state" -o "Dir::State::status=$APTDIR/state/status"
          -o "Dir::Cache=$APTDIR/cache" -o "APT::Architecture=amd64" -o "APT::Architectures=amd64")
    APT_GET=(apt-get "${opts[@]}")
    APT_CACHE=(apt-cache "${opts[@]}")
    if [ -z "$(find "$APTDIR/state/lists" -name '*_trixie_InRelease' -mtime -7 2>/dev/null)" ]; then
        log "apt update for Debian 13 (private configuration in $APTDIR)"
        "${APT_GET[@]}" -q -o "APT::Sandbox::User=$(id -un)" update >"$APTDIR/update.log" 2>&1 \
            || { tail -n 20 "$APTDIR/update.log" >&2; die "apt update of the Debian 13 lists failed"; }
    fi
    KERNEL_PATTERN='^linux-image-6\.12\.[0-9]+\+deb13-amd64$'
fi

# --- packages ------------------------------------------------------------------------
if [ -n "${HCAEMU_GUEST_KERNEL:-}" ]; then
    KPKG=linux-image-$HCAEMU_GUEST_KERNEL
else
    KPKG=$("${APT_CACHE[@]}" search --names-only "$KERNEL_PATTERN" \
           | awk '{print $1}' | sort -V | tail -n1)
    [ -n "$KPKG" ] || die "no kernel matching $KERNEL_PATTERN in apt's lists (apt-get update?)"
fi
KVER=${KPKG#linux-image-}
KPKGVER=$("${APT_CACHE[@]}" show --no-all-versions "$KPKG" 2>/dev/null | sed -n 's/^Version: //p' | head -n1)
[ -n "$KPKGVER" ] || die "apt does not know $KPKG"
log "guest kernel: $KPKG $KPKGVER"

# Guest userspace. Everything an ELF in the image links against must be here; the closure is
# checked below with the image's own loader. Debian 13 renamed libraries for 64-bit time_t (t64).
if [ "$RELEASE" = 13 ]; then
    T64=t64 PYTHON=python3.13 LIBSSL=libssl3t64
else
    T64="" PYTHON=python3.11 LIBSSL=libssl3
fi
GUEST_PKGS=(
    busybox-static
    libc6 libgcc-s1
    libibverbs1 ibverbs-providers ibverbs-utils "librdmacm1$T64" rdmacm-utils libibumad3 perftest
    libnl-3-200 libnl-route-3-200
    iproute2 libmnl0 "libelf1$T64" libbpf1 libcap2 libxtables12 libselinux1 libpcre2-8-0
    libzstd1 zlib1g "libdb5.3$T64" libbsd0 libmd0 "libtirpc3$T64" libgssapi-krb5-2 libkrb5-3
    libk5crypto3 libkrb5support0 libcom-err2 libkeyutils1 "$LIBSSL"
    pciutils libpci3 pci.ids libudev1 libkmod2 liblzma5
)
# rdma-core's test suite (issue 16): Python and pyverbs, and what the interpreter's own
# extension modules link against.
if [ "$VARIANT" = pyverbs ]; then
    GUEST_PKGS+=(
        python3-pyverbs "$PYTHON-minimal" "lib$PYTHON-minimal" "lib$PYTHON-stdlib" "lib$PYTHON"
        libexpat1 libffi8 libbz2-1.0 libsqlite3-0 libncursesw6 libtinfo6 "libreadline8$T64" libuuid1
        libcrypt1 "libgdbm6$T64" "libgdbm-compat4$T64" libnsl2 media-types
        python3-scapy netbase  # the suite's mlx5 DevX and DR tests build PRM structs with scapy
    )
fi
# Host-side tools only (depmod), run through the guest's loader.
TOOL_PKGS=(kmod)

DEBS=$GDIR/debs
rm -rf "$DEBS" "$GDIR/work"
mkdir -p "$DEBS"
log "downloading ${#GUEST_PKGS[@]} guest packages + kernel from Debian $RELEASE (apt-get download)"
if ! (cd "$DEBS" && "${APT_GET[@]}" -q -o "APT::Sandbox::User=$(id -un)" download \
        "$KPKG" "${GUEST_PKGS[@]}" "${TOOL_PKGS[@]}" >"$GDIR/apt.log" 2>&1); then
    tail -n 20 "$GDIR/apt.log" >&2
    die "apt-get download failed (stale lists? try: apt-get update)"
fi

WORK=$GDIR/work
RAW=$WORK/raw        # guest userspace as packaged (not usr-merged)
KRAW=$WORK/kernel    # kernel package
TOOLS=$WORK/tools    # kmod for depmod
ROOT=$WORK/root      # the initramfs tree (usr-merged)
mkdir -p "$RAW" "$KRAW" "$TOOLS" "$ROOT"

pkgfile() { # first .deb of package $1
    local f
    for f in "$DEBS/$1"_*.deb; do
        [ -e "$f" ] && { printf '%s\n' "$f"; return 0; }
    done
    # apt-get download escapes ':' in epochs as %3a; the package name is unaffected.
    return 1
}

log "unpacking"
dpkg-deb -x "$(pkgfile "$KPKG")" "$KRAW" || die "unpacking $KPKG failed"
[ -e "$KRAW/lib" ] || ln -s usr/lib "$KRAW/lib"  # Debian 13's modules are in usr/lib/modules
for p in "${GUEST_PKGS[@]}"; do
    f=$(pkgfile "$p") || die "package $p was not downloaded"
    dpkg-deb -x "$f" "$RAW"
done
for p in "${TOOL_PKGS[@]}" libc6 libkmod2 liblzma5 libzstd1 "$LIBSSL"; do
    dpkg-deb -x "$(pkgfile "$p")" "$TOOLS"
done

# --- kernel: bzImage -> ELF vmlinux ----------------------------------------------------
BZ=$KRAW/boot/vmlinuz-$KVER
[ -f "$BZ" ] || die "$BZ missing in $KPKG"

u8()  { od -An -tu1 -j "$2" -N1 "$1" | tr -d ' '; }
u32() { od -An -tu4 -j "$2" -N4 --endian=little "$1" | tr -d ' '; }

extract_vmlinux() { # bzImage out
    local bz=$1 out=$2 magic setup_sects payload_off payload_len off
    [ "$(od -An -c -j $((0x202)) -N4 "$bz" | tr -d ' ')" = HdrS ] || die "$bz is not a bzImage"
    setup_sects=$(u8 "$bz" $((0x1f1)))
    [ "$setup_sects" -ne 0 ] || setup_sects=4
    payload_off=$(u32 "$bz" $((0x248)))
    payload_len=$(u32 "$bz" $((0x24c)))
    off=$(( (setup_sects + 1) * 512 + payload_off ))
    magic=$(od -An -tx1 -j "$off" -N6 "$bz" | tr -d ' ')
    # The build appends the decompressed size (4 bytes, LE) to the compressed stream;
    # it counts in payload_length but is not part of the stream: drop it.
    local dec
    case $magic in
        fd377a585a00) dec=(xz -dc --single-stream) ;;
        28b52ffd*)    dec=(zstd -dcq) ;;
        1f8b*)        dec=(gzip -dc) ;;
        5d0000*)      dec=(xz -dc --format=lzma) ;;
        02214c18*)    dec=(lz4 -dc) ;;
        *) die "unknown kernel payload compression (magic $magic)" ;;
    esac
    command -v "${dec[0]}" >/dev/null || die "host tool '${dec[0]}' needed to decompress the kernel"
    log "kernel payload: offset $off, $payload_len bytes, ${dec[0]}"
    dd if="$bz" bs=1M iflag=skip_bytes,count_bytes skip="$off" count=$((payload_len - 4)) \
        status=none | "${dec[@]}" >"$out.tmp" \
        || die "decompressing the kernel payload failed"
    [ "$(od -An -c -N4 "$out.tmp" | tr -d ' ')" = '177ELF' ] || die "payload is not an ELF"
    if command -v readelf >/dev/null; then
        # XEN_ELFNOTE_PHYS32_ENTRY (type 0x12) is the PVH entry point.
        readelf -n "$out.tmp" 2>/dev/null | grep -q 'Xen.*0x00000012\|Xen.*PHYS32' \
            || log "WARNING: no PVH (Xen PHYS32_ENTRY) note found in the vmlinux"
    fi
    mv "$out.tmp" "$out"
}
extract_vmlinux "$BZ" "$WORK/vmlinux"

# --- root tree ---------------------------------------------------------------------------
log "assembling the root tree"
mkdir -p "$ROOT"/usr/{bin,sbin,lib,lib64} "$ROOT"/{dev,proc,sys,tmp,run,root,etc,mnt,var}
ln -s usr/bin "$ROOT/bin"; ln -s usr/sbin "$ROOT/sbin"
ln -s usr/lib "$ROOT/lib"; ln -s usr/lib64 "$ROOT/lib64"
for d in bin sbin lib lib64; do
    [ -d "$RAW/$d" ] && cp -a "$RAW/$d/." "$ROOT/usr/$d/"
done
cp -a "$RAW/usr/." "$ROOT/usr/"
[ -d "$RAW/etc" ] && cp -a "$RAW/etc/." "$ROOT/etc/"
# The suite ships as documentation (some modules gzipped): keep it, unzipped, out of the way of
# the documentation removed below.
if [ "$VARIANT" = pyverbs ]; then
    [ -f "$ROOT/usr/share/doc/rdma-core/tests/run_tests.py" ] || die "python3-pyverbs has no tests/run_tests.py"
    mv "$ROOT/usr/share/doc/rdma-core/tests" "$ROOT/usr/share/rdma-core-tests"
    gunzip -f "$ROOT"/usr/share/rdma-core-tests/*.gz
    ln -sf "$PYTHON" "$ROOT/usr/bin/python3"
fi
# Documentation, manuals, locales and lintian data are dead weight in an initramfs.
rm -rf "$ROOT"/usr/share/{doc,man,info,locale,lintian,bug,bash-completion,zsh}
# tc's ATM qdisc plugin needs libatm (ATM is irrelevant here).
rm -f "$ROOT"/usr/lib/x86_64-linux-gnu/tc/q_atm.so
# iconv modules (8 MB) and initramfs-tools hooks are unused here.
rm -rf "$ROOT"/usr/lib/x86_64-linux-gnu/gconv "$ROOT"/usr/share/initramfs-tools "$ROOT"/usr/sbin/update-pciids

BB=$ROOT/usr/bin/busybox
[ -x "$BB" ] || die "busybox missing"
# Busybox applet links in their usual directories (the kernel runs /sbin/modprobe for
# request_module), without replacing real programs (iproute2's ip, pciutils' lspci).
while read -r a; do
    n=${a##*/}
    [ -e "$ROOT/usr/bin/$n" ] || [ -e "$ROOT/usr/sbin/$n" ] || [ -L "$ROOT/usr/bin/$n" ] \
        || [ -L "$ROOT/usr/sbin/$n" ] && continue
    case $a in
        sbin/*|usr/sbin/*) ln -s ../bin/busybox "$ROOT/usr/sbin/$n" ;;
        *) ln -s busybox "$ROOT/usr/bin/$n" ;;
    esac
done < <("$BB" --list-full)
ln -sf busybox "$ROOT/usr/bin/sh"

# Debian's busybox runs its own applet for a bare command name in sh scripts even when a
# real program exists. Shell functions win over applets, so the prelude sourced before the
# user's script maps each shadowed name to the real program.
mkdir -p "$ROOT/etc/hcavm"
{
    echo "# generated by build-guest-image.sh: real programs that busybox applets would shadow"
    while read -r a; do
        n=${a##*/}
        for d in usr/sbin usr/bin; do
            f=$ROOT/$d/$n
            if [ -e "$f" ]; then
                case $(readlink -f "$f") in */busybox) continue ;; esac
                printf '%s() { /%s/%s "$@"; }\n' "$n" "$d" "$n"
                break
            fi
        done
    done < <("$BB" --list-full)
} >"$ROOT/etc/hcavm/prelude.sh"

# --- kernel modules ----------------------------------------------------------------------
# Debian 13 is usr-merged: its loader and kmod are under usr/.
LDSO_T=$TOOLS/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
[ -e "$LDSO_T" ] || LDSO_T=$TOOLS/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
KMOD_T=$TOOLS/bin/kmod
[ -e "$KMOD_T" ] || KMOD_T=$TOOLS/usr/bin/kmod
TLIB=$TOOLS/lib/x86_64-linux-gnu:$TOOLS/usr/lib/x86_64-linux-gnu
depmod_b() { # basedir
    "$LDSO_T" --inhibit-cache --library-path "$TLIB" --argv0 depmod "$KMOD_T" \
        -b "$1" "$KVER"
}
log "depmod on the full module tree"
depmod_b "$KRAW" || die "depmod (full tree) failed"

WANT_MODULES=(
    qemu_fw_cfg
    virtio_pci virtio_net virtio_blk virtio_console
    mlx5_core mlx5_ib ib_core ib_uverbs ib_umad
    rdma_rxe crc32_generic udp_tunnel ip6_udp_tunnel
    rdma_ucm rdma_cm ib_cm iw_cm configfs
    macvlan
    sch_htb
)
MODDIR=$KRAW/lib/modules/$KVER
declare -A MODPATH=()
while IFS=: read -r path _; do
    b=${path##*/}; b=${b%.ko*}; b=${b//-/_}
    MODPATH[$b]=$path
done <"$MODDIR/modules.dep"
declare -A TAKE=()
for m in "${WANT_MODULES[@]}"; do
    m=${m//-/_}
    if [ -n "${MODPATH[$m]:-}" ]; then
        TAKE[${MODPATH[$m]}]=1
        # modules.dep lists the full (recursive) dependency set of each module.
        for dep in $(sed -n "s|^${MODPATH[$m]}:||p" "$MODDIR/modules.dep"); do
            TAKE[$dep]=1
        done
    elif grep -q "/${m}.ko" "$MODDIR/modules.builtin" 2>/dev/null \
         || grep -q "/${m//_/-}.ko" "$MODDIR/modules.builtin" 2>/dev/null; then
        log "module $m is built in"
    else
        die "module $m not found in $KPKG"
    fi
done
GMOD=$ROOT/usr/lib/modules/$KVER
mkdir -p "$GMOD"
for f in modules.builtin modules.builtin.modinfo modules.order; do
    [ -f "$MODDIR/$f" ] && cp "$MODDIR/$f" "$GMOD/"
done
for p in "${!TAKE[@]}"; do
    mkdir -p "$GMOD/$(dirname "$p")"
    cp "$MODDIR/$p" "$GMOD/$p"
    # Debian 13 ships modules xz-compressed; busybox's modprobe loads plain ones.
    case $p in *.ko.xz) xz -d "$GMOD/$p" ;; esac
done
log "${#TAKE[@]} kernel modules; depmod on the image tree"
depmod_b "$ROOT/usr" || die "depmod (image) failed"

# --- /etc and /init ----------------------------------------------------------------------
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$ROOT/etc/passwd"
printf 'root:x:0:\n' >"$ROOT/etc/group"
printf '127.0.0.1 localhost hcavm\n::1 localhost ip6-localhost\n' >"$ROOT/etc/hosts"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$ROOT/etc/nsswitch.conf"
echo hcavm >"$ROOT/etc/hostname"
printf '/usr/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu/libibverbs\n' >"$ROOT/etc/ld.so.conf"
cat >"$ROOT/etc/hcavm-release" <<EOF
HCAVM_KERNEL=$KVER
HCAVM_KERNEL_PACKAGE=$KPKG
HCAVM_KERNEL_PACKAGE_VERSION=$KPKGVER
HCAVM_IMAGE_BUILT=$(date -u +%Y-%m-%dT%H:%M:%SZ)
HCAVM_IMAGE_SCRIPT=$SELF_HASH
EOF

cat >"$ROOT/init" <<'EOF'
#!/bin/sh
# hcavm guest init (generated by build-guest-image.sh).
# Runs the script passed as fw_cfg opt/hcavm/script, prints HCAVM-EXIT-STATUS=<n>, powers off.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu
export HOME=/root TERM=dumb
umask 022
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
hostname hcavm
ulimit -l unlimited 2>/dev/null
echo; echo "hcavm: init started ($(cat /proc/uptime | cut -d' ' -f1) s after kernel start)"

for m in qemu_fw_cfg virtio_pci virtio_net; do
    modprobe "$m" || echo "hcavm: modprobe $m failed"
done
/bin/ip link set lo up

FW=/sys/firmware/qemu_fw_cfg/by_name/opt/hcavm
mkdir -p /tmp/hcavm
if [ -d "$FW/files" ]; then
    for d in "$FW"/files/*; do
        [ -r "$d/raw" ] || continue
        n=${d##*/}
        cat "$d/raw" >"/tmp/hcavm/$n"
        chmod +x "/tmp/hcavm/$n"
    done
fi

status=125
if [ -r "$FW/script/raw" ]; then
    cat "$FW/script/raw" >/tmp/hcavm/.script
    cd /tmp/hcavm
    sh -c '. /etc/hcavm/prelude.sh; . /tmp/hcavm/.script' hcavm-script </dev/null
    status=$?
    cd /
else
    echo "hcavm: no script at $FW/script (pass -fw_cfg name=opt/hcavm/script,file=...)"
fi
echo
echo "HCAVM-EXIT-STATUS=$status"
poweroff -f
sleep 2
echo o >/proc/sysrq-trigger
sleep 1000
EOF
chmod 755 "$ROOT/init"

# --- dependency closure check with the image's own loader --------------------------------
log "checking that every ELF's libraries resolve inside the image"
LDSO_G=$ROOT/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
[ -x "$LDSO_G" ] || die "no loader in the image"
GLIB=$ROOT/usr/lib/x86_64-linux-gnu:$ROOT/usr/lib/x86_64-linux-gnu/libibverbs
# One loader run per file; non-ELF files and static binaries just report an error.
# A library that resolves outside $ROOT (the host's default dirs) is missing from the image.
missing=$(
    find "$ROOT/usr" -path "$ROOT/usr/lib/modules" -prune -o -type f -print0 \
    | while IFS= read -r -d '' f; do
        [ "$f" = "$BB" ] && continue   # static; the loader crashes on it
        printf '== %s\n' "$f"
        "$LDSO_G" --inhibit-cache --library-path "$GLIB" --list "$f" 2>/dev/null || true
      done \
    | awk -v root="$ROOT/" '
        /^== / { file = substr($0, 4); next }
        $2 == "=>" && index($3, root) != 1 { print "  " file ": " $1 " -> " $3 }'
)
if [ -n "$missing" ]; then
    printf '%s\n' "$missing" >&2
    die "unresolved libraries (add their packages to GUEST_PKGS)"
fi

# --- cpio ----------------------------------------------------------------------------------
log "writing initramfs.cpio"
(cd "$ROOT" && find . -mindepth 1 | LC_ALL=C sort \
    | cpio --quiet -o -H newc -R 0:0 --reproducible) >"$WORK/initramfs.cpio" \
    || die "cpio failed"

mv -f "$WORK/vmlinux" "$GDIR/vmlinux"
mv -f "$WORK/initramfs.cpio" "$GDIR/initramfs.cpio"
printf '%s %s\n' "$KVER" "$KPKGVER" >"$GDIR/kernel-version"
printf '%s %s\n' "$SELF_HASH" "${HCAEMU_GUEST_KERNEL:-newest}${VARIANT:+ $VARIANT} $RELEASE" >"$STAMP"
log "vmlinux $(du -h "$GDIR/vmlinux" | cut -f1), initramfs.cpio $(du -h "$GDIR/initramfs.cpio" | cut -f1)"
# Keep the downloaded .debs out of the way of disk usage; the work tree is kept for inspection.
rm -rf "$DEBS" "$KRAW"
print_paths
