"""Checks that shootout's RPC load generator (`shootout bench rpc-seq`) is
not the bottleneck it measures: on the same server, in the same run, its
throughput is compared with h2load's (gRPC) and wrk's (REST) at the same
calls in flight, interleaved round by round so that a noisy machine hurts
both alike. Prints a table of medians and the ratio ours / theirs; the
issue's bar is >= 0.90. Not a test (timing on a shared machine): run by
hand, and record the table in docs/BENCHMARKS.md.

    /usr/bin/python3 tests/perf/validate_rpc_client.py [--rounds 3] [--requests 20000]

The server is a fresh `shootout car-server` (one worker) unless --rest and
--grpc name running ones.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rpc_tools  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
SHOOTOUT = os.environ.get("SHOOTOUT_BIN", os.path.join(REPO, "build", "release", "shootout"))
IN_FLIGHT = (1, 10, 50)


def ours(protocol, target, requests, in_flight):
    argv = [SHOOTOUT, "bench", "rpc-seq", "--protocol", protocol, "--target", target,
            "--requests", str(requests), "--concurrency", str(in_flight), "--json", "-"]
    if in_flight > 1:
        argv += ["--warmup", "100"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise SystemExit("rpc-seq failed (%d): %s" % (p.returncode, p.stderr))
    rows = [b for b in json.loads(p.stdout)["benchmarks"] if b["run_type"] == "iteration"]
    return rows[0]["throughput"]["value"]


def theirs(protocol, target, requests, in_flight, seconds):
    if protocol == "grpc":
        r = rpc_tools.run_h2load(target, requests, clients=1, streams=in_flight)
    else:
        r = rpc_tools.run_wrk(target, connections=in_flight, seconds=seconds)
    if not r.get("ok"):
        raise SystemExit("%s failed: %r" % ("h2load" if protocol == "grpc" else "wrk", r))
    return r["rps"]


def start_server():
    proc = subprocess.Popen([SHOOTOUT, "car-server", "--rest-port", "0", "--grpc-port", "0"],
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        m = re.search(r"REST \(HTTP/1\.1\) on (\S+), gRPC \(h2c\) on (\S+),", line)
        if m:
            return proc, m.group(1), m.group(2)
    proc.kill()
    raise SystemExit("car-server did not start")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=20000, help="calls per gRPC measurement")
    ap.add_argument("--seconds", type=int, default=3, help="wrk duration per REST measurement")
    ap.add_argument("--rest", help="HOST:PORT of a running REST server")
    ap.add_argument("--grpc", help="HOST:PORT of a running gRPC server")
    a = ap.parse_args()
    proc = None
    if not (a.rest and a.grpc):
        proc, a.rest, a.grpc = start_server()
    try:
        print("%-6s %-9s %12s %12s %7s" % ("proto", "in flight", "ours/s", "tool/s", "ratio"))
        for protocol, target, tool in (("grpc", a.grpc, "h2load"), ("rest", a.rest, "wrk")):
            for c in IN_FLIGHT:
                mine, ref = [], []
                for _ in range(a.rounds):
                    ref.append(theirs(protocol, target, a.requests, c, a.seconds))
                    # As many calls as the tool made, so both run about as long.
                    n = a.requests if protocol == "grpc" else max(1000, int(ref[-1] * a.seconds))
                    mine.append(ours(protocol, target, n, c))
                m, r = statistics.median(mine), statistics.median(ref)
                print("%-6s %-9d %12.0f %12.0f %7.2f  (%s)" % (protocol, c, m, r, m / r, tool), flush=True)
    finally:
        if proc:
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    main()
