"""Fixtures for the end-to-end tests of the shootout MQTT 3.1.1 broker.

The broker under test is $SHOOTOUT_BIN (default build/release/shootout).
With SHOOTOUT_TEST_PEER=mosquitto the same tests run against Eclipse
Mosquitto instead, which validates the tests themselves; tests marked
`shootout_only` are skipped then.

A test that lacks something it needs (a peer, a tool, PostgreSQL) calls
need(condition, reason): a skip with the reason on a developer's machine, a
failure under CI=true, where everything is installed and built and a skip
could only hide a broken build or set-up.
"""

import getpass
import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

import mqtt_raw
import natsd
import pgtemp
from mqtt_paho import PahoClient

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHOOTOUT_BIN = os.environ.get("SHOOTOUT_BIN", os.path.join(REPO, "build", "release", "shootout"))
PEER = os.environ.get("SHOOTOUT_TEST_PEER", "").strip()
MOSQUITTO_BIN = os.environ.get("MOSQUITTO_BIN", "/usr/sbin/mosquitto")
IS_PEER = PEER == "mosquitto"
# The broker's event loops in every test that starts one (--threads; 1
# unless set, whatever the broker's default; make e2e-threads4 runs the
# suite at 4).
E2E_THREADS = int(os.environ.get("SHOOTOUT_E2E_THREADS", "1"))

HOST = "127.0.0.1"
START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0
# Safety net so that no test can hang the suite (pytest-timeout is not
# installed). Generous because the suite also runs under AddressSanitizer.
TEST_CALL_TIMEOUT = int(os.environ.get("SHOOTOUT_E2E_TEST_TIMEOUT", "60"))

SANITIZER_MARKERS = ("AddressSanitizer", "runtime error:", "LeakSanitizer", "ThreadSanitizer")

CI = os.environ.get("CI", "") in ("true", "1")


def need(condition, reason):
    """Skips the calling test (or fixture) with reason unless condition
    holds; under CI=true fails it instead."""
    __tracebackhide__ = True  # reports name the caller's line
    if condition:
        return
    if CI:
        pytest.fail("%s (under CI=true a missing prerequisite fails instead of skipping)" % reason,
                    pytrace=False)
    pytest.skip(reason)




def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "shootout_only: needs the shootout binary (CLI, exit codes, sanitizers, or a "
        "behaviour where Mosquitto legitimately differs); skipped with SHOOTOUT_TEST_PEER=mosquitto")
    if PEER and PEER != "mosquitto":
        raise pytest.UsageError("SHOOTOUT_TEST_PEER must be empty or 'mosquitto', not %r" % PEER)


def pytest_collection_modifyitems(config, items):
    if not IS_PEER:
        return
    skip = pytest.mark.skip(reason="shootout_only: not run against the mosquitto peer")
    for item in items:
        if "shootout_only" in item.keywords:
            item.add_marker(skip)


def pytest_report_header(config):
    if IS_PEER:
        return "e2e broker: mosquitto peer (%s)" % MOSQUITTO_BIN
    return "e2e broker: %s" % SHOOTOUT_BIN


