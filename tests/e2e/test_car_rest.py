"""The REST side of `shootout car-server` (HTTP/1.1 + JSON): the article's
POST /v1/create, with curl and with a raw socket for exact bytes and
misbehaving clients (docs/car_server.md, "REST")."""

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

import http_hostile
from conftest import HOST

# The article's message.json, minified: 175 bytes.
DOC = (b'{"car":{"make":"toyota","model":"corolla","trim":"4DR Sedan","color":"gray",'
       b'"year":2012,"mileage":120000},"driver":{"firstname":"John","lastname":"Smith",'
       b'"driverId":"someId"}}')
CREATED = b'{"status":"created"}'
TIMEOUT = 5.0


def create_request(body=DOC, content_type=b"application/json", extra=b"", version=b"1.1"):
    head = b"POST /v1/create HTTP/" + version + b"\r\nHost: x\r\n"
    if content_type is not None:
        head += b"Content-Type: " + content_type + b"\r\n"
    return head + b"Content-Length: %d\r\n" % len(body) + extra + b"\r\n" + body


def get_request(path=b"/healthz", method=b"GET", extra=b""):
    return method + b" " + path + b" HTTP/1.1\r\nHost: x\r\n" + extra + b"\r\n"


class Response:
    def __init__(self, status, reason, headers, body):
        self.status, self.reason, self.headers, self.body = status, reason, headers, body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "<%d %s %r %r>" % (self.status, self.reason, self.headers, self.body[:200])


