"""The a2b journey end to end: `shootout bench http-open` walking the
built-in journey (src/load/http/scenario.c) against a2b-server, and the
feeders it relies on.

- The built-in journey, its search fed with a route of our data set
  (feed-a2b-routes), succeeds against a2b-server on SQLite at scale 1 (the
  data set it assumes): every one of the 14 requests OK, none KO; the
  HTML report draws the run's per-second series.
- The copy of the journey in docs/http_open.md is exact, and the recipe
  there for another data set (the journey with a CSV of routes) works.
- A queue feeder that runs dry stops the users and fails the run.
- The Node peer (peers/a2b-node) answers the journey as a2b-server does,
  both on one PostgreSQL database (need()s node, its packages and
  PostgreSQL: a skip, or a failure under CI=true).

Runs are short (--time-scale, a few dozen users); nothing about speed is
asserted.
"""

import http.client
import json
import os
import re
import shutil
import subprocess

import test_bench
from conftest import HOST, NODE_PEER_DIR as PEER_DIR, REPO, SHOOTOUT_BIN, A2bServer, need_node_peer, stop_servers

NAMES = ["countries", "cities", "origins", "destinations", "transfers", "book", "my-transfers",
         "my-transfer", "describe", "cancel", "complete", "user", "update-user"]
# 30 users (20/s for 1.5 s) whose pauses last 2 to 5.2 s.
SHORT = ["--time-scale", "10", "--inject", "constant-users-per-sec 20 15s"]
USERS = 30


def journey(tmp_path, port, scenario=None, args=SHORT, code=0):
    """Runs http-open against port with the built-in journey, or with the
    scenario text given; returns (its http_open object, its row, process)."""
    out = tmp_path / "journey.json"
    argv = ["http-open", "--target", "http://%s:%d" % (HOST, port), "--json", out] + list(args)
    if scenario is not None:
        path = tmp_path / "journey.scn"
        path.write_text(scenario)
        argv += ["--scenario", path]
    p = test_bench.bench(*argv)
    assert p.returncode == code, "exit %d\nstdout:\n%s\nstderr:\n%s" % (p.returncode, p.stdout, p.stderr)
    with open(out) as f:
        rows = test_bench.iterations(json.load(f))
    assert len(rows) == 1
    return rows[0]["http_open"], rows[0], p


def assert_every_request_ok(ho, users):
    """Every user walked the whole journey: each request once (cities
    twice), all OK."""
    assert ho["users_started"] == ho["users_done"] == users
    got = {r["name"]: (r["ok"], r["ko"]) for r in ho["requests"]}
    assert sorted(got) == sorted(NAMES)
    want = {n: (2 * users if n == "cities" else users, 0) for n in NAMES}
    assert got == want, ho["errors"]
    assert ho["global"]["count"] == 14 * users and ho["global"]["ko"] == 0


