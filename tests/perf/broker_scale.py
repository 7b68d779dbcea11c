"""Broker scaling over threads (issue 14, item 5): throughput and broker CPU
per message of the loadtest (`shootout bench mqtt-load`) and the pingtest
(`shootout bench mqtt-ping`) against `shootout broker --threads N` for each N
of a list, optionally with the broker and the load generator pinned to
disjoint CPU sets (taskset), printed as one table. Not a test: run by hand on
the machine to measure, results go to docs/BENCHMARKS.md.

    /usr/bin/python3 tests/perf/broker_scale.py [--threads-list 1,2,4,...,64]
        [--broker-cpus 0-31 --client-cpus 32-63] [--client-threads T]
        [--runs R] [--rounds K] [--load 'ARGS'] [--ping 'ARGS']
        [--bin build/release/shootout] [--json-dir DIR]

--rounds K runs the whole list K times, one after the other, so that on a
shared machine every N sees the same neighbours; each cell is then the
median of the K rounds, with their lowest and highest. A connection lands on
a loop by the kernel's SO_REUSEPORT hash: with N > 1 the broker runs with -v
and the "cross" column is the share of deliveries whose publisher and
subscriber were on different loops (from its "event=connect ... loop=N"
lines and the bench's client indexes).

--threads 1 is passed to the broker only if its --help names --threads (the
single-threaded broker is "threads 1" without it); a larger N needs the
option, and without it the script says so and stops after what it measured.
On a machine with fewer CPUs than threads the figures show contention, not
scaling: give --broker-cpus with as many CPUs as the largest N.
"""
import argparse
import json
import os
import re
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

