#!/bin/bash
# Full-system test (issue 15): the HCA's physical port joined to an ordinary VM. hcaemu listens on
# its uplink in QEMU's stream netdev framing; a VM with virtio-net and Soft-RoCE (rdma_rxe) connects
# to it with -netdev stream, so it shares the Ethernet with the emulated function: VF 0 (a VM on a
# VF, as the issue asks; HCA_FUNCTION=pf for the PF). Both ways round: first the HCA's guest
# serves and the Soft-RoCE guest is the client, then the other way. Each time rping
# (rdma_cm) and perftest's ib_write_bw, ib_read_bw, ib_send_lat, ib_atomic_bw (RC) and ib_send_bw -c
# UD (guest/rdma_peer.sh: RDMA_TESTS="cm interop"). hcaemu's pcap (both directions of the uplink)
# must dissect cleanly in tshark, and hcareplay must rebuild every RoCE frame of it into a message:
# its parser checks each frame's ICRC, the ones Soft-RoCE computed too. The port follows the link:
# the HCA guest's carrier and RDMA port come up once the Soft-RoCE VM connects and go down when it leaves.
# Usage: run_uplink_guests.sh HCAEMU HCAVM HCA_VERBS_CHECK HCAREPLAY
set -uo pipefail
HCAEMU=$1
HCAVM=$2
VERBS_CHECK=$3
HCAREPLAY=$4
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KEEP_LOG=/tmp/last-uplink-hcaemu.log
export RDMA_TESTS=${RDMA_TESTS:-cm interop}  # the tools both implementations have
source "$HERE/fullsys_lib.sh"
source "$HERE/rdma_lib.sh"

PCAP=$WORK/uplink.pcap
case "${HCA_FUNCTION:-vf}" in
  vf) start_hcaemu 1 --uplink "stream,listen=unix:$WORK/uplink.sock" --pcap "$PCAP"; HCA_SOCKET=vf0.sock ;;
  pf) start_hcaemu 0 --uplink "stream,listen=unix:$WORK/uplink.sock" --pcap "$PCAP"; HCA_SOCKET=pf.sock ;;
  *) echo "HCA_FUNCTION is vf or pf"; exit 2 ;;
esac
[ -S "$WORK/uplink.sock" ] || fail "hcaemu did not open its uplink socket"
echo "== the HCA's guest is on $HCA_SOCKET"
HCA_VM=(--attach "$WORK/sockets/$HCA_SOCKET")
RXE_VM=(--qemu-arg -netdev --qemu-arg "stream,id=n0,server=off,addr.type=unix,addr.path=$WORK/uplink.sock"
        --qemu-arg -device --qemu-arg "virtio-net-pci,netdev=n0,mac=52:54:00:09:00:0X")

# The Soft-RoCE guest's MAC ends in its host number (its link-local GID comes from it).
SERVER_VM=("${HCA_VM[@]}")
CLIENT_VM=("${RXE_VM[@]/0X/02}")
# The HCA guest also checks that its carrier and port go down once the Soft-RoCE VM has left.
CARRIER_CHECK=1 run_rdma_pair hca-serves mlx5/rxe mlx5_0/rxe0 eth0
rdma_pair_verdict hca-serves

SERVER_VM=("${RXE_VM[@]/0X/01}")
CLIENT_VM=("${HCA_VM[@]}")
run_rdma_pair rxe-serves rxe/mlx5 rxe0/mlx5_0 eth0
rdma_pair_verdict rxe-serves

stop_hcaemu_cleanly
grep -E "uplink|eswitch" "$WORK/hcaemu.log"
grep -qE "eswitch uplink: sent [1-9][0-9]*, received [1-9]" "$WORK/hcaemu.log" || fail "no frame crossed the uplink"

# Soft-RoCE sends RoCE over IPv6 with a UDP checksum of 0, which tshark flags ("Illegal checksum
# value (0)"); that is the peer's choice, so it is counted apart, and none of hcaemu's frames may have it.
T=(tshark -r "$PCAP" --disable-protocol rpcordma)
roce=$("${T[@]}" -Y infiniband 2>/dev/null | wc -l)
expert=$("${T[@]}" -q -z expert,error 2>/dev/null | grep -iE "malformed|error" | grep -v "Illegal checksum value (0)" | grep -cvE "^Errors \([0-9]+\)")
zero_peer=$("${T[@]}" -Y "ipv6 && udp.checksum == 0 && !(eth.src[0:2] == 02:c9)" 2>/dev/null | wc -l)
zero_ours=$("${T[@]}" -Y "ipv6 && udp.checksum == 0 && eth.src[0:2] == 02:c9" 2>/dev/null | wc -l)
echo "pcap: $roce RoCE frames, $expert expert errors; IPv6 UDP checksum 0: Soft-RoCE $zero_peer, hcaemu $zero_ours"
[ "$roce" -gt 0 ] || fail "no RoCE frame in the pcap"
[ "$expert" -eq 0 ] || fail "tshark reports malformed or erroneous frames"
[ "$zero_ours" -eq 0 ] || fail "hcaemu sent IPv6 UDP datagrams without a checksum"
"$HCAREPLAY" inspect "$PCAP" > "$WORK/replay.txt" || fail "hcareplay cannot read the capture"
sed -n '1p;/messages;/p;/^protocol/p' "$WORK/replay.txt"
grep -q "(100.00% of RoCEv2)" "$WORK/replay.txt" || fail "RoCE frames hcareplay could not map (a bad ICRC is one reason)"
echo "PASS"
