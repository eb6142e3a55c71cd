# Runs inside a guest (busybox sh, via hcavm). Expects EXPECT_DEVICE (hex, no 0x), EXPECT_BAR0
# (bytes), EXPECT_VECTORS and EXPECT_FW to be set above this text. Prints one CHECK line per fact
# and exits non-zero when any fails.
status=0
check() {  # check "what" command...
  what=$1; shift
  if "$@" >/dev/null 2>&1; then echo "CHECK ok: $what"; else echo "CHECK FAILED: $what"; status=1; fi
}

dev=
for d in /sys/bus/pci/devices/*; do
  [ "$(cat "$d/vendor")" = 0x15b3 ] && dev=$d
done
if [ -z "$dev" ]; then echo "CHECK FAILED: no 15b3 device in the guest"; exit 1; fi
bdf=${dev##*/}
echo "device under test: $bdf"
lspci -nn -vv -s "$bdf" > /tmp/lspci.txt 2>&1
cat /tmp/lspci.txt

check "vendor 0x15b3" test "$(cat "$dev/vendor")" = 0x15b3
check "device 0x$EXPECT_DEVICE" test "$(cat "$dev/device")" = "0x$EXPECT_DEVICE"
check "class 0x020000 (Ethernet)" test "$(cat "$dev/class")" = 0x020000

# sysfs resource lines: start end flags; size = end - start + 1.
bar_size() { sed -n "$(($1 + 1))p" "$dev/resource" | { read s e f; echo $((e - s + 1)); }; }
check "BAR0 size $EXPECT_BAR0" test "$(bar_size 0)" = "$EXPECT_BAR0"
check "BAR2 size 16384 (MSI-X)" test "$(bar_size 2)" = 16384
check "BAR0 64-bit prefetchable" grep -q "Region 0: Memory at .* (64-bit, prefetchable)" /tmp/lspci.txt
check "MSI-X with $EXPECT_VECTORS vectors in BAR2" grep -q "MSI-X: Enable- Count=$EXPECT_VECTORS " /tmp/lspci.txt
check "MSI-X table in BAR2" grep -q "Vector table: BAR=2 offset=00000000" /tmp/lspci.txt
check "PCI Express Endpoint" grep -q "Express (v2) Endpoint" /tmp/lspci.txt
check "link 16GT/s x16" grep -q "LnkSta:.*Speed 16GT/s, Width x16" /tmp/lspci.txt
check "power management capability" grep -q "Power Management version" /tmp/lspci.txt
check "device serial number" grep -q "Device Serial Number" /tmp/lspci.txt

modprobe mlx5_core
sleep 1
dmesg | grep -i mlx5
check "mlx5_core reads firmware $EXPECT_FW" sh -c "dmesg | grep -q 'mlx5_core $bdf: firmware version: $EXPECT_FW'"
check "ENABLE_HCA accepted" sh -c "! dmesg | grep -q 'ENABLE_HCA(0x104).*failed'"
# mlx5_core's probe completes and its Ethernet driver binds a netdev to this very function.
for _ in 1 2 3 4 5 6 7 8 9 10; do ls "$dev/net" >/dev/null 2>&1 && break; sleep 1; done
check "mlx5e netdev on $bdf" sh -c "ls $dev/net | grep -q ."
# mlx5_ib binds an RDMA device to the same function; with the netdev up its RoCE port is ACTIVE.
modprobe mlx5_ib
netdev=$(ls "$dev/net" | head -1)
ip link set "$netdev" up
for _ in 1 2 3 4 5 6 7 8 9 10; do ibv_devinfo 2>/dev/null | grep -q PORT_ACTIVE && break; sleep 1; done
ibv_devinfo -v > /tmp/devinfo.txt 2>&1
grep -E "hca_id|fw_ver|state|link_layer|atomic_cap|GID" /tmp/devinfo.txt
check "ibv_devinfo: mlx5_0" grep -q "hca_id:.*mlx5_0" /tmp/devinfo.txt
check "ibv_devinfo: PORT_ACTIVE" grep -q "state:.*PORT_ACTIVE" /tmp/devinfo.txt
check "ibv_devinfo: link_layer Ethernet" grep -q "link_layer:.*Ethernet" /tmp/devinfo.txt
check "atomic_cap is ATOMIC_HCA" grep -q "atomic_cap:.*ATOMIC_HCA" /tmp/devinfo.txt
check "GID table holds RoCE v1" grep -q "GID\[  0\].*RoCE v1" /tmp/devinfo.txt
check "GID table holds RoCE v2" grep -q "GID\[  1\].*RoCE v2" /tmp/devinfo.txt
check "rdma link names $netdev" sh -c "rdma link | grep -q 'netdev $netdev'"
bad=$(dmesg | grep mlx5 | grep -iE "error|fail|timeout")
check "no mlx5 errors in dmesg" test -z "$bad"
[ -n "$bad" ] && echo "$bad"
# Issue 16: no mlx5 line at warning level or above (<0>..<4> in the raw log) on either kernel.
warned=$(dmesg -r | grep -E '^<[0-4]>' | grep -iE 'mlx5|infiniband')
check "no mlx5 warnings in dmesg (levels emerg..warn)" test -z "$warned"
[ -n "$warned" ] && echo "$warned"
exit $status
