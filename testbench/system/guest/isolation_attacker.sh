# Runs inside the attacker's guest (busybox sh, via hcavm) on a VF of hcaemu, for the isolation
# matrix test (issue 14). The victims are the guests on 10.9.0.1 (PF) and 10.9.0.2 (VF0) running
# RDMA between them; this tenant is root with mlx5e and a raw socket (hca_tenant_probe, carried
# in with hcavm --file) and tries what a tenant could:
#   - take the PF's MAC with a macvlan (the device refuses the address);
#   - listen in promiscuous mode from then on (none of the victims' traffic may reach it, only
#     broadcasts and the groups it joined);
#   - RoCEv2 requests with right ICRCs at every QPN a victim uses (RC/UC SEND and WRITE, UD SEND,
#     several PSNs, a guessed rkey), from its own MAC with the victim's peer's IP (the QP's path
#     check drops them) and from the peer's MAC too (the spoof check drops them);
#   - broadcast RoCE to QP1, and floods of junk frames at a victim and at broadcast.
# It raises 10.9.0.33 once it listens, so the victims' tools run under attack, and goes on until
# the PF victim is gone (powered off after its checks) or ROUNDS rounds are done.
status=0
check() {
  what=$1; shift
  if "$@" >/dev/null 2>&1; then echo "CHECK ok: $what"; else echo "CHECK FAILED: $what"; status=1; fi
}
PROBE=/tmp/hcavm/hca_tenant_probe
ROUNDS=${ROUNDS:-40}

modprobe mlx5_core
for _ in $(seq 20); do [ -e /sys/class/net/eth0 ] && break; sleep 1; done
ip link set eth0 up
ip addr add 10.9.0.3/24 dev eth0
for _ in $(seq 20); do [ "$(cat /sys/class/net/eth0/carrier 2>/dev/null)" = 1 ] && break; sleep 1; done
check "eth0 has carrier" test "$(cat /sys/class/net/eth0/carrier)" = 1

for _ in $(seq 120); do
  ping -c 1 -W 1 10.9.0.1 >/dev/null 2>&1 && ping -c 1 -W 1 10.9.0.2 >/dev/null 2>&1 && break
done
mac_of() { ip neigh show "$1" | sed -n 's/.*lladdr \([0-9a-f:]*\).*/\1/p'; }
MAC1=$(mac_of 10.9.0.1)
MAC2=$(mac_of 10.9.0.2)
check "learned the victims' MACs (PF $MAC1, VF0 $MAC2)" test -n "$MAC1" -a -n "$MAC2"

# Another function's MAC for a macvlan: refused as a ConnectX refuses it (BAD_PARAMETER, 0x7550018).
modprobe macvlan
ip link add link eth0 name steal0 address "$MAC1" type macvlan mode bridge && ip link set steal0 up
sleep 3
check "the device refused the PF's MAC ($MAC1) for this tenant's macvlan" \
  sh -c 'dmesg | grep -q "MODIFY_NIC_VPORT_CONTEXT(0x755).*syndrome (0x7550018)"'
ip link del steal0 2>/dev/null
sleep 2  # the groups the macvlan joined (its link-local address is the PF's) are left again

$PROBE listen eth0 900 "$MAC1" "$MAC2" > /tmp/listen.out 2>&1 &
LISTENER=$!
ip link set eth0 promisc on

ip addr add 10.9.0.33/24 dev eth0  # the victims start their tools
rounds=0 sent=0
while [ $rounds -lt "$ROUNDS" ] && ping -c 1 -W 2 10.9.0.1 >/dev/null 2>&1; do
  # QPNs 8..135 cover every QP the victims' drivers and tools create in this test.
  $PROBE roce eth0 "$MAC1" 10.9.0.1 own 10.9.0.2 8 128 && sent=$((sent + 1))
  $PROBE roce eth0 "$MAC1" 10.9.0.1 "$MAC2" 10.9.0.2 8 128
  $PROBE roce eth0 "$MAC2" 10.9.0.2 own 10.9.0.1 8 128
  $PROBE roce eth0 "$MAC2" 10.9.0.2 "$MAC1" 10.9.0.1 8 128
  $PROBE roce eth0 ff:ff:ff:ff:ff:ff 10.9.0.1 own 10.9.0.3 1 1
  $PROBE flood eth0 "$MAC1" 2000 >/dev/null
  $PROBE flood eth0 ff:ff:ff:ff:ff:ff 200 >/dev/null
  rounds=$((rounds + 1))
done
echo "attack rounds: $rounds"
check "attacked while the victims ran ($rounds rounds)" test "$sent" -gt 0
kill -TERM $LISTENER
wait $LISTENER
cat /tmp/listen.out
# What reached this tenant: its own traffic, broadcasts and the groups every host joins; nothing
# the victims sent each other.
leaked=$(sed -n 's/.*leaked \([0-9]*\).*/\1/p' /tmp/listen.out)
foreign=$(sed -n 's/.*foreign unicast \([0-9]*\).*/\1/p' /tmp/listen.out)
check "none of the victims' traffic reached this tenant (leaked ${leaked:-?})" test "${leaked:-1}" -eq 0
check "no unicast for another function reached it (${foreign:-?} frames)" test "${foreign:-1}" -eq 0
exit $status
