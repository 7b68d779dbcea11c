"""End-to-end tests of the Node.js a2b peer (peers/a2b-node): every endpoint
and error path of docs/a2b.md, with the statuses and JSON bytes a2b-server
gives, readiness UP then DOWN when PostgreSQL stops, exit 0 on SIGTERM.

PostgreSQL is a throw-away cluster (pgtemp.py). Two databases:
- `tiny`: the schema of src/a2b/a2b_pg.c (its schema_sql and index_sql
  strings, run through psql) and a small hand-made data set whose bodies are
  pinned here byte for byte; always run.
- `gen`: filled by `shootout a2b-server --db ... --init --scale 0.01`;
  then our server and the peer serve the same database and must answer the
  same requests with the same status, type and body bytes.

need()s node and peers/a2b-node/node_modules (make node-peer), and
PostgreSQL (conftest.py's pg_cluster): skipped without them, failed under
CI=true.
"""

import gzip
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import HOST, NODE_PEER_DIR as PEER_DIR, REPO, SHOOTOUT_BIN, need_node_peer

JSON = "application/json"
START_TIMEOUT = 30.0
NODE = shutil.which("node")


@pytest.fixture(scope="module", autouse=True)
def node_peer():
    need_node_peer()


def c_string(src, name):
    """The C string literal `static const char name[] = "..." "...";`."""
    m = re.search(r"static const char %s\[\] =(.*?);\n" % name, src, re.S)
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
    return "".join(p.replace('\\"', '"').replace("\\\\", "\\") for p in parts)


TINY_DATA = r"""
INSERT INTO a2b.countries(id, name, code) VALUES (1, 'Republic of Belarus', 'BY'), (2, 'Testland', 'TL');
INSERT INTO a2b.cities(id, country_id, name, code) VALUES
 (1, 1, 'Mogilev', '22'), (2, 1, 'Gomel', '23'), (3, 1, 'Vitebsk', '21'), (4, 1, 'Brest', '16'),
 (5, 1, 'Grodno', '15'), (6, 1, 'Minsk', '17'), (7, 2, 'Nowhere', '00');
INSERT INTO a2b.locations(id, city_id, location) VALUES
 (1, 1, '{"latitude": 53.900000, "longitude": 30.333333}'),
 (2, 6, '{"latitude": 53.902284, "longitude": 27.561831}'),
 (3, 1, '{"latitude": 53.123456, "longitude": 30.000001}'),
 (4, 7, '{"latitude": 10.000000, "longitude": -0.500000}');
INSERT INTO a2b.transfers(id, origin, destination, capacity, date, duration, price, description) VALUES
 (1, 1, 2, 40, '2025-01-23', '["2025-01-23 02:00:00","2025-01-23 08:00:00")', '42.17',
  E'Quote " backslash \\ tab\t Кириллица'),
 (2, 1, 2, 4, '2025-01-23', '["2025-01-23 05:00:00","2025-01-24 06:00:00")', '0.05', 'night bus'),
 (3, 2, 1, 60, '2025-01-24', '["2025-01-24 01:00:00","2025-01-24 11:00:00")', '99.99', 'back');
INSERT INTO a2b.users(id, first_name, last_name, email, phone) VALUES
 (1, 'Ada', 'Lovelace', 'ada.lovelace.1@example.com', '+375290000001'),
 (2, 'Alan', 'Turing', 'alan.turing.2@example.com', '+375290000002'),
 (3, 'Grace', 'Hopper', 'grace.hopper.3@example.com', '+375290000003');
INSERT INTO a2b.users_transfers(user_id, transfer_id, state, description) VALUES
 (1, 1, 'BOOKED', 'aisle'), (1, 2, 'COMPLETED', E'line1\nline2\r\x01 ctl'), (2, 3, 'BOOKED', 'x');
"""

# The bodies a2b_api.c writes for the tiny data set.
COUNTRY1 = b'{"countryId":1,"name":"Republic of Belarus","code":"BY"}'
MOGILEV = b'{"cityId":1,"country":' + COUNTRY1 + b',"name":"Mogilev","code":"22"}'
MINSK = b'{"cityId":6,"country":' + COUNTRY1 + b',"name":"Minsk","code":"17"}'
LOC1 = b'{"locationId":1,"city":' + MOGILEV + b',"latitude":53.9,"longitude":30.333333}'
LOC2 = b'{"locationId":2,"city":' + MINSK + b',"latitude":53.902284,"longitude":27.561831}'
LOC3 = b'{"locationId":3,"city":' + MOGILEV + b',"latitude":53.123456,"longitude":30.000001}'
T1 = (b'{"transferId":1,"origin":' + LOC1 + b',"destination":' + LOC2 +
      b',"capacity":40,"duration":"[\\"2025-01-23 02:00:00\\",\\"2025-01-23 08:00:00\\")","price":42.17,'
      b'"description":"Quote \\" backslash \\\\ tab\\t ' + "Кириллица".encode() + b'"}')
