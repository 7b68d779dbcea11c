"""What claiming a session in the cluster's KV bucket adds to a CONNECT
(docs/cluster.md, "Sessions"): two brokers side by side, one plain and one
with --cluster on a private nats-server (JetStream, R1), each taking N
CONNECTs one at a time on fresh TCP connections (MQTT 3.1.1, clean, a new
client id each), timed from the CONNECT sent to its CONNACK (the TCP
connect itself not counted); three rounds, alternating. The clustered one
reads the id's key and writes itself as owner (kvStore_Get, then
kvStore_Create or kvStore_Update) before its CONNACK.

    /usr/bin/python3 tests/perf/cluster_connect.py build/release/shootout
"""
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import mqtt_raw as R  # noqa: E402
from cluster_pair import side_by_side  # noqa: E402

binp, N = sys.argv[1], 200


def connect_us(port, rnd):
    """Microseconds of each CONNECT to its CONNACK."""
    out = []
    for i in range(N):
        c = R.RawClient("127.0.0.1", port)
        pkt = R.connect("cc-%d-%d-%d-%d" % (port, rnd, i, time.monotonic_ns()))
        t = time.perf_counter()
        c.send(pkt)
        ack = c.expect(R.CONNACK)
        out.append((time.perf_counter() - t) * 1e6)
        assert ack.rc == 0, ack
        c.sock.shutdown(socket.SHUT_RDWR)
        c.sock.close()
    return out


with side_by_side(binp) as brokers:
    for rnd in range(3):
        for name, port in brokers:
            us = sorted(connect_us(port, rnd))
            print("round %d %-8s CONNECT to CONNACK: median %.0f us, p90 %.0f us, max %.0f us" % (
                rnd, name, statistics.median(us), us[int(len(us) * 0.9)], us[-1]))
