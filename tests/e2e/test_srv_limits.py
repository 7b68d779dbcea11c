"""--max-connections, --drain-timeout, --request-timeout and --min-body-rate
of car-server and a2b-server (docs/car_server.md, "Limits and timeouts" and
the SIGTERM drain;
docs/a2b.md: "as car-server's"). Both servers take them from the process
skeleton they share, src/core/srv.c, so each test runs against both."""

import re
import signal
import socket
import time

import pytest

import http_hostile
from conftest import HOST

GET = {"car-server": b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
       "a2b-server": b"GET /api/v1/countries HTTP/1.1\r\nHost: x\r\n\r\n"}
# A POST each serves, its JSON body, and the status it answers once the
# whole body came.
POST = {"car-server": (b"/v1/create", b'{"car":{"make":"toyota","model":"corolla","trim":"4DR",'
                       b'"color":"gray","year":2012,"mileage":1},"driver":{"firstname":"J",'
                       b'"lastname":"S","driverId":"d"}}', 201),
        "a2b-server": (b"/api/v1/users/7/transfers/119", b'{"description":"slow"}', 201)}


class Server:
    """One of the two servers, with its HTTP/1.1 port and a GET it serves."""

    def __init__(self, kind, proc):
        self.kind, self.proc = kind, proc
        self.port = proc.rest_port if kind == "car-server" else proc.port
        self.get = GET[kind]
        self.post_path, self.post_doc, self.post_status = POST[kind]

    def post_head(self, length):
        return (b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % (self.post_path, length))

    def connect(self):
        return socket.create_connection((HOST, self.port), timeout=5)

    def fetch(self, s, request):
        """Sends request on s and reads the whole answer; b"" if closed first."""
        s.sendall(request)
        got = b""
        while b"\r\n\r\n" not in got or len(got) < got.index(b"\r\n\r\n") + 4 + length:
            chunk = s.recv(65536)
            if not chunk:
                return b""
            got += chunk
            m = re.search(rb"\r\nContent-Length: (\d+)\r\n", got, re.I)
            length = int(m.group(1)) if m else 0
        return got

    def served(self, s):
        """Sends the GET on s and reads the whole answer; True if a 200."""
        return self.fetch(s, self.get).startswith(b"HTTP/1.1 200 ")

    def wait_for_slot(self, connect, timeout=10):
        """Connects until one is served: a slot freed is taken again, once
        the server has seen the close."""
        deadline = time.monotonic() + timeout
        while True:
            s = connect()
            try:
                if self.served(s):
                    return
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                s.close()
            assert time.monotonic() < deadline, "no slot after a connection closed"
            time.sleep(0.05)


@pytest.fixture(params=["car-server", "a2b-server"])
def start(request):
    factory = request.getfixturevalue(
        "car_server_factory" if request.param == "car-server" else "a2b_server_factory")
    return lambda *args: Server(request.param, factory(*args))


def test_max_connections_closes_one_more_at_once(start):
    srv = start("--max-connections", "2")
    held = [srv.connect() for _ in range(2)]
    try:
        assert all(srv.served(s) for s in held)
        over = srv.connect()
        try:
            over.sendall(srv.get)
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert http_hostile.closed_unanswered(over), "a connection over the limit was served"
        over.close()
        assert all(srv.served(s) for s in held), "the connections within the limit suffered"
        held.pop().close()
        srv.wait_for_slot(srv.connect)
    finally:
        for s in held:
            s.close()
    if srv.kind == "car-server":
        assert srv.proc.stop() == 0
        assert "connections refused" in srv.proc.stderr_text()
        assert " 0 connections refused" not in srv.proc.stderr_text()


def test_car_server_counts_rest_and_grpc_connections_together(car_server_factory):
    srv = Server("car-server", car_server_factory("--max-connections", "2"))
    rest = srv.connect()
    grpc = socket.create_connection((HOST, srv.proc.grpc_port), timeout=5)
    try:
        assert srv.served(rest)
        grpc.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")  # the h2 preface: a gRPC connection
        grpc.settimeout(5)
        assert grpc.recv(9)  # the server's SETTINGS: it took the connection
        over = srv.connect()
        assert http_hostile.closed_unanswered(over), "a third connection was accepted"
        over.close()
        assert srv.served(rest)
    finally:
        rest.close()
        grpc.close()


def test_drain_timeout_closes_what_is_still_busy(start):
    """A connection in the middle of a request keeps a SIGTERM'd server
    up for --drain-timeout (7 s here: longer than the default 5), then it
    is closed and the server exits 0; an idle one closes at once."""
    srv = start("--drain-timeout", "7", "--request-timeout", "60")
    idle, busy = srv.connect(), srv.connect()
    try:
        assert srv.served(idle)
        busy.sendall(srv.get[:10])
        assert not http_hostile.closed_unanswered(busy, 0.3)  # the server holds the half request
        stopped = time.monotonic()
        srv.proc.proc.send_signal(signal.SIGTERM)
        assert http_hostile.closed_unanswered(idle), "the idle connection was not closed at once"
        busy_closed = http_hostile.closed_unanswered(busy, 5.8 - (time.monotonic() - stopped))
        assert not busy_closed and srv.proc.running(), "the drain ended before --drain-timeout"
        assert http_hostile.closed_unanswered(busy, 20), "the busy connection outlived the drain timeout"
        assert srv.proc.proc.wait(10) == 0
        assert time.monotonic() - stopped >= 6.5
    finally:
        idle.close()
        busy.close()
    assert "connections still busy after the drain timeout; closing them" in srv.proc.stderr_text()