def c_literal(path, name):
    """The text of the C string literal `name[] = "..." "...";` in path."""
    with open(path) as f:
        src = f.read()
    m = re.search(r"\b%s\[\] =(.*?);\n" % name, src, re.S)
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
    return "".join(p.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\") for p in parts)


def docs_journey():
    """The journey as docs/http_open.md shows it."""
    with open(os.path.join(REPO, "docs", "http_open.md")) as f:
        doc = f.read()
    return doc.split("The built-in text")[1].split("```text\n")[1].split("```")[0]


def scaled(text, users, routes_line):
    """The journey with its feeders fitted to another data set, as
    `shootout run --scale` fits them."""
    assert text.count("feed userId 1 200000\n") == 1 and text.count("feed-a2b-routes\n") == 1
    return text.replace("feed userId 1 200000\n", "feed userId 1 %d\n" % users) \
               .replace("feed-a2b-routes\n", routes_line + "\n")


def test_builtin_journey_loads_every_endpoint(a2b_server_factory, tmp_path):
    server = a2b_server_factory("--scale", "1")
    html = tmp_path / "journey.html"
    ho, row, p = journey(tmp_path, server.port, args=SHORT + ["--html", html])
    assert ho["scenario"] == "a2b"
    assert_every_request_ok(ho, USERS)
    assert ho["errors"]["server_total"] == 0 and ho["errors"]["generator_total"] == 0
    # The report draws the run's per-second series: one point per second.
    page = html.read_text()
    assert page.count('class="timeline"') == 1
    timeline = page.split('class="timeline"')[1]
    assert timeline.count("<polyline") == 3
    active = timeline.split("<polyline")[1].split('points="')[1].split('"')[0].split()
    assert len(active) == len(ho["series"]) > 1


def test_docs_show_the_builtin_journey():
    text = c_literal(os.path.join(REPO, "src", "load", "http", "scenario.c"), "scn_a2b_text")
    assert text.startswith("scenario a2b\n") and "feed-a2b-routes\n" in text
    assert docs_journey() == text


def test_journey_from_the_docs_with_a_routes_csv(a2b_server_factory, tmp_path):
    """The recipe for another data set: the journey with a CSV of routes.
    The routes are read back from the server (the transfers its users
    booked), one field quoted as a spreadsheet might."""
    server = a2b_server_factory()  # scale 0.01: 2000 users, 120 transfers
    routes = set()
    conn = http.client.HTTPConnection(HOST, server.port, timeout=10)
    for user in range(1, 40):
        conn.request("GET", "/api/v1/users/%d/transfers" % user)
        r = conn.getresponse()
        assert r.status == 200
        for b in json.loads(r.read()):
            t = b["transfer"]
            routes.add((t["origin"]["locationId"], t["destination"]["locationId"], t["duration"][2:12]))
    conn.close()
    assert len(routes) > 20
    csv = tmp_path / "routes.csv"
    csv.write_text("originId,destinationId,date\r\n" +
                   "".join('%d,%d,"%s"\r\n' % r for r in sorted(routes)))
    text = scaled(docs_journey(), 2000, "feed-csv %s circular" % csv)
    ho, row, p = journey(tmp_path, server.port, scenario=text)
    assert_every_request_ok(ho, USERS)


def test_queue_feeder_running_dry_stops_the_run(a2b_server_factory, tmp_path):
    server = a2b_server_factory()
    csv = tmp_path / "cities.csv"
    csv.write_text("cityId\n1\n2\n3\n4\n5\n")
    text = ("scenario dry\nfeed-csv %s queue\n"
            "request GET /api/v1/countries/1/cities/${cityId}/locations locations\n"
            "pause 0.2\nrequest GET /api/v1/countries/1/cities/${cityId} again\n"
            "  expect 404\n" % csv)
    ho, row, p = journey(tmp_path, server.port, scenario=text, args=["--inject", "at-once 8"],
                         code=test_bench.EXIT_RUNTIME)
    # Five users, one per record; the sixth arrival stopped the injection,
    # and the users on their way finished.
    assert ho["users_started"] == ho["users_done"] == 5
    assert [(r["name"], r["ok"], r["ko"]) for r in ho["requests"]] == [("locations", 5, 0), ("again", 5, 0)]
    message = "the queue feeder %s ran out of records" % csv
    assert row["errors"]["message"] == message
    assert message in p.stderr
    # circular never runs dry.
    ho, row, p = journey(tmp_path, server.port, scenario=text.replace(" queue", " circular"),
                         args=["--inject", "at-once 8"])
    assert ho["users_started"] == 8 and "message" not in row["errors"]


class NodePeer(A2bServer):
    """peers/a2b-node on a PostgreSQL database; it names its port in its
    start-up line as a2b-server does, so it is awaited the same way."""

    what = "a2b-node"
    LISTENING = re.compile(r"a2b-node listening on (\S+)")

    def __init__(self, workdir, db):  # not A2bServer's: another program
        self.host = HOST
        self.stderr_path = os.path.join(workdir, "a2b-node.stderr")
        self.argv = [shutil.which("node"), "server.js", "--db", db, "--port", "0"]
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._err, cwd=PEER_DIR)
        self.port = None


def test_node_peer_answers_the_journey_alike(pg_cluster, a2b_server_factory, tmp_path):
    """Both servers on one database loaded at scale 0.01, the journey fitted
    to it as `shootout run --scale 0.01` fits it: every request OK on each,
    so each answers the journey's requests with the statuses and bodies it
    expects. The same seed gives the peer's users the bookings ours just
    made, so its 409 path is walked too."""
    need_node_peer()
    r = subprocess.run([SHOOTOUT_BIN, "a2b-server", "--db", pg_cluster.uri(), "--init",
                        "--scale", "0.01"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    text = scaled(c_literal(os.path.join(REPO, "src", "load", "http", "scenario.c"), "scn_a2b_text"), 2000,
                  "feed-a2b-routes 0.01")
    ours = a2b_server_factory("--db", pg_cluster.uri())
    ho, row, p = journey(tmp_path, ours.port, scenario=text)
    assert_every_request_ok(ho, USERS)
    peer = NodePeer(str(tmp_path), pg_cluster.uri())
    try:
        peer.wait_ready(timeout=30)
        ho, row, p = journey(tmp_path, peer.port, scenario=text)
        assert_every_request_ok(ho, USERS)
    finally:
        stop_servers([peer], "a2b-node")
