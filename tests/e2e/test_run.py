"""`shootout run`, the main job, end to end: it starts our broker and
Mosquitto (through peers/mosquitto/start) as children, one after the other,
runs the article's grid against each with tiny message counts (the hidden
--scale), prints the two tables, writes one JSON document and leaves no
broker behind, also when it is interrupted or killed. The other contenders,
on fakes: test_run_contenders.py. No timing assertions."""

import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

import natsd
from conftest import MOSQUITTO_BIN, SANITIZER_MARKERS, SHOOTOUT_BIN, have_node_peer, need, require_shootout

pytestmark = pytest.mark.shootout_only

EXIT_USAGE = 2
RUN_TIMEOUT = 50  # seconds; the tiny job takes a few
TINY = ("--quick", "--runs", "1", "--scale", "0.05", "--only", "mqtt")  # RPC: test_bench_rpc.py
LOAD_POINTS = ["100c", "500c", "750c", "1000c"]
PING_POINTS = ["400p20w", "200p200w", "100p400w"]
HAVE_MOSQUITTO = bool(shutil.which("mosquitto")) or os.access(MOSQUITTO_BIN, os.X_OK)


def run(*args, cwd=None, timeout=RUN_TIMEOUT, tmpdir=None):
    require_shootout()
    env = dict(os.environ, TMPDIR=str(tmpdir)) if tmpdir else None
    p = subprocess.run([SHOOTOUT_BIN, "run"] + [str(a) for a in args], cwd=cwd, env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    for marker in SANITIZER_MARKERS:
        assert marker not in p.stderr, "sanitizer report:\n" + p.stderr
    return p


def broker_pids(text):
    """{name: pid} from the lines that say where each broker listens."""
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^shootout run: (our broker|mosquitto) .*?, pid (\d+)", text, re.M)}


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
    """The rows' labels up to their versions, up to the quoted rows."""
    names = []
    for line in lines[2:]:
        if line.startswith("--"):
            break
        names.append(line.split(":")[0].split(" (")[0])
    return names


# The MQTT tables' rows with --peers mosquitto: ours, Mosquitto, the ratio.
MQTT_ROWS = ["shootout", "mosquitto", "shootout/best other"]


def test_run_races_both_brokers(tmp_path):
    need(HAVE_MOSQUITTO, "mosquitto is not installed")
    p = run(*TINY, "--peers", "mosquitto", cwd=tmp_path)  # JSON to the default file here
    assert p.returncode == 0, "exit %d\nstdout:\n%s\nstderr:\n%s" % (p.returncode, p.stdout, p.stderr)
    out = p.stdout

    # The article's two tables, each followed by the CPU table, and the latency.
    load = table(out, "loadtest (throughput")
    assert load[1].split() == ["connections:", "100", "500", "750", "1000"]
    assert row_names(load) == MQTT_ROWS
    assert "+/-" in load[2] and "+/-" in load[3]
    ratio = next(line for line in load if line.startswith("shootout/best other:"))
    assert re.fullmatch(r"shootout/best other:(\s+\d+\.\d\dx mosquitto){4}", ratio), ratio
    ping = table(out, "pingtest (throughput")
    assert ping[1].split(":")[1].split() == ["400p", "20w", "200p", "200w", "100p", "400w"]
    assert row_names(ping) == MQTT_ROWS
    for title in ("loadtest: broker CPU", "pingtest: broker CPU", "pingtest: mean round trip"):
        assert row_names(table(out, title)) == MQTT_ROWS
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
    # The article's race: our broker on one loop, whatever its default.
    assert {b["server"]["threads_max"] for b in doc["benchmarks"]} == {1}
    for title in ("loadtest (throughput", "pingtest (throughput", "loadtest: broker CPU"):
        assert row_names(table(p.stderr, title)) == ["shootout"]
    assert "mosquitto" not in p.stderr
    assert_gone(broker_pids(p.stderr).values())
    assert doc["context"]["cpu_idle"] == "kept awake by a SCHED_IDLE spinner per CPU"
    assert_gone([spinner_pid(p.stderr)])


def have_nats_server():
    try:
        return natsd.binary()
    except natsd.NatsUnavailable:
        return None


# The cluster's tables' rows: the cluster, our single node, the ratio.
CLUSTER_ROWS = ["shootout-cluster3", "shootout", "cluster/one node"]


def test_cluster_is_raced_beside_one_node():
    need(have_nats_server(), "nats-server is not installed")
    p = run(*TINY, "--no-peer", "--cluster", "3", "--json", "-", "--html", "none")
    assert p.returncode == 0, p.stderr
    out = p.stderr  # the tables, with the JSON on stdout
    for title in ("loadtest, 3 nodes on NATS against one node (throughput",
                  "loadtest: broker (the nodes and NATS together) CPU",
                  "pingtest, 3 nodes on NATS against one node (throughput",
                  "pingtest: broker (the nodes and NATS together) CPU",
                  "pingtest, 3 nodes on NATS against one node: mean round trip"):
        lines = table(out, title)
        assert row_names(lines) == CLUSTER_ROWS, lines
        assert re.search(r"shootout-cluster3 \(shootout .*, 3 nodes on nats-server \d", lines[2])
        ratio = next(line for line in lines if line.startswith("cluster/one node:"))
        assert re.fullmatch(r"cluster/one node:(\s+\d+\.\d\dx shootout)+", ratio), ratio
    # The article's own tables keep one row: the cluster is not a contender.
    assert row_names(table(out, "loadtest (throughput")) == ["shootout"]
    assert "broker peak RSS: shootout " in out and ", shootout-cluster3 " in out

    nodes = [int(m.group(1)) for m in re.finditer(r"^shootout run: cluster node \d, pid (\d+),", out, re.M)]
    nats = {int(m.group(1)) for m in re.finditer(r"^shootout run: cluster node \d, .* \(pid (\d+)\)$",
                                                 out, re.M)}
    assert len(nodes) == 3 and len(nats) == 1, out
    doc = json.loads(p.stdout)
    rows = [b for b in doc["benchmarks"] if b["target"] == "shootout-cluster3"]
    assert sorted(b["name"] for b in rows) == sorted(
        ["mqtt-load/shootout-cluster3/%s" % pt for pt in LOAD_POINTS] +
        ["mqtt-ping/shootout-cluster3/%s" % pt for pt in PING_POINTS])
    for b in rows:
        assert b["messages"]["lost"] == 0 and b["messages"]["received"] > 0
        # Sampled: the three nodes and NATS, summed; the pid is node 1's.
        assert b["server"]["processes"] == 4 and b["server"]["pid"] == nodes[0]
        assert b["server"]["threads_max"] > 3 and b["server"]["cpu_s"] > 0
    for pid in nodes:
        assert re.search(r"stopped shootout \(pid %d\): exit 0" % pid, out)
    assert re.search(r"stopped nats-server \(pid %d\): exit 0" % next(iter(nats)), out)  # SIGINT
    assert_gone(nodes + list(nats))


def test_cluster_without_nats_server_is_a_note(tmp_path):
    p = subprocess.run([SHOOTOUT_BIN, "run"] + list(TINY) + ["--no-peer", "--cluster", "2", "--json", "-",
                                                            "--html", "none"],
                       env=dict(os.environ, SHOOTOUT_NATS_SERVER=str(tmp_path / "no-nats-server")),
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert p.returncode == 0, p.stderr  # ours measured; the cluster only says why it was not
    assert "the cluster is not measured: no nats-server (%s" % (tmp_path / "no-nats-server") in p.stderr
    lines = table(p.stderr, "loadtest, 2 nodes on NATS against one node (throughput")
    assert "not measured: no nats-server" in lines[2]
    assert {b["target"] for b in json.loads(p.stdout)["benchmarks"]} == {"shootout"}


def spinner_pid(out):
    m = re.search(r"CPUs kept awake by SCHED_IDLE spinners \(pid (\d+);", out)
    assert m, "no line about the CPU spinners:\n" + out
    return int(m.group(1))


def sched_policy(pid):
    """The scheduling policy of pid's main thread (5: SCHED_IDLE)."""
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[38])


def test_cpus_can_be_left_to_halt(tmp_path):
    p = run(*TINY, "--no-peer", "--no-keep-awake", "--json", "-", "--html", "none")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["context"]["cpu_idle"] == "halting when idle (--no-keep-awake)"
    assert "kept awake" not in p.stderr


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
@pytest.mark.parametrize("whom", ["our broker", "mosquitto"])
def test_no_broker_survives_an_interrupted_run(tmp_path, sig, whom):
    """SIGINT: the handler stops the broker (a contender's whole process
    group); SIGKILL: PR_SET_PDEATHSIG does."""
    if whom == "mosquitto":
        need(HAVE_MOSQUITTO, "mosquitto is not installed")
    # Ours: long runs; Mosquitto: short ones for ours, then its long ones.
    runs = ["--runs", "50"] if whom == "our broker" else ["--runs", "20", "--scale", "0.01"]
    proc = subprocess.Popen([SHOOTOUT_BIN, "run", "--only", "mqtt", "--peers", "mosquitto", *runs,
                             "--json", tmp_path / "r.json"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        seen = ""
        # Its grid starts right after the line that says where it runs.
        while whom not in broker_pids(seen):
            line = proc.stdout.readline()
            assert line, "shootout run ended early:\n" + seen
            seen += line
        pids = [broker_pids(seen)[whom], spinner_pid(seen)]
        assert all(running(pid) for pid in pids)
        assert sched_policy(pids[1]) == 5  # the spinners take no CPU from anyone
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
    for opt in ("--runs", "--quick", "--json", "--threads", "--no-peer", "--cell-cap", "--cluster"):
        assert opt in p.stdout


@pytest.mark.parametrize("args", [["--bogus"], ["--runs", "0"], ["--threads", "x"],
                                  ["--scale", "0"], ["stray"], ["--only", "a2c"],
                                  ["--a2b-time-scale", "0.5"], ["--pg", "mysql://x"],
                                  ["--cell-cap", "-1"], ["--cell-cap", "x"], ["--cluster", "8"],
                                  ["--cluster", "x"]])
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
    no server left behind, nothing left in its TMPDIR."""
    out = tmp_path / "r.json"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    p = run("--only", "a2b", "--scale", "0.01", "--pg", "none", "--json", out, "--html", "none",
            cwd=tmp_path, tmpdir=tmp)
    assert p.returncode == 0, p.stderr
    assert os.listdir(tmp) == []
    lines = p.stdout.splitlines()
    header = next(line for line in lines if "build s" in line)
    assert header.split() == " ".join(A2B_COLUMNS).split()
    ours = next(line for line in lines if line.startswith("shootout a2b-server, SQLite (shootout "))
    cells = ours.split(")", 1)[1].split()
    assert len(cells) == len(A2B_COLUMNS), ours
    assert int(cells[3]) > 0  # requests
    assert cells[-1] == "n/a"  # no PostgreSQL under SQLite
    assert re.search(r"PostgreSQL +not measured: no PostgreSQL: --pg none", p.stdout)
    assert "time scale 2000" in p.stdout  # the default 20 over --scale 0.01
    marker = lines.index(next(line for line in lines if QUOTED in line))
    assert lines.index(ours) < marker
    assert any(line.startswith("Spring Web jar ") for line in lines[marker:])
    assert any(line.startswith("Quarkus native exe ") for line in lines[marker:])

    rows = json.loads(out.read_text())["benchmarks"]
    measured = [r for r in rows if r["experiment"] == "a2b"]
    assert len(measured) == 1
    a2b = measured[0]["a2b"]
    assert set(A2B_KEYS) <= set(a2b)
    assert a2b["quoted"] is None and a2b["time_scale"] == 2000
    assert a2b["total_requests"] == int(cells[3]) and a2b["postgres_cpu_pct"] is None
    quoted = [r for r in rows if r["experiment"] == "a2b-quoted"]
    assert len(quoted) >= 4 and all(r["a2b"]["quoted"] == QUOTED for r in quoted)
    assert [r for r in rows if r["experiment"] == "http-open"][0]["http_open"]["global"]["count"] > 0

    pid = int(re.search(r"SQLite, pid (\d+)", p.stdout).group(1))
    assert_gone([pid])
    assert "stopped shootout (pid %d): exit 0" % pid in p.stdout


def test_a2b_part_makes_its_directories_in_TMPDIR(tmp_path):
    """The SQLite file's directory goes where TMPDIR says, as mktemp(1)
    would put it: a TMPDIR that does not exist fails the run with its path."""
    missing = tmp_path / "missing"
    p = run("--only", "a2b", "--scale", "0.01", "--pg", "none", "--json", tmp_path / "r.json",
            "--html", "none", cwd=tmp_path, tmpdir=missing)
    assert p.returncode == 1, p.stderr
    assert "mkdtemp %s/shootout-a2b-" % missing in p.stderr, p.stderr


RACE_TITLE = "The capacity race on PostgreSQL"


def race_rows(race):
    """The race table's level rows, split into cells: level, users/s, then
    req/s, resp/s, p95 ms, KO % for ours and the peer ("-" where one did
    not run it), then the two ratios when both did."""
    return [line.split() for line in race if re.match(r"^\d+ +\d+ ", line)]


def verdict(text, target):
    m = re.search(r"^  %s: (.*)$" % re.escape(target), text, re.M)
    assert m, text
    return m.group(1)


def check_verdict(line, rows, ceiling, resp_col=3):
    """The verdict line names a row of the table (or the ceiling when no
    row saturated) and the peak of the target's resp/s column there."""
    served = [float(c[1]) for c in rows]
    resp = [float(c[resp_col]) for c in rows]
    m = re.match(r"saturated at level (\d+) \((\d+) users/s\): .* \((backlog|failures)\); ", line)
    if m:
        assert int(m.group(2)) == served[int(m.group(1)) - 1], line
    else:
        assert line.startswith("not saturated up to the ceiling %d users/s; " % ceiling), line
        assert served[-1] == ceiling
    peak = re.search(r"peak (\d+) responses/s at level (\d+) \((\d+) users/s\)(; but a p95 .*)?$",
                     line)
    assert peak, line
    assert float(peak.group(1)) == max(resp)
    assert served[int(peak.group(2)) - 1] == int(peak.group(3))


def test_capacity_race_compares_the_postgresql_targets_level_by_level(tmp_path, pg_cluster):
    """On PostgreSQL, after the journey, each target climbs the staircase:
    one table line per level of constant load (never the ramps between
    them) until it saturates or reaches the ceiling, each one's verdict
    read from those lines, the levels in the JSON, and ratios where the
    Node peer ran the level too."""
    have_peer = have_node_peer()
    out = tmp_path / "r.json"
    # The Node peer alone, so that the table has the shape checked here;
    # test_run_contenders.py races several contenders.
    p = run("--only", "a2b", "--scale", "0.01", "--a2b-time-scale", "2", "--pg", pg_cluster.uri(),
            "--peers", "a2b-node", "--a2b-capacity", "increment-users-per-sec 10 3 100s ramp 20s from 20",
            "--json", out, "--html", "none", cwd=tmp_path, timeout=240)
    assert p.returncode == 0, p.stderr
    race = table(p.stdout, RACE_TITLE)
    assert "increment-users-per-sec 10 3 100s ramp 20s from 20, durations / 200" in race[0]
    assert "the ceiling (40 users/s)" in race[1]
    header = next(line for line in race if line.startswith("level"))
    # A contender that cannot run here has no columns, only its line beneath.
    target = ["req/s", "resp/s", "p95", "ms", "KO", "%"]
    assert header.split() == ["level", "users/s"] + target * (2 if have_peer else 1) + [
        "p95", "best/ours", "resp/s", "ours/best"]
    rows = race_rows(race)
    assert [int(c[0]) for c in rows] == list(range(1, len(rows) + 1))
    assert [int(c[1]) for c in rows] == [20, 30, 40][:len(rows)]
    ours = [c for c in rows if c[2] != "-"]
    assert ours and all(float(c[2]) > 0 and float(c[3]) > 0 for c in ours), race
    check_verdict(verdict(p.stdout, "shootout a2b-server, PostgreSQL"), ours, 40)
    if have_peer:
        peer = [c for c in rows if c[6] != "-"]
        assert peer and all(float(c[6]) > 0 for c in peer), race
        check_verdict(verdict(p.stdout, "a2b-node, PostgreSQL"), peer, 40, resp_col=7)
        both = [c for c in rows if c[2] != "-" and c[6] != "-" and float(c[4]) > 0
                and float(c[7]) > 0]
        assert all(re.fullmatch(r"\d+\.\d\dx", c[-1]) for c in both), race
    else:
        assert any("a2b-node, PostgreSQL: not raced" in line for line in race), race

    doc = json.loads(out.read_text())["benchmarks"]
    raced = [r for r in doc if r["name"].endswith(", capacity/a2b")]
    assert len(raced) == (2 if have_peer else 1)
    for r in raced:
        ho = r["http_open"]
        assert ho["until_saturated"] is True
        stairs = [lv for lv in ho["levels"] if lv["kind"] != "after"]
        # three levels and the two ramps between them, unless it stopped
        assert len(stairs) == (ho["stopped_after_level"] or 5), stairs
    figures = {r["target"]: r["a2b"]["capacity"] for r in doc if r["experiment"] == "a2b"}
    cap = figures["shootout a2b-server, PostgreSQL"]
    assert cap["ceiling_users_per_sec"] == 40 and cap["levels"] == len(ours)
    assert cap["peak_responses_per_sec"] == pytest.approx(max(float(c[3]) for c in ours), abs=0.5)
    assert figures["shootout a2b-server, SQLite"] is None


def test_capacity_race_climbs_to_the_ceiling_it_is_given(tmp_path, pg_cluster):
    """--a2b-ceiling sets the staircase's top: levels from its first by its
    increment up to the ceiling, named in the report."""
    out = tmp_path / "r.json"
    p = run("--only", "a2b", "--scale", "0.01", "--a2b-time-scale", "4", "--pg", pg_cluster.uri(),
            "--no-peer", "--a2b-capacity", "increment-users-per-sec 10 2 100s ramp 20s from 20",
            "--a2b-ceiling", "55", "--json", out, "--html", "none", cwd=tmp_path, timeout=240)
    assert p.returncode == 0, p.stderr
    race = table(p.stdout, RACE_TITLE)
    assert "the ceiling (50 users/s)" in race[1]
    rows = race_rows(race)
    assert [int(c[1]) for c in rows] == [20, 30, 40, 50][:len(rows)]
    check_verdict(verdict(p.stdout, "shootout a2b-server, PostgreSQL"), rows, 50)


def test_capacity_race_can_be_skipped_and_is_checked():
    assert "--a2b-capacity" in run("--help").stdout and "--a2b-ceiling" in run("--help").stdout
    for args, why in ((["--a2b-capacity", "increment-users-per-sec x"], "--a2b-capacity"),
                      (["--a2b-capacity", "constant-concurrent-users 10 1s"], "an open step"),
                      (["--a2b-ceiling", "0"], "--a2b-ceiling wants"),
                      (["--a2b-ceiling", "40"], "a ceiling from 50 up to 5000 users/s"),
                      (["--a2b-ceiling", "6000"], "a ceiling from 50 up to 5000 users/s"),
                      (["--a2b-capacity", "constant-users-per-sec 10 1s", "--a2b-ceiling", "20"],
                       "needs a staircase"),
                      (["--a2b-capacity", "none", "--a2b-ceiling", "20"], "needs a staircase")):
        p = run(*args)
        assert p.returncode == EXIT_USAGE and why in p.stderr, (args, p.stderr)
