# Runs inside a guest on the PF (busybox sh, via hcavm --reboots 1), after guest/mlx5_lib.sh.
# First boot: mlx5_core + mlx5_ib up, both unloaded, up again, then `reboot -f`. Second boot (QEMU
# reset the machine, so hcaemu got DEVICE_RESET): up once more. A marker on the scratch disk
# /dev/vda tells the boots apart. Exits non-zero when a check fails (the first boot then does not
# reboot).
MARKER="hcaemu-first-boot-done"
modprobe virtio_blk
poll 100 test -b /dev/vda
check "scratch disk /dev/vda" test -b /dev/vda
boot=2
[ "$(dd if=/dev/vda bs=64 count=1 2>/dev/null | tr -d '\000')" = "$MARKER" ] || boot=1
echo "BOOT $boot"

if [ $boot = 1 ]; then
  mlx5_up
  check_mlx5_up "first load"
  lsmod | grep -E "^(mlx5|ib_)"
  rmmod mlx5_ib mlx5_core
  check "rmmod mlx5_ib mlx5_core" test $? = 0
  check "no mlx5 module left" sh -c "! lsmod | grep -q mlx5"
  check "netdev $NETDEV gone" test ! -e "/sys/class/net/$NETDEV"
  check "RDMA device gone" sh -c "! ls /sys/class/infiniband | grep -q ."
  check "driver unbound from ${MLX5_DEV##*/}" test ! -e "$MLX5_DEV/driver"
  mlx5_up
  check_mlx5_up "reload"
else
  mlx5_up
  check_mlx5_up "after the reboot"
fi
ibv_devinfo | grep -E "hca_id|fw_ver|state"
check "ibv_devinfo: PORT_ACTIVE" sh -c "ibv_devinfo | grep -q 'state:.*PORT_ACTIVE'"
check_dmesg

if [ $boot = 1 ] && [ $status = 0 ]; then
  printf '%s' "$MARKER" | dd of=/dev/vda bs=64 count=1 conv=sync 2>/dev/null
  sync
  echo "REBOOTING"
  reboot -f
  sleep 60  # not reached: the machine resets
fi
exit $status
