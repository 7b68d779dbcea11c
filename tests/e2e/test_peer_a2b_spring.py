"""End-to-end tests of the a2b Spring contender (peers/a2b-spring: Spring 4
MVC + JdbcTemplate over commons-dbcp2 and pgjdbc, on Jetty 9), driven only
through its `start` script as `shootout run` drives it (CONTENDERS.md):
--version; a start on a free port in an empty directory against a
throw-away PostgreSQL filled by `shootout a2b-server --db URI --init`; the
journey's endpoints and their errors answered with the statuses, types and
JSON bytes `shootout a2b-server --db` gives on the same database; SIGTERM,
and nothing left behind; then the a2b journey of `shootout bench
http-open` at a modest rate, every request of it OK.

`make peers` builds it: without it (or without the JDK, Debian's Java
packages or PostgreSQL) these tests skip, failing under CI=true.
"""

import gzip
import json
import os
import re
import subprocess

import pytest

import test_a2b_journey as journey
from contender import version
from conftest import REPO, SHOOTOUT_BIN, need
from test_peer_a2b_node import Server, call
from test_peer_java import Peer, assert_stops_leaving_nothing, start_script

NAME = "a2b-spring"
LISTENING = "a2b-spring listening on "
VERSION = (r"^Spring MVC 4\.\d+\.\d+ \+ JDBC \(DBCP 2\.\S+, pgjdbc 42\.\S+, Jetty 9\.\S+, OpenJDK \S+; "
           r"not Spring Boot\)$")
# The journey at a rate that keeps a few dozen users walking at once: 150
# users over 3 s, each pausing 2 to 5.2 s between its 14 requests.
LOAD = ["--time-scale", "10", "--inject", "constant-users-per-sec 50 30s"]
LOAD_USERS = 150


@pytest.fixture(scope="module", autouse=True)
def built():
    rc, out = version(NAME)
    need(rc == 0, "%s: %s" % (NAME, out.strip()))


