"""`shootout bench mqtt-conns` end to end: idle connections against our broker
and Mosquitto (every one connected, the broker's RSS per idle connection
reported and sane), a small connect storm with established clients (nothing
refused, round trips measured before and during), and a broker that refuses
connections over its limit (the failures counted, the run failed), and a
storm of connects while the broker does not accept (none dropped, every one
answered), and --accept handoff spreading clients evenly over 4 loops; the
results table has the columns of what the mode measures, none
of the message experiments' (received, lost), and the JSON no "messages". No
timing assertions but a generous bound on a ping round trip.

The broker needs a descriptor per connection: the tests raise this process's
soft open-files limit to the hard one before the broker fixture starts it (the
child inherits it) and put it back afterwards, so nothing changes globally."""

import errno
import json
import os
import re
import resource
import selectors
import signal
import socket
import subprocess
import threading
import time

import pytest

import mqtt_raw
from conftest import HOST, SANITIZER_MARKERS, SHOOTOUT_BIN, require_shootout

EXIT_RUNTIME = 1
EXIT_USAGE = 2
RUN_TIMEOUT = 90  # seconds; far above what these small runs need
IDLE = 2000


@pytest.fixture
def many_fds():
    """The soft RLIMIT_NOFILE raised to the hard limit while the test runs
    (the brokers it starts inherit it); skips if the hard limit is too low
    for IDLE connections on both sides of one host."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < IDLE + 200:
        pytest.skip("the hard open-files limit %d is below %d" % (hard, IDLE + 200))
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    yield hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def conns(tmp_path, *args, expect=0):
    require_shootout()
    out = tmp_path / "conns.json"
    p = subprocess.run([SHOOTOUT_BIN, "bench", "mqtt-conns"] + [str(a) for a in args] +
                       ["--json", str(out)], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=RUN_TIMEOUT)
    for marker in SANITIZER_MARKERS:
        assert marker not in p.stderr, "sanitizer report from the bench:\n" + p.stderr
    assert p.returncode == expect, "exit %d\nstdout:\n%s\nstderr:\n%s" % (
        p.returncode, p.stdout, p.stderr)
    with open(out) as f:
        doc = json.load(f)
    [b] = [b for b in doc["benchmarks"] if b["run_type"] == "iteration"]
    assert b["experiment"] == "mqtt-conns"
    return b, p


IDLE_COLUMNS = ["run", "connected", "failed", "dropped", "connect s", "k conn/s", "p50 us",
                "p99 us", "p99.9 us", "max us", "client us/conn"]
STORM_COLUMNS = ["run", "connected", "failed", "dropped", "storm s", "k conn/s", "p50 us",
                 "p99 us", "p99.9 us", "max us", "rtt p99 before us", "rtt p99 during us",
                 "rtt max during us", "client us/conn"]
SERVER_COLUMNS = ["server us/conn", "server MB"]


def check_table(out, columns):
    """The results table's header is columns, and each run's row has a
    figure under every one of them: no column that only message
    experiments fill."""
    lines = out.splitlines()
    [at] = [i for i, line in enumerate(lines) if line.startswith("run ")]
    assert re.split(r" {2,}", lines[at].strip()) == columns, lines[at]
    runs = [line for line in lines[at + 1:] if re.match(r"\d+ ", line)]
    assert runs, out
    for line in runs:
        cells = re.split(r" {2,}", line.strip())
        assert len(cells) == len(columns) and all(re.fullmatch(r"-?\d+(\.\d+)?", c)
                                                  for c in cells), line


def target(b):
    return "%s:%d" % (b.host, b.port)


def check_idle(row, n):
    c = row["conns"]
    assert c["mode"] == "idle"
    assert c["idle"]["started"] == n and c["idle"]["connected"] == n
    assert c["idle"]["open_at_end"] == n and c["idle"]["lost"] == 0
    for k in ("refused", "closed", "timeout", "local"):
        assert c["idle"][k] == 0, k
    assert row["errors"]["connect"] == 0
    assert c["connect_rate"] > 0 and c["connect_s"] > 0
    assert row["throughput"]["value"] == pytest.approx(c["connect_rate"])
    # Every connection costs the broker something, and far less than the
    # 64 kB a naive per-connection read buffer would.
    assert c["rss_after_kb"] >= c["rss_before_kb"] > 0
    assert 0 < c["rss_per_conn_bytes"] < 20000
    assert row["latency"]["p50"] > 0
    assert "messages" not in row


@pytest.mark.shootout_only
def test_idle_connections_against_our_broker(many_fds, broker_factory, tmp_path):
    b = broker_factory(max_connections=IDLE + 100)
    row, p = conns(tmp_path, "--target", target(b), "--idle", IDLE, "--hold", 1,
                   "--threads", 2, "--sources", 4, "--server-pid", b.proc.pid)
    check_idle(row, IDLE)
    assert row["conns"]["sources"] == 4
    assert row["config"]["idle"] == IDLE and row["config"]["threads"] == 2
    assert row["server"]["pid"] == b.proc.pid
    assert "bytes per idle connection" in p.stdout
    check_table(p.stdout, IDLE_COLUMNS + SERVER_COLUMNS + ["B/conn"])
    b.assert_alive()


def test_idle_connections_against_mosquitto(many_fds, broker_factory, tmp_path):
    b = broker_factory(kind="mosquitto")
    row, _ = conns(tmp_path, "--target", target(b), "--idle", IDLE, "--hold", 1,
                   "--threads", 2, "--server-pid", b.proc.pid)
    check_idle(row, IDLE)
    assert row["conns"]["sources"] == 1  # automatic: one per 16000


def test_small_storm_refuses_nothing(many_fds, broker_factory, tmp_path):
    b = broker_factory(max_connections=5000)
    row, p = conns(tmp_path, "--target", target(b), "--storm", 500, "--duration", 2,
                   "--established", 10, "--threads", 2, "--server-pid", b.proc.pid)
    c = row["conns"]
    assert c["mode"] == "storm"
    assert c["storm"]["started"] == 1000 and c["storm"]["connected"] == 1000
    for k in ("refused", "closed", "timeout", "local"):
        assert c["storm"][k] == 0, k
        assert c["established"][k] == 0, k
    assert c["storm"]["open_at_end"] == 0  # each left with DISCONNECT
    assert c["established"]["connected"] == 10 and c["established"]["open_at_end"] == 10
    # The storm is spread over its two seconds, not sent at once.
    assert 1.5 < c["connect_s"] < 4
    lat = c["connect_latency_us"]
    assert 0 < lat["p50"] <= lat["p99"] <= lat["p99_9"] <= lat["max"]
    for when in ("rtt_before_us", "rtt_during_us"):
        r = c[when]
        assert r["count"] > 0 and 0 < r["p50"] <= r["p99"] <= r["max"], when
    assert row["latency"]["p50"] == pytest.approx(lat["p50"], rel=0.01)
    assert row["errors"]["connect"] == 0 and row["errors"]["closed"] == 0
    assert "round trip during the storm" in p.stdout
    check_table(p.stdout, STORM_COLUMNS + SERVER_COLUMNS)
    assert "messages" not in row and "rss_connected_kb" not in c  # not read in a storm
    assert c["rss_after_kb"] > 0


def accept_queue(port):
    """Connections waiting in the accept queues of the listeners on port
    (ss's Recv-Q of a listening socket; one listener per loop)."""
    out = subprocess.run(["ss", "-ltnH", "sport = :%d" % port], capture_output=True,
                         text=True, timeout=10).stdout
    return sum(int(line.split()[1]) for line in out.splitlines() if line.strip())


def wait_stopped(pid, timeout=5):
    """Until every thread of pid is stopped (SIGSTOP reaches a thread running
    on another CPU a moment later, and one still running would accept)."""
    deadline = time.monotonic() + timeout
    task = "/proc/%d/task" % pid
    while True:
        states = []
        for tid in os.listdir(task):
            with open(os.path.join(task, tid, "stat")) as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        if all(st in ("T", "t") for st in states):
            return
        assert time.monotonic() < deadline, "the broker's threads did not stop: %s" % states
        time.sleep(0.01)


@pytest.mark.shootout_only
def test_storm_while_the_broker_does_not_accept_drops_no_connect(many_fds, broker_factory):
    """A storm of STORM connects that arrives while no loop accepts (the
    broker stopped: a loop busy for a while, on a shared machine) waits in
    the accept queues, none dropped (a full queue drops the SYN and costs its
    client a second: a backlog of 1024 did), then every one gets CONNACK 0
    while an established client's ping round trip stays under a generous
    bound (docs/broker.md, "Threads")."""
    storm = 2000
    with open("/proc/sys/net/core/somaxconn") as f:
        somaxconn = int(f.read())
    if somaxconn < storm + 1:
        pytest.skip("net.core.somaxconn %d is below a storm of %d" % (somaxconn, storm))
    b = broker_factory()
    established = b.raw_connected("established")
    # The fixture's probe connection may still wait in a slow loop's queue
    # (a ThreadSanitizer build at 4 loops): counted, it would be one too many.
    deadline = time.monotonic() + 5
    while accept_queue(b.port) and time.monotonic() < deadline:
        time.sleep(0.01)
    socks = []
    b.proc.send_signal(signal.SIGSTOP)
    try:
        wait_stopped(b.proc.pid)
        for _ in range(storm):
            s = socket.socket()
            s.setblocking(False)
            assert s.connect_ex((b.host, b.port)) in (0, errno.EINPROGRESS)
            socks.append(s)
        # Loopback handshakes complete at once; SYNs dropped would only be
        # retried after a second.
        deadline = time.monotonic() + 0.8
        while accept_queue(b.port) < storm and time.monotonic() < deadline:
            time.sleep(0.05)
        queued = accept_queue(b.port)
    finally:
        b.proc.send_signal(signal.SIGCONT)
    assert queued == storm, "%d of %d connects queued to be accepted" % (queued, storm)
    t0 = time.monotonic()
    established.send(mqtt_raw.pingreq())
    established.expect(mqtt_raw.PINGRESP, timeout=5)
    assert time.monotonic() - t0 < 5
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(True)
        s.sendall(mqtt_raw.connect("storm-%d" % s.fileno()))
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, bytearray())
    answered, refused = 0, 0
    deadline = time.monotonic() + 30
    while answered < storm and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1):
            got = key.data
            chunk = key.fileobj.recv(4 - len(got))
            assert chunk, "the broker closed a storm connection before its CONNACK"
            got += chunk
            if len(got) == 4:
                answered += 1
                refused += got[0] != 0x20 or got[3] != 0
                sel.unregister(key.fileobj)
    assert (answered, refused) == (storm, 0)
    t0 = time.monotonic()
    established.send(mqtt_raw.pingreq())
    established.expect(mqtt_raw.PINGRESP, timeout=5)
    assert time.monotonic() - t0 < 5
    for s in socks:
        s.close()


