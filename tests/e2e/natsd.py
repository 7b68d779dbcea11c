"""Throw-away NATS servers for the end-to-end tests, as pgtemp.py is for
PostgreSQL: nats-server (Debian's package, 2.9) in a temporary directory,
on free 127.0.0.1 ports, JetStream on with its store in that directory; one
server, or a cluster of several whose routes run on loopback (JetStream
replicas up to the cluster's size). conftest.py's start_nats() and the
nats_server / nats_cluster fixtures are the way in; they skip, or fail under
CI=true, with NatsUnavailable's reason.

    c = NatsCluster(nodes=3)       # raises NatsUnavailable (why) if impossible
    c.urls()                       # "nats://127.0.0.1:P1,nats://127.0.0.1:P2,..."
    n = c.nodes[0]                 # n.host, n.port, n.monitor_port, n.url, n.proc
    n.kill(); n.start()            # SIGKILL, then the same node again (same store)
    n.stop(); n.restart()          # SIGINT, then the same node again, waited for
    c.destroy()                    # stop every node and remove the directory

Ready means: the monitor's /healthz answers {"status":"ok"} (in 2.9 that
includes JetStream being current, in a cluster with a meta leader), and a
client connection gets PONG for its PING.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

import nats_raw
import serverlog

HOST = "127.0.0.1"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0


class NatsUnavailable(Exception):
    """No NATS server can be started here; the message says why."""


def binary():
    """$SHOOTOUT_NATS_SERVER, else nats-server on PATH or in /usr/sbin
    (where Debian's package puts it, not on a normal user's PATH)."""
    b = os.environ.get("SHOOTOUT_NATS_SERVER") or shutil.which("nats-server") or "/usr/sbin/nats-server"
    if not os.access(b, os.X_OK):
        raise NatsUnavailable("no nats-server (%s): install the nats-server package "
                              "(scripts/install-deps.sh), or set SHOOTOUT_NATS_SERVER" % b)
    return b


def _free_ports(n):
    """n distinct free loopback ports (bound together, so none repeats)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class NatsNode:
    """One nats-server of a NatsCluster (or alone)."""

    def __init__(self, exe, d, name, port, monitor_port, cluster_port, routes, cluster_name):
        self.exe = exe
        self.dir = d
        self.name = name
        self.host = HOST
        self.port = port
        self.monitor_port = monitor_port
        self.cluster_port = cluster_port
        self.url = "nats://%s:%d" % (HOST, port)
        self.log = os.path.join(d, "server.log")
        self.conf = os.path.join(d, "server.conf")
        self.proc = None
        self.cluster = None  # its NatsCluster, when it has peers (restart waits for routes)
        lines = [
            "server_name: %s" % json.dumps(name),
            "listen: %s" % json.dumps("%s:%d" % (HOST, port)),
            "http: %s" % json.dumps("%s:%d" % (HOST, monitor_port)),
            "jetstream { store_dir: %s }" % json.dumps(os.path.join(d, "js")),
        ]
        if cluster_port:
            lines.append("cluster { name: %s, listen: %s, routes: [%s] }" % (
                json.dumps(cluster_name), json.dumps("%s:%d" % (HOST, cluster_port)),
                ", ".join(json.dumps("nats-route://%s:%d" % (HOST, p)) for p in routes)))
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def start(self):
        """Starts the server (not waiting for it: see wait_ready)."""
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([self.exe, "-c", self.conf], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT)

    def restart(self):
        """Starts the node again after stop() or kill(): the same ports,
        configuration and store; returns once it is ready (wait_ready). In
        a cluster, ready also means its routes are back."""
        self.start()
        deadline = time.monotonic() + START_TIMEOUT
        self.wait_ready(deadline)
        peers = len(self.cluster.nodes) - 1 if self.cluster else 0
        while peers:
            try:
                if _routes(self) >= peers:
                    return
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise NatsUnavailable("nats-server %s: its routes did not come back: %s" % (
                    self.name, self.server_log(800)))
            time.sleep(0.1)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def healthy(self):
        try:
            with urllib.request.urlopen("http://%s:%d/healthz" % (HOST, self.monitor_port), timeout=2) as r:
                return r.status == 200 and json.loads(r.read()).get("status") == "ok"
        except (OSError, ValueError):
            return False

    def wait_ready(self, deadline):
        while True:
            if not self.running():
                raise NatsUnavailable("nats-server %s exited (%s): %s" % (
                    self.name, self.proc.returncode if self.proc else "not started", self.server_log(800)))
            if self.healthy():
                try:
                    nats_raw.NatsClient(HOST, self.port, timeout=2).close()  # CONNECT, PING, PONG
                    return
                except (OSError, nats_raw.NatsError):
                    pass
            if time.monotonic() > deadline:
                raise NatsUnavailable("nats-server %s not ready in %.0f s: %s" % (
                    self.name, START_TIMEOUT, self.server_log(800)))
            time.sleep(0.1)

    def stop(self):
        """SIGINT (nats-server shuts down cleanly and exits 0 on it; on
        SIGTERM it exits 1), SIGKILL if it lingers."""
        if not self.running():
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(STOP_TIMEOUT)

    def kill(self):
        if self.running():
            self.proc.kill()
            self.proc.wait(STOP_TIMEOUT)

    def client(self, **kw):
        return nats_raw.NatsClient(HOST, self.port, **kw)

    def varz(self):
        with urllib.request.urlopen("http://%s:%d/varz" % (HOST, self.monitor_port), timeout=5) as r:
            return json.loads(r.read())

    def server_log(self, last=None):
        return serverlog.read(self.log, last)


