"""The broker's durable path measured side by side: QoS 1/2 messages
published to offline persistent sessions and drained afterwards
(`shootout bench mqtt-load --session persistent --offline`), against

  shootout-durable  our broker, persistence on (fdatasync before every
                    acknowledgement: persistence_sync_interval 0, the default)
  shootout-memory   our broker, persistence off
  mosquitto         Mosquitto with `persistence true` (it writes its database
                    at autosave and shutdown only, so its acknowledgements are
                    not durable: not the same guarantee)

each started here on a free loopback port with max_queued_messages raised
above --messages, and a data directory under --data-dir (on a real disk:
an fdatasync on tmpfs costs nothing). The runs are interleaved, round by
round, so that a noisy machine hurts every broker alike; the table gives
medians. Not a test (timing on a shared machine): run by hand, and record
the table in docs/BENCHMARKS.md.

    /usr/bin/python3 tests/perf/durable_bench.py [--runs 3] [--conns 20] [--messages 5000]
        [--qos 1 2] [--window default|unlimited ...] [--mqtt-version 3.1.1|5]
        [--threads 1 2 ...] [--durable-only]

--threads T ...: one shootout-durable broker per T, named shootout-durable-tT,
started with --threads T (persistence on several loops, docs/persistence.md);
--durable-only leaves out shootout-memory and mosquitto.

--window default keeps every broker's inflight window at its default (20
messages per client); unlimited sets ours to 65535 and Mosquitto's to 0 (no
limit), the only setting under which Mosquitto 2.0.11 drains QoS 2 to an
MQTT 3.1.1 client (it stalls behind a full window, a bug fixed in 2.0.13).
"""
import argparse
import getpass
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHOOTOUT = os.environ.get("SHOOTOUT_BIN", os.path.join(REPO, "build", "release", "shootout"))
MOSQUITTO = os.environ.get("MOSQUITTO_BIN", "/usr/sbin/mosquitto")
BROKERS = ("shootout-durable", "shootout-memory", "mosquitto")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    def __init__(self, name, workdir, queue, window, threads=1):
        self.name = name
        self.port = free_port()
        data = os.path.join(workdir, name)
        os.makedirs(data)
        log = open(os.path.join(workdir, name + ".log"), "wb")
        if name == "mosquitto":
            conf = os.path.join(workdir, "mosquitto.conf")
            with open(conf, "w") as f:
                f.write("\n".join([
                    "listener %d 127.0.0.1" % self.port, "allow_anonymous true",
                    "user %s" % getpass.getuser(), "persistence true",
                    "persistence_location %s/" % data, "max_queued_messages %d" % queue,
                    "max_inflight_messages %d" % (0 if window == "unlimited" else 20),
                    "connection_messages false", "log_dest stderr", "log_type error",
                    "log_type warning", ""]))
            argv = [MOSQUITTO, "-c", conf]
        else:
            argv = [SHOOTOUT, "broker", "--bind", "127.0.0.1", "--port", str(self.port),
                    "--sys-interval", "0", "--connection-messages", "false",
                    "--max-queued-messages", str(queue),
                    "--max-inflight-messages", "65535" if window == "unlimited" else "20"]
            if name.startswith("shootout-durable"):
                argv += ["--persistence", "--persistence-location", data,
                         "--threads", str(threads)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                     cwd=workdir)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("%s did not start: see %s" % (name, log.name))
                time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


def run_once(broker, args, qos, out):
    argv = [SHOOTOUT, "bench", "mqtt-load", "--target", "127.0.0.1:%d" % broker.port,
            "--conns", str(args.conns), "--messages", str(args.messages), "--qos", str(qos),
            "--mqtt-version", args.mqtt_version, "--session", "persistent", "--offline",
            "--server-pid", str(broker.proc.pid), "--label", broker.name,
            "--timeout", "10", "--json", out]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    with open(out) as f:
        [row] = [b for b in json.load(f)["benchmarks"] if b["run_type"] == "iteration"]
    if p.returncode != 0:
        return {"failed": "exit %d: %s" % (p.returncode, row["errors"].get("message", p.stderr))}
    return {"publish": row["phases"]["publish"]["throughput"]["value"],
            "drain": row["phases"]["drain"]["throughput"]["value"],
            "cpu": row["server"]["cpu_us_per_op"]}


