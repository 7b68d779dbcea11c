"""Runs the reference load tools against a Car service, so that shootout's own
REST and gRPC load generator can be checked against them: h2load (nghttp2)
for gRPC unary calls, wrk for REST. Each run sends the article's sample record
and prints one JSON line with the tool's figures. Not a test: run by hand or
from a benchmark script.

    /usr/bin/python3 tests/perf/rpc_tools.py h2load --target 127.0.0.1:PORT -n 20000 -c 1 -m 1
    /usr/bin/python3 tests/perf/rpc_tools.py wrk --target 127.0.0.1:PORT -c 1 -d 5

The exit status is 0 only if the tool ran and every request succeeded.
Importable: run_h2load() and run_wrk() return the same dicts.
"""
import argparse
import importlib
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CAR_PROTO = os.path.join(os.path.dirname(os.path.dirname(HERE)), "src", "car", "car.proto")
GRPC_PATH = "/com.stevenpg.rvg.MessageService/send"
REST_PATH = "/v1/create"
# The article's message.json (StevenPG, demos/RestVsgRpc), sent on both paths.
ARTICLE_RECORD = {
    "car": {"make": "toyota", "model": "corolla", "trim": "4DR Sedan", "color": "gray",
            "year": 2012, "mileage": 120000},
    "driver": {"firstname": "John", "lastname": "Smith", "driverId": "someId"},
}
GRPC_PREFIX_LEN = 5  # compressed flag + 4-byte big-endian length
TOOL_TIMEOUT_SLACK = 60  # seconds a tool may run beyond its own duration


def article_json():
    return json.dumps(ARTICLE_RECORD, separators=(",", ":"))


def article_grpc_frame(workdir):
    """The article's record as one gRPC length-prefixed protobuf message,
    encoded by Python stubs that protoc generates from car.proto now."""
    subprocess.run(["protoc", "-I" + os.path.dirname(CAR_PROTO), "--python_out=" + workdir, CAR_PROTO],
                   check=True)
    sys.path.insert(0, workdir)
    try:
        car_pb2 = importlib.import_module("car_pb2")
    finally:
        sys.path.remove(workdir)
    from google.protobuf import json_format
    body = json_format.ParseDict(ARTICLE_RECORD, car_pb2.Message()).SerializeToString()
    return b"\x00" + struct.pack(">I", len(body)) + body


_UNIT_US = {"us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}


def to_us(text):
    """'37us', '1.5ms', '2.02s' -> microseconds."""
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
    if not m:
        raise ValueError("not a duration: %r" % text)
    return float(m.group(1)) * _UNIT_US[m.group(2)]


def _search(pattern, text, what):
    m = re.search(pattern, text, re.M)
    if not m:
        raise ValueError("no %s in the tool's output:\n%s" % (what, text))
    return m


def _run(argv, timeout):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                       universal_newlines=True)
    if p.returncode != 0:
        raise RuntimeError("%s exited with %d:\n%s" % (argv[0], p.returncode, p.stdout))
    return p.stdout


def parse_h2load(out):
    m = _search(r"^finished in (\S+), ([\d.]+) req/s", out, "'finished in'")
    r = {"seconds": round(to_us(m.group(1)) / 1e6, 6), "rps": float(m.group(2))}
    m = _search(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                r"(\d+) errored, (\d+) timeout", out, "request counts")
    for k, v in zip(("total", "started", "done", "succeeded", "failed", "errored", "timeout"), m.groups()):
        r[k] = int(v)
    m = _search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out, "status codes")
    r["status_2xx"] = int(m.group(1))
    r["status_other"] = sum(int(x) for x in m.groups()[1:])
    r["reply_data_bytes"] = int(_search(r"^traffic: .*\((\d+)\) data", out, "traffic").group(1))
    m = _search(r"^time for request:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", out, "request times")
    r["latency_us"] = dict(zip(("min", "max", "mean", "sd"), (round(to_us(x), 3) for x in m.groups())))
    return r


def run_h2load(target, requests, clients, streams, threads=1, path=GRPC_PATH, timeout=600):
    """Unary gRPC calls over h2c with h2load: `requests` calls in all, over
    `clients` connections with up to `streams` calls in flight on each."""
    with tempfile.TemporaryDirectory(prefix="rpc_tools-") as tmp:
        data = os.path.join(tmp, "request.grpc")
        with open(data, "wb") as f:
            f.write(article_grpc_frame(tmp))
        argv = ["h2load", "-n", str(requests), "-c", str(clients), "-m", str(streams), "-t", str(threads),
                "-d", data, "-H", "content-type: application/grpc", "-H", "te: trailers",
                "http://%s%s" % (target, path)]
        out = _run(argv, timeout)
    r = {"tool": "h2load", "target": target, "requests": requests, "clients": clients, "streams": streams,
         "threads": threads}
    r.update(parse_h2load(out))
    # h2load counts any HTTP 2xx as a success, but a failed call is also a
    # 200: its grpc-status travels in a trailers-only reply, which carries no
    # DATA. So a call counts as answered only if a gRPC message came back.
    r["ok"] = (r["done"] == requests and r["succeeded"] == requests and r["status_2xx"] == requests
               and r["reply_data_bytes"] >= GRPC_PREFIX_LEN * requests)
    return r