class Http:
    """A raw HTTP/1.1 client connection that reads responses itself."""

    def __init__(self, server, timeout=TIMEOUT):
        self.sock = socket.create_connection((HOST, server.rest_port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("connection closed with %r unread" % self.buf[:200])
        self.buf += data

    def read_response(self, head_only=False):
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        m = re.match(rb"HTTP/1\.1 (\d{3}) (.*)$", lines[0])
        assert m, lines[0]
        headers = {}
        for line in lines[1:]:
            name, value = line.split(b":", 1)
            key = name.decode().lower()
            assert key not in headers, "repeated header %s" % key
            headers[key] = value.strip().decode()
        status = int(m.group(1))
        if status == 100:
            return Response(status, m.group(2).decode(), headers, b"")
        length = 0 if head_only else int(headers["content-length"])
        while len(self.buf) < length:
            self._fill()
        body, self.buf = self.buf[:length], self.buf[length:]
        return Response(status, m.group(2).decode(), headers, body)

    def request(self, data, head_only=False):
        self.send(data)
        return self.read_response(head_only)

    def at_eof(self, timeout=TIMEOUT):
        """True if the server closes (after any unread bytes) within timeout."""
        self.sock.settimeout(timeout)
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
                self.buf += data
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True


def check_common(r):
    """What every response carries."""
    assert re.fullmatch(r"\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT", r.headers["date"]), r.headers
    assert r.headers["server"].startswith("shootout/")
    assert r.headers["content-type"] == "application/json"
    assert "content-length" in r.headers


def expect_error(r, status, closes=None):
    assert r.status == status, r
    check_common(r)
    assert isinstance(r.json()["error"], str)
    if closes is not None:
        assert (r.headers.get("connection") == "close") == closes, r


def serves(server):
    """A fresh connection gets the article's request answered."""
    with Http(server) as c:
        r = c.request(create_request())
        return r.status == 201 and r.body == CREATED


def curl(server, *args, path="/v1/create", timeout=20):
    """Runs curl against the server; returns (http_code, body, stderr)."""
    out = subprocess.run(["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", *args,
                          "http://%s:%d%s" % (HOST, server.rest_port, path)],
                         capture_output=True, timeout=timeout)
    body, _, code = out.stdout.rpartition(b"\n")
    return int(code), body, out.stderr.decode("utf-8", "replace")


@pytest.fixture
def doc_file(tmp_path):
    p = tmp_path / "message.json"
    p.write_bytes(DOC)
    return str(p)


# ---- The article's request -------------------------------------------------

def test_sample_document_is_the_articles():
    assert len(DOC) == 175


def test_create_with_curl(car_server, doc_file):
    code, body, err = curl(car_server, "-X", "POST", "-H", "Content-Type: application/json",
                           "--data-binary", "@" + doc_file)
    assert (code, body) == (201, CREATED), err


def test_create_raw_has_every_header(car_server):
    with Http(car_server) as c:
        r = c.request(create_request())
    assert (r.status, r.reason, r.body) == (201, "Created", CREATED)
    check_common(r)
    assert r.headers["content-length"] == "20"
    assert "connection" not in r.headers


def test_healthz(car_server):
    with Http(car_server) as c:
        r = c.request(get_request())
        assert (r.status, r.json()) == (200, {"status": "ok"})
        r = c.request(get_request(method=b"HEAD"), head_only=True)
        assert r.status == 200 and r.headers["content-length"] == "15"
        # No body followed the HEAD answer: the next response is intact.
        assert c.request(create_request()).status == 201


def test_keep_alive_reuses_the_connection(car_server, doc_file):
    args = ["-X", "POST", "-H", "Content-Type: application/json", "--data-binary", "@" + doc_file]
    url = "http://%s:%d/v1/create" % (HOST, car_server.rest_port)
    out = subprocess.run(["curl", "-sS", "-w", "%{http_code} %{num_connects}\n"] + args
                         + ["-o", "/dev/null", url] * 3, capture_output=True, text=True, timeout=20)
    assert out.stdout.split("\n")[:3] == ["201 1", "201 0", "201 0"], out.stderr
    with Http(car_server) as c:
        for _ in range(20):
            assert c.request(create_request()).body == CREATED


def test_pipelined_requests_are_answered_in_order(car_server):
    reqs = [create_request(), get_request(), get_request(b"/nope"),
            create_request(b'{"car":1}'), get_request(method=b"HEAD"), create_request()]
    with Http(car_server) as c:
        c.send(b"".join(reqs) * 5)
        for _ in range(5):
            assert c.read_response().status == 201
            assert c.read_response().status == 200
            assert c.read_response().status == 404
            assert c.read_response().status == 400
            assert c.read_response(head_only=True).status == 200
            assert c.read_response().status == 201


def test_many_pipelined_requests_not_read_at_once(car_server):
    """The client sends far more than the socket buffers hold before it reads
    anything: the server stops reading while its answers back up, picks up
    again when they drain, and every answer arrives, in order."""
    rounds = 10000
    batch = (get_request() * 9 + create_request()) * rounds
    n = rounds * 10
    with Http(car_server, timeout=30) as c:
        sender = threading.Thread(target=c.send, args=(batch,))
        sender.start()
        time.sleep(1.0)
        data = bytearray()
        seen = 0
        while seen < n:
            chunk = c.sock.recv(1 << 20)
            assert chunk, "closed after %d answers" % seen
            # Count status lines, including one cut by the previous read.
            seen += (bytes(data[-8:]) + chunk).count(b"HTTP/1.1 ")
            data += chunk
        sender.join(30)
        assert not sender.is_alive()
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", bytes(data))
    assert statuses == ([b"200"] * 9 + [b"201"]) * rounds


# ---- Bodies ---------------------------------------------------------------

def test_chunked_body_split_in_odd_places(car_server):
    chunks = [DOC[:1], DOC[1:60], DOC[60:]]
    body = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(ch), ch) for ch in chunks) + b"0\r\nX-T: 1\r\n\r\n"
    req = (b"POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n" + body) + get_request()
    with Http(car_server) as c:
        for cuts in ([5, 77, 78, 120, 131, 300, len(req) - 2], list(range(1, len(req), 37))):
            prev = 0
            for cut in cuts + [len(req)]:
                c.send(req[prev:cut])
                prev = cut
                time.sleep(0.005)
            assert c.read_response().body == CREATED
            assert c.read_response().status == 200