class NatsCluster:
    """nodes nats-servers (1: a lone server without cluster block), each in
    its own subdirectory of one temporary directory."""

    def __init__(self, nodes=1, name="shootout"):
        exe = binary()
        self.dir = tempfile.mkdtemp(prefix="shootout_nats_")
        self.nodes = []
        try:
            # A port that was free when chosen can be taken before the
            # server binds it: choose again, a few times.
            for attempt in range(3):
                try:
                    self._start(exe, nodes, name, attempt)
                    return
                except NatsUnavailable:
                    self._stop_all()
                    if attempt == 2 or "address already in use" not in self.logs().lower():
                        raise
        except BaseException:
            self._stop_all()
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    def _start(self, exe, n, name, attempt):
        ports = _free_ports(3 * n)
        self.nodes = []
        for i in range(n):
            d = os.path.join(self.dir, "try%d" % attempt, "n%d" % (i + 1))
            os.makedirs(d)
            cport = ports[2 * n + i] if n > 1 else None
            routes = [ports[2 * n + j] for j in range(n) if j != i] if n > 1 else []
            self.nodes.append(NatsNode(exe, d, "n%d" % (i + 1), ports[i], ports[n + i], cport, routes, name))
            if n > 1:
                self.nodes[-1].cluster = self
        for node in self.nodes:
            node.start()
        deadline = time.monotonic() + START_TIMEOUT
        for node in self.nodes:
            node.wait_ready(deadline)
        if n > 1:
            self._wait_routes(deadline)

    def _wait_routes(self, deadline):
        """Until every node has a route to every other one."""
        want = len(self.nodes) - 1
        while True:
            try:
                if all(_routes(node) >= want for node in self.nodes):
                    return
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise NatsUnavailable("the NATS cluster's routes did not form: %s" % self.logs()[-800:])
            time.sleep(0.1)

    def urls(self):
        return ",".join(n.url for n in self.nodes)

    def logs(self):
        return "\n".join("== %s\n%s" % (n.name, n.server_log()) for n in self.nodes)

    def _stop_all(self):
        for node in self.nodes:
            node.stop()

    def destroy(self):
        try:
            self._stop_all()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def _routes(node):
    with urllib.request.urlopen("http://%s:%d/routez" % (HOST, node.monitor_port), timeout=2) as r:
        return json.loads(r.read()).get("num_routes", 0)
