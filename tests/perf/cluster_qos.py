"""What the cluster's JetStream stream costs a QoS 1 publisher (docs/cluster.md,
"QoS 1 and 2: JetStream"): two brokers side by side, one plain and one with
--cluster on a private nats-server (JetStream, R1), each taking N QoS 1
PUBLISHes one at a time, each waiting for its PUBACK (the clustered one's
waits for the stream's PubAck); three rounds, alternating; the median and
the 90th percentile of one PUBLISH to its PUBACK.

    /usr/bin/python3 tests/perf/cluster_qos.py build/release/shootout
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from cluster_pair import side_by_side  # noqa: E402
from mqtt_paho import PahoClient  # noqa: E402

binp, N = sys.argv[1], 300


def publish_us(port, rnd):
    """Each QoS 1 PUBLISH's microseconds to its PUBACK, sorted."""
    c = PahoClient("127.0.0.1", port, "qp-%d-%d" % (port, rnd))
    c.connect()
    out = []
    for i in range(N):
        t = time.perf_counter()
        c.publish("qcost/%d" % rnd, b"x" * 64, qos=1)
        out.append((time.perf_counter() - t) * 1e6)
    c.close()
    return sorted(out)


with side_by_side(binp) as brokers:
    for rnd in range(3):
        for name, port in brokers:
            us = publish_us(port, rnd)
            print("round %d %-7s QoS 1 PUBLISH to PUBACK: median %5.0f us, p90 %5.0f us" % (
                rnd, name, us[N // 2], us[N * 9 // 10]))