T2 = (b'{"transferId":2,"origin":' + LOC1 + b',"destination":' + LOC2 +
      b',"capacity":4,"duration":"[\\"2025-01-23 05:00:00\\",\\"2025-01-24 06:00:00\\")","price":0.05,'
      b'"description":"night bus"}')
ADA = b'{"id":1,"name":"Ada Lovelace","email":"ada.lovelace.1@example.com","phone":"+375290000001"}'
B11 = b'{"user":' + ADA + b',"transfer":' + T1 + b',"state":"BOOKED","description":"aisle"}'
B12 = b'{"user":' + ADA + b',"transfer":' + T2 + b',"state":"COMPLETED","description":"line1\\nline2\\u000d\\u0001 ctl"}'


def err(status, name, message):
    return ('{"status":"%s","code":%d,"message":%s}' % (name, status, json.dumps(message, ensure_ascii=False))).encode()


# ---- Processes ----------------------------------------------------------------

class Server:
    """A server process announcing its port on stderr: the peer's
    `a2b-node listening on ADDR:PORT`, a2b-server's `a2b-server: HTTP/1.1 on
    ADDR:PORT, ...`."""

    def __init__(self, argv, cwd=None):
        self.proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.port = None
        deadline = time.monotonic() + START_TIMEOUT
        self.lines = []
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline().decode(errors="replace")
            if not line:
                break
            self.lines.append(line)
            m = re.search(r"(?:listening on|HTTP/1\.1 on) \S*?:(\d+)(?:,|\s*$)", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.kill()
            raise AssertionError("server did not start: %s" % "".join(self.lines))

    def sigterm(self, timeout=15):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=timeout)
        self.proc.stderr.close()
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc.stderr.close()


def start_peer(pg, db, pool=2):
    return Server([NODE, "server.js", "--db", pg.uri(db), "--port", "0", "--pool", str(pool)], cwd=PEER_DIR)


def call(port, method, path, body=None, headers=None, raw_body=None):
    """(status, lower-cased headers, raw body bytes)."""
    c = http.client.HTTPConnection(HOST, port, timeout=20)
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
    return r.status, hdrs, raw


def load_tiny(pg, db):
    pg.psql("DROP DATABASE IF EXISTS %s; CREATE DATABASE %s;" % (db, db))
    with open(os.path.join(REPO, "src", "a2b", "a2b_pg.c")) as f:
        src = f.read()
    pg.psql("SET client_min_messages = warning;" + c_string(src, "schema_sql") + TINY_DATA +
            c_string(src, "index_sql"), db=db)


@pytest.fixture(scope="module", params=["peer", "a2b-server"])
def tiny(pg_cluster, request):
    """The peer on its own copy of the tiny data set; then, to check the
    expectations themselves, a2b-server on another copy."""
    db = "tiny_" + request.param.replace("-", "_")
    load_tiny(pg_cluster, db)
    if request.param == "peer":
        srv = start_peer(pg_cluster, db)
    else:
        srv = Server([SHOOTOUT_BIN, "a2b-server", "--db", pg_cluster.uri(db), "--port", "0", "--pool", "2"])
    yield srv
    srv.kill()


# ---- Every endpoint on the tiny data set -------------------------------------------

def expect(port, method, path, status, want, **kw):
    st, h, raw = call(port, method, path, **kw)
    assert (st, raw) == (status, want), (method, path)
    if want:
        assert h["content-type"] == JSON
    return h