@pytest.fixture(scope="module")
def gen(pg_cluster):
    """Database gen, filled by our loader at scale 0.01; its URI."""
    pg_cluster.psql("DROP DATABASE IF EXISTS gen; CREATE DATABASE gen;")
    r = subprocess.run([SHOOTOUT_BIN, "a2b-server", "--db", pg_cluster.uri("gen"), "--init", "--scale", "0.01"],
                       capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return pg_cluster.uri("gen")


@pytest.fixture
def spring(gen, tmp_path):
    p = Peer(NAME, tmp_path, extra=["--db", gen, "--pool", "2"], listening=LISTENING)
    try:
        p.wait_ready()
        yield p
    finally:
        p.kill()


@pytest.fixture
def ours(gen):
    srv = Server([SHOOTOUT_BIN, "a2b-server", "--db", gen, "--port", "0", "--pool", "2"])
    yield srv
    assert srv.sigterm() == 0


def test_version():
    rc, out = version(NAME)
    assert rc == 0 and out.count("\n") == 1
    assert re.match(VERSION, out.strip()), out


def test_bad_arguments(tmp_path):
    """--db and --pool are required: the usage line and exit 2, no JVM."""
    for extra in ([], ["--db", "postgresql://postgres@127.0.0.1:1/x"], ["--pool", "2"], ["--nope", "1"]):
        r = subprocess.run([start_script(NAME), "--port", "1", "--dir", str(tmp_path)] + extra,
                           capture_output=True, text=True, timeout=10)
        assert r.returncode == 2 and "--db DB --pool POOL" in r.stderr, extra


def answer(port, method, path, **kw):
    """What is compared: status, type, Allow, and the body (inflated when
    gzip'ed: the two write different gzip headers around the same deflate
    stream)."""
    st, h, raw = call(port, method, path, **kw)
    if h.get("content-encoding") == "gzip":
        raw = gzip.decompress(raw)
    return st, h.get("content-type"), h.get("allow"), h.get("content-encoding"), raw


def test_same_answers_as_a2b_server_then_sigterm(ours, spring):
    users = json.loads(call(ours.port, "GET", "/api/v1/users/5/transfers")[2])
    t = users[0]["transfer"]
    search = "/api/v1/transfers?originId=%d&destinationId=%d&date=%s" % (
        t["origin"]["locationId"], t["destination"]["locationId"], t["duration"][2:12])
    book = "/api/v1/users/5/transfers/%d" % t["transferId"]
    reqs = [
        # The journey's reads: lists, the search, a booking, a user.
        ("GET", "/api/v1/countries"), ("GET", "/api/v1/countries/1/cities"),
        ("GET", "/api/v1/countries/1/cities/3/locations"), ("GET", search), ("GET", book),
        ("GET", "/api/v1/users/5/transfers"), ("GET", "/api/v1/users/5"),
        ("GET", "/api/v1/transfers?originId=1&destinationId=1&date=2025-01-01"),
        # 404s.
        ("GET", "/api/v1/countries/99/cities"), ("GET", "/api/v1/countries/1/cities/99/locations"),
        ("GET", "/api/v1/users/999999"), ("GET", "/api/v1/users/5/transfers/999999"),
        ("GET", "/api/v1/users/999999/transfers"), ("GET", "/nope"), ("GET", "/api/v1/countries/"),
        ("GET", "/api/v1/users//transfers"), ("GET", "/api/v1/users/1.json"),
        # 400s and 405s.
        ("GET", "/api/v1/users/x"), ("GET", "/api/v1/users/1234567890123456789"),
        ("GET", "/api/v1/transfers?originId=1&destinationId=1&date=2025-13-01"),
        ("GET", "/api/v1/transfers?destinationId=1"), ("GET", "/api/v1/transfers?originId=%zz"),
        ("GET", "/api/v1/transfers?originId=x&destinationId=1&date=2025-01-01"),
        ("DELETE", "/api/v1/users/5"), ("POST", "/api/v1/countries"), ("DELETE", book),
        ("GET", "/actuator/health/liveness"), ("GET", "/actuator/health/readiness"),
    ] + [("GET", "/api/v1/users/%d/transfers" % u) for u in range(1, 2001, 199)]
    for method, path in reqs:
        for headers in ({}, {"Accept-Encoding": "gzip"}):
            assert answer(ours.port, method, path, headers=headers) == \
                   answer(spring.port, method, path, headers=headers), (method, path, headers)

    # Writes, alternating servers on the same rows: a booking made, made
    # again (409), changed, refused; bodies refused alike.
    have = {b["transfer"]["transferId"] for b in users}
    free = "/api/v1/users/5/transfers/%d" % next(i for i in range(1, 121) if i not in have)
    writes = [
        (spring, "POST", free, {"description": "s \"1\" \u00e9"}, 201), (ours, "POST", free, {"description": "o"}, 409),
        (spring, "POST", free, {"description": "s"}, 409),
        (spring, "PUT", free, {"state": "CANCELED", "description": "x\ty"}, 204),
        (ours, "PUT", free, {"state": "NOPE", "description": "x"}, 400),
        (spring, "PUT", free, {"state": "NOPE", "description": "x"}, 400),
        (spring, "PUT", "/api/v1/users/5", {"firstName": "\u0416", "lastName": "b"}, 204),
        (ours, "POST", "/api/v1/users/5/transfers/999999", {"description": "x"}, 404),
        (spring, "POST", "/api/v1/users/5/transfers/999999", {"description": "x"}, 404),
        (ours, "POST", "/api/v1/users/999999/transfers/1", {"description": "x"}, 404),
        (spring, "POST", "/api/v1/users/999999/transfers/1", {"description": "x"}, 404),
        (ours, "POST", free, {}, 400), (spring, "POST", free, {}, 400),
    ]
    got = [call(s.port, m, p, body=b) for s, m, p, b, _ in writes]
    assert [g[0] for g in got] == [w[4] for w in writes]
    for i in (1, 4, 7, 9, 11):  # the same bodies from both
        assert got[i][2] == got[i + 1][2], writes[i]
    for raw, ct in ((b"{", "application/json"), (b"[]", "application/json"), (b'{"description":1}', None),
                    (b"", "application/json"), (b'{"description":"x"}', "text/plain")):
        kw = {"raw_body": raw, "headers": {"Content-Type": ct} if ct else {}}
        a, b = call(ours.port, "POST", free, **kw), call(spring.port, "POST", free, **kw)
        assert a[0] == b[0] and a[0] in (400, 415), raw
        if raw != b"{":  # a syntax error's text is Jackson's
            assert a[2] == b[2], raw
    for path in (free, "/api/v1/users/5", "/api/v1/users/5/transfers"):
        assert answer(ours.port, "GET", path) == answer(spring.port, "GET", path), path

    assert_stops_leaving_nothing(spring)


def test_http_open_journey(gen, spring, tmp_path):
    """The a2b journey fitted to the data set as `shootout run --scale 0.01`
    fits it: every request of every user OK, none lost or late."""
    text = journey.scaled(journey.c_literal(os.path.join(REPO, "src", "load", "http", "scenario.c"),
                                            "scn_a2b_text"), 2000, "feed-a2b-routes 0.01")
    ho, row, p = journey.journey(tmp_path, spring.port, scenario=text,
                                 args=LOAD + ["--server-pid", str(spring.proc.pid)])
    journey.assert_every_request_ok(ho, LOAD_USERS)
    assert ho["errors"]["server_total"] == 0 and ho["errors"]["generator_total"] == 0
    assert row["server"]["pid"] == spring.proc.pid
