"""End-to-end tests of `shootout a2b-server` (docs/a2b.md): every endpoint
and error path on SQLite and on PostgreSQL, gzip, pipelining kept in order,
slow clients, health, /metrics, restart and the SIGTERM drain.

The data set is seed 1 at scale 0.01 (2,000 users, 120 transfers); the
bodies themselves are pinned byte for byte by tests/unit/test_a2b_store.c,
so these check the HTTP side: routes, statuses, headers, shapes.
"""

import gzip
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import time

import pytest

import http_hostile
from conftest import HOST, SHOOTOUT_BIN

JSON = "application/json"


def call(srv, method, path, body=None, headers=None, raw_body=None):
    """(status, headers dict lower-cased, parsed JSON or raw bytes)."""
    c = http.client.HTTPConnection(HOST, srv.port, timeout=20)
    h = dict(headers or {})
    data = raw_body
    if body is not None:
        data = json.dumps(body).encode()
        h.setdefault("Content-Type", JSON)
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    raw = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    if hdrs.get("content-encoding") == "gzip":
        return r.status, hdrs, raw
    if raw and hdrs.get("content-type", "").startswith(JSON):
        return r.status, hdrs, json.loads(raw)
    return r.status, hdrs, raw


def assert_error(resp, status, code_name, message=None):
    st, hdrs, body = resp
    assert st == status, resp
    assert hdrs["content-type"] == JSON
    assert set(body) == {"status", "code", "message"}, body
    assert body["status"] == code_name and body["code"] == status, body
    if message:
        assert message in body["message"], body


def read_responses(sock, n, timeout=20):
    """Reads n HTTP/1.1 responses (Content-Length framed) from sock."""
    sock.settimeout(timeout)
    buf = b""
    out = []
    while len(out) < n:
        head_end = buf.find(b"\r\n\r\n")
        if head_end >= 0:
            head = buf[:head_end].decode()
            m = re.search(r"(?im)^content-length: *(\d+)", head)
            length = int(m.group(1)) if m else 0
            if head.startswith("HTTP/1.1 1"):
                length = 0
            if len(buf) >= head_end + 4 + length:
                status = int(head.split(" ", 2)[1])
                out.append((status, head, buf[head_end + 4:head_end + 4 + length]))
                buf = buf[head_end + 4 + length:]
                continue
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
    return out, buf


