"""The MQTT shootout's two experiments (`shootout bench mqtt-load` and
`mqtt-ping`, the article's grid) with every client speaking one protocol
version, against our broker and Mosquitto side by side: both are started
here on free loopback ports with their default settings (Mosquitto 2.0.11
as Debian ships it, persistence off), and each grid point runs against one,
then the other. `shootout run` does the same for MQTT 3.1.1; this is for the
other versions, 3.1 above all (the article's load tools speak it). Not a
test (timing on a shared machine): run by hand, and record the tables in
docs/BENCHMARKS.md.

    /usr/bin/python3 tests/perf/version_bench.py [--mqtt-version 3.1] [--runs 3]
        [--experiment load ping]

Prints, per experiment, throughput (k msg/s, mean +/- stddev over --runs),
the broker's CPU per message, and for the pingtest the mean round trip, each
with a shootout/mosquitto ratio row.
"""
import argparse
import getpass
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHOOTOUT = os.environ.get("SHOOTOUT_BIN", os.path.join(REPO, "build", "release", "shootout"))
MOSQUITTO = os.environ.get("MOSQUITTO_BIN", "/usr/sbin/mosquitto")
BROKERS = ("shootout", "mosquitto")
# The article's grid, as `shootout run` has it: loadtest connections with
# 200,000 messages in all; pingtest pairs / wildcard subscribers, 200
# requests per pair.
LOAD = [(100, 4000), (500, 800), (750, 533), (1000, 400)]
PING = [(400, 20), (200, 200), (100, 400)]
PING_MESSAGES = 200


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(name, workdir):
    port = free_port()
    log = open(os.path.join(workdir, name + ".log"), "wb")
    if name == "mosquitto":
        conf = os.path.join(workdir, "mosquitto.conf")
        with open(conf, "w") as f:
            f.write("listener %d 127.0.0.1\nallow_anonymous true\nuser %s\n"
                    "connection_messages false\nlog_dest stderr\nlog_type error\n"
                    % (port, getpass.getuser()))
        argv = [MOSQUITTO, "-c", conf]
    else:
        argv = [SHOOTOUT, "broker", "--bind", "127.0.0.1", "--port", str(port), "--threads", "1",
                "--connection-messages", "false"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=workdir)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return proc, port
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("%s did not start: see %s" % (name, log.name))
            time.sleep(0.05)


def bench(experiment, name, proc, port, args, point, out):
    argv = [SHOOTOUT, "bench", "mqtt-" + experiment, "--target", "127.0.0.1:%d" % port,
            "--mqtt-version", args.mqtt_version, "--runs", str(args.runs),
            "--server-pid", str(proc.pid), "--label", name, "--json", out]
    if experiment == "load":
        argv += ["--conns", str(point[0]), "--messages", str(point[1])]
    else:
        argv += ["--pairs", str(point[0]), "--wsubs", str(point[1]),
                 "--messages", str(PING_MESSAGES)]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise SystemExit("%s failed (exit %d):\n%s" % (" ".join(argv), p.returncode, p.stderr))
    with open(out) as f:
        rows = {b.get("aggregate_name"): b for b in json.load(f)["benchmarks"]
                if b["run_type"] == "aggregate"}
    mean, sd = rows["mean"], rows["stddev"]
    figures = {"k msg/s": (mean["throughput"]["value"] / 1e3, sd["throughput"]["value"] / 1e3),
               "broker CPU us/msg": (mean["server"]["cpu_us_per_op"], sd["server"]["cpu_us_per_op"])}
    if experiment == "ping":
        figures["mean round trip us"] = (mean["latency"]["mean"], sd["latency"]["mean"])
    return figures


def report(experiment, args, points, results):
    label = "connections" if experiment == "load" else "pairs/wsubs"
    heads = ["%d" % p[0] if experiment == "load" else "%dp %dw" % p for p in points]
    print("\n%stest, MQTT %s, mean +/- stddev over %d runs" % (experiment, args.mqtt_version, args.runs))
    for figure in results[(BROKERS[0], points[0])]:
        print("  %-22s" % figure + "".join("%22s" % h for h in heads) + "   (%s)" % label)
        for b in BROKERS:
            cells = []
            for p in points:
                mean, sd = results[(b, p)][figure]
                cells.append(("%.2f +/- %.2f" if mean < 1000 else "%.0f +/- %.0f") % (mean, sd))
            print("  %-22s" % b + "".join("%22s" % c for c in cells))
        ratios = ["%.2fx" % (results[("shootout", p)][figure][0] / results[("mosquitto", p)][figure][0])
                  for p in points]
        print("  %-22s" % "shootout/mosquitto" + "".join("%22s" % r for r in ratios))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mqtt-version", default="3.1")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--experiment", nargs="+", choices=("load", "ping"), default=["load", "ping"])
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="version-bench-")
    brokers = {b: start(b, workdir) for b in BROKERS}
    t0 = time.monotonic()
    try:
        for experiment in args.experiment:
            points = LOAD if experiment == "load" else PING
            results = {}
            for p in points:
                for b in BROKERS:
                    out = os.path.join(workdir, "%s-%s-%d.json" % (experiment, b, p[0]))
                    results[(b, p)] = bench(experiment, b, *brokers[b], args, p, out)
            report(experiment, args, points, results)
    finally:
        for proc, _ in brokers.values():
            proc.terminate()
            proc.wait(30)
    print("\ntotal time: %.1f s (results in %s)" % (time.monotonic() - t0, workdir))


if __name__ == "__main__":
    sys.exit(main())