def test_reads(tiny):
    p = tiny.port
    expect(p, "GET", "/api/v1/countries", 200,
           b"[" + COUNTRY1 + b',{"countryId":2,"name":"Testland","code":"TL"}]')
    st, _, raw = call(p, "GET", "/api/v1/countries/1/cities")
    assert st == 200 and raw.startswith(b"[" + MOGILEV + b",") and raw.endswith(b"," + MINSK + b"]")
    assert [c["name"] for c in json.loads(raw)] == ["Mogilev", "Gomel", "Vitebsk", "Brest", "Grodno", "Minsk"]
    expect(p, "GET", "/api/v1/countries/1/cities/1/locations", 200, b"[" + LOC1 + b"," + LOC3 + b"]")
    expect(p, "GET", "/api/v1/countries/1/cities/2/locations", 200, b"[]")  # a city without locations
    expect(p, "GET", "/api/v1/transfers?originId=1&destinationId=2&date=2025-01-23", 200,
           b"[" + T1 + b"," + T2 + b"]")
    expect(p, "GET", "/api/v1/transfers?d%61te=2025%2D01%2D23&destinationId=2&originId=1", 200,
           b"[" + T1 + b"," + T2 + b"]")
    expect(p, "GET", "/api/v1/transfers?originId=1&destinationId=2&date=2025-01-24", 200, b"[]")
    expect(p, "GET", "/api/v1/users/1", 200, ADA)
    expect(p, "GET", "/api/v1/users/0001", 200, ADA)
    expect(p, "GET", "/api/v1/users/1/transfers", 200, b"[" + B11 + b"," + B12 + b"]")
    expect(p, "GET", "/api/v1/users/1/transfers/2", 200, B12)
    expect(p, "GET", "/api/v1/users/3/transfers", 200, b"[]")
    # HEAD: the length of the body, no body.
    st, h, raw = call(p, "HEAD", "/api/v1/users/1")
    assert (st, raw, int(h["content-length"])) == (200, b"", len(ADA))


def test_not_found(tiny):
    p = tiny.port
    expect(p, "GET", "/api/v1/countries/3/cities", 404, err(404, "NOT_FOUND", "Country not found"))
    expect(p, "GET", "/api/v1/countries/3/cities/1/locations", 404,
           err(404, "NOT_FOUND", "City not found in the country"))
    expect(p, "GET", "/api/v1/countries/1/cities/7/locations", 404,  # a city of country 2
           err(404, "NOT_FOUND", "City not found in the country"))
    expect(p, "GET", "/api/v1/users/999999", 404, err(404, "NOT_FOUND", "User not found"))
    expect(p, "GET", "/api/v1/users/999999/transfers", 404, err(404, "NOT_FOUND", "User not found"))
    expect(p, "GET", "/api/v1/users/1/transfers/3", 404, err(404, "NOT_FOUND", "User's transfer not found"))
    expect(p, "PUT", "/api/v1/users/1/transfers/3", 404, err(404, "NOT_FOUND", "User's transfer not found"),
           body={"state": "BOOKED", "description": "x"})
    expect(p, "PUT", "/api/v1/users/999999", 404, err(404, "NOT_FOUND", "User not found"),
           body={"firstName": "a", "lastName": "b"})
    expect(p, "POST", "/api/v1/users/999999/transfers/1", 404, err(404, "NOT_FOUND", "User not found"),
           body={"description": "x"})
    expect(p, "POST", "/api/v1/users/1/transfers/999999", 404, err(404, "NOT_FOUND", "Transfer not found"),
           body={"description": "x"})
    nores = err(404, "NOT_FOUND", "No such resource")
    for path in ("/api/v1/nothing", "/api/v1/users/1/cars", "/api/v1/users//transfers", "/api/v1/countries/",
                 "/nope", "/api/v2/countries"):
        expect(p, "GET", path, 404, nores)


def test_writes(tiny):
    p = tiny.port
    path = "/api/v1/users/3/transfers/1"
    expect(p, "POST", path, 201, b"", body={"description": "window seat \u00e9 \"q\"", "other": [1, {"x": None}]})
    expect(p, "POST", path, 409, err(409, "CONFLICT", "The transfer is already booked by the user"),
           body={"description": "again"})
    st, _, raw = call(p, "GET", path)
    b = json.loads(raw)
    assert st == 200 and (b["state"], b["description"]) == ("BOOKED", "window seat \u00e9 \"q\"")
    expect(p, "PUT", path, 204, b"", body={"state": "CANCELED", "description": "changed"})
    b = json.loads(call(p, "GET", path)[2])
    assert (b["state"], b["description"]) == ("CANCELED", "changed")
    expect(p, "PUT", "/api/v1/users/3", 204, b"", body={"firstName": "Ada", "lastName": "L\u00f6velace"})
    assert json.loads(call(p, "GET", "/api/v1/users/3")[2])["name"] == "Ada L\u00f6velace"
    # A stored control character comes back escaped as json.c escapes it.
    expect(p, "PUT", path, 204, b"", body={"state": "COMPLETED", "description": "a\rb\x7f\u0002"})
    assert call(p, "GET", path)[2].endswith(b'"state":"COMPLETED","description":"a\\u000db\x7f\\u0002"}')