EXPERIMENTS = {
    # The article's shapes, big enough to take a few seconds on one core.
    "loadtest": ("mqtt-load", "--conns 100 --messages 20000"),
    "pingtest": ("mqtt-ping", "--pairs 100 --wsubs 20 --messages 2000"),
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pinned(cpus, argv):
    return ["taskset", "-c", cpus] + argv if cpus else argv


def wait_listening(port, proc, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def broker_takes_threads(binary):
    p = subprocess.run([binary, "broker", "--help"], capture_output=True, text=True)
    return "--threads" in p.stdout


def start_broker(binary, threads, with_flag, cpus, log):
    port = free_port()
    argv = [binary, "broker", "--bind", "127.0.0.1", "--port", str(port)]
    if with_flag:
        argv += ["--threads", str(threads)] + (["-v"] if threads > 1 else [])
    proc = subprocess.Popen(pinned(cpus, argv), stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT)
    if not wait_listening(port, proc):
        proc.kill()
        proc.wait()
        return None, port
    return proc, port


CONNECT_LINE = re.compile(r"event=connect client=(\S+)-(\d+) .* loop=(\d+)")


def cross_share(log_path, name, args):
    """The share of the deliveries whose publisher and subscriber were on
    different loops, over every run in the broker's -v log; None without
    loop= lines (one loop)."""
    runs = {}
    with open(log_path) as f:
        for line in f:
            m = CONNECT_LINE.search(line)
            if m:
                runs.setdefault(m.group(1), {})[int(m.group(2))] = int(m.group(3))
    if not runs:
        return None
    words = shlex.split(args)
    cross = total = 0
    for loop in runs.values():
        if name == "loadtest":  # subscriber i and publisher subs + i
            subs = len(loop) // 2
            cross += sum(loop[i] != loop[subs + i] for i in range(subs))
            total += subs
        else:  # responder i, requester pairs + i; wildcards of pair 0 after them
            pairs = int(words[words.index("--pairs") + 1])
            wsubs = len(loop) - 2 * pairs
            cross += 2 * sum(loop[i] != loop[pairs + i] for i in range(pairs))
            cross += sum((loop[2 * pairs + w] != loop[0]) + (loop[2 * pairs + w] != loop[pairs])
                         for w in range(wsubs))
            total += 2 * pairs + 2 * wsubs
    return cross / total


def bench(binary, experiment, args, port, pid, client_threads, runs, cpus, out):
    argv = [binary, "bench", experiment, "--target", "127.0.0.1:%d" % port, "--server-pid",
            str(pid), "--threads", str(client_threads), "--runs", str(runs), "--json", out,
            "--progress", "never"] + shlex.split(args)
    p = subprocess.run(pinned(cpus, argv), stdin=subprocess.DEVNULL, capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (" ".join(argv), p.returncode,
                                                        p.stderr.strip()[-500:]))
    with open(out) as f:
        doc = json.load(f)
    rows = doc["benchmarks"]
    mean = [b for b in rows if b.get("aggregate_name") == "mean"]
    b = mean[0] if mean else rows[0]
    return b["throughput"]["value"], b["server"]["cpu_us_per_op"], b["client"]["cpu_us_per_op"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads-list", default="1,2,4,8,16,32,64")
    ap.add_argument("--broker-cpus", default="", help="taskset CPU list for the broker")
    ap.add_argument("--client-cpus", default="", help="taskset CPU list for the load generator")
    ap.add_argument("--client-threads", type=int, default=min(4, os.cpu_count() or 1))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1, help="the whole list this many times")
    ap.add_argument("--load", default=EXPERIMENTS["loadtest"][1], help="mqtt-load arguments")
    ap.add_argument("--ping", default=EXPERIMENTS["pingtest"][1], help="mqtt-ping arguments")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/shootout"))
    ap.add_argument("--json-dir", default="", help="keep each run's JSON here")
    a = ap.parse_args()
    try:
        threads = [int(t) for t in a.threads_list.split(",")]
        assert threads and all(1 <= t <= 1024 for t in threads)
    except (ValueError, AssertionError):
        sys.exit("--threads-list wants numbers 1..1024 separated by commas, not %r" %
                 a.threads_list)
    if (a.broker_cpus or a.client_cpus) and subprocess.run(
            ["sh", "-c", "command -v taskset"], capture_output=True).returncode:
        sys.exit("taskset is not installed (util-linux)")
    has_flag = broker_takes_threads(a.bin)
    jdir = a.json_dir or tempfile.mkdtemp(prefix="broker-scale-")
    os.makedirs(jdir, exist_ok=True)
    args = {"loadtest": a.load, "pingtest": a.ping}
    print("broker scaling: %s, client threads %d, runs %d, broker CPUs %s, client CPUs %s" % (
        a.bin, a.client_threads, a.runs, a.broker_cpus or "any", a.client_cpus or "any"))
    cells = {}
    stopped = None
    for k in range(a.rounds):
        for n in threads:
            if n > 1 and not has_flag:
                stopped = ("the broker does not take --threads (its --help names no such "
                           "option): stopped before threads %d" % n)
                break
            for name in ("loadtest", "pingtest"):
                experiment = EXPERIMENTS[name][0]
                log_path = os.path.join(jdir, "broker-r%d-t%d-%s.log" % (k, n, name))
                with open(log_path, "w") as log:
                    proc, port = start_broker(a.bin, n, has_flag, a.broker_cpus, log)
                if proc is None:
                    stopped = "the broker did not start with --threads %d (see %s)" % (n, jdir)
                    break
                try:
                    out = os.path.join(jdir, "r%d-t%d-%s.json" % (k, n, name))
                    got = bench(a.bin, experiment, args[name], port, proc.pid, a.client_threads,
                                a.runs, a.client_cpus, out)
                finally:
                    proc.terminate()
                    proc.wait(10)
                cells.setdefault((n, name), []).append(got + (cross_share(log_path, name,
                                                                          args[name]),))
                print("round %d, threads %d, %s: %.1f k msg/s, broker %.3f us/msg" % (
                    k + 1, n, name, got[0] / 1e3, got[1]), file=sys.stderr)
            if stopped:
                break
        if stopped:
            break
    print("%-8s %-9s %20s %22s %16s %6s %s" % ("threads", "test", "k msg/s", "broker us/msg",
                                               "client us/msg", "cross", "vs threads %d" %
                                               threads[0]))

    def med(rows, i):
        v = [r[i] for r in rows]
        return statistics.median(v), min(v), max(v)

    for n in threads:
        for name in ("loadtest", "pingtest"):
            rows = cells.get((n, name))
            if not rows:
                continue
            (t, tlo, thi), (c, clo, chi), (cl, _, _) = med(rows, 0), med(rows, 1), med(rows, 2)
            shares = [r[3] for r in rows if r[3] is not None]
            base = cells[(threads[0], name)]
            ratio = "" if n == threads[0] else "x%.2f tput, x%.2f cpu" % (
                t / med(base, 0)[0], c / med(base, 1)[0])
            print("%-8d %-9s %8.1f (%5.1f-%5.1f) %8.3f (%5.3f-%5.3f) %16.3f %6s %s" % (
                n, name, t / 1e3, tlo / 1e3, thi / 1e3, c, clo, chi, cl,
                "%.0f%%" % (100 * statistics.median(shares)) if shares else "-", ratio))
    print("JSON of every run: %s" % jdir)
    if stopped:
        print(stopped)
        sys.exit(2)


if __name__ == "__main__":
    main()
