# Guest side of run_dual_port_guest.sh (after mlx5_lib.sh): one guest with both PFs of a dual-port
# HCA whose ports are cabled to each other. Both bind as mlx5_0 and mlx5_1 (node GUIDs of their
# own, one system image GUID), RDMA crosses the cable both ways with the data checked, and when the
# host shuts port 0 (hcactl link down uplink0) both ports go down: port 1 loses its carrier with the
# cable's far end.
modprobe mlx5_core
two_netdevs() { [ "$(ls /sys/bus/pci/drivers/mlx5_core/*/net 2>/dev/null | grep -c eth)" -eq 2 ]; }
check "two mlx5e netdevs" poll 300 two_netdevs
for n in $(ls /sys/bus/pci/drivers/mlx5_core/*/net | grep eth); do /sbin/ip link set "$n" up; done
modprobe mlx5_ib
state() { cat "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null; }
active() { state "$1" | grep -q ACTIVE; }
down() { state "$1" | grep -q DOWN; }
both_active() { active mlx5_0 && active mlx5_1; }
check "mlx5_0 and mlx5_1 ACTIVE" poll 300 both_active
guid() { cat "/sys/class/infiniband/$1/$2"; }
echo "mlx5_0: node $(guid mlx5_0 node_guid) system $(guid mlx5_0 sys_image_guid)"
echo "mlx5_1: node $(guid mlx5_1 node_guid) system $(guid mlx5_1 sys_image_guid)"
check "a node GUID per port" test "$(guid mlx5_0 node_guid)" != "$(guid mlx5_1 node_guid)"
check "one system image GUID (one card)" test "$(guid mlx5_0 sys_image_guid)" = "$(guid mlx5_1 sys_image_guid)"

# The link-local RoCE v2 GID: its MAC is in it, so the kernel needs no route between the two local
# ports (an IPv4 GID of the other port would resolve through the loopback route and be refused).
ll_gid() {
  for i in 0 1 2 3 4 5 6 7; do
    case "$(cat "/sys/class/infiniband/$1/ports/1/gids/$i" 2>/dev/null)" in
      fe80:*) grep -q "RoCE v2" "/sys/class/infiniband/$1/ports/1/gid_attrs/types/$i" && { echo "$i"; return; } ;;
    esac
  done
}
# The kernel resolves a link-local GID's MAC by IPv6 neighbour discovery: wait until both ports'
# link-local addresses have passed duplicate address detection.
settled() { ! /sbin/ip -6 addr show | grep -q tentative; }
check "IPv6 link-local addresses settled (DAD done)" poll 300 settled
G0=$(ll_gid mlx5_0) G1=$(ll_gid mlx5_1)
echo "link-local RoCE v2 GIDs: mlx5_0 index $G0, mlx5_1 index $G1"
pair() {  # pair NAME SERVER_CMD CLIENT_CMD: both must exit 0
  $2 > /tmp/server.log 2>&1 &
  spid=$!
  sleep 2
  $3 > /tmp/client.log 2>&1
  crc=$?
  wait $spid
  src=$?
  tail -n 2 /tmp/client.log | sed "s/^/$1 client: /"
  [ $src -eq 0 ] || tail -n 4 /tmp/server.log | sed "s/^/$1 server: /"
  check "$1: server (exit $src) and client (exit $crc)" test $src -eq 0 -a $crc -eq 0
}
pair "rc_pingpong port 0 <- port 1" "ibv_rc_pingpong -d mlx5_0 -g $G0 -c -n 200 -s 4096" \
  "ibv_rc_pingpong -d mlx5_1 -g $G1 -c -n 200 -s 4096 127.0.0.1"
pair "rc_pingpong port 1 <- port 0" "ibv_rc_pingpong -d mlx5_1 -g $G1 -c -n 200 -s 4096 -p 18516" \
  "ibv_rc_pingpong -d mlx5_0 -g $G0 -c -n 200 -s 4096 -p 18516 127.0.0.1"
pair "ud_pingpong" "ibv_ud_pingpong -d mlx5_0 -g $G0 -c -n 200 -s 1024" \
  "ibv_ud_pingpong -d mlx5_1 -g $G1 -c -n 200 -s 1024 127.0.0.1"
pair "ib_write_bw" "ib_write_bw -d mlx5_0 -x $G0 -s 65536 -n 200" "ib_write_bw -d mlx5_1 -x $G1 -s 65536 -n 200 127.0.0.1"

# The cable: port 0 shut by the host takes port 1 down as well, and both come back.
echo "DUALPORT: shut port 0"
both_down() { down mlx5_0 && down mlx5_1; }
check "port 0 shut: mlx5_0 and mlx5_1 DOWN" poll 300 both_down
echo "mlx5_0 $(state mlx5_0), mlx5_1 $(state mlx5_1); carrier $(cat /sys/class/net/eth*/carrier | tr '\n' ' ')"
echo "DUALPORT: open port 0"
check "port 0 open: mlx5_0 and mlx5_1 ACTIVE again" poll 300 both_active
pair "rc_pingpong after the outage" "ibv_rc_pingpong -d mlx5_0 -g $G0 -c -n 50" \
  "ibv_rc_pingpong -d mlx5_1 -g $G1 -c -n 50 127.0.0.1"
check_dmesg
echo "DUALPORT: done (status $status)"
exit $status
