#!/usr/bin/env python3
"""Writes the example workloads of this folder (hcareplay-workload/1, docs/replay.md).

Run it again after changing it: python3 traces/examples/make_examples.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def hosts(n):
    return [{"name": f"h{i}", "ip": f"10.0.0.{i + 1}"} for i in range(n)]


def write(name, workload):
    with open(os.path.join(HERE, name), "w") as out:
        json.dump(workload, out, indent=1, sort_keys=True)
        out.write("\n")


def main():
    # perftest-like: ib_write_bw with 64 KiB messages, and ib_send_lat style ping of 64 B SENDs.
    write("write_stream.json", {
        "format": "hcareplay-workload/1", "hosts": hosts(2),
        "qps": [{"host": "h0", "peer": "h1", "service": "rc", "mtu": 4096,
                 "ops": [{"op": "write", "bytes": 65536} for _ in range(200)]}]})
    write("send_latency.json", {
        "format": "hcareplay-workload/1", "hosts": hosts(2),
        "qps": [{"host": "h0", "peer": "h1", "service": "rc", "mtu": 1024,
                 "ops": [{"op": "send", "bytes": 64, "think_ns": 1000} for _ in range(100)]}]})
    # N-to-1 incast: eight senders, 64 KiB WRITEs to one receiver.
    write("incast_8to1.json", {
        "format": "hcareplay-workload/1", "hosts": hosts(9),
        "qps": [{"host": f"h{i}", "peer": "h8", "service": "rc", "mtu": 4096,
                 "ops": [{"op": "write", "bytes": 65536} for _ in range(32)]} for i in range(8)]})
    # All-to-all shuffle among four hosts: every host SENDs 16 KiB to every other.
    qps = []
    for i in range(4):
        for j in range(4):
            if i != j:
                qps.append({"host": f"h{i}", "peer": f"h{j}", "service": "rc", "mtu": 4096,
                            "ops": [{"op": "send", "bytes": 16384} for _ in range(16)]})
    write("alltoall_4.json", {"format": "hcareplay-workload/1", "hosts": hosts(4), "qps": qps})
    # Ring all-reduce of 1 MiB over four hosts, as verbs: 2(N-1) steps; in each, host i WRITEs its
    # 256 KiB chunk to host i+1 once host i-1's write of the step before has completed.
    n, steps, chunk = 4, 6, 262144
    qps = []
    for i in range(n):
        ops = []
        for s in range(steps):
            op = {"op": "write_imm" if s == steps - 1 else "write", "bytes": chunk}
            if s == steps - 1:
                op["imm"] = s
            if s > 0:
                op["after"] = [f"{(i - 1) % n}:{s - 1}"]
            ops.append(op)
        qps.append({"host": f"h{i}", "peer": f"h{(i + 1) % n}", "service": "rc", "mtu": 4096, "ops": ops})
    write("ring_allreduce_4.json", {"format": "hcareplay-workload/1", "hosts": hosts(n), "qps": qps})


if __name__ == "__main__":
    main()
