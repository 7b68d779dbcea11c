"""--max-connections and --drain-timeout of car-server and a2b-server
(docs/car_server.md, "Limits and timeouts" and the SIGTERM drain;
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


class Server:
    """One of the two servers, with its HTTP/1.1 port and a GET it serves."""

    def __init__(self, kind, proc):
        self.kind, self.proc = kind, proc
        self.port = proc.rest_port if kind == "car-server" else proc.port
        self.get = GET[kind]

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