def cell(results, key):
    values = [r[key] for r in results if "failed" not in r]
    if len(values) < len(results):
        return None
    return statistics.median(values)


def report(window, args, results, names):
    print("\nwindow %s: MQTT %s, %d connections (%d publishers, %d offline persistent subscribers), "
          "%d messages per publisher, median of %d runs" % (
              window, args.mqtt_version, args.conns, args.conns // 2, args.conns // 2,
              args.messages, args.runs))
    figures = (("publish", "publish k msg/s (acknowledged)", 1e-3),
               ("drain", "drain k msg/s (delivered)", 1e-3),
               ("cpu", "broker CPU us/msg (publish + drain)", 1))
    for key, title, scale in figures:
        print("  %-38s" % title + "".join("%14s" % ("QoS %d" % q) for q in args.qos))
        medians = {}
        for b in names:
            line = "  %-38s" % b
            for q in args.qos:
                m = cell(results[(b, q)], key)
                medians[(b, q)] = m
                line += "%14s" % ("failed" if m is None else "%.2f" % (m * scale))
            print(line)
        for ours in names if "mosquitto" in names else ():
            if ours == "mosquitto":
                continue
            line = "  %-38s" % (ours + "/mosquitto")
            for q in args.qos:
                a, m = medians[(ours, q)], medians[("mosquitto", q)]
                line += "%14s" % ("-" if a is None or not m else "%.2fx" % (a / m))
            print(line)
    print("  runs (publish, drain k msg/s):")
    for (b, q), rs in sorted(results.items()):
        print("    %-17s QoS %d  %s" % (b, q, "  ".join(
            r["failed"][:120] if "failed" in r else "%.1f/%.1f" % (r["publish"] / 1e3, r["drain"] / 1e3)
            for r in rs)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--conns", type=int, default=20)
    ap.add_argument("--messages", type=int, default=5000)
    ap.add_argument("--qos", type=int, nargs="+", default=[1, 2], choices=[1, 2])
    ap.add_argument("--window", nargs="+", default=["default", "unlimited"],
                    choices=["default", "unlimited"])
    ap.add_argument("--mqtt-version", default="3.1.1", choices=["3.1.1", "5"])
    ap.add_argument("--threads", type=int, nargs="+", default=[1],
                    help="one shootout-durable broker per number of loops")
    ap.add_argument("--durable-only", action="store_true",
                    help="no shootout-memory nor mosquitto")
    ap.add_argument("--data-dir", default=os.path.join(REPO, "build", "perf", "durable"),
                    help="brokers' data and logs, emptied first (default build/perf/durable)")
    args = ap.parse_args()
    for binary in (SHOOTOUT, MOSQUITTO):
        if not os.access(binary, os.X_OK):
            raise SystemExit("%s not found (make; or set SHOOTOUT_BIN / MOSQUITTO_BIN)" % binary)
    shutil.rmtree(args.data_dir, ignore_errors=True)
    print("load average at the start: %.2f %.2f %.2f" % os.getloadavg())
    for window in args.window:
        workdir = os.path.join(args.data_dir, window)
        os.makedirs(workdir)
        durable = [("shootout-durable", 1)] if args.threads == [1] else [
            ("shootout-durable-t%d" % t, t) for t in args.threads]
        others = [] if args.durable_only else [(n, 1) for n in BROKERS[1:]]
        brokers = [Broker(name, workdir, 10 * args.messages, window, t)
                   for name, t in durable + others]
        names = [b.name for b in brokers]
        results = {(b, q): [] for b in names for q in args.qos}
        try:
            for rep in range(args.runs):
                for q in args.qos:
                    for b in brokers:
                        out = os.path.join(workdir, "%s-qos%d-%d.json" % (b.name, q, rep))
                        results[(b.name, q)].append(run_once(b, args, q, out))
                        print(".", end="", file=sys.stderr, flush=True)
        finally:
            for b in brokers:
                b.stop()
        report(window, args, results, names)
    print("\nload average at the end: %.2f %.2f %.2f" % os.getloadavg())
    print("raw results: %s" % args.data_dir)


if __name__ == "__main__":
    main()
