"""End-to-end tests of the benchmark peer car-grpc-cpp-server (the Car service
on the official gRPC C++ library, peers/grpc-cpp), called with python3-grpcio
through stubs that protoc generates from src/car/*.proto at test time; and of
tests/perf/rpc_tools.py's h2load path against it.

The peer is built by `make peers`, not by `make`: these tests need()
build/peers/car-grpc-cpp-server (or $SHOOTOUT_PEER_GRPC_CPP): skipped
without it, failed under CI=true.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import grpc
import pytest

from conftest import HOST, REPO, START_TIMEOUT, CarServer, ipv6_loopback_port, need

PEER_BIN = os.environ.get("SHOOTOUT_PEER_GRPC_CPP",
                          os.path.join(REPO, "build", "peers", "car-grpc-cpp-server"))
RPC_TOOLS = os.path.join(REPO, "tests", "perf", "rpc_tools.py")
SEND = "/com.stevenpg.rvg.MessageService/send"
CHECK = "/grpc.health.v1.Health/Check"
MAX_MESSAGE = 4 * 1024 * 1024  # grpc's default receive limit, which the peer keeps
CALL_TIMEOUT = 10.0
LISTENING = re.compile(r"^car-grpc-cpp-server listening on (\S+)$", re.M)


@pytest.fixture(scope="module", autouse=True)
def peer_built():
    need(os.access(PEER_BIN, os.X_OK), "%s not built (make peers)" % PEER_BIN)


class Peer(CarServer):
    """A running car-grpc-cpp-server on a port it picked itself. Stopping
    it and reading its stderr work as for conftest's CarServer."""

    def __init__(self, workdir, *args):
        self.stderr_path = os.path.join(workdir, "peer-%d.stderr" % len(os.listdir(workdir)))
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen([PEER_BIN, "--port", "0"] + list(args), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self._err)
        self.target = self.port = None

    def wait_ready(self, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = LISTENING.search(self.stderr_text())
            if m:
                self.target = m.group(1)
                self.port = int(self.target.rsplit(":", 1)[1])
                return self
            assert self.running(), "peer exited with %r:\n%s" % (self.proc.returncode, self.stderr_tail())
            time.sleep(0.02)
        raise AssertionError("peer did not start within %.0fs:\n%s" % (timeout, self.stderr_tail()))


@pytest.fixture
def peer_factory(tmp_path):
    started = []

    def start(*args):
        p = Peer(str(tmp_path), *args)
        started.append(p)
        return p.wait_ready()

    yield start
    for p in started:
        rc = p.stop()
        assert rc == 0, "peer exit code %r on SIGTERM:\n%s" % (rc, p.stderr_tail())


@pytest.fixture
def peer(peer_factory):
    return peer_factory()


@pytest.fixture
def channel(peer):
    with grpc.insecure_channel(peer.target) as ch:
        yield ch


def article_message(pb):
    m = pb["car"].Message()
    m.car.make, m.car.model, m.car.trim, m.car.color = "toyota", "corolla", "4DR Sedan", "gray"
    m.car.year, m.car.mileage = 2012, 120000
    m.driver.firstname, m.driver.lastname, m.driver.driverId = "John", "Smith", "someId"
    return m


def send_stub(ch, pb):
    return ch.unary_unary(SEND, request_serializer=pb["car"].Message.SerializeToString,
                          response_deserializer=pb["car"].Result.FromString)


def check_stub(ch, pb):
    return ch.unary_unary(CHECK, request_serializer=pb["health"].HealthCheckRequest.SerializeToString,
                          response_deserializer=pb["health"].HealthCheckResponse.FromString)


@pytest.mark.parametrize("threads", ["1", "3"])
def test_send_replies_successful_sequentially_and_concurrently(peer_factory, pb, threads):
    p = peer_factory("--threads", threads)
    with grpc.insecure_channel(p.target) as ch:
        send = send_stub(ch, pb)
        msg = article_message(pb)
        for _ in range(20):
            assert send(msg, timeout=CALL_TIMEOUT).status == "successful"
        # More calls in flight than there are threads: every one must still
        # get its own answer.
        futures = [send.future(msg, timeout=CALL_TIMEOUT) for _ in range(64)]
        assert [f.result().status for f in futures] == ["successful"] * 64


def test_ipv6_bind(peer_factory, pb):
    ipv6_loopback_port()
    p = peer_factory("--bind", "::1")
    assert p.target == "[::1]:%d" % p.port
    with grpc.insecure_channel(p.target) as ch:
        assert send_stub(ch, pb)(article_message(pb), timeout=CALL_TIMEOUT).status == "successful"


def test_health_check(channel, pb):
    check = check_stub(channel, pb)
    req = pb["health"].HealthCheckRequest
    serving = pb["health"].HealthCheckResponse.SERVING
    assert check(req(), timeout=CALL_TIMEOUT).status == serving
    assert check(req(service="com.stevenpg.rvg.MessageService"), timeout=CALL_TIMEOUT).status == serving
    with pytest.raises(grpc.RpcError) as e:
        check(req(service="no.such.Service"), timeout=CALL_TIMEOUT)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND


def test_unknown_method_is_unimplemented(channel, pb):
    nope = channel.unary_unary("/com.stevenpg.rvg.MessageService/Send",
                               request_serializer=pb["car"].Message.SerializeToString)
    with pytest.raises(grpc.RpcError) as e:
        nope(article_message(pb), timeout=CALL_TIMEOUT)
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_receive_limit_is_grpc_default(channel, pb):
    send = send_stub(channel, pb)
    msg = article_message(pb)
    msg.car.make = "x" * (MAX_MESSAGE - 1000)
    assert send(msg, timeout=CALL_TIMEOUT).status == "successful"
    msg.car.make = "x" * (MAX_MESSAGE + 1)
    with pytest.raises(grpc.RpcError) as e:
        send(msg, timeout=CALL_TIMEOUT)
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_exits_0_after_one_listening_line(tmp_path, pb, sig):
    p = Peer(str(tmp_path)).wait_ready()
    try:
        assert p.target == "%s:%d" % (HOST, p.port)
        with grpc.insecure_channel(p.target) as ch:
            assert send_stub(ch, pb)(article_message(pb), timeout=CALL_TIMEOUT).status == "successful"
    finally:
        rc = p.stop(sig)
    assert rc == 0, p.stderr_tail()
    assert p.stderr_text() == "car-grpc-cpp-server listening on %s\n" % p.target


def test_busy_port_is_an_error(peer, tmp_path):
    # gRPC shares ports with SO_REUSEPORT unless told not to; a benchmark
    # peer must not start silently next to another server.
    p = subprocess.run([PEER_BIN, "--port", str(peer.port)], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=START_TIMEOUT)
    assert p.returncode == 1
    assert b"listening" not in p.stderr


@pytest.mark.parametrize("args", [["--port", "65536"], ["--threads", "0"], ["--bind"], ["--nope", "1"]])
def test_bad_arguments_exit_2(args):
    p = subprocess.run([PEER_BIN] + args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=START_TIMEOUT)
    assert p.returncode == 2, p.stderr


def test_rpc_tools_h2load_against_peer(peer):
    need(shutil.which("h2load"), "h2load (nghttp2-client) not installed")
    def run(*extra):
        p = subprocess.run([sys.executable, RPC_TOOLS, "h2load", "--target", peer.target,
                            "-n", "2000", "-c", "2", "-m", "4"] + list(extra),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        return p.returncode, json.loads(p.stdout)

    rc, r = run()
    assert rc == 0 and r["ok"], r
    assert r["succeeded"] == 2000 and r["rps"] > 0
    # Result{status:"successful"}: a 12-byte message behind its 5-byte prefix.
    assert r["reply_data_bytes"] == 2000 * 17
    # A method the peer lacks still gets HTTP 200 (and h2load calls that a
    # success); rpc_tools must see that no message came back.
    rc, r = run("--path", "/com.stevenpg.rvg.MessageService/nope")
    assert rc == 1 and not r["ok"] and r["status_2xx"] == 2000 and r["reply_data_bytes"] == 0, r


@pytest.mark.parametrize("extra", [[], ["--concurrency", "16"], ["--concurrency", "8", "--connections", "2"],
                                   ["--gzip"]])
def test_our_client_against_peer(peer, extra):
    """Interoperability of our gRPC client with the official C++ server: every
    call must come back Result{status:"successful"}, plain and gzip-compressed,
    one at a time and many streams at once."""
    from conftest import SHOOTOUT_BIN
    p = subprocess.run([SHOOTOUT_BIN, "bench", "rpc-seq", "--protocol", "grpc", "--target", peer.target,
                        "--requests", "600", "--runs", "2", "--json", "-"] + extra,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    rows = [b for b in json.loads(p.stdout)["benchmarks"] if b["run_type"] == "iteration"]
    assert len(rows) == 2
    for b in rows:
        assert b["messages"]["received"] == 600 and b["messages"]["lost"] == 0, b
        assert all(v == 0 for v in b["errors"].values()), b["errors"]
