"""What `--trace` costs the load generators' client: its CPU time per
message or call (the bench's own `client.cpu_us_per_op`, getrusage over
the run) with the trace off, with `--trace-sample 1000`, and with every
exchange traced, for mqtt-load (QoS 1), rpc-seq REST and rpc-seq gRPC,
against our broker and car-server started here on free loopback ports.
Modes alternate within each round, so that a slow moment of the shared
machine hits them all alike; the medians and their ratios to "trace off"
are printed. With --base BIN (a `shootout` built from the code before the
trace hooks) that binary runs too, as "no trace code", to show that the
hooks cost nothing with the trace off. Not a test (timing on a shared
machine): run by hand, and record the table in docs/BENCHMARKS.md.

    /usr/bin/python3 tests/perf/trace_cost.py [--rounds 11] [--base /tmp/base/shootout]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHOOTOUT = os.environ.get("SHOOTOUT_BIN", os.path.join(REPO, "build", "release", "shootout"))


def start(argv, pattern, log):
    """Starts a server that names its ports in a log line matching pattern."""
    err = open(log, "w+")
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        err.seek(0)
        m = re.search(pattern, err.read())
        if m:
            return p, m
        if p.poll() is not None:
            sys.exit("%s exited: see %s" % (argv[1], log))
        time.sleep(0.05)
    sys.exit("%s did not start: see %s" % (argv[1], log))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--base", help="a shootout binary without the trace hooks")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="trace_cost.")
    trace = os.path.join(tmp, "trace.txt")
    broker, m = start([SHOOTOUT, "broker", "--bind", "127.0.0.1", "--port", "0", "--threads", "1"],
                      r"listening on \S+:(\d+)", os.path.join(tmp, "broker.log"))
    mqtt_port = m.group(1)
    car, m = start([SHOOTOUT, "car-server", "--bind", "127.0.0.1", "--rest-port", "0", "--grpc-port", "0"],
                   r"REST \(HTTP/1\.1\) on \S+:(\d+), gRPC \(h2c\) on \S+:(\d+),", os.path.join(tmp, "car.log"))
    rest_port, grpc_port = m.group(1), m.group(2)
    benches = {
        "mqtt-load 100c QoS 1, us/msg": ["mqtt-load", "--target", "127.0.0.1:" + mqtt_port, "--conns", "100",
                                         "--messages", "6000", "--qos", "1"],
        "rpc-seq REST, us/call": ["rpc-seq", "--target", "127.0.0.1:" + rest_port, "--requests", "30000"],
        "rpc-seq gRPC, us/call": ["rpc-seq", "--protocol", "grpc", "--target", "127.0.0.1:" + grpc_port,
                                  "--requests", "30000"],
    }
    modes = {}
    if a.base:
        modes["no trace code"] = (a.base, [])
    modes["trace off"] = (SHOOTOUT, [])
    modes["--trace-sample 1000"] = (SHOOTOUT, ["--trace", trace, "--trace-sample", "1000"])
    modes["every exchange"] = (SHOOTOUT, ["--trace", trace])
    res = {b: {m: [] for m in modes} for b in benches}
    size = {b: {} for b in benches}
    out = os.path.join(tmp, "r.json")
    try:
        for _ in range(a.rounds):
            for b, args in benches.items():
                for mode, (binary, extra) in modes.items():
                    subprocess.run([binary, "bench"] + args + extra + ["--json", out], check=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    with open(out) as f:
                        row = [x for x in json.load(f)["benchmarks"] if x["run_type"] == "iteration"][0]
                    res[b][mode].append(row["client"]["cpu_us_per_op"])
                    if extra:
                        size[b][mode] = os.path.getsize(trace)
    finally:
        for p in (broker, car):
            p.terminate()
            p.wait()
    print("| benchmark | mode | client CPU (median of %d) | ratio to trace off | trace file |" % a.rounds)
    print("|---|---|---:|---:|---:|")
    for b in benches:
        off = statistics.median(res[b]["trace off"])
        for mode in modes:
            med = statistics.median(res[b][mode])
            mb = "%.1f MB" % (size[b][mode] / 1e6) if mode in size[b] else "-"
            print("| %s | %s | %.3f us | %.2f | %s |" % (b, mode, med, med / off, mb))


if __name__ == "__main__":
    main()
