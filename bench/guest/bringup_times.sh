# Runs inside a guest on one hcaemu function (busybox sh, via hcavm) after
# testbench/system/guest/mlx5_lib.sh, with RUNS set above: RUNS times mlx5_up (modprobe mlx5_core,
# netdev, link up, carrier, modprobe mlx5_ib, port ACTIVE) and rmmod of both drivers. Prints one
# line per run: "run: N T_NETDEV T_CARRIER T_ACTIVE" (seconds; "nan" for a step that did not happen).
for i in $(seq "$RUNS"); do
  mlx5_up
  echo "run: $i ${T_NETDEV:-nan} ${T_CARRIER:-nan} ${T_ACTIVE:-nan}"
  rmmod mlx5_ib mlx5_core || exit 1
done
check_dmesg
exit $status
