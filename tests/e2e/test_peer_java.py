"""End-to-end tests of the Java contenders (CONTENDERS.md): peers/grpc-java
(the Car service on grpc-java + Netty, called with python3-grpcio through
stubs protoc generates from src/car/*.proto at test time) and
peers/spring-rest (Spring 4 MVC on Jetty 9, called with http.client and
compared with `shootout car-server`'s REST answers). Each is driven only
through its `start` script: --version, a start on a free port in an empty
directory, one exchange, `shootout bench rpc-seq` for a few hundred calls,
SIGTERM, and then no process and no file left behind outside that directory.

`make peers` builds them: without it (or without the JDK and Debian's Java
packages) `start --version` exits 3 and these tests skip, failing under
CI=true.
"""

import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import time

import grpc
import pytest

from conftest import HOST, REPO, SHOOTOUT_BIN, free_port, need

SEND = "/com.stevenpg.rvg.MessageService/send"
CHECK = "/grpc.health.v1.Health/Check"
# The contract's allowances: a JVM boots within 60 s and stops within 10 s.
BOOT_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
CALLS = 300
ARTICLE_DOC = json.dumps({
    "car": {"make": "toyota", "model": "corolla", "trim": "4DR Sedan", "color": "gray",
            "year": 2012, "mileage": 120000},
    "driver": {"firstname": "John", "lastname": "Smith", "driverId": "someId"},
}, separators=(",", ":")).encode()

PEERS = {
    "grpc-java": {"version": r"^grpc-java \d+\.\d+\.\d+ \(Netty \d+\.\d+\.\d+, OpenJDK \d+\S*\)$",
                  "protocol": "grpc", "listening": "grpc-java listening on "},
    "spring-rest": {"version": r"^Spring MVC 4\.\d+\.\d+ \(Jetty 9\.\S+, Jackson \S+, OpenJDK \S+; not Spring Boot\)$",
                    "protocol": "rest", "listening": "spring-rest listening on "},
}


def start_script(name):
    return os.path.join(REPO, "peers", name, "start")


