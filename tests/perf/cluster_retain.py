"""What retained messages in the cluster's KV bucket cost (docs/cluster.md,
"Retained messages"): two brokers side by side, one plain and one with
--cluster on a private nats-server (JetStream, R1), each taking N retained
QoS 1 PUBLISHes one at a time (each waiting for its PUBACK: the plain one
stores in memory, the clustered one puts into the bucket first), then N
SUBSCRIBEs one at a time, each of a filter matching one retained message
and waiting for it (the clustered one reads the bucket through a KV watch);
three rounds, alternating.

    /usr/bin/python3 tests/perf/cluster_retain.py build/release/shootout
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from cluster_pair import side_by_side  # noqa: E402
from mqtt_paho import PahoClient  # noqa: E402

binp, N = sys.argv[1], 300


def publish_us(port, rnd):
    """Microseconds a retained QoS 1 PUBLISH, PUBACK included."""
    c = PahoClient("127.0.0.1", port, "rp-%d-%d" % (port, rnd))
    c.connect()
    t = time.perf_counter()
    for i in range(N):
        c.publish("rcost/%d/%d" % (rnd, i), b"x" * 64, qos=1, retain=True)
    us = (time.perf_counter() - t) / N * 1e6
    c.close()
    return us


def subscribe_us(port, rnd, flt):
    """Microseconds from a SUBSCRIBE to its retained message."""
    c = PahoClient("127.0.0.1", port, "rs-%d-%d" % (port, rnd))
    c.connect()
    t = time.perf_counter()
    for i in range(N):
        c.subscribe(flt % (rnd, i), 0)
        c.get()
    us = (time.perf_counter() - t) / N * 1e6
    c.close()
    return us


with side_by_side(binp) as brokers:
    for rnd in range(3):
        for name, port in brokers:
            pub = publish_us(port, rnd)
            exact = subscribe_us(port, rnd, "rcost/%d/%d")
            wild = subscribe_us(port, rnd, "rcost/%d/%d/#")  # two KV watches in a cluster
            print("round %d %-8s retained PUBLISH %.0f us/PUBACK, SUBSCRIBE to its retained "
                  "message %.0f us (exact), %.0f us (a/#)" % (rnd, name, pub, exact, wild))
