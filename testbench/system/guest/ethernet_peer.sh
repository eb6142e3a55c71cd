# Runs inside a guest (busybox sh, via hcavm) attached to one function of hcaemu. Expects ROLE
# (server|client), TRANSFER (1 = also the bulk TCP transfer), ME and PEER (host numbers on 10.9.0.0/24 and fd00::/64) to be set above this
# text. Brings mlx5e up, pings the peer over IPv4 and IPv6, then moves a few MB over TCP (HTTP:
# the client fetches, checks the checksum) through the emulated NIC and its embedded switch.
status=0
check() {
  what=$1; shift
  if "$@" >/dev/null 2>&1; then echo "CHECK ok: $what"; else echo "CHECK FAILED: $what"; status=1; fi
}

modprobe mlx5_core
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -e /sys/class/net/eth0 ] && break; sleep 1; done
check "mlx5e registered eth0" test -e /sys/class/net/eth0
ip link set eth0 up
ip addr add 10.9.0.$ME/24 dev eth0
ip -6 addr add fd00::$ME/64 dev eth0 nodad
for _ in 1 2 3 4 5 6 7 8 9 10; do [ "$(cat /sys/class/net/eth0/carrier 2>/dev/null)" = 1 ] && break; sleep 1; done
check "eth0 has carrier" test "$(cat /sys/class/net/eth0/carrier)" = 1

# The peer boots at about the same time: wait for it, then measure.
for _ in $(seq 60); do ping -c 1 -W 1 10.9.0.$PEER >/dev/null 2>&1 && break; done
check "IPv4 ping to the peer" ping -c 3 -W 2 10.9.0.$PEER
check "IPv6 ping to the peer" ping -6 -c 3 -W 2 fd00::$PEER

seq 1 500000 > /tmp/data   # 3.4 MB, the same bytes in both guests
if [ "$TRANSFER" != 1 ]; then
  :
elif [ "$ROLE" = server ]; then
  mkdir -p /tmp/www && cp /tmp/data /tmp/www/data
  httpd -p 8080 -h /tmp/www
  # Serve until the client is done and gone (it powers off after its checks).
  sleep 5
  for _ in $(seq 150); do ping -c 1 -W 1 10.9.0.$PEER >/dev/null 2>&1 || break; sleep 1; done
else
  sleep 2
  timeout 120 wget -q -O /tmp/received http://10.9.0.$PEER:8080/data
  echo "received $(wc -c < /tmp/received) bytes over TCP"
  check "TCP transfer arrived intact ($(wc -c < /tmp/data) bytes)" test "$(md5sum < /tmp/received)" = "$(md5sum < /tmp/data)"
fi
if [ $status -ne 0 ]; then  # what the guest saw, for the log
  ip -s link show eth0; grep mlx5 /proc/interrupts; grep -E "^Tcp:" /proc/net/snmp
fi
bad=$(dmesg | grep mlx5 | grep -iE "error|fail|timeout" | grep -v "Failed to get valid vendor specific ID")
check "no mlx5 errors in dmesg" test -z "$bad"
[ -n "$bad" ] && echo "$bad"
exit $status