def connect_from(srv, source):
    return socket.create_connection((HOST, srv.port), timeout=5, source_address=(source, 0))


def test_max_connections_per_address(start):
    """Two workers, so the count is the process's, not a worker's: a third
    connection from 127.0.0.1 is closed at once, one from 127.0.0.2 is
    served, and a slot freed is taken again."""
    srv = start("--max-connections-per-address", "2", "--threads", "2")
    held = [connect_from(srv, "127.0.0.1") for _ in range(2)]
    try:
        assert all(srv.served(s) for s in held)
        for _ in range(3):
            over = connect_from(srv, "127.0.0.1")
            assert http_hostile.closed_unanswered(over), "a third connection was served"
            over.close()
        other = connect_from(srv, "127.0.0.2")
        assert srv.served(other), "another address was refused"
        other.close()
        assert all(srv.served(s) for s in held), "the connections within the limit suffered"
        held.pop().close()
        srv.wait_for_slot(lambda: connect_from(srv, "127.0.0.1"))
    finally:
        for s in held:
            s.close()
    assert "max_connections_per_address" in srv.proc.stderr_text()
    if srv.kind == "a2b-server":
        with connect_from(srv, "127.0.0.3") as s:
            body = srv.fetch(s, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        m = re.search(rb"\na2b_connections_refused_per_address_total (\d+)", body)
        assert m and int(m.group(1)) >= 3, body[-2000:]
    else:
        assert srv.proc.stop() == 0
        m = re.search(r"\((\d+) at max_connections_per_address\)", srv.proc.stderr_text())
        assert m and int(m.group(1)) >= 3


def status_of(answer):
    return int(answer.split(b" ", 2)[1]) if answer else None


def read_answer(s):
    """The head and body of one answer on s, or b"" if closed first."""
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = s.recv(65536)
        if not chunk:
            return got
        got += chunk
    m = re.search(rb"\r\nContent-Length: (\d+)\r\n", got, re.I)
    while m and len(got) < got.index(b"\r\n\r\n") + 4 + int(m.group(1)):
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
    return got


def test_body_trickled_below_min_body_rate_gets_408(start):
    # Past the 1 s timeout a body must bring 4096 bytes for each second
    # more: one of 100 bytes a second falls behind at once.
    srv = start("--request-timeout", "1", "--min-body-rate", "4096")
    length = 4000
    slow = srv.connect()
    slow.sendall(srv.post_head(length))
    t0 = time.monotonic()
    slow.settimeout(0.1)
    answer = b""
    sent = 0
    while time.monotonic() - t0 < 8 and sent < length:
        slow.sendall(b" " * 10)
        sent += 10
        try:
            answer = slow.recv(65536)
            break
        except socket.timeout:
            pass
        # Meanwhile another client is served at once.
        with srv.connect() as other:
            assert srv.served(other)
    slow.settimeout(5)
    answer += read_answer(slow) if b"\r\n\r\n" not in answer else b""
    took = time.monotonic() - t0
    assert status_of(answer) == 408, answer[:200]
    # 1 s, plus what the bytes sent so far bought (under 0.25 s), plus the
    # timer's slack.
    assert 0.9 <= took < 3.0, took
    slow.close()


def test_large_body_at_a_steady_pace_outlasts_the_request_timeout(start):
    # 1 MiB at about 400 KiB/s takes some 2.5 s, more than the 1 s timeout,
    # but keeps well above --min-body-rate: it is served.
    srv = start("--request-timeout", "1", "--min-body-rate", "65536")
    doc = srv.post_doc
    length = 1024 * 1024
    body = doc + b" " * (length - len(doc))
    with srv.connect() as s:
        s.sendall(srv.post_head(length))
        t0 = time.monotonic()
        for off in range(0, length, 40 * 1024):
            s.sendall(body[off:off + 40 * 1024])
            time.sleep(0.1)
        took = time.monotonic() - t0
        answer = read_answer(s)
    assert took > 2.0, took
    assert status_of(answer) == srv.post_status, answer[:300]


def test_min_body_rate_0_keeps_the_fixed_deadline(start):
    srv = start("--request-timeout", "1", "--min-body-rate", "0")
    length = 1024 * 1024
    with srv.connect() as s:
        s.sendall(srv.post_head(length))
        t0 = time.monotonic()
        answer = b""
        s.settimeout(0.1)
        for off in range(0, length, 40 * 1024):
            try:
                s.sendall(b" " * (40 * 1024))
                answer = s.recv(65536)
                break
            except socket.timeout:
                pass
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(0.1)
        s.settimeout(5)
        if b"\r\n\r\n" not in answer:
            answer += read_answer(s)
        took = time.monotonic() - t0
    assert status_of(answer) == 408, answer[:200]
    assert took < 2.0, took
