"""`shootout run`, the main job, end to end: it starts our broker and
Mosquitto as children, runs the article's grid against both with tiny message
counts (the hidden --scale), prints the two tables, writes one JSON document
and leaves no broker behind, also when it is interrupted or killed. No timing
assertions."""

import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import MOSQUITTO_BIN, SANITIZER_MARKERS, SHOOTOUT_BIN, have_node_peer, need, require_shootout

pytestmark = pytest.mark.shootout_only

EXIT_USAGE = 2
RUN_TIMEOUT = 50  # seconds; the tiny job takes a few
TINY = ("--quick", "--runs", "1", "--scale", "0.05", "--only", "mqtt")  # RPC: test_bench_rpc.py
LOAD_POINTS = ["100c", "500c", "750c", "1000c"]
PING_POINTS = ["400p20w", "200p200w", "100p400w"]
HAVE_MOSQUITTO = bool(shutil.which("mosquitto")) or os.access(MOSQUITTO_BIN, os.X_OK)


def run(*args, cwd=None, timeout=RUN_TIMEOUT):
    require_shootout()
    p = subprocess.run([SHOOTOUT_BIN, "run"] + [str(a) for a in args], cwd=cwd,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    for marker in SANITIZER_MARKERS:
        assert marker not in p.stderr, "sanitizer report:\n" + p.stderr
    return p


def broker_pids(text):
    """{name: pid} from the lines that say where each broker listens."""
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^shootout run: (our broker|mosquitto) \S+, pid (\d+)", text, re.M)}


def running(pid):
    """True while pid is a live process (a zombie has already stopped)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def assert_gone(pids, within=10.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(running(p) for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if running(p)], "brokers left behind: %r" % pids


def table(text, title):
    """The lines of the table whose title starts with title, up to the blank line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def row_names(lines):
    return [line.split(":")[0] for line in lines[2:]]


def test_run_races_both_brokers(tmp_path):
    need(HAVE_MOSQUITTO, "mosquitto is not installed")
    p = run(*TINY, cwd=tmp_path)  # JSON to the default file in the current directory
    assert p.returncode == 0, "exit %d\nstdout:\n%s\nstderr:\n%s" % (p.returncode, p.stdout, p.stderr)
    out = p.stdout

    # The article's two tables, each followed by the CPU table, and the latency.
    load = table(out, "loadtest (throughput")
    assert load[1].split() == ["connections:", "100", "500", "750", "1000"]
    assert row_names(load) == ["shootout", "mosquitto", "shootout/mosquitto"]
    assert "+/-" in load[2] and "+/-" in load[3] and load[4].split()[1].endswith("x")
    ping = table(out, "pingtest (throughput")
    assert ping[1].split(":")[1].split() == ["400p", "20w", "200p", "200w", "100p", "400w"]
    assert row_names(ping) == ["shootout", "mosquitto", "shootout/mosquitto"]
    for title in ("loadtest: broker CPU", "pingtest: broker CPU", "pingtest: mean round trip"):
        assert row_names(table(out, title)) == ["shootout", "mosquitto", "shootout/mosquitto"]
    assert "from the first connect to the last message" in out  # the definitions
    assert "broker peak RSS: shootout" in out and "total time:" in out

    # Every grid point against every broker, in the shared result model.
    with open(tmp_path / "shootout-results.json") as f:
        doc = json.load(f)
    assert doc["schema_version"] == 1 and "run" in doc["context"]["command_line"]
    iters = [b for b in doc["benchmarks"] if b["run_type"] == "iteration"]
    expected = {"mqtt-load/%s/%s" % (t, pt) for t in ("shootout", "mosquitto") for pt in LOAD_POINTS}
    expected |= {"mqtt-ping/%s/%s" % (t, pt) for t in ("shootout", "mosquitto") for pt in PING_POINTS}
    assert sorted(b["name"] for b in iters) == sorted(expected)
    pids = broker_pids(out)
    assert set(pids) == {"our broker", "mosquitto"}
    for b in iters:
        assert b["messages"]["lost"] == 0 and b["messages"]["received"] > 0
        assert b["throughput"]["value"] > 0
        want = pids["our broker"] if b["target"] == "shootout" else pids["mosquitto"]
        assert b["server"]["pid"] == want and b["server"]["rss_max_kb"] > 0
        if b["experiment"] == "mqtt-ping":
            assert b["latency"]["mean"] > 0
    assert re.search(r"stopped shootout \(pid %d\): exit 0" % pids["our broker"], out)
    assert_gone(pids.values())


def test_run_no_peer_measures_ours_alone():
    p = run(*TINY, "--no-peer", "--json", "-")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)  # nothing but JSON on stdout; the tables go to stderr
    assert {b["target"] for b in doc["benchmarks"]} == {"shootout"}
    assert len(doc["benchmarks"]) == len(LOAD_POINTS) + len(PING_POINTS)
    for title in ("loadtest (throughput", "pingtest (throughput", "loadtest: broker CPU"):
        assert row_names(table(p.stderr, title)) == ["shootout"]
    assert "mosquitto" not in p.stderr.replace("mosquitto is not installed", "")
    assert_gone(broker_pids(p.stderr).values())


