#!/bin/bash
# Prints the walking skeleton's figures, each measured in this run:
#   - MMIO read round trip seen from a guest (median, p99) and the posted-write rate,
#   - hcaemu idle CPU and RSS (10 s with no guest, then 10 s with an idle guest attached),
#   - guest boot time to /init with the device attached, and to the end of the guest command.
# Usage: bench/guest_figures.sh HCAEMU HCAVM MMIO_PROBE   (scripts/run-bench.sh passes them)
set -euo pipefail
HCAEMU=$1 HCAVM=$2 PROBE=$3
WORK=$(mktemp -d /tmp/hcaemu-bench.XXXXXX)
HCAEMU_PID=
trap '[ -n "$HCAEMU_PID" ] && kill $HCAEMU_PID 2>/dev/null; rm -rf "$WORK"' EXIT
export SC_COPYRIGHT_MESSAGE=DISABLE

cpu_ticks() { awk '{print $14 + $15}' /proc/$1/stat; }
rss_kib() { awk '/VmRSS/ {print $2}' /proc/$1/status; }
idle_figure() {  # idle_figure LABEL SECONDS
  local t0 t1; t0=$(cpu_ticks $HCAEMU_PID); sleep "$2"; t1=$(cpu_ticks $HCAEMU_PID)
  awk -v a="$t0" -v b="$t1" -v s="$2" -v hz="$(getconf CLK_TCK)" -v rss="$(rss_kib $HCAEMU_PID)" -v l="$1" \
    'BEGIN { printf "figure: hcaemu %s: CPU %.2f%% of one core over %d s, RSS %.1f MiB\n", l, 100*(b-a)/hz/s, s, rss/1024 }'
}

"$HCAEMU" --socket-dir "$WORK/s" --vfs 2 --log-level warn > "$WORK/hcaemu.log" 2>&1 &
HCAEMU_PID=$!
for _ in $(seq 50); do [ -S "$WORK/s/vf1.sock" ] && break; sleep 0.1; done
idle_figure "idle, PF + 2 VFs, no guest" 10

T0=$(date +%s.%N)
"$HCAVM" --name bench --attach "$WORK/s/pf.sock" --file "$PROBE" --timeout 600 \
  --cmd "/tmp/hcavm/mmio_probe 2000 20000" > "$WORK/guest.log" 2>&1
T1=$(date +%s.%N)
grep "figure:" "$WORK/guest.log" | sed 's/^/guest /'
INIT=$(sed -n 's/.*init started (\([0-9.]*\) s after kernel start).*/\1/p' "$WORK/guest.log")
awk -v t0="$T0" -v t1="$T1" -v init="$INIT" \
  'BEGIN { printf "figure: guest boot: kernel start to /init %.2f s; hcavm start to exit (boot + probe + poweroff) %.1f s\n", init, t1-t0 }'

"$HCAVM" --name idle --attach "$WORK/s/vf0.sock" --timeout 600 --cmd "sleep 25" > "$WORK/idle.log" 2>&1 &
VM=$!
sleep 12
idle_figure "with an idle guest attached to VF0" 10
wait $VM || true
