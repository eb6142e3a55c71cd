# Runs inside a guest (busybox sh, via hcavm) after testbench/system/guest/mlx5_lib.sh, with ROLE
# (server|client), ME, PEER (host numbers) and MB set above. The guest has two NICs to its peer: the
# emulated HCA's mlx5e netdev on 10.9.0.0/24 and a virtio-net NIC on 10.8.0.0/24. The server serves
# an MB MiB file over HTTP (busybox httpd) until the client is gone; the client fetches it over each
# path in turn (twice each, alternating) and prints "tcp: PATH BYTES SECONDS".
if [ "$ROLE" = server ]; then  # serving before the NICs are up: the client can fetch once it pings
  mkdir -p /tmp/www
  dd if=/dev/zero of=/tmp/www/data bs=1M count="$MB" 2>/dev/null
  httpd -p 8080 -h /tmp/www
fi
mlx5_eth_up
check "mlx5e netdev with carrier" test -n "$T_CARRIER"
/sbin/ip addr add 10.9.0.$ME/24 dev "$NETDEV"
VNET=$(ls /sys/bus/virtio/drivers/virtio_net/*/net/ | head -1)
/sbin/ip link set "$VNET" up
/sbin/ip addr add 10.8.0.$ME/24 dev "$VNET"
check "mlx5e ($NETDEV): ping the peer" poll 180 ping -c 1 -W 1 10.9.0.$PEER
check "virtio-net ($VNET): ping the peer" poll 180 ping -c 1 -W 1 10.8.0.$PEER
[ $status = 0 ] || exit $status

if [ "$ROLE" = server ]; then
  sleep 5
  while ping -c 1 -W 2 10.8.0.$PEER >/dev/null 2>&1; do sleep 1; done  # the client powers off when done
else
  for path in hca virtio hca virtio; do
    net=9
    [ $path = virtio ] && net=8
    t0=$(uptime_s)
    bytes=$(wget -q -O - http://10.$net.0.$PEER:8080/data | wc -c)
    echo "tcp: $path $bytes $(since "$t0")"
    check "$path: $MB MiB arrived" test "$bytes" = $((MB << 20))
  done
fi
check_dmesg
exit $status
