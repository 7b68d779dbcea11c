"""A plain broker and a clustered one side by side, for the perf scripts that
compare what the cluster adds (cluster_suback.py, cluster_retain.py): a
private nats-server (JetStream on, R1) and two brokers of one binary on free
loopback ports, stopped and removed on exit."""
import contextlib
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import natsd  # noqa: E402


@contextlib.contextmanager
def side_by_side(binp):
    """Yields [("plain", port), ("cluster", port)], in the order the scripts
    alternate them."""
    nats = natsd.NatsCluster(1)
    procs = []
    try:
        ports = natsd._free_ports(2)
        procs += [subprocess.Popen([binp, "broker", "--port", str(ports[0])], stderr=subprocess.DEVNULL),
                  subprocess.Popen([binp, "broker", "--port", str(ports[1]), "--cluster", nats.urls()],
                                   stderr=subprocess.DEVNULL)]
        time.sleep(1)
        yield [("plain", ports[0]), ("cluster", ports[1])]
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)
        nats.destroy()
