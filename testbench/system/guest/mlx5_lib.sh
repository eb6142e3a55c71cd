# Guest-side helpers (busybox sh) for the scripts hcavm runs in a guest on one hcaemu function:
# put this file in front of the script. check() prints one CHECK line per fact and sets `status`
# to 1 when one fails; mlx5_up brings the function's mlx5 drivers up and times each step.
status=0
check() {  # check "what" command...
  what=$1; shift
  if "$@" >/dev/null 2>&1; then echo "CHECK ok: $what"; else echo "CHECK FAILED: $what"; status=1; fi
}
uptime_s() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(uptime_s)" 'BEGIN { printf "%.2f", b - a }'; }  # seconds since uptime $1
poll() {  # poll TENTHS command...: runs the command every 0.1 s until it succeeds, at most TENTHS times
  n=$1; shift
  while [ "$n" -gt 0 ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; n=$((n - 1)); done
  return 1
}

MLX5_DEV=  # sysfs directory of the (last) 15b3 PCI function
for d in /sys/bus/pci/devices/*; do [ "$(cat "$d/vendor")" = 0x15b3 ] && MLX5_DEV=$d; done
has_netdev() { ls "$MLX5_DEV/net" 2>/dev/null | grep -q .; }
has_carrier() { [ "$(cat "/sys/class/net/$NETDEV/carrier" 2>/dev/null)" = 1 ]; }
port_active() { cat /sys/class/infiniband/*/ports/1/state 2>/dev/null | grep -q ACTIVE; }

# mlx5_eth_up: modprobe mlx5_core and wait for its netdev (NETDEV), set it up and wait for
# carrier. mlx5_up: that, then modprobe mlx5_ib and wait for the RoCE port to be ACTIVE. They set
# T_NETDEV and T_CARRIER (seconds after modprobe mlx5_core) and T_ACTIVE (seconds after modprobe
# mlx5_ib); a step that does not happen within 30 s leaves its time empty.
mlx5_eth_up() {
  T_NETDEV= T_CARRIER= T_ACTIVE= NETDEV=
  t0=$(uptime_s)
  modprobe mlx5_core
  poll 300 has_netdev || return 1
  T_NETDEV=$(since "$t0")
  NETDEV=$(ls "$MLX5_DEV/net" | head -1)
  /sbin/ip link set "$NETDEV" up
  poll 300 has_carrier && T_CARRIER=$(since "$t0")
}
mlx5_up() {
  mlx5_eth_up
  [ -n "$NETDEV" ] || return 1
  t0=$(uptime_s)
  modprobe mlx5_ib
  poll 300 port_active && T_ACTIVE=$(since "$t0")
  echo "mlx5_up: netdev $NETDEV after ${T_NETDEV} s, carrier after ${T_CARRIER:-never} s;" \
       "mlx5_ib: port ACTIVE after ${T_ACTIVE:-never} s"
}
check_mlx5_up() {  # check_mlx5_up WHEN: one CHECK line per step of the last mlx5_up
  check "$1: mlx5e netdev on ${MLX5_DEV##*/}" test -n "$T_NETDEV"
  check "$1: ${NETDEV:-netdev} has carrier" test -n "$T_CARRIER"
  check "$1: RoCE port ACTIVE" test -n "$T_ACTIVE"
}
check_dmesg() {  # CHECK lines: no mlx5 error, nor any mlx5 line at warning level or above (<0>..<4>)
  bad=$(dmesg | grep mlx5 | grep -iE "error|fail|timeout")
  check "no mlx5 errors in dmesg" test -z "$bad"
  [ -z "$bad" ] || echo "$bad" | sed 's/^/dmesg: /'
  bad=$(dmesg -r | grep -E '^<[0-4]>' | grep -iE 'mlx5|infiniband')
  check "no mlx5 warnings in dmesg" test -z "$bad"
  [ -z "$bad" ] || echo "$bad" | sed 's/^/dmesg: /'
}