# wrk's done() hook gives latency percentiles, which its text output lacks
# without --latency; one marked line is easier to find than that table.
WRK_SCRIPT = """wrk.method = "POST"
wrk.body = [==[%s]==]
wrk.headers["Content-Type"] = "application/json"

function done(summary, latency, requests)
   io.write(string.format("rpc_tools latency_us p50=%%d p90=%%d p99=%%d max=%%d mean=%%.2f\\n",
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
"""


def parse_wrk(out):
    m = _search(r"^\s*(\d+) requests in (\S+?),", out, "request count")
    r = {"requests": int(m.group(1)), "seconds": round(to_us(m.group(2)) / 1e6, 6)}
    r["rps"] = float(_search(r"^Requests/sec:\s+([\d.]+)", out, "Requests/sec").group(1))
    # wrk prints these two lines only when they are not zero. Its "Non-2xx
    # or 3xx" counts the statuses >= 400.
    m = re.search(r"^\s*Non-2xx or 3xx responses: (\d+)", out, re.M)
    r["non_2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out, re.M)
    r["socket_errors"] = dict(zip(("connect", "read", "write", "timeout"),
                                  (int(x) for x in m.groups()) if m else (0, 0, 0, 0)))
    m = _search(r"^rpc_tools latency_us p50=(\d+) p90=(\d+) p99=(\d+) max=(\d+) mean=([\d.]+)", out,
                "latency line")
    r["latency_us"] = dict(zip(("p50", "p90", "p99", "max", "mean"), (float(x) for x in m.groups())))
    return r


def run_wrk(target, connections, seconds, threads=1, path=REST_PATH):
    """REST POSTs of the article's JSON with wrk (closed loop: each
    connection sends its next request when the previous reply is in)."""
    with tempfile.TemporaryDirectory(prefix="rpc_tools-") as tmp:
        script = os.path.join(tmp, "post.lua")
        with open(script, "w") as f:
            f.write(WRK_SCRIPT % article_json())
        argv = ["wrk", "-t", str(threads), "-c", str(connections), "-d", "%ds" % seconds, "-s", script,
                "http://%s%s" % (target, path)]
        out = _run(argv, seconds + TOOL_TIMEOUT_SLACK)
    r = {"tool": "wrk", "target": target, "connections": connections, "threads": threads,
         "duration": seconds}
    r.update(parse_wrk(out))
    r["ok"] = r["requests"] > 0 and r["non_2xx"] == 0 and not any(r["socket_errors"].values())
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="tool", required=True)
    h = sub.add_parser("h2load", help="gRPC unary calls with h2load")
    h.add_argument("--target", required=True, help="HOST:PORT")
    h.add_argument("-n", type=int, default=20000, help="calls in all")
    h.add_argument("-c", type=int, default=1, help="connections")
    h.add_argument("-m", type=int, default=1, help="concurrent streams per connection")
    h.add_argument("-t", type=int, default=1, help="h2load threads")
    h.add_argument("--path", default=GRPC_PATH)
    w = sub.add_parser("wrk", help="REST POSTs with wrk")
    w.add_argument("--target", required=True, help="HOST:PORT")
    w.add_argument("-c", type=int, default=1, help="connections")
    w.add_argument("-d", type=int, default=5, help="seconds")
    w.add_argument("-t", type=int, default=1, help="wrk threads")
    w.add_argument("--path", default=REST_PATH)
    a = ap.parse_args(argv)
    if a.t < 1 or a.c < a.t:
        ap.error("need 1 <= -t <= -c")
    if a.tool == "h2load":
        if a.m < 1 or a.n < a.c:
            ap.error("need -m >= 1 and -n >= -c")
        r = run_h2load(a.target, a.n, a.c, a.m, a.t, a.path)
    else:
        if a.d < 1:
            ap.error("need -d >= 1")
        r = run_wrk(a.target, a.c, a.d, a.t, a.path)
    print(json.dumps(r, sort_keys=True))
    return 0 if r["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
