"""`shootout bench rpc-seq` end to end, and the RPC part of `shootout run`.

The REST client is tested against a tiny HTTP/1.1 server in this process
(keep-alive, one thread per connection) that records every request and can
misbehave on purpose: answer 500, send another body, close the connection,
or never answer; and against `shootout car-server` (REST and gRPC). No
timing assertions."""

import json
import os
import re
import socketserver
import threading

import pytest

import test_bench
from conftest import HOST, free_port, need
from test_bench import iterations
from test_run import run, running, table

EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_MISSED = 3
CREATED = b'{"status":"created"}'
FIELDS = {"car": ["make", "model", "trim", "color", "year", "mileage"],
          "driver": ["firstname", "lastname", "driverId"]}


def bench(*args):
    return test_bench.bench("rpc-seq", *args)


def bench_json(tmp_path, *args):
    return test_bench.bench_json(tmp_path, "rpc-seq", *args)


def failing_json(tmp_path, *args):
    """Runs a bench expected to fail; returns (exit code, stderr, the failed row)."""
    out = tmp_path / "failed.json"
    p = bench(*args, "--json", out)
    with open(out) as f:
        doc = json.load(f)
    return p.returncode, p.stderr, doc["benchmarks"][-1]


# ---------------------------------------------------------------- the fixture server