def test_bad_requests(tiny):
    p = tiny.port
    expect(p, "GET", "/api/v1/users/abc", 400, err(400, "BAD_REQUEST", "Invalid id 'abc': an id is a number"))
    expect(p, "GET", "/api/v1/users/-1", 400, err(400, "BAD_REQUEST", "Invalid id '-1': an id is a number"))
    expect(p, "GET", "/api/v1/users/1234567890123456789", 400,
           err(400, "BAD_REQUEST", "Invalid id '1234567890123456789': an id is a number"))
    expect(p, "GET", "/api/v1/countries/1x/cities", 400, err(400, "BAD_REQUEST", "Invalid id '1x': an id is a number"))
    expect(p, "GET", "/api/v1/users/1/transfers/x", 400, err(400, "BAD_REQUEST", "Invalid id 'x': an id is a number"))
    # 405 with Allow, before the ids are looked at.
    h = expect(p, "DELETE", "/api/v1/users/abc", 405, err(405, "METHOD_NOT_ALLOWED", "Method not allowed"))
    assert h["allow"] == "GET, HEAD, PUT"
    assert call(p, "POST", "/api/v1/countries")[1]["allow"] == "GET, HEAD"
    assert call(p, "PATCH", "/api/v1/users/1/transfers")[1]["allow"] == "GET, HEAD"
    assert call(p, "DELETE", "/api/v1/users/1/transfers/1")[1]["allow"] == "GET, HEAD, POST, PUT"
    assert call(p, "POST", "/actuator/health/readiness")[0] == 405
    # Bodies.
    book = "/api/v1/users/1/transfers/3"
    for raw in (b"{", b"[]", b'{"description":"x"} x', b'{"description":1}', b"{'a':1}", b'{"description":"\\q"}',
                b'{"description":"\\u0000"}', b'{"x":"\\ud800"}', b'{"description":"\xff"}', b"   ", b"\xef\xbb\xbf{}"):
        st, h, body = call(p, "POST", book, raw_body=raw, headers={"Content-Type": JSON})
        assert st == 400 and body.startswith(b'{"status":"BAD_REQUEST","code":400,"message":"Malformed JSON body: '), raw
    expect(p, "POST", book, 400, err(400, "BAD_REQUEST", "Malformed JSON body: the body must be a JSON object"),
           raw_body=b"[]", headers={"Content-Type": JSON})
    expect(p, "POST", book, 400, err(400, "BAD_REQUEST", "Malformed JSON body: a field must be a string or null"),
           raw_body=b'{"description":1}', headers={"Content-Type": JSON})
    expect(p, "POST", book, 400, err(400, "BAD_REQUEST", "Required request body is missing"),
           headers={"Content-Type": JSON})
    expect(p, "PUT", "/api/v1/users/1", 415, err(415, "UNSUPPORTED_MEDIA_TYPE", "The body must be application/json"),
           raw_body=b"firstName=a", headers={"Content-Type": "text/plain"})
    # No Content-Type is read as JSON; parameters and case do not matter.
    expect(p, "PUT", "/api/v1/users/1/transfers/1", 204, b"", raw_body=b'{"state":"BOOKED","description":"aisle"}')
    expect(p, "PUT", "/api/v1/users/1/transfers/1", 204, b"", raw_body=b'{"state":"BOOKED","description":"aisle"}',
           headers={"Content-Type": "Application/JSON; charset=utf-8"})
    # The checks of a2b_args_check.
    nulldesc = err(400, "BAD_REQUEST", "The description should not be null")
    expect(p, "POST", book, 400, nulldesc, body={"description": None})
    expect(p, "POST", book, 400, nulldesc, body={})
    expect(p, "PUT", "/api/v1/users/1/transfers/1", 400,
           err(400, "BAD_REQUEST", "The state should be BOOKED, COMPLETED or CANCELED"),
           body={"state": "LOST", "description": "x"})
    expect(p, "PUT", "/api/v1/users/1/transfers/1", 400, nulldesc, body={"state": "BOOKED"})
    names = err(400, "BAD_REQUEST", "The first and last names should have 1 to 50 bytes")
    expect(p, "PUT", "/api/v1/users/1", 400, names, body={"firstName": "", "lastName": "x"})
    expect(p, "PUT", "/api/v1/users/1", 400, names, body={"firstName": "a" * 51, "lastName": "x"})
    expect(p, "PUT", "/api/v1/users/1", 400, names, body={"firstName": "\u00e9" * 26, "lastName": "x"})  # 52 bytes
    expect(p, "PUT", "/api/v1/users/1", 400, names, body={"firstName": "a"})
    # Queries.
    expect(p, "GET", "/api/v1/transfers?destinationId=1&date=2025-01-01", 400,
           err(400, "BAD_REQUEST", "Required parameter 'originId' is not present"))
    expect(p, "GET", "/api/v1/transfers?originId=1&date=2025-01-01", 400,
           err(400, "BAD_REQUEST", "Required parameter 'destinationId' is not present"))
    baddate = err(400, "BAD_REQUEST", "The date should be YYYY-MM-DD")
    for q in ("originId=1&destinationId=1", "originId=1&destinationId=1&date=2025-02-30",
              "originId=1&destinationId=1&date=2023-02-29", "originId=1&destinationId=1&date=2025-1-01"):
        expect(p, "GET", "/api/v1/transfers?" + q, 400, baddate)
    expect(p, "GET", "/api/v1/transfers?originId=1&destinationId=2&date=2024-02-29", 200, b"[]")
    expect(p, "GET", "/api/v1/transfers?originId=x&destinationId=1&date=2025-01-01", 400,
           err(400, "BAD_REQUEST", "originId and destinationId must be numbers"))
    for q in ("originId=%zz&destinationId=1&date=2025-01-01", "originId=1&destinationId=1&date=" + "9" * 40,
              "o%zz=1&originId=1&destinationId=1&date=2025-01-01"):
        expect(p, "GET", "/api/v1/transfers?" + q, 400, err(400, "BAD_REQUEST", "Malformed query string"))


