"""What the flush before a SUBACK costs in a cluster (docs/cluster.md): two
brokers side by side, one plain and one with --cluster on a private
nats-server, each taking N SUBSCRIBEs of filters new to it one at a time
(each waiting for its SUBACK), then the same N filters from a second client
(held already: no NATS traffic); three rounds, alternating.

    /usr/bin/python3 tests/perf/cluster_suback.py build/release/shootout
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from cluster_pair import side_by_side  # noqa: E402
from mqtt_paho import PahoClient  # noqa: E402

binp, N = sys.argv[1], 2000


def suback_us(port, client_id, rnd):
    """Microseconds a SUBACK over N SUBSCRIBEs of round rnd's filters, one
    at a time; the client stays connected (its filters held)."""
    c = PahoClient("127.0.0.1", port, client_id)
    c.connect()
    t = time.perf_counter()
    for i in range(N):
        c.subscribe("cost/%d/%d/+" % (rnd, i), 0)
    return (time.perf_counter() - t) / N * 1e6, c


with side_by_side(binp) as brokers:
    for rnd in range(3):
        for name, port in brokers:
            new, c = suback_us(port, "cost-%s-%d" % (name, rnd), rnd)
            held, o = suback_us(port, "cost2-%s-%d" % (name, rnd), rnd)
            print("round %d %-8s new filter %.0f us/SUBACK, filter already held %.0f us/SUBACK" % (
                rnd, name, new, held))
            c.close()
            o.close()