@pytest.mark.shootout_only
def test_storm_clients_that_subscribe_and_stay(many_fds, broker_factory, tmp_path):
    b = broker_factory(max_connections=5000)
    row, p = conns(tmp_path, "--target", target(b), "--storm", 300, "--duration", 1,
                   "--established", 2, "--stay", "--subscribe")
    c = row["conns"]
    assert c["storm"]["connected"] == 300 and c["storm"]["open_at_end"] == 300
    # No --server-pid: neither broker columns nor RSS figures.
    check_table(p.stdout, STORM_COLUMNS)
    assert not [k for k in c if k.startswith("rss")], c
    assert row["config"]["stay"] == 1 and row["config"]["subscribe"] == 1


@pytest.mark.shootout_only
def test_connections_over_the_limit_are_counted_and_fail_the_run(many_fds, broker_factory,
                                                                  tmp_path):
    b = broker_factory(max_connections=100)
    row, p = conns(tmp_path, "--target", target(b), "--idle", 300, "--hold", 0,
                   "--timeout", 5, expect=EXIT_RUNTIME)
    c = row["conns"]["idle"]
    assert c["started"] == 300 and c["connected"] == 100 and c["open_at_end"] == 100
    # Ours answers CONNACK 3 (server unavailable) over --max-connections.
    assert c["refused"] == 200 and c["closed"] == c["timeout"] == c["local"] == 0
    assert row["errors"]["connect"] == 200
    assert "100 of 300 idle connections connected" in p.stderr
    b.assert_alive()