def test_gzip(tiny):
    p = tiny.port
    st, h, raw = call(p, "GET", "/api/v1/users/1/transfers", headers={"Accept-Encoding": "gzip, deflate"})
    assert st == 200 and h["content-encoding"] == "gzip" and "accept-encoding" in h["vary"].lower()
    assert gzip.decompress(raw).startswith(b"[" + B11)
    st, h, raw = call(p, "GET", "/api/v1/users/1/transfers", headers={"Accept-Encoding": "gzip;q=0"})
    assert st == 200 and "content-encoding" not in h and raw.startswith(b"[" + B11)
    st, h, raw = call(p, "GET", "/api/v1/users/1", headers={"Accept-Encoding": "gzip"})  # under 1 KiB
    assert (st, raw) == (200, ADA) and "content-encoding" not in h


# ---- Health, stop ------------------------------------------------------------------

def test_health_and_sigterm(pg_cluster):
    """Readiness UP; DOWN (503) while PostgreSQL is stopped, liveness still
    UP; UP again once it is back (the pool reconnects); exit 0 on SIGTERM
    with a keep-alive connection open."""
    load_tiny(pg_cluster, "health")
    srv = start_peer(pg_cluster, "health")
    try:
        p = srv.port
        expect(p, "GET", "/actuator/health/liveness", 200, b'{"status":"UP"}')
        expect(p, "GET", "/actuator/health/readiness", 200, b'{"status":"UP"}')
        pg_cluster.stop("fast")
        try:
            expect(p, "GET", "/actuator/health/readiness", 503, b'{"status":"DOWN"}')
            expect(p, "GET", "/actuator/health/liveness", 200, b'{"status":"UP"}')
            st, _, raw = call(p, "GET", "/api/v1/users/1")
            assert st == 503 and json.loads(raw)["status"] == "SERVICE_UNAVAILABLE"
        finally:
            pg_cluster.start()
        deadline = time.monotonic() + 20
        while call(p, "GET", "/actuator/health/readiness")[0] != 200:
            assert time.monotonic() < deadline, "readiness did not come back"
            time.sleep(0.2)
        expect(p, "GET", "/api/v1/users/1", 200, ADA)
        keep = http.client.HTTPConnection(HOST, p, timeout=10)
        keep.request("GET", "/api/v1/countries")
        assert keep.getresponse().read()
        assert srv.sigterm() == 0
        keep.close()
    finally:
        srv.kill()