def get_req(path, extra=""):
    return ("GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (path, extra)).encode()


# ---- The endpoints, on both backends ---------------------------------------

def check_endpoints(srv):
    st, h, countries = call(srv, "GET", "/api/v1/countries")
    assert st == 200 and h["content-type"] == JSON
    assert countries == [{"countryId": 1, "name": "Republic of Belarus", "code": "BY"}]
    assert "date" in h and h["server"].startswith("shootout/")

    st, _, cities = call(srv, "GET", "/api/v1/countries/1/cities")
    assert st == 200 and [c["name"] for c in cities] == ["Mogilev", "Gomel", "Vitebsk", "Brest", "Grodno", "Minsk"]
    assert cities[0]["country"] == countries[0]
    st, _, locs = call(srv, "GET", "/api/v1/countries/1/cities/1/locations")
    assert st == 200 and locs and all(l["city"]["cityId"] == 1 for l in locs)
    assert set(locs[0]) == {"locationId", "city", "latitude", "longitude"}

    st, _, user = call(srv, "GET", "/api/v1/users/5")
    assert st == 200 and user["id"] == 5 and set(user) == {"id", "name", "email", "phone"}
    st, _, bookings = call(srv, "GET", "/api/v1/users/5/transfers")
    assert st == 200 and bookings and all(b["user"] == user for b in bookings)
    t = bookings[0]["transfer"]
    st, _, one = call(srv, "GET", "/api/v1/users/5/transfers/%d" % t["transferId"])
    assert st == 200 and one == bookings[0]

    # The search of a Gatling journey: the transfer's own origin, destination and date.
    date = re.match(r'\["(\d{4}-\d\d-\d\d)', t["duration"]).group(1)
    q = "originId=%d&destinationId=%d&date=%s" % (t["origin"]["locationId"], t["destination"]["locationId"], date)
    st, _, found = call(srv, "GET", "/api/v1/transfers?" + q)
    assert st == 200 and t["transferId"] in [x["transferId"] for x in found]
    # Percent-encoded names and values mean the same.
    st, _, found2 = call(srv, "GET", "/api/v1/transfers?" + q.replace("date=", "d%61te=").replace("-", "%2D"))
    assert st == 200 and found2 == found
    st, _, none = call(srv, "GET", "/api/v1/transfers?originId=1&destinationId=1&date=2025-01-01")
    assert st == 200 and none == []

    # Book a transfer the user does not have, twice, then change it.
    have = {b["transfer"]["transferId"] for b in bookings}
    free = next(i for i in range(1, 121) if i not in have)
    path = "/api/v1/users/5/transfers/%d" % free
    st, h, body = call(srv, "POST", path, {"description": "window seat \u00e9 \"q\""})
    assert (st, body) == (201, b"") and "content-length" not in h or h["content-length"] == "0"
    assert_error(call(srv, "POST", path, {"description": "again"}), 409, "CONFLICT")
    st, _, b = call(srv, "GET", path)
    assert st == 200 and b["state"] == "BOOKED" and b["description"] == "window seat \u00e9 \"q\""
    st, _, body = call(srv, "PUT", path, {"state": "CANCELED", "description": "changed"})
    assert (st, body) == (204, b"")
    st, _, b = call(srv, "GET", path)
    assert (b["state"], b["description"]) == ("CANCELED", "changed")

    st, _, body = call(srv, "PUT", "/api/v1/users/5", {"firstName": "Ada", "lastName": "Lovelace", "extra": [1, {"x": None}]})
    assert (st, body) == (204, b"")
    assert call(srv, "GET", "/api/v1/users/5")[2]["name"] == "Ada Lovelace"
    return free


def check_errors(srv):
    assert_error(call(srv, "GET", "/api/v1/users/abc"), 400, "BAD_REQUEST", "abc")
    assert_error(call(srv, "GET", "/api/v1/users/-1"), 400, "BAD_REQUEST")
    assert_error(call(srv, "GET", "/api/v1/countries/1x/cities"), 400, "BAD_REQUEST")
    assert_error(call(srv, "GET", "/api/v1/users/999999"), 404, "NOT_FOUND", "User not found")
    assert_error(call(srv, "GET", "/api/v1/users/999999/transfers"), 404, "NOT_FOUND")
    assert_error(call(srv, "GET", "/api/v1/users/1/transfers/999999"), 404, "NOT_FOUND")
    assert_error(call(srv, "GET", "/api/v1/countries/2/cities"), 404, "NOT_FOUND", "Country not found")
    assert_error(call(srv, "POST", "/api/v1/users/1/transfers/999999", {"description": "x"}), 404, "NOT_FOUND",
                 "Transfer not found")
    for path in ("/api/v1/nothing", "/api/v1/users/1/cars", "/api/v1/users//transfers", "/api/v1/countries/",
                 "/nope", "/api/v2/countries"):
        assert_error(call(srv, "GET", path), 404, "NOT_FOUND")
    st, h, body = call(srv, "DELETE", "/api/v1/users/1")
    assert_error((st, h, body), 405, "METHOD_NOT_ALLOWED")
    assert h["allow"] == "GET, HEAD, PUT"
    assert call(srv, "POST", "/api/v1/countries")[1]["allow"] == "GET, HEAD"
    assert call(srv, "DELETE", "/api/v1/users/1/transfers/1")[1]["allow"] == "GET, HEAD, POST, PUT"
    # Bodies: malformed, missing, the wrong type, fields of the wrong kind.
    for raw in (b"{", b"[]", b'{"description":"x"} x', b'{"description":1}', b"{'a':1}", b'{"description":"\\q"}'):
        assert_error(call(srv, "POST", "/api/v1/users/1/transfers/2", raw_body=raw, headers={"Content-Type": JSON}),
                     400, "BAD_REQUEST", "Malformed JSON")
    assert_error(call(srv, "POST", "/api/v1/users/1/transfers/2", headers={"Content-Type": JSON}), 400, "BAD_REQUEST",
                 "body is missing")
    assert_error(call(srv, "PUT", "/api/v1/users/1", raw_body=b"firstName=a", headers={"Content-Type": "text/plain"}),
                 415, "UNSUPPORTED_MEDIA_TYPE")
    assert_error(call(srv, "POST", "/api/v1/users/1/transfers/2", {"description": None}), 400, "BAD_REQUEST")
    assert_error(call(srv, "PUT", "/api/v1/users/1/transfers/2", {"state": "LOST", "description": "x"}), 400, "BAD_REQUEST")
    assert_error(call(srv, "PUT", "/api/v1/users/1", {"firstName": "", "lastName": "x"}), 400, "BAD_REQUEST")
    assert_error(call(srv, "PUT", "/api/v1/users/1", {"firstName": "a" * 51, "lastName": "x"}), 400, "BAD_REQUEST")
    # Queries.
    assert_error(call(srv, "GET", "/api/v1/transfers?destinationId=1&date=2025-01-01"), 400, "BAD_REQUEST", "originId")
    assert_error(call(srv, "GET", "/api/v1/transfers?originId=1&destinationId=1"), 400, "BAD_REQUEST")
    assert_error(call(srv, "GET", "/api/v1/transfers?originId=1&destinationId=1&date=2025-02-30"), 400, "BAD_REQUEST")
    assert_error(call(srv, "GET", "/api/v1/transfers?originId=x&destinationId=1&date=2025-01-01"), 400, "BAD_REQUEST")
    assert_error(call(srv, "GET", "/api/v1/transfers?originId=%zz&destinationId=1&date=2025-01-01"), 400, "BAD_REQUEST")
    # HEAD announces the body without sending it.
    st, h, body = call(srv, "HEAD", "/api/v1/countries")
    assert st == 200 and body == b"" and int(h["content-length"]) == 58


def test_endpoints_sqlite(a2b_server_factory):
    srv = a2b_server_factory()
    check_endpoints(srv)
    check_errors(srv)


def test_openapi(a2b_server_factory):
    srv = a2b_server_factory()
    st, _, doc = call(srv, "GET", "/api/v1/openapi.json")
    assert st == 200 and doc["openapi"].startswith("3.")
    paths = set(doc["paths"])
    assert "/users/{userId}/transfers{transferId}" not in paths  # the reference's typo, fixed
    assert paths == {"/countries", "/countries/{countryId}/cities", "/countries/{countryId}/cities/{cityId}/locations",
                     "/transfers", "/users/{userId}", "/users/{userId}/transfers",
                     "/users/{userId}/transfers/{transferId}"}
    # Every $ref resolves, and every documented operation is routed (not 404 or 405).
    text = json.dumps(doc)
    for ref in re.findall(r'"\$ref": "#/components/schemas/(\w+)"', text):
        assert ref in doc["components"]["schemas"]
    for path, ops in doc["paths"].items():
        concrete = "/api/v1" + re.sub(r"\{\w+\}", "1", path)
        for method in ops:
            st, _, _ = call(srv, method.upper(), concrete, {"description": "x", "state": "BOOKED",
                                                           "firstName": "a", "lastName": "b"}
                            if method in ("post", "put") else None)
            assert st not in (404, 405) or path.startswith("/users/{userId}/transfers/"), (method, path, st)


def test_health_and_metrics(a2b_server_factory):
    srv = a2b_server_factory()
    assert call(srv, "GET", "/actuator/health/liveness")[::2] == (200, {"status": "UP"})
    assert call(srv, "GET", "/actuator/health/readiness")[::2] == (200, {"status": "UP"})

    def scrape():
        st, h, body = call(srv, "GET", "/metrics")
        assert st == 200 and h["content-type"].startswith("text/plain; version=0.0.4")
        return body.decode()

    def count(text, route, status):
        m = re.search(r'^a2b_http_requests_total\{route="%s",status="%s"\} (\S+)$' % (route, status), text, re.M)
        return float(m.group(1)) if m else 0.0

    before = scrape()
    for _ in range(3):
        call(srv, "GET", "/api/v1/users/1")
    call(srv, "GET", "/api/v1/users/999999")
    call(srv, "GET", "/nowhere")
    after = scrape()
    assert count(after, "user", 200) == count(before, "user", 200) + 3
    assert count(after, "user", 404) == count(before, "user", 404) + 1
    assert count(after, "none", 404) >= count(before, "none", 404) + 1
    assert re.search(r'^a2b_http_request_duration_seconds_count\{route="user"\} [1-9]', after, re.M)
    assert re.search(r'^a2b_http_request_duration_seconds_bucket\{route="user",le="\+Inf"\} ', after, re.M)
    for name in ("a2b_store_submitted_total", "a2b_store_completed_total", "a2b_store_rejected_total",
                 "a2b_store_queued", "process_uptime_seconds"):
        assert re.search(r"^%s \S+$" % name, after, re.M), name


# ---- HTTP behaviour --------------------------------------------------------

def test_gzip_negotiation(a2b_server_factory):
    srv = a2b_server_factory()
    plain = call(srv, "GET", "/api/v1/users/5/transfers")[2]
    st, h, raw = call(srv, "GET", "/api/v1/users/5/transfers", headers={"Accept-Encoding": "gzip, deflate"})
    assert st == 200 and h["content-encoding"] == "gzip" and h["vary"] == "Accept-Encoding"
    assert int(h["content-length"]) == len(raw) < len(json.dumps(plain))
    assert json.loads(gzip.decompress(raw)) == plain
    for refused in ("gzip;q=0", "identity", "br", "*;q=0", "x-gzip;q=0.000"):
        st, h, _ = call(srv, "GET", "/api/v1/users/5/transfers", headers={"Accept-Encoding": refused})
        assert "content-encoding" not in h, refused
        assert h["vary"] == "Accept-Encoding"
    st, h, _ = call(srv, "GET", "/api/v1/users/5/transfers", headers={"Accept-Encoding": "br;q=1, *;q=0.5"})
    assert h["content-encoding"] == "gzip"
    # Small bodies are not worth it.
    st, h, body = call(srv, "GET", "/api/v1/countries", headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in h and "vary" not in h and body[0]["code"] == "BY"


def test_pipelining_keeps_order(a2b_server_factory):
    # One thread, so the database answers come back through the loop while
    # liveness (answered at once) is already done: the order must hold.
    srv = a2b_server_factory("--max-inflight", "4")
    paths = []
    for i in range(40):
        paths.append(["/api/v1/users/%d" % (i + 1), "/actuator/health/liveness",
                      "/api/v1/users/%d/transfers" % (i + 1), "/nowhere"][i % 4])
    with socket.create_connection((HOST, srv.port)) as s:
        s.sendall(b"".join(get_req(p) for p in paths))
        out, rest = read_responses(s, len(paths))
    assert len(out) == len(paths) and rest == b""
    for p, (status, head, body) in zip(paths, out):
        if p.endswith("liveness"):
            assert json.loads(body) == {"status": "UP"}
        elif p == "/nowhere":
            assert status == 404
        elif p.endswith("/transfers"):
            uid = int(p.split("/")[4])
            assert all(b["user"]["id"] == uid for b in json.loads(body))
        else:
            assert json.loads(body)["id"] == int(p.rsplit("/", 1)[1])


def test_trickling_clients_are_cut_off_while_others_are_served(a2b_server_factory):
    """Slowloris: clients that send their request head a byte a second
    hold a connection each; --request-timeout runs from a request's first
    byte, so they get 408 (or are closed) however the bytes trickle, and
    with --max-connections nearly taken by them, a normal client is still
    served before, while and after."""
    srv = a2b_server_factory("--max-connections", "6", "--request-timeout", "2")
    head = get_req("/actuator/health/liveness")
    slow = [socket.create_connection((HOST, srv.port)) for _ in range(5)]
    ended = {}
    try:
        for i in range(12):  # 12 bytes at most, a second apart; 2 s are allowed
            for n, s in enumerate(slow):
                if n in ended:
                    continue
                try:
                    s.sendall(head[i:i + 1])
                except (BrokenPipeError, ConnectionResetError):
                    ended[n] = "closed"
            st, _, body = call(srv, "GET", "/actuator/health/liveness")
            assert st == 200 and body == {"status": "UP"}
            time.sleep(1)
            for n, s in enumerate(slow):
                if n in ended:
                    continue
                s.settimeout(0.01)
                try:
                    data = s.recv(65536)
                except socket.timeout:
                    continue
                except ConnectionResetError:
                    data = b""
                ended[n] = data.split(b" ", 2)[1].decode() if data else "closed"
            if len(ended) == len(slow):
                break
        assert len(ended) == len(slow), "still held: %s" % sorted(set(range(len(slow))) - set(ended))
        assert set(ended.values()) <= {"408", "closed"}, ended
        assert "408" in ended.values(), ended
    finally:
        for s in slow:
            s.close()
    st, _, _ = call(srv, "GET", "/actuator/health/liveness")
    assert st == 200


def test_connection_handling(a2b_server_factory):
    srv = a2b_server_factory("--request-timeout", "1")
    # Connection: close on the second of two pipelined requests: both
    # answered, the last says close, then EOF.
    with socket.create_connection((HOST, srv.port)) as s:
        s.sendall(get_req("/api/v1/countries") + get_req("/api/v1/countries", "Connection: close\r\n"))
        out, rest = read_responses(s, 2)
        assert [o[0] for o in out] == [200, 200]
        assert "Connection: close" not in out[0][1] and "Connection: close" in out[1][1]
        s.settimeout(5)
        assert s.recv(100) == b""
    # HTTP/1.0: closes unless asked to keep alive.
    with socket.create_connection((HOST, srv.port)) as s:
        s.sendall(b"GET /api/v1/countries HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        out, _ = read_responses(s, 1)
        assert "Connection: keep-alive" in out[0][1]
        s.sendall(b"GET /api/v1/countries HTTP/1.0\r\n\r\n")
        out, _ = read_responses(s, 1)
        assert "Connection: close" in out[0][1] and s.recv(100) == b""
    # Expect: 100-continue, then the body.
    with socket.create_connection((HOST, srv.port)) as s:
        body = b'{"description":"via continue"}'
        s.sendall(b"POST /api/v1/users/7/transfers/120 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
        out, _ = read_responses(s, 1)
        assert out[0][0] == 100
        s.sendall(body)
        out, _ = read_responses(s, 1)
        assert out[0][0] in (201, 409)
    # A chunked body.
    with socket.create_connection((HOST, srv.port)) as s:
        parts = [b'{"fir', b'stName":"A",', b'"lastName":"B"}']
        s.sendall(b"PUT /api/v1/users/8 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n" +
                  b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n")
        out, _ = read_responses(s, 1)
        assert out[0][0] == 204
    assert call(srv, "GET", "/api/v1/users/8")[2]["name"] == "A B"
    # Malformed requests and limits get the error shape and a close.
    for raw, status in ((b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
                        (b"GET /\x01 HTTP/1.1\r\nHost: x\r\n\r\n", 400),
                        (b"GET / HTTP/1.1\r\n\r\n", 400),
                        (b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 9000 + b"\r\n\r\n", 431),
                        (b"POST /api/v1/users/1/transfers/2 HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n", 413),
                        (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501)):
        with socket.create_connection((HOST, srv.port)) as s:
            s.sendall(raw)
            out, _ = read_responses(s, 1)
            assert out and out[0][0] == status, (raw[:40], out)
            assert "Connection: close" in out[0][1]
            err = json.loads(out[0][2])
            assert err["code"] == status
    # A slow client: the head a byte at a time is fine within the timeout ...
    with socket.create_connection((HOST, srv.port)) as s:
        for b in get_req("/api/v1/countries"):
            s.send(bytes([b]))
            time.sleep(0.005)
        out, _ = read_responses(s, 1)
        assert out[0][0] == 200
    # ... one that stalls gets 408.
    with socket.create_connection((HOST, srv.port)) as s:
        s.sendall(b"GET /api/v1/countries HTTP/1.1\r\nHo")
        out, _ = read_responses(s, 1, timeout=10)
        assert out[0][0] == 408 and json.loads(out[0][2])["status"] == "REQUEST_TIMEOUT"


def test_hostile_inputs_get_their_exact_answer_and_a_close(a2b_server_factory):
    """The cases of http_hostile, as car-server's REST side gets them: the
    same engine (http_proto.c) with an asynchronous app, and a2b's error
    shape."""
    srv = a2b_server_factory()

    def message_of(status, headers, body):
        if headers.get("content-type") != JSON:
            return "not JSON: %r" % body
        err = json.loads(body)
        return err["message"] if err["code"] == status else "wrong code: %r" % err

    wrong = http_hostile.check_all(srv.port, b"/api/v1/users/1/transfers/2", b"/api/v1/countries",
                                   message_of, lambda: call(srv, "GET", "/api/v1/countries")[0] == 200)
    assert not wrong, "\n".join(wrong)


def test_client_gone_while_pending(a2b_server_factory):
    # Connections that close with database requests in flight: the answers
    # arrive for requests whose connection is gone, and nothing breaks.
    srv = a2b_server_factory("--workers", "1")
    for _ in range(20):
        s = socket.create_connection((HOST, srv.port))
        s.sendall(b"".join(get_req("/api/v1/users/%d/transfers" % i) for i in range(1, 17)))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()
    assert call(srv, "GET", "/api/v1/users/1")[0] == 200


def test_restart_keeps_booking_and_drains(a2b_server_factory, tmp_path):
    srv = a2b_server_factory()
    path = "/api/v1/users/3/transfers/119"
    st, _, _ = call(srv, "POST", path, {"description": "kept"})
    assert st in (201, 409)
    assert call(srv, "PUT", path, {"state": "COMPLETED", "description": "kept"})[0] == 204
    # A keep-alive connection open at SIGTERM does not hold the exit up.
    idle = socket.create_connection((HOST, srv.port))
    idle.sendall(get_req("/api/v1/countries"))
    read_responses(idle, 1)
    assert srv.stop() == 0
    idle.close()
    assert "database a2b.db ready" in srv.stderr_text()
    srv2 = a2b_server_factory()
    assert "does not exist" not in srv2.stderr_text()
    st, _, b = call(srv2, "GET", path)
    assert st == 200 and (b["state"], b["description"]) == ("COMPLETED", "kept")


def test_cli(tmp_path):
    r = subprocess.run([SHOOTOUT_BIN, "a2b-server", "--help"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0 and "--db PATH|URI" in r.stdout
    r = subprocess.run([SHOOTOUT_BIN, "a2b-server", "--scale", "-1"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "--scale" in r.stderr
    r = subprocess.run([SHOOTOUT_BIN, "help"], capture_output=True, text=True, timeout=10)
    assert "a2b-server" in r.stdout
    # --init builds the SQLite file and exits.
    r = subprocess.run([SHOOTOUT_BIN, "a2b-server", "--init", "--scale", "0.01", "--db", "x.db"],
                       capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert r.returncode == 0 and os.path.getsize(str(tmp_path / "x.db")) > 0, r.stderr


# ---- PostgreSQL --------------------------------------------------------------

def test_postgres(pg_cluster, a2b_server_factory):
    r = subprocess.run([SHOOTOUT_BIN, "a2b-server", "--init", "--scale", "0.01", "--db", pg_cluster.uri()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    srv = a2b_server_factory("--db", pg_cluster.uri(), "--pool", "2", "--threads", "2")
    check_endpoints(srv)
    check_errors(srv)
    assert call(srv, "GET", "/actuator/health/readiness")[::2] == (200, {"status": "UP"})
    pg_cluster.stop()
    try:
        st, _, body = call(srv, "GET", "/actuator/health/readiness")
        assert (st, body) == (503, {"status": "DOWN"})
        assert call(srv, "GET", "/actuator/health/liveness")[0] == 200
        assert_error(call(srv, "GET", "/api/v1/users/1"), 503, "SERVICE_UNAVAILABLE")
        # With every connection gone, readiness fails fast: it does not wait
        # for a reconnection, which would take until PostgreSQL is back.
        t0 = time.monotonic()
        assert call(srv, "GET", "/actuator/health/readiness")[0] == 503
        assert time.monotonic() - t0 < 5.0
    finally:
        pg_cluster.start()
    # The pool reconnects in the background (docs/a2b.md): UP again within
    # the backoff's 5 s cap plus set-up, and the endpoints serve again.
    deadline = time.monotonic() + 15
    while call(srv, "GET", "/actuator/health/readiness")[0] != 200:
        assert time.monotonic() < deadline, "readiness still DOWN 15 s after PostgreSQL restarted"
        assert srv.running()
        time.sleep(0.2)
    deadline = time.monotonic() + 15
    while metric(srv, "a2b_pg_connected") < 4:
        assert time.monotonic() < deadline, "the pools are not whole again after 15 s"
        time.sleep(0.2)
    check_endpoints(srv)
    metrics = call(srv, "GET", "/metrics")[2].decode()
    assert metric(srv, "a2b_pg_connections") == 4  # 2 threads x --pool 2
    assert metric(srv, "a2b_pg_lost_total") >= 1 and metric(srv, "a2b_pg_reconnects_total") >= 1, metrics
    assert srv.running()


def metric(srv, name):
    text = call(srv, "GET", "/metrics")[2].decode()
    m = re.search(r"^%s (\S+)$" % name, text, re.M)
    assert m, (name, text)
    return float(m.group(1))