class FakeRest:
    """An HTTP/1.1 server on a free loopback port. mode says how it answers:
    ok (201 created, Content-Length), chunked (the same, chunked), status500,
    wrong_body, close_after (201 with Connection: close after `after`
    answers on a connection), drop (close without answering the request
    numbered `after`), silent (read, never answer)."""

    def __init__(self, mode="ok", after=1):
        self.mode, self.after = mode, after
        self.requests = []  # (connection number, method, target, headers, body)
        self.connections = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(socketserver.StreamRequestHandler):
            disable_nagle_algorithm = True

            def handle(self):
                with fake.lock:
                    fake.connections += 1
                    conn = fake.connections
                answered = 0
                while True:
                    line = self.rfile.readline()
                    if not line:
                        return
                    method, target, version = line.decode().split()
                    headers = {}
                    while True:
                        h = self.rfile.readline().decode()
                        if h in ("\r\n", ""):
                            break
                        k, v = h.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                    body = self.rfile.read(int(headers.get("content-length", 0)))
                    with fake.lock:
                        fake.requests.append((conn, method, target, headers, body))
                    answered += 1
                    if not fake.answer(self.wfile, answered):
                        return

        self.server = socketserver.ThreadingTCPServer((HOST, 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, w, n):
        """Writes the answer to request n of a connection; False to close."""
        mode = self.mode
        if mode == "silent":
            return True
        if mode == "drop" and n == self.after:
            return False
        status, body, extra = "201 Created", CREATED, ""
        if mode == "status500":
            status, body = "500 Internal Server Error", b'{"error":"boom"}'
        elif mode == "wrong_body":
            body = b'{"status":"ignored"}'
        elif mode == "close_after" and n == self.after:
            extra = "Connection: close\r\n"
        if mode == "chunked":
            head = "HTTP/1.1 %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" % status
            w.write(head.encode() + b"5\r\n" + body[:5] + b"\r\n%x\r\n" % (len(body) - 5) + body[5:]
                    + b"\r\n0\r\n\r\n")
        else:
            head = "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n" % (
                status, len(body), extra)
            w.write(head.encode() + body)
        w.flush()
        return not extra

    @property
    def target(self):
        return "%s:%d" % (HOST, self.port)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_rest():
    started = []

    def start(mode="ok", after=1):
        s = FakeRest(mode, after)
        started.append(s)
        return s

    yield start
    for s in started:
        s.close()


def check_record(body):
    doc = json.loads(body)
    for part, keys in FIELDS.items():
        assert sorted(doc[part]) == sorted(keys), doc
    assert 1990 <= doc["car"]["year"] <= 2021
    assert 10000 <= doc["car"]["mileage"] <= 200000
    assert re.fullmatch(r"\d{3}-\d{2}-\d{4}", doc["driver"]["driverId"])
    return doc


# ---------------------------------------------------------------- REST against the fixture

def test_rest_sequential_over_one_connection_per_run(fake_rest, tmp_path):
    srv = fake_rest()
    doc, p = bench_json(tmp_path, "--target", srv.target, "--requests", 150, "--warmup", 10,
                        "--runs", 2)
    assert doc["schema_version"] == 1 and "bench rpc-seq" in doc["context"]["command_line"]
    iters = iterations(doc)
    assert len(iters) == 2
    aggs = [b["aggregate_name"] for b in doc["benchmarks"] if b["run_type"] == "aggregate"]
    assert aggs == ["mean", "median", "stddev"]
    for b in iters:
        assert b["experiment"] == "rpc-seq"
        assert b["name"] == "rpc-seq/%s/rest/150n1c" % srv.target
        assert b["config"]["requests"] == 150 and b["config"]["warmup"] == 10
        assert b["config"]["concurrency"] == 1 and b["config"]["connections"] == 1
        assert b["config"]["grpc"] == 0
        assert b["messages"] == {"sent": 150, "received": 150, "lost": 0}
        assert b["throughput"]["unit"] == "call/s" and b["throughput"]["value"] > 0
        assert b["duration_s"] > 0
        lat = b["latency"]
        assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99_9"] <= lat["max"]
        assert b["client"]["op"] == "call" and b["client"]["cpu_us_per_op"] > 0
        assert b["server"] is None
        assert all(v == 0 for k, v in b["errors"].items() if k != "message")
    assert "wall time" in p.stdout and "k call/s" in p.stdout

    # Warm-up and timed calls, each run on its own keep-alive connection.
    assert len(srv.requests) == 2 * 160
    assert srv.connections == 2
    assert [r[0] for r in srv.requests] == [1] * 160 + [2] * 160
    seen = set()
    for conn, method, target, headers, body in srv.requests:
        assert (method, target) == ("POST", "/v1/create")
        assert headers["host"] == srv.target
        assert headers["content-type"] == "application/json"
        assert int(headers["content-length"]) == len(body)
        assert headers.get("connection", "keep-alive") != "close"
        doc = check_record(body)
        seen.add(json.dumps(doc, sort_keys=True))
    assert len(seen) > 300  # a fresh record for every call


def test_rest_same_seed_same_records(fake_rest, tmp_path):
    srv = fake_rest()
    bench_json(tmp_path, "--target", srv.target, "--requests", 5, "--seed", 7)
    bench_json(tmp_path, "--target", srv.target, "--requests", 5, "--seed", 7)
    bench_json(tmp_path, "--target", srv.target, "--requests", 5, "--seed", 8)
    bodies = [r[4] for r in srv.requests]
    assert bodies[:5] == bodies[5:10]
    assert bodies[10:] != bodies[:5]


def test_rest_concurrency_uses_a_connection_per_call(fake_rest, tmp_path):
    srv = fake_rest()
    doc, _ = bench_json(tmp_path, "--target", srv.target, "--requests", 200, "--concurrency", 4,
                        "--label", "fake")
    [b] = doc["benchmarks"]
    assert b["name"] == "rpc-seq/fake/rest/200n4c"
    assert b["config"]["connections"] == 4
    assert b["messages"]["received"] == 200
    assert srv.connections == 4 and len(srv.requests) == 200
    per_conn = [sum(1 for r in srv.requests if r[0] == c) for c in range(1, 5)]
    assert all(n > 0 for n in per_conn), per_conn


def test_rest_chunked_answers(fake_rest, tmp_path):
    srv = fake_rest("chunked")
    doc, _ = bench_json(tmp_path, "--target", srv.target, "--requests", 50)
    assert doc["benchmarks"][0]["messages"]["received"] == 50


def test_rest_server_sampling(fake_rest, tmp_path):
    srv = fake_rest()
    doc, _ = bench_json(tmp_path, "--target", srv.target, "--requests", 50,
                        "--server-pid", os.getpid())
    [b] = doc["benchmarks"]
    assert b["server"]["pid"] == os.getpid() and b["server"]["op"] == "call"
    assert b["server"]["cpu_s"] >= 0 and b["server"]["rss_max_kb"] > 0


def test_rest_json_on_stdout(fake_rest):
    srv = fake_rest()
    p = bench("--target", srv.target, "--requests", 20, "--json", "-")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)  # nothing but JSON on stdout
    assert doc["benchmarks"][0]["messages"]["received"] == 20
    assert "k call/s" in p.stderr