def test_bad_options():
    r = subprocess.run([NODE, "server.js", "--nope"], cwd=PEER_DIR, capture_output=True, timeout=30)
    assert r.returncode == 2 and b"unknown option" in r.stderr
    r = subprocess.run([NODE, "server.js", "--db", "postgres://postgres@127.0.0.1:1/none", "--port", "0"],
                       cwd=PEER_DIR, capture_output=True, timeout=30)
    assert r.returncode == 1 and b"cannot connect" in r.stderr


# ---- The same bytes as a2b-server, on its own data set ---------------------------------

def test_same_answers_as_a2b_server(pg_cluster):
    pg_cluster.psql("DROP DATABASE IF EXISTS gen; CREATE DATABASE gen;")
    r = subprocess.run([SHOOTOUT_BIN, "a2b-server", "--db", pg_cluster.uri("gen"), "--init", "--scale", "0.01"],
                       capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr
    ours = Server([SHOOTOUT_BIN, "a2b-server", "--db", pg_cluster.uri("gen"), "--port", "0", "--pool", "2"])
    peer = start_peer(pg_cluster, "gen")
    try:
        users = json.loads(call(ours.port, "GET", "/api/v1/users/5/transfers")[2])
        t = users[0]["transfer"]
        date = t["duration"][2:12]
        reqs = [
            ("GET", "/api/v1/countries"), ("GET", "/api/v1/countries/1/cities"),
            ("GET", "/api/v1/countries/1/cities/3/locations"), ("GET", "/api/v1/countries/2/cities"),
            ("GET", "/api/v1/countries/1/cities/99/locations"),
            ("GET", "/api/v1/transfers?originId=%d&destinationId=%d&date=%s"
             % (t["origin"]["locationId"], t["destination"]["locationId"], date)),
            ("GET", "/api/v1/transfers?originId=1&destinationId=1&date=2025-01-01"),
            ("GET", "/api/v1/transfers?originId=1&destinationId=1&date=2025-13-01"),
            ("GET", "/api/v1/transfers?destinationId=1"), ("GET", "/api/v1/transfers?originId=%zz"),
            ("GET", "/api/v1/users/5"), ("GET", "/api/v1/users/999999"), ("GET", "/api/v1/users/x"),
            ("GET", "/api/v1/users/5/transfers/%d" % t["transferId"]), ("GET", "/api/v1/users/5/transfers/999999"),
            ("GET", "/api/v1/users/999999/transfers"), ("GET", "/nope"), ("DELETE", "/api/v1/users/5"),
            ("GET", "/actuator/health/liveness"), ("GET", "/actuator/health/readiness"),
        ] + [("GET", "/api/v1/users/%d/transfers" % u) for u in range(1, 2001, 97)]
        for method, path in reqs:
            a, b = call(ours.port, method, path), call(peer.port, method, path)
            assert (a[0], a[1].get("content-type"), a[1].get("allow"), a[2]) == \
                   (b[0], b[1].get("content-type"), b[1].get("allow"), b[2]), (method, path)
        # Writes, alternating servers on the same rows.
        have = {x["transfer"]["transferId"] for x in users}
        free = next(i for i in range(1, 121) if i not in have)
        path = "/api/v1/users/5/transfers/%d" % free
        writes = [
            (peer, "POST", path, {"description": "p \"1\""}), (ours, "POST", path, {"description": "o"}),
            (peer, "POST", path, {"description": "p"}), (ours, "PUT", path, {"state": "CANCELED", "description": "x\ty"}),
            (peer, "PUT", path, {"state": "NOPE", "description": "x"}), (peer, "PUT", "/api/v1/users/5", {"firstName": "Ж", "lastName": "b"}),
            (ours, "POST", "/api/v1/users/5/transfers/999999", {"description": "x"}),
            (peer, "POST", "/api/v1/users/5/transfers/999999", {"description": "x"}),
        ]
        statuses = [call(s.port, m, pth, body=bd)[:3:2] for s, m, pth, bd in writes]
        assert [s for s, _ in statuses] == [201, 409, 409, 204, 400, 204, 404, 404]
        assert statuses[6] == statuses[7] and statuses[1] == statuses[2]
        for path2 in (path, "/api/v1/users/5", "/api/v1/users/5/transfers"):
            assert call(ours.port, "GET", path2)[2] == call(peer.port, "GET", path2)[2]
    finally:
        peer.kill()
        assert ours.sigterm() == 0