def test_chunked_body_with_curl(car_server, doc_file):
    code, body, err = curl(car_server, "-X", "POST", "-H", "Content-Type: application/json",
                           "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + doc_file)
    assert (code, body) == (201, CREATED), err


def test_large_body_in_many_pieces(car_server):
    """A 600 KiB document (an unknown field is padding) over Content-Length
    and chunked, both arriving in many reads."""
    pad = b'"x":"' + b"a" * (600 * 1024) + b'",'
    doc = DOC[:1] + pad + DOC[1:]
    with Http(car_server, timeout=20) as c:
        assert c.request(create_request(doc)).body == CREATED
        chunked = b"".join(b"%x\r\n%s\r\n" % (len(doc[i:i + 7000]), doc[i:i + 7000])
                           for i in range(0, len(doc), 7000)) + b"0\r\n\r\n"
        r = c.request(b"POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n" + chunked)
        assert r.body == CREATED


def test_expect_100_continue_with_curl(car_server, tmp_path):
    doc = DOC[:1] + b'"x":"' + b"b" * 100000 + b'",' + DOC[1:]
    p = tmp_path / "big.json"
    p.write_bytes(doc)
    # curl holds the body back until the 100 comes, for up to 60 s: longer
    # than curl()'s 20 s limit, so only a server that sends it passes.
    code, body, err = curl(car_server, "-v", "--expect100-timeout", "60", "-X", "POST", "-H",
                           "Content-Type: application/json", "-H", "Expect: 100-continue",
                           "--data-binary", "@" + str(p))
    assert (code, body) == (201, CREATED), err
    assert "HTTP/1.1 100 Continue" in err


def test_expect_100_continue_raw(car_server):
    head = create_request(extra=b"Expect: 100-continue\r\n")[:-len(DOC)]
    with Http(car_server) as c:
        r = c.request(head)
        assert r.status == 100
        assert c.request(DOC).body == CREATED
        # The body sent along with the head: no 100 needed.
        r = c.request(head + DOC)
        assert r.status == 201


def test_expect_refused_body_gets_no_100(car_server):
    """A body that will be refused is not asked for, and the connection
    closes since the client may or may not send it."""
    head = create_request(content_type=b"text/plain", extra=b"Expect: 100-continue\r\n")[:-len(DOC)]
    with Http(car_server) as c:
        expect_error(c.request(head), 415, closes=True)
        assert c.at_eof()


def test_other_expectations_get_417(car_server):
    with Http(car_server) as c:
        expect_error(c.request(get_request(extra=b"Expect: tea\r\n")), 417, closes=False)
        assert c.request(create_request()).status == 201
    with Http(car_server) as c:
        expect_error(c.request(create_request(extra=b"Expect: 100-continue, tea\r\n")), 417,
                     closes=True)
        assert c.at_eof()


# ---- Limits -----------------------------------------------------------------

def test_header_too_large_is_431_and_closes(car_server):
    with Http(car_server) as c:
        c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n")
        expect_error(c.read_response(), 431, closes=True)
        assert c.at_eof()
    with Http(car_server) as c:
        c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-A: b\r\n" * 100 + b"\r\n")
        expect_error(c.read_response(), 431, closes=True)
    assert serves(car_server)


def test_header_limit_is_configurable(car_server_factory):
    s = car_server_factory("--max-header-size", "300")
    with Http(s) as c:
        expect_error(c.request(get_request(extra=b"X-Pad: " + b"p" * 300 + b"\r\n")), 431)
    with Http(s) as c:
        assert c.request(get_request(extra=b"X-Pad: " + b"p" * 200 + b"\r\n")).status == 200


def test_body_over_the_limit_is_413_and_closes(car_server_factory, tmp_path):
    s = car_server_factory("--max-body-size", "1000")
    with Http(s) as c:
        assert c.request(create_request()).status == 201  # 175 bytes fit
        big = DOC[:1] + b'"x":"' + b"c" * 2000 + b'",' + DOC[1:]
        c.send(create_request(big)[:-len(big)])
        expect_error(c.read_response(), 413, closes=True)
        assert c.at_eof()
    # Chunked: refused when a chunk size takes the body over the limit.
    with Http(s) as c:
        c.send(b"POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n200\r\n" + b"d" * 0x200 + b"\r\n")
        c.send(b"200\r\n" + b"d" * 0x200 + b"\r\n")
        expect_error(c.read_response(), 413, closes=True)
        assert c.at_eof()
    # curl sending a big body the whole way still reads the 413 (the server
    # discards what keeps coming rather than resetting the connection).
    p = tmp_path / "big.json"
    p.write_bytes(b"x" * 3000000)
    code, _, err = curl(s, "-X", "POST", "-H", "Content-Type: application/json",
                        "-H", "Expect:", "--data-binary", "@" + str(p))
    assert code == 413, err
    assert serves(s)


# ---- Errors -----------------------------------------------------------------

@pytest.mark.parametrize("body,error,field", [
    (b'{"car":{"make":"toyota"', "unexpected end of input", None),
    (b'{"car":}', "malformed JSON", None),
    (b'<car/>', "malformed JSON", None),
    (DOC.replace(b',"trim":"4DR Sedan"', b""), "missing field", "car.trim"),
    (DOC.replace(b'"year":2012', b'"year":"2012"'), "wrong type", "car.year"),
    (DOC.replace(b'"year":2012', b'"year":-1'), "not an integer in 0..4294967295", "car.year"),
    (b"", "unexpected end of input", None),
])
def test_bad_documents_get_400_with_a_json_error(car_server, body, error, field):
    with Http(car_server) as c:
        r = c.request(create_request(body))
        expect_error(r, 400, closes=False)
        got = r.json()
        assert got["error"] == error and got.get("field") == field and "offset" in got, got
        assert c.request(create_request()).status == 201  # the connection goes on


def test_bad_document_with_curl(car_server):
    code, body, _ = curl(car_server, "-X", "POST", "-H", "Content-Type: application/json",
                         "--data-binary", '{"car":[]}')
    assert code == 400
    assert json.loads(body) == {"error": "wrong type", "field": "car", "offset": 7}


@pytest.mark.parametrize("ctype", [None, b"text/plain", b"application/x-www-form-urlencoded",
                                   b"application/jsonp", b"json"])
def test_wrong_content_type_is_415(car_server, ctype):
    with Http(car_server) as c:
        expect_error(c.request(create_request(content_type=ctype)), 415, closes=False)
        assert c.request(create_request()).status == 201


@pytest.mark.parametrize("ctype", [b"Application/JSON", b"application/json; charset=utf-8",
                                   b"application/json;charset=UTF-8"])
def test_content_type_case_and_parameters(car_server, ctype):
    with Http(car_server) as c:
        assert c.request(create_request(content_type=ctype)).status == 201


def test_unknown_paths_are_404(car_server):
    with Http(car_server) as c:
        for path in (b"/", b"/v1/create/", b"/v1/Create", b"/v2/create", b"/healthz/x"):
            expect_error(c.request(get_request(path)), 404, closes=False)
        # With a body, which is skipped.
        expect_error(c.request(b"POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"),
                     404, closes=False)
        assert c.request(create_request()).status == 201
    code, _, _ = curl(car_server, path="/v1/nothing")
    assert code == 404


@pytest.mark.parametrize("method", [b"GET", b"PUT", b"DELETE", b"PATCH", b"OPTIONS", b"post"])
def test_other_methods_on_create_are_405_with_allow(car_server, method):
    with Http(car_server) as c:
        r = c.request(create_request().replace(b"POST", method, 1))
        expect_error(r, 405, closes=False)
        assert r.headers["allow"] == "POST"
        assert c.request(create_request()).status == 201


def test_post_on_healthz_is_405(car_server):
    with Http(car_server) as c:
        r = c.request(b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        expect_error(r, 405)
        assert r.headers["allow"] == "GET, HEAD"


def test_unsupported_version_and_coding(car_server):
    with Http(car_server) as c:
        expect_error(c.request(b"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n"), 505, closes=True)
        assert c.at_eof()
    with Http(car_server) as c:
        r = c.request(b"POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Transfer-Encoding: gzip, chunked\r\n\r\n")
        expect_error(r, 501, closes=True)


# ---- Connection management -------------------------------------------------

def test_http10_closes_unless_keep_alive(car_server):
    with Http(car_server) as c:
        r = c.request(create_request(version=b"1.0"))
        assert r.status == 201 and r.headers["connection"] == "close"
        assert c.at_eof()
    with Http(car_server) as c:
        r = c.request(create_request(version=b"1.0", extra=b"Connection: keep-alive\r\n"))
        assert r.status == 201 and r.headers["connection"] == "keep-alive"
        r = c.request(b"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        assert r.status == 200
    code, body, err = curl(car_server, "--http1.0", path="/healthz")
    assert (code, body) == (200, b'{"status":"ok"}'), err


def test_connection_close_is_honoured(car_server):
    with Http(car_server) as c:
        # The request after the closing one is never answered.
        c.send(create_request(extra=b"Connection: close\r\n") + get_request())
        r = c.read_response()
        assert r.status == 201 and r.headers["connection"] == "close"
        assert c.at_eof()
        assert c.buf == b""


def test_client_half_close_still_gets_answers(car_server):
    with Http(car_server) as c:
        c.send(create_request() + get_request())
        c.sock.shutdown(socket.SHUT_WR)
        assert c.read_response().status == 201
        assert c.read_response().status == 200
        assert c.at_eof()


def test_idle_timeout(car_server_factory):
    s = car_server_factory("--idle-timeout", "1")
    with Http(s) as c, Http(s) as silent:
        assert c.request(create_request()).status == 201
        t0 = time.monotonic()
        assert c.at_eof(timeout=4) and silent.at_eof(timeout=4)
        assert 0.8 < time.monotonic() - t0 < 3.5
        assert c.buf == b""  # closed quietly, no 408 for an idle connection
    # Activity keeps a connection open past the timeout.
    with Http(s) as c:
        for _ in range(8):
            assert c.request(get_request()).status == 200
            time.sleep(0.25)


def test_slow_client_gets_408_while_others_are_served(car_server_factory):
    s = car_server_factory("--request-timeout", "1")
    req = create_request()
    slow = Http(s)
    t0 = time.monotonic()
    served = 0
    closed_at = None
    try:
        # Trickle the head a byte every 50 ms: it would take 10 s.
        for i in range(200):
            try:
                slow.send(req[i:i + 1])
            except (BrokenPipeError, ConnectionResetError):
                break
            assert serves(s)  # another client, promptly
            served += 1
            slow.sock.settimeout(0.05)
            try:
                data = slow.sock.recv(65536)
            except socket.timeout:
                continue
            slow.buf += data
            if not data or b"\r\n\r\n" in slow.buf:
                closed_at = time.monotonic()
                break
        assert closed_at is not None, "the slow client was not cut off"
        assert 0.8 < closed_at - t0 < 3.5
        r = slow.read_response()
        expect_error(r, 408, closes=True)
        assert slow.at_eof()
        assert served >= 5
    finally:
        slow.close()


def test_slow_body_gets_408(car_server_factory):
    s = car_server_factory("--request-timeout", "1")
    with Http(s) as c:
        c.send(create_request()[:-50])
        t0 = time.monotonic()
        expect_error(c.read_response(), 408, closes=True)
        assert 0.8 < time.monotonic() - t0 < 3.5
        assert c.at_eof()


def test_a_steady_stream_of_requests_is_not_a_slow_one(car_server_factory):
    """A client that always has the next request half sent is busy, not
    slow: every request completes well within the timeout."""
    s = car_server_factory("--request-timeout", "1")
    req = create_request()
    with Http(s) as c:
        c.send(req[:100])
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            c.send(req[100:] + req[:100])
            assert c.read_response().status == 201
            time.sleep(0.1)


def test_hostile_inputs_get_their_exact_answer_and_a_close(car_server):
    """Every case of http_hostile (request smuggling, bad framing, bad
    lines, limits) gets its status and error, `Connection: close`, and the
    close, with the request sent after it never answered; the server goes
    on serving."""
    def message_of(status, headers, body):
        if headers.get("content-type") != "application/json":
            return "not JSON: %r" % body
        return json.loads(body)["error"]

    wrong = http_hostile.check_all(car_server.rest_port, b"/v1/create", b"/healthz", message_of,
                                   lambda: serves(car_server))
    assert not wrong, "\n".join(wrong)


def test_many_connections_at_once(car_server):
    conns = [Http(car_server) for _ in range(300)]
    try:
        for c in conns:
            c.send(create_request())
        for c in conns:
            assert c.read_response().body == CREATED
        for c in conns[::2]:
            c.send(get_request())
        for c in conns[::2]:
            assert c.read_response().status == 200
    finally:
        for c in conns:
            c.close()


def test_drain_finishes_the_request_in_flight(car_server_factory):
    s = car_server_factory()
    idle = Http(s)
    busy = Http(s)
    try:
        assert idle.request(get_request()).status == 200
        busy.send(create_request()[:-100])
        time.sleep(0.2)
        s.proc.send_signal(signal.SIGTERM)
        assert idle.at_eof()  # idle connections close at once
        time.sleep(0.3)
        assert s.running()  # waiting for the request in flight
        busy.send(create_request()[-100:])
        r = busy.read_response()
        assert r.status == 201 and r.headers["connection"] == "close"
        assert busy.at_eof()
        assert s.proc.wait(5) == 0
    finally:
        idle.close()
        busy.close()
    assert re.search(r"stopped: 2 REST requests \(0 errors\)", s.stderr_text())


def test_verbose_logs_one_line_per_request(car_server_factory):
    s = car_server_factory("-v")
    with Http(s) as c:
        c.request(create_request())
        c.request(get_request(b"/nope"))
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and "GET /nope -> 404" not in s.stderr_text():
        time.sleep(0.05)
    text = s.stderr_text()
    assert re.search(r"REST conn \d+: POST /v1/create -> 201", text), text
    assert re.search(r'REST conn \d+: GET /nope -> 404 \{"error":"not found"\}', text), text


def test_threads_serve_rest(car_server_factory):
    s = car_server_factory("--threads", "2")
    conns = [Http(s) for _ in range(8)]
    try:
        for c in conns:
            assert c.request(create_request()).status == 201
    finally:
        for c in conns:
            c.close()