class DroppingBroker:
    """Accepts, answers each CONNECT with CONNACK 0, and closes every
    connection `after` seconds later: idle connections lost during the
    hold."""

    def __init__(self, after):
        self.after = after
        self.sock = socket.create_server((HOST, 0))
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.stop = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        self.sock.settimeout(0.1)
        while not self.stop:
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            c.settimeout(5)
            c.recv(256)  # the CONNECT, one small segment
            c.sendall(b"\x20\x02\x00\x00")
            threading.Timer(self.after, c.close).start()
            self.conns.append(c)

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.mark.shootout_only
def test_idle_connections_lost_during_the_hold_fail_the_run(tmp_path):
    fake = DroppingBroker(after=0.5)
    try:
        row, p = conns(tmp_path, "--target", "%s:%d" % (HOST, fake.port), "--idle", 20,
                       "--hold", 2, expect=EXIT_RUNTIME)
    finally:
        fake.close()
    c = row["conns"]["idle"]
    assert c["connected"] == 20 and c["open_at_end"] == 0 and c["closed"] == 20
    assert c["lost"] == 20  # of the closed: connected first
    assert row["errors"]["closed"] == 20
    assert "20 idle connections lost" in p.stderr and "closed by the broker" in p.stderr


@pytest.mark.shootout_only
def test_accept_handoff_spreads_connections_over_every_loop(broker_factory):
    """With --accept handoff the first loop alone listens and hands each
    connection to the loops in turn: 40 clients at --threads 4 land on all
    four loops, 10 each give or take the fixture's probe connection (with
    SO_REUSEPORT the kernel's hash decides; docs/broker.md, "Threads")."""
    loops = 4
    b = broker_factory(extra_args=("--threads", str(loops), "--accept", "handoff"))
    clients = [b.raw_connected("handoff-%d" % i) for i in range(40)]
    per_loop = [0] * loops
    for i in range(len(clients)):
        per_loop[b.loop_of("handoff-%d" % i)] += 1
    assert min(per_loop) > 0 and max(per_loop) - min(per_loop) <= 1, per_loop
    for c in clients:
        c.send(mqtt_raw.pingreq())
        c.expect(mqtt_raw.PINGRESP)
    b.assert_alive()


@pytest.mark.parametrize("args, message", [
    ([], "one of --idle N or --storm R"),
    (["--idle", "5", "--storm", "5"], "one of --idle N or --storm R"),
    (["--idle", "5", "--shard", "0/2"], "--shard is not supported"),
    (["--idle", "5", "--sources", "255"], "--sources"),
])
def test_usage_errors(args, message):
    require_shootout()
    p = subprocess.run([SHOOTOUT_BIN, "bench", "mqtt-conns"] + args, capture_output=True,
                       text=True, timeout=10)
    assert p.returncode == EXIT_USAGE and message in p.stderr, p.stderr


def test_help_names_both_modes():
    require_shootout()
    p = subprocess.run([SHOOTOUT_BIN, "bench", "mqtt-conns", "--help"], capture_output=True,
                       text=True, timeout=10)
    assert p.returncode == 0
    for opt in ("--idle", "--hold", "--storm", "--duration", "--established", "--sources",
                "--server-pid", "ulimit -n"):
        assert opt in p.stdout, opt
    listing = subprocess.run([SHOOTOUT_BIN, "bench", "--help"], capture_output=True, text=True,
                             timeout=10)
    assert "mqtt-conns" in listing.stdout