def test_runs_give_aggregate_rows_and_the_html_report(tmp_path):
    out = tmp_path / "r.json"
    p = run("--runs", "2", "--scale", "0.02", "--no-peer", "--only", "mqtt", "--json", out,
            cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    rows = [b for b in doc["benchmarks"] if b["name"] == "mqtt-load/shootout/100c"]
    assert [b["run_type"] for b in rows] == ["iteration"] * 2 + ["aggregate"] * 3
    assert "over 2 runs" in p.stdout
    # The HTML report goes to its default file: one section per experiment,
    # a bar per grid point in the throughput chart, no external resources.
    html = (tmp_path / "shootout-report.html").read_text()
    assert "report: shootout-report.html" in p.stdout
    assert html.count("<section>") == 2
    assert "<h2>mqtt-load</h2>" in html and "<h2>mqtt-ping</h2>" in html
    load = html.split("<h2>mqtt-load</h2>")[1].split("</figure>")[0]
    assert load.count('class="bar"') == len(LOAD_POINTS)
    assert "src=" not in html and "href=" not in html and "<script" not in html


def test_html_report_can_be_skipped(tmp_path):
    p = run(*TINY, "--no-peer", "--json", tmp_path / "r.json", "--html", "none", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert not (tmp_path / "shootout-report.html").exists()
    assert "report:" not in p.stdout


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_no_broker_survives_an_interrupted_run(tmp_path, sig):
    """SIGINT: the handler stops the brokers; SIGKILL: PR_SET_PDEATHSIG does."""
    proc = subprocess.Popen([SHOOTOUT_BIN, "run", "--runs", "50", "--json", tmp_path / "r.json"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        seen = ""
        # The grid starts right after this line; by then both brokers run.
        while "per grid point" not in seen:
            line = proc.stdout.readline()
            assert line, "shootout run ended early:\n" + seen
            seen += line
        pids = list(broker_pids(seen).values())
        assert pids and all(running(pid) for pid in pids)
        time.sleep(0.3)  # into the first experiment
        proc.send_signal(sig)
        assert proc.wait(10) == -sig
        assert_gone(pids)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def test_help():
    p = run("--help")
    assert p.returncode == 0
    assert p.stdout.startswith("usage: shootout run")
    for opt in ("--runs", "--quick", "--json", "--threads", "--no-peer"):
        assert opt in p.stdout


@pytest.mark.parametrize("args", [["--bogus"], ["--runs", "0"], ["--threads", "x"],
                                  ["--scale", "0"], ["stray"], ["--only", "a2c"],
                                  ["--a2b-time-scale", "0.5"], ["--pg", "mysql://x"]])
def test_usage_errors(args):
    p = run(*args)
    assert p.returncode == EXIT_USAGE
    assert "shootout run --help" in p.stderr


# ---- the a2b part ---------------------------------------------------------

A2B_COLUMNS = ["build s", "MB", "boot s", "requests", "KO %", "RPS", "p95 ms", "sat.users",
               "RAM MB", "CPU %", "threads", "PG CPU %"]
A2B_KEYS = ["build_s", "artifact_mb", "boot_s", "total_requests", "ko_pct", "rps", "p95_ms",
            "saturation_users", "ram_mb", "cpu_pct", "threads_max", "postgres_cpu_pct"]
QUOTED = "quoted: MacBook Pro i7 4-core, Gatling, unscaled profile"


def test_a2b_part_prints_the_articles_table_and_quotes_its_rows(tmp_path):
    """--only a2b at a tiny scale, SQLite only (--pg none): the article's
    columns for our server, its rows quoted beneath, JSON rows for both, and
    no server left behind."""
    out = tmp_path / "r.json"
    p = run("--only", "a2b", "--scale", "0.01", "--pg", "none", "--json", out, "--html", "none",
            cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    header = next(line for line in lines if "build s" in line)
    assert header.split() == " ".join(A2B_COLUMNS).split()
    ours = next(line for line in lines if line.startswith("shootout a2b-server, SQLite "))
    cells = ours[len("shootout a2b-server, SQLite"):].split()
    assert len(cells) == len(A2B_COLUMNS), ours
    assert int(cells[3]) > 0  # requests
    assert cells[-1] == "n/a"  # no PostgreSQL under SQLite
    assert re.search(r"PostgreSQL +not measured: no PostgreSQL: --pg none", p.stdout)
    assert "time scale 1000" in p.stdout
    marker = lines.index(next(line for line in lines if QUOTED in line))
    assert lines.index(ours) < marker
    assert any(line.startswith("Spring Web jar ") for line in lines[marker:])
    assert any(line.startswith("Quarkus native exe ") for line in lines[marker:])

    rows = json.loads(out.read_text())["benchmarks"]
    measured = [r for r in rows if r["experiment"] == "a2b"]
    assert len(measured) == 1
    a2b = measured[0]["a2b"]
    assert set(A2B_KEYS) <= set(a2b)
    assert a2b["quoted"] is None and a2b["time_scale"] == 1000
    assert a2b["total_requests"] == int(cells[3]) and a2b["postgres_cpu_pct"] is None
    quoted = [r for r in rows if r["experiment"] == "a2b-quoted"]
    assert len(quoted) >= 4 and all(r["a2b"]["quoted"] == QUOTED for r in quoted)
    assert [r for r in rows if r["experiment"] == "http-open"][0]["http_open"]["global"]["count"] > 0

    pid = int(re.search(r"SQLite, pid (\d+)", p.stdout).group(1))
    assert_gone([pid])
    assert "stopped shootout (pid %d): exit 0" % pid in p.stdout


RACE_TITLE = "The capacity race on PostgreSQL"


def test_capacity_race_compares_the_postgresql_targets_level_by_level(tmp_path, pg_cluster):
    """On PostgreSQL, after the journey, each target gets the staircase: one
    table line per level of constant load (never the ramps between them), the
    levels in the JSON, and ratios when the Node peer ran too."""
    have_peer = have_node_peer()
    out = tmp_path / "r.json"
    p = run("--only", "a2b", "--scale", "0.01", "--a2b-time-scale", "2", "--pg", pg_cluster.uri(),
            "--a2b-capacity", "increment-users-per-sec 10 3 100s ramp 20s from 20",
            "--json", out, "--html", "none", cwd=tmp_path, timeout=240)
    assert p.returncode == 0, p.stderr
    race = table(p.stdout, RACE_TITLE)
    assert "increment-users-per-sec 10 3 100s ramp 20s from 20, durations / 200" in race[0]
    levels = [line for line in race if re.match(r"^\d+ +\|", line)]
    assert [int(line.split("|")[0]) for line in levels] == [20, 30, 40]
    ours = [line.split("|")[1].split() for line in levels]
    assert all(float(cells[0]) > 0 and float(cells[1]) > 0 for cells in ours), race
    if have_peer:
        # resp/s counts answers by arrival: a level lasts 0.5 s here, and the
        # peer's first answers can take longer (700 ms seen on a quiet
        # machine), so a level may have none. Where it answered, the ratios.
        peer = [line.split("|")[2].split() for line in levels]
        assert float(peer[-1][0]) > 0, race
        assert all(re.search(r"\d+\.\d\dx +\d+\.\d\dx$", line)
                   for line, cells in zip(levels, peer) if float(cells[0]) > 0), race
    else:
        assert any("a2b-node, PostgreSQL: not raced" in line for line in race), race
    assert re.search(r"shootout a2b-server, PostgreSQL: (never saturated|saturated at second)",
                     p.stdout)

    rows = json.loads(out.read_text())["benchmarks"]
    raced = [r for r in rows if r["name"].endswith(", capacity/a2b")]
    assert len(raced) == (2 if have_peer else 1)
    for r in raced:
        stairs = [lv for lv in r["http_open"]["levels"] if lv["kind"] != "after"]
        # three levels and the two ramps between them
        assert len(stairs) == 5, stairs


def test_capacity_race_can_be_skipped_and_is_checked():
    assert "--a2b-capacity" in run("--help").stdout
    p = run("--a2b-capacity", "increment-users-per-sec x")
    assert p.returncode == EXIT_USAGE and "--a2b-capacity" in p.stderr
