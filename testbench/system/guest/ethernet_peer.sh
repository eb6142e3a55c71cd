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

# Isolation (issue 14): the PF guest, as any tenant could, adds a macvlan with the VF's MAC. The
# device refuses the address (it is another function's), so the VF keeps its traffic: its pings
# to the PF are still answered. Without the refusal the switch gave the VF's frames to the PF.
if [ "$ROLE" = server ]; then
  modprobe macvlan
  peer_mac=$(ip neigh show 10.9.0.$PEER | sed -n 's/.*lladdr \([0-9a-f:]*\).*/\1/p')
  ip link add link eth0 name steal0 address "$peer_mac" type macvlan mode bridge && ip link set steal0 up
  sleep 12  # the client pings meanwhile
  # mlx5e reports the refusal as a ConnectX reports it: BAD_PARAMETER, syndrome 0x18 of 0x755.
  check "the device refused the VF's MAC ($peer_mac) for this guest's macvlan" \
    sh -c 'dmesg | grep -q "MODIFY_NIC_VPORT_CONTEXT(0x755).*syndrome (0x7550018)"'
  ip link del steal0 2>/dev/null
else
  sleep 4
  check "IPv4 ping to the PF while it holds a macvlan with this VF's MAC" ping -c 5 -W 2 10.9.0.$PEER
  # Spoof check (issue 14): a VF sends only with its own source MAC. A macvlan with a made-up MAC
  # (no function owns it, so the device accepts it in the VF's address list) cannot reach anyone:
  # the switch drops its frames (counted as "spoofed source"); eth0 keeps working.
  modprobe macvlan
  ip link add link eth0 name spoof0 address 02:5f:00:00:00:$ME type macvlan mode bridge && ip link set spoof0 up
  ip addr add 10.9.2.$ME/24 dev spoof0
  ping -c 3 -W 1 10.9.2.$PEER >/dev/null 2>&1  # its ARP requests leave from spoof0
  ip link del spoof0 2>/dev/null
  check "IPv4 ping to the PF still works after the spoofed frames" ping -c 2 -W 2 10.9.0.$PEER
fi

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
  # Packet pacing: the client's requests and ACKs leave through tx queues limited to 1 Gb/s
  # (mlx5e sets a rate limit entry and names it in each SQ's context), then the limit is lifted.
  paced=yes
  for q in /sys/class/net/eth0/queues/tx-*/tx_maxrate; do echo 1000 > "$q" || paced=no; done
  check "tx_maxrate 1000 Mb/s on every tx queue (packet pacing)" test $paced = yes
  # The server starts serving once its own checks are done: retry until it answers.
  for _ in $(seq 30); do timeout 120 wget -q -O /tmp/received http://10.9.0.$PEER:8080/data && break; sleep 1; done
  echo "received $(wc -c < /tmp/received) bytes over TCP"
  check "TCP transfer arrived intact ($(wc -c < /tmp/data) bytes)" test "$(md5sum < /tmp/received)" = "$(md5sum < /tmp/data)"
  for q in /sys/class/net/eth0/queues/tx-*/tx_maxrate; do echo 0 > "$q" || paced=no; done
  check "tx_maxrate lifted again" test $paced = yes
  # HTB offload: mlx5e builds a TSAR and a queue group (CREATE_SCHEDULING_ELEMENT) for a class of
  # 200 Mb/s ceiling and opens the class's SQ in the group; the default class takes all traffic.
  htb=no
  tc qdisc replace dev eth0 root handle 1: htb offload default 10 &&
    tc class add dev eth0 parent 1: classid 1:10 htb rate 100mbit ceil 200mbit && htb=yes
  check "HTB offload: a class of 200 Mb/s ceiling as the default" test $htb = yes
  for _ in $(seq 10); do timeout 120 wget -q -O /tmp/received http://10.9.0.$PEER:8080/data && break; sleep 1; done
  check "TCP transfer through the HTB class arrived intact" test "$(md5sum < /tmp/received)" = "$(md5sum < /tmp/data)"
  sent=$(tc -s class show dev eth0 | sed -n '/class htb 1:10 /,/Sent/s/.*Sent \([0-9]*\) bytes.*/\1/p' | head -n1)
  check "the class's queue carried the client's side (${sent:-0} bytes)" test "${sent:-0}" -gt 1000
  tc qdisc del dev eth0 root || htb=no
  check "HTB offload removed" test $htb = yes
fi
if [ $status -ne 0 ]; then  # what the guest saw, for the log
  ip -s link show eth0; grep mlx5 /proc/interrupts; grep -E "^Tcp:" /proc/net/snmp
fi
# The macvlan refusal above is expected (syndrome 0x7550018 and mlx5e's note of it).
bad=$(dmesg | grep mlx5 | grep -iE "error|fail|timeout" |
  grep -v -e "syndrome (0x7550018)" -e "Failed to modify vport UC list")
check "no mlx5 errors in dmesg" test -z "$bad"
[ -n "$bad" ] && echo "$bad"
exit $status