# ---------------------------------------------------------------- failures

# mode, after, extra options, exit code, message, error counter, calls
# answered, requests the server saw (the failed call's, if it got there).
@pytest.mark.parametrize("mode, after, extra, exit_code, words, counter, answered, seen", [
    ("status500", 1, [], EXIT_RUNTIME, "call 1: the server answered HTTP status 500", "status",
     0, 1),
    ("wrong_body", 1, ["--warmup", 2], EXIT_RUNTIME,
     "warm-up call 1: malformed or unexpected answer", "protocol", 0, 1),
    ("close_after", 3, [], EXIT_RUNTIME, "call 4: connection 0 is closed", "closed", 3, 3),
    ("drop", 2, [], EXIT_RUNTIME, "call 2: connection 0 closed before the answer", "closed", 1, 2),
    ("silent", 1, ["--timeout", 1], EXIT_MISSED, "1 of 10 calls unanswered after no answer for 1 s",
     "timeout", 0, 1),
])
def test_a_failed_call_fails_the_run(fake_rest, tmp_path, mode, after, extra, exit_code, words,
                                     counter, answered, seen):
    srv = fake_rest(mode, after)
    rc, err, b = failing_json(tmp_path, "--target", srv.target, "--requests", 10, *extra)
    assert rc == exit_code
    assert words in err and words in b["errors"]["message"]
    assert b["errors"][counter] == 1
    assert sum(v for k, v in b["errors"].items() if k != "message") == 1
    if "--warmup" not in extra:
        assert b["messages"]["received"] == answered
        assert b["messages"]["lost"] == b["messages"]["sent"] - answered
    assert len(srv.requests) == seen  # nothing is sent after the failed call


def test_connection_refused(tmp_path):
    port = free_port()  # nothing listens there
    rc, err, b = failing_json(tmp_path, "--target", "%s:%d" % (HOST, port), "--requests", 10)
    assert rc == EXIT_RUNTIME
    assert "cannot connect to %s:%d" % (HOST, port) in err
    assert b["errors"]["connect"] == 1


@pytest.mark.parametrize("args, complaint", [
    (["--protocol", "soap"], "--protocol wants rest or grpc"),
    (["--requests", "0"], "--requests wants a whole number"),
    (["--concurrency", "0"], "--concurrency wants a whole number"),
    (["--connections", "2"], "--connections is for grpc"),
    (["--gzip"], "--gzip is for grpc"),
    (["--protocol", "grpc", "--connections", "3", "--concurrency", "2"], "exceeds --concurrency"),
    (["--qos", "1"], "unrecognized option"),
    (["--target", "127.0.0.1:0"], "port wants a whole number"),
])
def test_usage_errors(args, complaint):
    p = bench(*args)
    assert p.returncode == EXIT_USAGE
    assert complaint in p.stderr


def test_help():
    p = bench("--help")
    assert p.returncode == 0
    assert p.stdout.startswith("usage: shootout bench rpc-seq")
    for opt in ("--protocol", "--requests", "--warmup", "--concurrency", "--connections", "--gzip",
                "--server-pid", "Exit codes"):
        assert opt in p.stdout


# ---------------------------------------------------------------- against car-server

def test_car_server_rest(car_server, tmp_path):
    doc, _ = bench_json(tmp_path, "--target", "%s:%d" % (HOST, car_server.rest_port),
                        "--requests", 300, "--warmup", 20, "--runs", 2,
                        "--server-pid", car_server.proc.pid)
    for b in iterations(doc):
        assert b["messages"] == {"sent": 300, "received": 300, "lost": 0}
        assert b["server"]["cpu_us_per_op"] > 0
    doc, _ = bench_json(tmp_path, "--target", "%s:%d" % (HOST, car_server.rest_port),
                        "--requests", 300, "--concurrency", 8)
    assert doc["benchmarks"][0]["messages"]["received"] == 300


