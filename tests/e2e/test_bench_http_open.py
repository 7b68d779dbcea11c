"""`shootout bench http-open` end to end against a tiny fake HTTP server
whose answers are known: fixed delays, chosen error statuses, dropped
connections and answers too slow for the timeout. Checked: counts, OK/KO,
error classes (the generator's own apart), percentiles within histogram
precision, the open model's arrival times against the profile, the closed
model's concurrency cap, extraction with ${var} substitution, gzip bodies,
exit-if-failed, --time-scale, the JSON series. No performance assertions:
delays only ever bound latencies from below."""

import gzip
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import test_bench
from conftest import HOST, free_port

EXIT_RUNTIME = 1
EXIT_USAGE = 2


class Fake:
    """Routes: /list, /item/<id> (200 for 1..3, else 404), /status/<code>,
    /delay/<ms>, /drop (closes without answering), /gzip (the list,
    gzipped), /ping. Records each request's arrival time and the peak of
    requests in progress."""

    def __init__(self):
        self.log = []  # (monotonic time, path)
        self.lock = threading.Lock()
        self.in_progress = 0
        self.peak = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def answer(self, code, body=b"", headers=()):
                self.send_response(code)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def handle_any(self):
                n = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(n) if n else b""
                with fake.lock:
                    fake.log.append((time.monotonic(), self.command, self.path, body))
                    fake.in_progress += 1
                    fake.peak = max(fake.peak, fake.in_progress)
                try:
                    self.route()
                finally:
                    with fake.lock:
                        fake.in_progress -= 1

            do_GET = do_POST = do_PUT = handle_any

            def route(self):
                p = self.path.split("?")[0].split("/")[1:]
                lst = json.dumps([{"id": 1, "n": "a"}, {"id": 2}, {"id": 3}]).encode()
                if p[0] == "list":
                    self.answer(200, lst, [("Content-Type", "application/json")])
                elif p[0] == "item":
                    self.answer(200 if p[1] in ("1", "2", "3") else 404, b'{"id":%s}' % p[1].encode())
                elif p[0] == "status":
                    self.answer(int(p[1]))
                elif p[0] == "delay":
                    time.sleep(int(p[1]) / 1000)
                    self.answer(200)
                elif p[0] == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif p[0] == "gzip":
                    self.answer(200, gzip.compress(lst), [("Content-Encoding", "gzip")])
                else:
                    self.answer(200)

        self.server = ThreadingHTTPServer((HOST, 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.target = "http://%s:%d" % (HOST, self.port)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def paths(self, prefix=""):
        return [e[2] for e in self.log if e[2].startswith(prefix)]

    def times(self, prefix):
        return [e[0] for e in self.log if e[2].startswith(prefix)]


@pytest.fixture
def fake():
    f = Fake()
    yield f
    f.server.shutdown()
    f.server.server_close()


def run(tmp_path, fake_target, scenario, *args, code=0):
    scn = tmp_path / "s.scn"
    scn.write_text(scenario)
    out = tmp_path / "r.json"
    p = test_bench.bench("http-open", "--target", fake_target, "--scenario", scn,
                         "--json", out, *args)
    assert p.returncode == code, "exit %d\nstdout:\n%s\nstderr:\n%s" % (p.returncode, p.stdout, p.stderr)
    with open(out) as f:
        doc = json.load(f)
    it = test_bench.iterations(doc)
    assert len(it) == 1
    return it[0]["http_open"], it[0], p


def by_name(ho, name):
    return next(r for r in ho["requests"] if r["name"] == name)


def test_extraction_substitution_and_counts(fake, tmp_path):
    ho, row, p = run(tmp_path, fake.target,
                     "scenario extract\nfeed u 5 5\n"
                     "request GET /list list\n  save id $[*].id random\nexit-if-failed\n"
                     "request GET /item/${id}?u=${u} item\n"
                     "request POST /echo/${u} post\n  body {\"u\":${u},\"x\":\"${uuid}\"}\n",
                     "--inject", "at-once 30")
    assert ho["users_started"] == 30 and ho["users_done"] == 30
    g = ho["global"]
    assert (g["count"], g["ok"], g["ko"]) == (90, 90, 0)
    assert by_name(ho, "list")["count"] == 30 and by_name(ho, "item")["ok"] == 30
    items = fake.paths("/item/")
    assert len(items) == 30
    assert all(i.split("/")[2] in ("1?u=5", "2?u=5", "3?u=5") for i in items)
    assert len(set(items)) > 1  # a random pick, not always the first
    bodies = [json.loads(e[3]) for e in fake.log if e[2] == "/echo/5"]
    assert len(bodies) == 30 and all(b["u"] == 5 for b in bodies)
    assert len(set(b["x"] for b in bodies)) == 30
    assert row["messages"]["sent"] == 90
    assert "Global" in p.stdout and "item" in p.stdout


def test_gzip_body_extraction(fake, tmp_path):
    ho, _, _ = run(tmp_path, fake.target,
                   "request GET /gzip\n  save id $[*].id first\nrequest GET /item/${id} item\n",
                   "--inject", "at-once 3")
    assert ho["global"]["ok"] == 6
    assert fake.paths("/item/") == ["/item/1"] * 3


def test_error_classes_and_exit_if_failed(fake, tmp_path):
    ho, row, _ = run(tmp_path, fake.target,
                     "request GET /status/503 s503\n"
                     "request GET /status/404 s404\n  expect 200 404\n"
                     "request GET /drop drop\n"
                     "request GET /delay/3000 slow\n"
                     "request GET /list nothing\n  save id $[*].nope\n"
                     "request GET /item/${id} unset\n"
                     "exit-if-failed\n"
                     "request GET /never never\n",
                     "--inject", "at-once 4", "--request-timeout", "300ms")
    e = ho["errors"]
    assert e["status"] == 4 and e["by_status"] == {"503": 4}
    assert e["closed"] == 4 and e["timeout"] == 4 and e["check"] == 4
    assert e["generator_unset_variable"] == 4
    assert e["generator_total"] == 4 and e["server_total"] == 16
    g = ho["global"]
    assert (g["count"], g["ok"], g["ko"]) == (24, 4, 20)  # s404 is expected
    assert by_name(ho, "never")["count"] == 0 and not fake.paths("/never")
    assert row["errors"]["status"] == 4 and row["errors"]["timeout"] == 4


def test_connect_errors(tmp_path):
    port = free_port()  # nobody listens
    ho, _, _ = run(tmp_path, "http://%s:%d" % (HOST, port), "request GET /x\n",
                   "--inject", "at-once 3", code=EXIT_RUNTIME)
    assert ho["errors"]["connect"] == 3 and ho["global"]["ko"] == 3


def test_percentiles_from_fixed_delays(fake, tmp_path):
    ho, row, _ = run(tmp_path, fake.target, "request GET /delay/100 d\n",
                     "--inject", "ramp-users 10 1s")
    d = by_name(ho, "d")
    assert d["ok"] == 10
    # Every answer takes at least 100 ms; the histogram is exact to 1/256.
    assert d["min_ms"] >= 100 * (1 - 1 / 256)
    for k in ("p50_ms", "p75_ms", "p95_ms", "p99_ms", "max_ms"):
        assert d[k] >= d["min_ms"] * (1 - 1 / 256)
    assert d["p50_ms"] <= d["p95_ms"] <= d["p99_ms"] <= d["max_ms"] * (1 + 1 / 256)
    assert row["latency"]["min"] >= 100e3 * (1 - 1 / 256)


def test_open_arrivals_match_profile(fake, tmp_path):
    ho, _, _ = run(tmp_path, fake.target, "request GET /ping p\n",
                   "--inject", "nothing-for 500ms", "--inject", "constant-users-per-sec 20 2s",
                   "--inject", "at-once 5", "--threads", "2")
    t = sorted(fake.times("/ping"))
    assert len(t) == 45 and ho["users_started"] == 45
    # 40 evenly spaced at 50 ms, then 5 together.
    steady = t[:40]
    gaps = [b - a for a, b in zip(steady, steady[1:])]
    assert abs((steady[-1] - steady[0]) - 39 * 0.05) < 0.3
    assert sum(gaps) / len(gaps) == pytest.approx(0.05, abs=0.01)
    assert t[-1] - t[-5] < 0.2
    series = ho["series"]
    assert sum(s["started"] for s in series) == 45
    assert series[0]["started"] == 10  # 0.5 .. 1.0 s: 10 users


def test_time_scale_shrinks_durations_and_pauses(fake, tmp_path):
    ho, row, _ = run(tmp_path, fake.target,
                     "request GET /ping a\npause 4 4\nrequest GET /ping2 b\n",
                     "--inject", "constant-users-per-sec 10 4s", "--time-scale", "4")
    # 4 s at 10/s scaled by 4: 1 s, 10 users; the 4 s pause is 1 s.
    assert ho["users_started"] == 10
    a, b = sorted(fake.times("/ping")), sorted(fake.times("/ping2"))
    a = [x for x, p in zip(a, fake.paths("/ping")) if p == "/ping"][:10]
    assert len(b) == 10
    assert b[0] - a[0] >= 1.0 - 0.02
    assert a[-1] - a[0] < 1.0 + 0.3
    assert row["config"]["time_scale"] == 4


def test_closed_model_caps_concurrency(fake, tmp_path):
    ho, _, _ = run(tmp_path, fake.target, "request GET /delay/100 d\n",
                   "--inject", "constant-concurrent-users 3 1s")
    assert fake.peak <= 3
    assert ho["global"]["ok"] >= 3 and ho["global"]["ko"] == 0
    # Gatling's active users count every user alive during the second, so
    # with 100 ms users it is about ten times the concurrency.
    s0 = ho["series"][0]
    assert s0["active_users"] == s0["started"] > 3


def test_max_duration_cuts_users(fake, tmp_path):
    ho, _, _ = run(tmp_path, fake.target, "request GET /ping\npause 30\nrequest GET /ping\n",
                   "--inject", "at-once 2", "--max-duration", "1s")
    assert ho["users_started"] == 2 and ho["global"]["count"] == 2


def test_usage_errors(fake, tmp_path):
    for args in (["--inject", "ramp-users-per-sec 1 2"],
                 ["--inject", "at-once 1", "--inject", "constant-concurrent-users 1 1s"],
                 ["--time-scale", "0"], ["--target", "https://x:1"],
                 ["--scenario", str(tmp_path / "missing")]):
        p = test_bench.bench("http-open", *args)
        assert p.returncode == EXIT_USAGE, args
    bad = tmp_path / "bad.scn"
    bad.write_text("request GET /a\n  save x $..y\n")
    p = test_bench.bench("http-open", "--scenario", bad)
    assert p.returncode == EXIT_USAGE and "line 2" in p.stderr
    p = test_bench.bench("http-open", "--help")
    assert p.returncode == 0 and "--inject" in p.stdout and "--time-scale" in p.stdout
