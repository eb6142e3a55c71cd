#!/bin/bash
# Per-VF transmit rates as guests see them (issue 15): one hcaemu with two VFs whose rates are set
# (default max_tx_rate 10000 and 30000 Mb/s; QOS_VF0 / QOS_VF1 take other JSON, e.g.
# '{"min_tx_rate":10000}'), a server guest on the PF, and a client guest on each VF running
# ib_write_bw -D 10 to the PF at the same time. Prints each VF's guest-visible bandwidth, their
# ratio, and what the device sent for each (hcactl stats). In model time the port's scheduler holds
# the rates exactly (sriov/port_scheduler, its tests); guests under TCG run far below them, which is
# what this figure shows. UPLINK=1: the server guest is on the PF of a second hcaemu joined to the
# first one's uplink, so both VFs' traffic leaves through one uplink.
# Usage: [UPLINK=1] bench/qos_guests.sh HCAEMU HCAVM HCACTL
set -uo pipefail
HCAEMU=$1 HCAVM=$2 HCACTL=$3
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/testbench/system/fullsys_lib.sh"
QOS_VF0=${QOS_VF0:-'{"max_tx_rate":10000}'}
QOS_VF1=${QOS_VF1:-'{"max_tx_rate":30000}'}
echo "{\"vfs\": {\"0\": $QOS_VF0, \"1\": $QOS_VF1}}" > "$WORK/qos.json"
B_PID=
if [ "${UPLINK:-0}" = 1 ]; then
  trap 'stop_pid B_PID; cleanup' EXIT
  start_hcaemu 2 --config "$WORK/qos.json" --uplink "stream,listen=unix:$WORK/link.sock"
  start_peer_hcaemu "stream,connect=unix:$WORK/link.sock"
  SERVER_SOCKET=$WORK/sockets-b/pf.sock WHERE="a PF guest on a second hcaemu, through one uplink"
else
  start_hcaemu 2 --config "$WORK/qos.json"
  SERVER_SOCKET=$WORK/sockets/pf.sock WHERE="the PF guest"
fi

bring_up='modprobe mlx5_core; modprobe mlx5_ib
for _ in $(seq 20); do [ -e /sys/class/net/eth0 ] && break; sleep 1; done
ip link set eth0 up; ip addr add 10.9.0.$ME/24 dev eth0
P=/sys/class/infiniband/mlx5_0/ports/1
for _ in $(seq 30); do grep -q ACTIVE $P/state && break; sleep 1; done
G=; for _ in $(seq 20); do for t in $P/gid_attrs/types/*; do n=${t##*/}
  [ "$(cat $t 2>/dev/null)" = "RoCE v2" ] && case $(cat $P/gids/$n) in fe80:*) G=$n;; esac; done; [ -n "$G" ] && break; sleep 1; done
'
{
  echo "ME=1"
  echo "$bring_up"
  echo 'ib_write_bw -d mlx5_0 -x $G -F -s 65536 -D 10 -p 18601 > /tmp/a 2>&1 &'
  echo 'ib_write_bw -d mlx5_0 -x $G -F -s 65536 -D 10 -p 18602 > /tmp/b 2>&1 &'
  echo 'wait'
} > "$WORK/server.sh"
for vf in 0 1; do
  {
    echo "ME=$((vf + 2))"
    echo "$bring_up"
    echo 'for _ in $(seq 60); do ping -c 1 -W 1 10.9.0.1 >/dev/null 2>&1 && break; done'
    echo 'for _ in $(seq 60); do'
    echo "  ib_write_bw -d mlx5_0 -x \$G -F -s 65536 -D 10 --report_gbits -p $((18601 + vf)) 10.9.0.1 > /tmp/out 2>&1 && break"
    echo '  sleep 1'
    echo 'done'
    echo "echo \"RESULT vf$vf: \$(grep -E '^ *65536 ' /tmp/out | tr -s ' ')\""
  } > "$WORK/client$vf.sh"
done
"$HCAVM" --name qos-server --script "$WORK/server.sh" --timeout 600 --attach "$SERVER_SOCKET" > "$WORK/server.log" 2>&1 &
s=$!
"$HCAVM" --name qos-vf0 --script "$WORK/client0.sh" --timeout 600 --attach "$WORK/sockets/vf0.sock" > "$WORK/vf0.log" 2>&1 &
c0=$!
"$HCAVM" --name qos-vf1 --script "$WORK/client1.sh" --timeout 600 --attach "$WORK/sockets/vf1.sock" > "$WORK/vf1.log" 2>&1 &
c1=$!
wait $c0 $c1 $s
stats=$("$HCACTL" --socket-dir "$WORK/sockets" stats)
vf_settings=$("$HCACTL" --socket-dir "$WORK/sockets" vf show)
uplink_stats=$(grep "^uplink0 " <<<"$stats")
stop_hcaemu_cleanly
stop_pid B_PID
echo "figure: two VF guests writing to $WHERE at once (ib_write_bw -s 65536 -D 10, TCG, 2 vCPUs each)"
[ -n "$uplink_stats" ] && echo "  uplink: $(grep -o 'tx_frames=[0-9]*' <<<"$uplink_stats")"
echo "$vf_settings" | sed 's/^/  rates: /'
bw=()
for vf in 0 1; do
  line=$(grep -h "RESULT vf$vf" "$WORK/vf$vf.log" | tail -n 1)
  bw[$vf]=$(echo "$line" | awk '{print $6}')
  echo "  vf$vf guest-visible: ${bw[$vf]:-failed} Gb/s average; device sent $(grep "^vf$vf " <<<"$stats" | grep -o 'rdma_tx_bytes=[0-9]*')"
done
[ -n "${bw[0]}" ] && [ -n "${bw[1]}" ] && echo "  ratio vf1/vf0 (guest-visible): $(awk -v a="${bw[0]}" -v b="${bw[1]}" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "n/a" }')"
exit 0