@pytest.mark.parametrize("extra", [[], ["--concurrency", "6", "--connections", "2"], ["--gzip"]])
def test_car_server_grpc(car_server, tmp_path, extra):
    doc, _ = bench_json(tmp_path, "--protocol", "grpc", "--target",
                        "%s:%d" % (HOST, car_server.grpc_port), "--requests", 300, *extra)
    [b] = doc["benchmarks"]
    assert b["config"]["grpc"] == 1
    assert b["messages"] == {"sent": 300, "received": 300, "lost": 0}


# ---------------------------------------------------------------- the RPC part of `shootout run`

SWEEP = [50, 100, 150, 200, 250]  # 1000..5000 at --scale 0.05


def run_rpc_part(tmp_path, *extra):
    out = tmp_path / "run.json"
    p = run("--only", "rpc", "--runs", "1", "--scale", "0.05", "--json", out, *extra, timeout=120)
    with open(out) as f:
        return p, json.load(f)


def server_pids(text):
    return [int(m.group(1)) for m in re.finditer(r"^shootout run: (?:our car-server|grpc-cpp) .*?, pid (\d+)",
                                                 text, re.M)]


def test_run_rpc_part_shape(tmp_path):
    """Every cell is tried and written, the tables are printed, our
    car-server exits 0, the gRPC C++ peer is raced, and nothing is left."""
    p, doc = run_rpc_part(tmp_path, "--peers", "grpc-cpp")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "mqtt" not in {b["experiment"][:4] for b in doc["benchmarks"]}
    names = {b["name"] for b in doc["benchmarks"]}
    for proto in ("rest", "grpc"):
        for n in SWEEP:
            assert "rpc-seq/shootout/%s/%dn1c" % (proto, n) in names
        for c in (10, 50):
            assert "rpc-seq/shootout/%s/250n%dc" % (proto, c) in names
    sweep = table(out, "gRPC vs REST: total time of N sequential calls")
    assert sweep[1].split() == ["requests:"] + [str(n) for n in SWEEP]
    assert [line.split(" (")[0] for line in sweep[2:4]] == ["shootout REST", "shootout gRPC"]
    growth = table(out, "Growth of the total time per step")
    assert growth[-1].split(":")[1].split() == ["0", "100%", "more", "50%", "more", "33%", "more",
                                                "25%", "more"]
    for title in ("Per call at 250 sequential calls", "Throughput with calls in flight",
                  "Server CPU time per call"):
        assert len(table(out, title)) >= 4
    assert re.search(r"stopped shootout \(pid \d+\): exit 0", out)
    pids = server_pids(out)
    assert pids
    assert not [pid for pid in pids if running(pid)], "servers left behind"
    need("grpc-cpp skipped" not in out, "shootout run found no gRPC C++ peer (make peers)")
    assert re.search(r"^grpc-cpp gRPC \(gRPC C\+\+ [^)]+\): +\d", sweep[4]), sweep
    assert re.search(r"^shootout gRPC/best other gRPC:( +\d+\.\d\dx grpc-cpp gRPC){5}$", sweep[-1], re.M), sweep


def test_run_rpc_part_measures(tmp_path):
    """With real REST and gRPC sides and clients: every cell measured."""
    p, doc = run_rpc_part(tmp_path, "--no-peer")
    assert p.returncode == 0, p.stderr
    for b in iterations(doc):
        assert b["messages"]["lost"] == 0 and b["messages"]["received"] > 0
        assert b["server"]["cpu_us_per_op"] > 0
    slower = table(p.stdout, "How much slower the slower protocol is")
    # Every cell apart from the next and under its column's title, however
    # wide ("gRPC 122.6% slowergRPC 125.6% slower" once ran together).
    cells = re.split(r" {2,}", slower[2])
    assert cells[0] == "shootout: REST vs gRPC:"
    assert len(cells) == 1 + len(SWEEP), slower
    assert all(re.fullmatch(r"(REST|gRPC) \d+\.\d% slower", c) for c in cells[1:]), slower
    def starts(line):
        return [m.end() for m in re.finditer(r" {2,}", line)]
    assert starts(slower[2]) == starts(slower[1]), slower
    assert "failed" not in p.stdout


def test_run_only_usage():
    p = run("--only", "http")
    assert p.returncode == EXIT_USAGE
    assert "--only wants mqtt, rpc or a2b" in p.stderr