class _CallTimeout(Exception):
    pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    def on_alarm(signum, frame):
        raise _CallTimeout("test exceeded %ds (SHOOTOUT_E2E_TEST_TIMEOUT)" % TEST_CALL_TIMEOUT)

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(TEST_CALL_TIMEOUT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        for b in getattr(item, "_e2e_brokers", []):
            rep.sections.append(("broker stderr (%s, port %d)" % (b.kind, b.port), b.stderr_tail()))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def ipv6_loopback_port():
    """A free port on ::1; need()s an IPv6 loopback."""
    __tracebackhide__ = True
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
            return s.getsockname()[1]
    except OSError as e:
        why = str(e)
    need(False, "no IPv6 loopback (::1) on this machine: %s" % why)


NODE_PEER_DIR = os.path.join(REPO, "peers", "a2b-node")


# Written by scripts/node-peer.sh when the npm registry cannot be reached
# from this machine: no fault of the project's, so not a CI failure.
NODE_PEER_UNAVAILABLE = os.path.join(REPO, "build", "peers", "node-peer.unavailable")


def node_peer_unavailable():
    """Why the machine itself keeps the Node peer out, or None."""
    try:
        with open(NODE_PEER_UNAVAILABLE) as f:
            return f.read().strip()
    except OSError:
        return None


def have_node_peer():
    """True when the Node.js a2b peer can run; False (after a skip-or-fail
    check like need()'s) for tests that also cover the peer-less case."""
    if shutil.which("node") and os.path.isdir(os.path.join(NODE_PEER_DIR, "node_modules", "fastify")):
        return True
    if CI and node_peer_unavailable() is None:
        pytest.fail("the Node peer is not installed (make node-peer); under CI=true that fails",
                    pytrace=False)
    return False


def need_node_peer():
    """need()s the Node.js a2b peer: node and its npm packages. The one skip
    CI allows: a registry this machine cannot reach (make node-peer says so)."""
    __tracebackhide__ = True
    need(shutil.which("node"), "node is not installed")
    why = node_peer_unavailable()
    if why is not None:
        pytest.skip("the Node peer is not installed: %s" % why)
    need(os.path.isdir(os.path.join(NODE_PEER_DIR, "node_modules", "fastify")),
         "peers/a2b-node/node_modules is missing (make node-peer)")


def require_shootout():
    """Fails the test when there is no binary to test: never a skip."""
    if not (os.path.isfile(SHOOTOUT_BIN) and os.access(SHOOTOUT_BIN, os.X_OK)):
        pytest.fail("shootout binary %s not found (build it, or set SHOOTOUT_BIN)" % SHOOTOUT_BIN,
                    pytrace=False)


class ServerProcess:
    """What every server process under test shares: its stderr log, whether
    it runs, and stopping it by signal. Subclasses set what (its name in
    messages), proc and stderr_path."""

    what = "server"

    def stderr_text(self):
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stderr_tail(self, limit=20000):
        text = self.stderr_text()
        return ("...\n" + text[-limit:] if len(text) > limit else text) or "(empty)"

    def running(self):
        return self.proc.poll() is None

    def assert_no_sanitizer_reports(self):
        text = self.stderr_text()
        for marker in SANITIZER_MARKERS:
            assert marker not in text, "sanitizer report in %s stderr:\n%s" % (self.what, self.stderr_tail())

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """Sends sig and waits for the exit; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                raise AssertionError("%s did not exit within %.0fs of signal %d:\n%s" % (
                    self.what, timeout, sig, self.stderr_tail()))
        self.returncode = self.proc.returncode
        return self.returncode


class Broker(ServerProcess):
    """A running broker process: shootout, or mosquitto as the peer."""

    what = "broker"

    def __init__(self, workdir, kind, port, limits, verbose, extra_args, persistence_dir=None,
                 conf_lines=(), conf_text=""):
        self.kind = kind
        self.expected_rc = 0  # at teardown, after SIGTERM (kill() changes it)
        self.host = HOST
        self.port = port
        self.limits = dict(limits)
        self.workdir = workdir
        self.stderr_path = os.path.join(workdir, "broker-%d.stderr" % port)
        self.stdout_path = os.path.join(workdir, "broker-%d.stdout" % port)
        self.clients = []
        self.returncode = None
        if kind == "mosquitto":
            conf = os.path.join(workdir, "mosquitto-%d.conf" % port)
            if persistence_dir:
                # Mosquitto does not create it, and as root it runs as user
                # mosquitto.
                os.makedirs(persistence_dir, exist_ok=True)
                os.chmod(persistence_dir, 0o777)
            lines = [
                "per_listener_settings false",
                "persistence true\npersistence_location %s/" % persistence_dir
                if persistence_dir else "persistence false",
                "allow_anonymous true",
                "log_dest stderr",
                "log_type all" if verbose else "log_type error\nlog_type warning\nlog_type notice\nlog_type information",
                "log_timestamp_format %H:%M:%S",
            ]
            if conf_lines:
                # Mosquitto started as root otherwise drops to user
                # mosquitto, which cannot read the test's files.
                lines = [l for l in lines if not l.startswith("allow_anonymous")]
                lines += ["user %s" % getpass.getuser()] + list(conf_lines)
            if "max_packet_size" in limits:
                lines.append("max_packet_size %d" % limits["max_packet_size"])
            if "max_queued_messages" in limits:
                lines.append("max_queued_messages %d" % limits["max_queued_messages"])
            if "max_inflight_messages" in limits:
                lines.append("max_inflight_messages %d" % limits["max_inflight_messages"])
            lines.append("listener %d %s" % (port, HOST))
            if "max_connections" in limits:
                lines.append("max_connections %d" % limits["max_connections"])
            if conf_text:
                if not conf_lines:
                    # Run as root, Mosquitto would drop to user mosquitto,
                    # who cannot read the certificates in pytest's tmp dirs.
                    lines.append("user %s" % getpass.getuser())
                lines.append(conf_text)
            with open(conf, "w") as f:
                f.write("\n".join(lines) + "\n")
            argv = [MOSQUITTO_BIN, "-c", conf]
        else:
            argv = [SHOOTOUT_BIN, "broker", "--bind", HOST, "--port", str(port)]
            if verbose:
                argv.append("-v")
            flag_names = {
                "max_connections": "--max-connections",
                "max_packet_size": "--max-packet-size",
                "max_queued_messages": "--max-queued-messages",
                "max_inflight_messages": "--max-inflight-messages",
            }
            for key, value in limits.items():
                argv += [flag_names[key], str(value)]
            if persistence_dir:
                argv += ["--persistence", "--persistence-location", persistence_dir]
            if "--threads" not in extra_args and not any(
                    line.split()[:1] == ["threads"] for line in conf_lines):
                # Always given, so that the suite runs at the loops it names
                # and not at the default's one per CPU (make e2e-threads4).
                argv += ["--threads", str(E2E_THREADS)]
            if conf_lines or conf_text:
                # Global lines first; conf_text follows the default listener
                # and adds to it (or adds more listeners).
                path = os.path.join(workdir, "shootout-%d.conf" % port)
                with open(path, "w") as f:
                    f.write("".join(line + "\n" for line in conf_lines))
                    if conf_text:
                        f.write("listener %d %s\n%s\n" % (port, HOST, conf_text))
                argv += ["-c", path]
        argv += list(extra_args)
        self.argv = argv
        self._err = open(self.stderr_path, "wb")
        self._out = open(self.stdout_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._out,
                                     stderr=self._err, cwd=workdir)

    # -- state
    def wait_ready(self, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("broker exited with %r during startup:\n%s" % (
                    self.proc.returncode, self.stderr_tail()))
            if self.kind == "mosquitto":
                # No probe connection for Mosquitto: 2.0.11 miscounts a
                # connection closed before CONNECT against max_connections
                # (the slot is freed twice). Its log says when it listens.
                if " running" in self.stderr_text():
                    return
                time.sleep(0.02)
                continue
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.02)
        raise AssertionError("broker did not accept connections on port %d within %.0fs:\n%s" % (
            self.port, timeout, self.stderr_tail()))

    def reload(self, timeout=5):
        """Sends SIGHUP and waits until the broker says it reloaded (or, for
        ours, that the reload failed). Returns the new log text."""
        marker = "Reloading config" if self.kind == "mosquitto" else "SIGHUP"
        before = self.stderr_text().count(marker)
        self.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + timeout
        while self.stderr_text().count(marker) == before:
            assert time.monotonic() < deadline, "no reload logged:\n" + self.stderr_tail()
            time.sleep(0.02)
        if self.kind == "mosquitto":
            time.sleep(0.3)  # it logs before it reloads
        return self.stderr_text()

    def assert_alive(self):
        assert self.running(), "broker exited unexpectedly with %r:\n%s" % (
            self.proc.returncode, self.stderr_tail())

    def kill(self):
        """SIGKILL, as a crash: no shutdown work at all."""
        self.expected_rc = -signal.SIGKILL
        self.proc.kill()
        self.proc.wait(STOP_TIMEOUT)

    def close_files(self):
        for f in (self._err, self._out):
            try:
                f.close()
            except OSError:
                pass

    # -- clients
    def raw(self, timeout=mqtt_raw.DEFAULT_TIMEOUT):
        """A new raw TCP connection (no CONNECT sent yet)."""
        c = mqtt_raw.RawClient(self.host, self.port, timeout)
        self.clients.append(c)
        return c

    def raw_connected(self, client_id="", clean_session=True, keepalive=60, **kw):
        c = self.raw()
        c.connect_ok(client_id, clean_session, keepalive, **kw)
        return c

    def loop_of(self, client_id):
        """The event loop of client_id's session, from its last connect
        line (loop=N, logged with --threads above 1); None with one loop."""
        found = None
        for m in re.finditer(r"event=connect client=(\S+) .*? loop=(\d+)", self.stderr_text()):
            if m.group(1) == client_id:
                found = int(m.group(2))
        return found

    def raw_accepted_apart(self, other_loops, tries=40):
        """A new raw connection (no CONNECT sent yet) that a loop not in
        other_loops accepted, from the broker's debug lines (start it with
        verbose=True and --threads)."""
        for _ in range(tries):
            before = len(re.findall(r"accepted on loop", self.stderr_text()))
            c = self.raw()
            pat = r"connection 127\.0\.0\.1:%d accepted on loop (\d+)" % c.sock.getsockname()[1]
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                text = self.stderr_text()
                found = re.findall(pat, text)
                if found and len(re.findall(r"accepted on loop", text)) > before:
                    break
                time.sleep(0.01)
            assert found, "no accept line for the new connection"
            if int(found[-1]) not in other_loops:
                return c
            c.close()
        raise AssertionError("%d connections all accepted on loops %s" % (tries, other_loops))

    def raw_connected_apart(self, client_id, other_loops, tries=40, **kw):
        """raw_connected(client_id) on a loop not in other_loops: the kernel
        spreads connections over the loops' SO_REUSEPORT listeners by
        address and port, so a new connection (a new port) tries again,
        as client_id-1, client_id-2 ... Returns the client and its id; with
        one loop, the first client."""
        cid = client_id
        for k in range(tries):
            c = self.raw_connected(cid, **kw)
            loop = self.loop_of(cid)
            if loop is None or loop not in other_loops:
                return c, cid
            c.close()
            cid = "%s-%d" % (client_id, k + 1)
        raise AssertionError("%d connections all landed on loops %s" % (tries, other_loops))

    def paho(self, client_id, clean_session=True, keepalive=60, will=None, connect=True):
        c = PahoClient(self.host, self.port, client_id, clean_session, keepalive, will)
        self.clients.append(c)
        if connect:
            c.connect()
        return c

    def close_clients(self):
        for c in reversed(self.clients):
            try:
                c.close()
            except Exception:
                pass
        self.clients = []


@pytest.fixture
def broker_factory(request, tmp_path):
    """broker_factory(max_connections=..., max_packet_size=...,
    max_queued_messages=..., max_inflight_messages=..., verbose=False,
    extra_args=(), conf_lines=(), conf="", kind=None) starts a broker and
    returns a Broker: shootout, or Mosquitto with SHOOTOUT_TEST_PEER=mosquitto
    or kind="mosquitto" (for tests that compare the two). conf_lines are configuration file lines both brokers understand
    (password_file, acl_file, allow_anonymous ...); conf holds lines that
    follow the default listener's `listener PORT 127.0.0.1`, e.g. more
    listeners. Every broker is
    stopped with SIGTERM at teardown; for shootout its exit code must be 0,
    and no broker may print a sanitizer report."""
    started = []
    request.node._e2e_brokers = started

    def start(verbose=None, extra_args=(), port=None, persistence_dir=None, conf_lines=(), conf="",
              kind=None, **limits):
        if verbose is None:
            verbose = bool(os.environ.get("SHOOTOUT_E2E_VERBOSE"))
        if IS_PEER or kind == "mosquitto":
            kind = "mosquitto"
            need(os.access(MOSQUITTO_BIN, os.X_OK), "no Mosquitto at %s (set MOSQUITTO_BIN)" % MOSQUITTO_BIN)
        else:
            kind = "shootout"
            require_shootout()
        last = None
        for _attempt in range(3):  # a free port can be taken between probe and bind
            b = Broker(str(tmp_path), kind, port or free_port(), limits, verbose, extra_args,
                       persistence_dir, conf_lines, conf)
            started.append(b)
            try:
                b.wait_ready()
                return b
            except AssertionError as e:
                last = e
                if b.running():
                    raise
                if "in use" not in b.stderr_text().lower():
                    raise
                started.remove(b)
                b.close_files()
        raise last

    yield start

    errors = []
    for b in started:
        b.close_clients()
        try:
            rc = b.stop()
        except AssertionError as e:
            errors.append(str(e))
            rc = b.proc.returncode
        if b.kind == "shootout" and rc != b.expected_rc:
            errors.append("broker exit code %r on SIGTERM (expected %r):\n%s" % (
                rc, b.expected_rc, b.stderr_tail()))
        try:
            b.assert_no_sanitizer_reports()
        except AssertionError as e:
            errors.append(str(e))
        b.close_files()
    if errors:
        pytest.fail("\n\n".join(errors))


@pytest.fixture
def broker(broker_factory):
    """A broker with default settings."""
    return broker_factory()


# ---- the Car service (shootout car-server) ---------------------------------

class CarServer(ServerProcess):
    """A running `shootout car-server` on free ports (port 0), which it names
    in its start-up log line."""

    what = "car-server"

    LISTENING = re.compile(r"REST \(HTTP/1\.1\) on (\S+?|off), gRPC \((?:h2c|h2, TLS|h2, mutual TLS)\) "
                           r"on (\S+?|off), ")

    def __init__(self, workdir, extra_args):
        self.host = HOST
        self.stderr_path = os.path.join(workdir, "car-server-%d.stderr" % len(os.listdir(workdir)))
        self.argv = [SHOOTOUT_BIN, "car-server", "--bind", HOST, "--rest-port", "0",
                     "--grpc-port", "0"] + list(extra_args)
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._err, cwd=workdir)
        self.rest_port = self.grpc_port = None

    def _ports(self, m):
        ports = [None if a == "off" else int(a.rsplit(":", 1)[1]) for a in m.groups()]
        self.rest_port, self.grpc_port = ports

    def wait_ready(self, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = self.LISTENING.search(self.stderr_text())
            if m:
                self._ports(m)
                return
            if self.proc.poll() is not None:
                raise AssertionError("%s exited with %r during startup:\n%s" % (
                    self.what, self.proc.returncode, self.stderr_tail()))
            time.sleep(0.02)
        raise AssertionError("%s did not start within %.0fs:\n%s" % (self.what, timeout, self.stderr_tail()))


def stop_servers(started, name):
    """Stops every server of a factory with SIGTERM; fails the test unless
    each exits 0 without a sanitizer report."""
    errors = []
    for s in started:
        try:
            rc = s.stop()
            if rc != 0:
                errors.append("%s exit code %r on SIGTERM (expected 0):\n%s" % (name, rc, s.stderr_tail()))
            s.assert_no_sanitizer_reports()
        except AssertionError as e:
            errors.append(str(e))
        s._err.close()
    if errors:
        pytest.fail("\n\n".join(errors))


@pytest.fixture
def car_server_factory(request, tmp_path):
    """car_server_factory(*extra_args) starts `shootout car-server` on free
    ports and returns a CarServer (rest_port, grpc_port). Each is stopped with
    SIGTERM at teardown and must exit 0 without a sanitizer report. Not run
    against the Mosquitto peer."""
    if IS_PEER:
        pytest.skip("the Car service has no Mosquitto peer")
    require_shootout()
    started = []

    def start(*extra_args):
        s = CarServer(str(tmp_path), extra_args)
        started.append(s)
        s.wait_ready()
        return s

    yield start

    stop_servers(started, "car-server")


@pytest.fixture
def car_server(car_server_factory):
    """A car-server with default settings."""
    return car_server_factory()


class A2bServer(CarServer):
    """A running `shootout a2b-server` on a free port (port 0), named in its
    start-up log line; its SQLite file (unless --db says otherwise) lives
    in workdir."""

    what = "a2b-server"

    LISTENING = re.compile(r"a2b-server: HTTP/1\.1 on (\S+?), ")

    def __init__(self, workdir, extra_args):
        self.host = HOST
        self.stderr_path = os.path.join(workdir, "a2b-server-%d.stderr" % len(os.listdir(workdir)))
        self.argv = [SHOOTOUT_BIN, "a2b-server", "--bind", HOST, "--port", "0",
                     "--scale", "0.01"] + list(extra_args)
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._err, cwd=workdir)
        self.port = None

    def _ports(self, m):
        self.port = int(m.group(1).rsplit(":", 1)[1])


@pytest.fixture
def a2b_server_factory(request, tmp_path):
    """a2b_server_factory(*extra_args) starts `shootout a2b-server --scale
    0.01` in tmp_path (so its a2b.db is there) and returns an A2bServer
    (port). Each is stopped with SIGTERM at teardown and must exit 0 without
    a sanitizer report."""
    if IS_PEER:
        pytest.skip("the a2b service has no Mosquitto peer")
    require_shootout()
    started = []

    def start(*extra_args):
        s = A2bServer(str(tmp_path), extra_args)
        started.append(s)
        s.wait_ready(timeout=60)
        return s

    yield start

    stop_servers(started, "a2b-server")


def start_pg():
    """A new pgtemp.PgCluster on a free port; need()s one, with the reason
    it cannot be started."""
    __tracebackhide__ = True
    try:
        return pgtemp.PgCluster(free_port())
    except pgtemp.PgUnavailable as e:
        why = str(e)
    need(False, "no PostgreSQL: %s" % why)


@pytest.fixture(scope="module")
def pg_cluster():
    """A PostgreSQL server for the module's tests (pgtemp.PgCluster: uri(db),
    psql(), stop(), start())."""
    cluster = start_pg()
    yield cluster
    cluster.destroy()


def start_nats(nodes=1):
    """A new natsd.NatsCluster of nodes nats-servers with JetStream on free
    loopback ports; need()s one, with the reason it cannot be started."""
    __tracebackhide__ = True
    try:
        return natsd.NatsCluster(nodes)
    except natsd.NatsUnavailable as e:
        why = str(e)
    need(False, "no NATS server: %s" % why)


@pytest.fixture(scope="module")
def nats_server():
    """One nats-server with JetStream for the module's tests (a natsd.NatsNode:
    host, port, url, client(), kill(), start())."""
    cluster = start_nats(1)
    yield cluster.nodes[0]
    cluster.destroy()


@pytest.fixture
def nats_server_own():
    """One nats-server for this test alone, which it may stop and start
    again (NatsNode.stop, restart: the same ports and store)."""
    cluster = start_nats(1)
    yield cluster.nodes[0]
    cluster.destroy()


@pytest.fixture
def nats_cluster_own():
    """A 3-node NATS cluster for this test alone, whose nodes it may kill
    and restart."""
    cluster = start_nats(3)
    yield cluster
    cluster.destroy()


@pytest.fixture(scope="module")
def nats_cluster():
    """A 3-node NATS cluster with JetStream (natsd.NatsCluster: nodes, urls())."""
    cluster = start_nats(3)
    yield cluster
    cluster.destroy()


def _openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, timeout=30)


def _make_ca(d, name):
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=" + name,
             "-keyout", name + ".key", "-out", name + ".pem", cwd=d)


def _make_cert(d, name, cn, ca, san=None):
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + cn, "-keyout", name + ".key",
             "-out", name + ".csr", cwd=d)
    ext = []
    if san:
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write("subjectAltName=%s\n" % san)
        ext = ["-extfile", name + ".ext"]
    _openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
             "-CAcreateserial", "-days", "2", "-out", name + ".pem", *ext, cwd=d)


@pytest.fixture(scope="session")
def tls_certs(tmp_path_factory):
    """Certificates made with the openssl CLI: a CA with a server
    certificate (SAN 127.0.0.1 and localhost) and a client certificate
    (CN tls-user), and a second, wrong CA with a client certificate of its
    own. Returns a dict of paths: ca, server_cert, server_key, client_cert,
    client_key, wrong_ca, wrong_client_cert, wrong_client_key."""
    d = str(tmp_path_factory.mktemp("certs"))
    _make_ca(d, "ca")
    _make_cert(d, "server", "localhost", "ca", "IP:127.0.0.1,DNS:localhost")
    _make_cert(d, "client", "tls-user", "ca")
    _make_ca(d, "wrongca")
    _make_cert(d, "wrongclient", "intruder", "wrongca")
    p = lambda n: os.path.join(d, n)
    return dict(ca=p("ca.pem"), server_cert=p("server.pem"), server_key=p("server.key"),
                client_cert=p("client.pem"), client_key=p("client.key"),
                wrong_ca=p("wrongca.pem"), wrong_client_cert=p("wrongclient.pem"),
                wrong_client_key=p("wrongclient.key"))


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    """The protoc-generated Python modules of src/car/*.proto, for grpcio
    tests of the gRPC peers: pb["car"].Message, pb["health"].HealthCheckRequest..."""
    out = tmp_path_factory.mktemp("stubs")
    src = os.path.join(REPO, "src", "car")
    mods = {}
    for name in ("car", "health"):
        subprocess.run(["protoc", "-I" + src, "--python_out=" + str(out), os.path.join(src, name + ".proto")],
                       check=True, timeout=60)
        spec = importlib.util.spec_from_file_location(name + "_pb2", str(out / (name + "_pb2.py")))
        mods[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mods[name])
    return mods