def version(name):
    return subprocess.run([start_script(name), "--version"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=10)


@pytest.fixture(params=sorted(PEERS))
def peer_name(request):
    r = version(request.param)
    need(r.returncode == 0, "%s: %s" % (request.param, r.stdout.strip() or r.stderr.strip()))
    return request.param


def java_pids_mentioning(text):
    """Pids of processes whose command line or working directory mentions text."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmdline = f.read().decode(errors="replace")
            cwd = os.readlink("/proc/%s/cwd" % pid)
        except OSError:
            continue
        if text in cmdline or text in cwd:
            found.append(int(pid))
    return found


def files_outside(pid, directory, log):
    """Files the running process has open or mapped, other than the
    JDK's, the system's and the build's (read-only) and the log the test
    gave it, outside directory: what it writes elsewhere, such as a JVM's
    /tmp/hsperfdata_USER/PID."""
    paths = set()
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            fields = line.split(None, 5)
            if len(fields) == 6 and fields[5].startswith("/"):
                paths.add(fields[5].strip().removesuffix(" (deleted)"))
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            paths.add(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
        except OSError:
            continue
    allowed = ("/usr/", "/etc/", "/dev/", "/proc/", directory + "/", os.path.join(REPO, "build", "peers") + "/")
    return sorted(p for p in paths if p.startswith("/") and not p.startswith(allowed) and p != log)


class Peer:
    """A contender run by its start script in its own process group."""

    def __init__(self, name, tmp_path, extra=(), listening=None):
        """extra: more options for start (an a2b contender's --db, --pool);
        listening: the line announcing the port, when name is not in PEERS."""
        self.name = name
        self.listening = listening or PEERS[name]["listening"]
        self.dir = tmp_path / "dir"
        self.dir.mkdir()
        self.port = free_port()
        self.stderr_path = tmp_path / "stderr"
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen([start_script(name), "--port", str(self.port), "--dir", str(self.dir),
                                      "--threads", "1"] + list(extra), stdin=subprocess.DEVNULL,
                                     stdout=self._err, stderr=self._err, start_new_session=True)

    def stderr(self):
        return self.stderr_path.read_text(errors="replace")

    def wait_ready(self):
        line = "%s%s:%d" % (self.listening, HOST, self.port)
        deadline = time.monotonic() + BOOT_TIMEOUT
        while time.monotonic() < deadline:
            if line in self.stderr():
                return
            assert self.proc.poll() is None, "%s exited with %r:\n%s" % (self.name, self.proc.returncode,
                                                                         self.stderr()[-3000:])
            time.sleep(0.1)
        raise AssertionError("%s not listening within %.0f s:\n%s" % (self.name, BOOT_TIMEOUT, self.stderr()[-3000:]))

    def stop(self):
        """SIGTERM, as `shootout run` stops it; returns the exit code."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(STOP_TIMEOUT)
        finally:
            self._err.close()

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._err.close()


@pytest.fixture
def peer(peer_name, tmp_path):
    p = Peer(peer_name, tmp_path)
    try:
        p.wait_ready()
        yield p
    finally:
        p.kill()


def grpc_exchange(port, pb):
    """One send and one health check through grpcio; returns their answers."""
    m = pb["car"].Message()
    m.car.make, m.car.model, m.car.trim, m.car.color = "toyota", "corolla", "4DR Sedan", "gray"
    m.car.year, m.car.mileage = 2012, 120000
    m.driver.firstname, m.driver.lastname, m.driver.driverId = "John", "Smith", "someId"
    with grpc.insecure_channel("%s:%d" % (HOST, port)) as ch:
        send = ch.unary_unary(SEND, request_serializer=pb["car"].Message.SerializeToString,
                              response_deserializer=pb["car"].Result.FromString)
        check = ch.unary_unary(CHECK, request_serializer=pb["health"].HealthCheckRequest.SerializeToString,
                               response_deserializer=pb["health"].HealthCheckResponse.FromString)
        result = send(m, timeout=10)
        health = check(pb["health"].HealthCheckRequest(service=""), timeout=10)
        with pytest.raises(grpc.RpcError) as unknown:
            check(pb["health"].HealthCheckRequest(service="no.such.Service"), timeout=10)
    return result.status, health.status, unknown.value.code()


def rest_answers(port):
    """(status, content type, body) of the article's document, a document
    missing a field, and a wrong path, over one keep-alive connection."""
    c = http.client.HTTPConnection(HOST, port, timeout=10)
    out = []
    for path, body in (("/v1/create", ARTICLE_DOC), ("/v1/create", b'{"car":{}}'), ("/nowhere", b"{}")):
        c.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        out.append((r.status, r.getheader("Content-Type"), r.read()))
        assert r.getheader("Content-Length") is not None
        assert not r.will_close, "HTTP/1.1 keep-alive"
    c.close()
    return out


def json_items(doc):
    """Every (key, value) of a JSON document, depth first."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield k, v
            yield from json_items(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from json_items(v)


def test_version(peer_name):
    r = version(peer_name)
    assert r.returncode == 0
    assert re.match(PEERS[peer_name]["version"], r.stdout.strip()), r.stdout
    assert r.stdout.count("\n") == 1


# a2b-spring (test_peer_a2b_spring.py) shares the scripts' logic.
@pytest.mark.parametrize("name", sorted(PEERS) + ["a2b-spring"])
def test_version_not_built(name, tmp_path):
    """The scripts in a tree without build/peers/: exit 3, the fix on stdout."""
    for rel in (os.path.join("peers", name, "start"), os.path.join("peers", "lib", "jvm-peer.sh")):
        os.makedirs(tmp_path / os.path.dirname(rel), exist_ok=True)
        shutil.copy2(os.path.join(REPO, rel), tmp_path / rel)
    r = subprocess.run([str(tmp_path / "peers" / name / "start"), "--version"], capture_output=True, text=True,
                       timeout=10)
    assert (r.returncode, r.stdout) in ((3, "not built: make peers\n"),
                                        (3, "not installed: scripts/install-deps.sh (apt-get install "
                                            "default-jdk-headless)\n"))


def test_bad_arguments(peer_name, tmp_path):
    r = subprocess.run([start_script(peer_name), "--port", "1"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "usage" in r.stderr


def test_exchange_then_sigterm_leaves_nothing(peer, pb, car_server, tmp_path):
    if PEERS[peer.name]["protocol"] == "grpc":
        assert grpc_exchange(peer.port, pb) == ("successful", pb["health"].HealthCheckResponse.SERVING,
                                                grpc.StatusCode.NOT_FOUND)
    else:
        # Status, content type and body as car-server's; the 400's body
        # also has car-server's "offset", which Jackson cannot give.
        ours = rest_answers(car_server.rest_port)
        theirs = rest_answers(peer.port)
        assert theirs[0] == ours[0] == (201, "application/json", b'{"status":"created"}')
        assert theirs[1][:2] == ours[1][:2] == (400, "application/json")
        assert json.loads(theirs[1][2]) == {"error": "missing field", "field": "car.make"}
        assert theirs[2] == ours[2] == (404, "application/json", b'{"error":"not found"}')

    assert_stops_leaving_nothing(peer)


def assert_stops_leaving_nothing(peer):
    """No file written outside DIR while it runs; SIGTERM stops it (the JVM
    exits 143 on it) and nothing of it is left behind."""
    jvm_pid = peer.proc.pid  # the start script exec()s the JVM
    assert files_outside(jvm_pid, str(peer.dir), str(peer.stderr_path)) == []
    assert peer.stop() in (0, 143), peer.stderr()[-3000:]
    deadline = time.monotonic() + STOP_TIMEOUT
    while java_pids_mentioning(str(peer.dir)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert java_pids_mentioning(str(peer.dir)) == [], "a process of the peer outlived SIGTERM"
    # What a JVM leaves once it exits, unless told not to: an attach socket,
    # a crash log in the working directory (its hsperfdata file, gone with
    # it, is checked while it runs).
    assert [p for p in ("/tmp/.java_pid%d" % jvm_pid, os.path.join(REPO, "hs_err_pid%d.log" % jvm_pid))
            if os.path.exists(p)] == []


def test_rpc_seq(peer):
    """A few hundred calls from our own client, as `shootout run` makes them."""
    protocol = PEERS[peer.name]["protocol"]
    r = subprocess.run([SHOOTOUT_BIN, "bench", "rpc-seq", "--protocol", protocol, "--target",
                        "%s:%d" % (HOST, peer.port), "--requests", str(CALLS), "--json", "-"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert [v for k, v in json_items(json.loads(r.stdout)) if k in ("received", "lost")] == [CALLS, 0], r.stdout
    assert peer.stop() in (0, 143)
