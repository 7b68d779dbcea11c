"""`shootout run` with N contenders, end to end, on fakes
(tests/e2e/data/fake_peers): each linked under a registry name into a
temporary SHOOTOUT_PEERS_DIR. One that works, one not installed, one that
fails to start, one that loses every message, one that dies mid-run: the
run goes on, every table has a row per contender in the registry's order,
the cells say why they failed, the exit code is ours alone, the JSON rows
and context carry the versions, nothing is left behind (each run gets a
TMPDIR of its own, which must be empty after it). Also `shootout peers`
and --peers. No timing assertions."""

import json
import os
import re
import subprocess

import pytest

from conftest import HERE, SANITIZER_MARKERS, SHOOTOUT_BIN, require_shootout
from test_run import running, table

pytestmark = pytest.mark.shootout_only

FAKES = os.path.join(HERE, "data", "fake_peers")
MQTT_NAMES = ["mosquitto", "rabbitmq", "activemq", "aedes"]  # the registry's order
ALL_NAMES = MQTT_NAMES + ["grpc-cpp", "grpc-java", "node-grpc", "spring-rest", "node-fastify",
                          "a2b-node", "a2b-spring"]
# Tiny counts; --timeout 2: a run missing messages gives up after 2 s.
TINY = ("--quick", "--runs", "1", "--scale", "0.005", "--timeout", "2", "--html", "none")


def peers_dir(tmp_path, **links):
    """A contenders' directory with fake fake linked as name, for each
    name=fake (a name with '-' written with '_'); and its runs' TMPDIR."""
    d = tmp_path / "peers"
    d.mkdir()
    private_tmp(d).mkdir()
    for name, fake in links.items():
        os.symlink(os.path.join(FAKES, fake), d / name.replace("_", "-"))
    return d


def private_tmp(peers):
    """The TMPDIR of the runs with peers: the test's own, where the
    contenders' private directories go, so that whatever is in it after a
    run is that run's (other tests and users fill /tmp meanwhile)."""
    return peers.parent / "tmp"


def dirs_log(peers):
    """Where the fake "works" writes the --dir each run with peers gave it."""
    return peers.parent / "dirs"


def shootout(*args, peers, timeout=50):
    require_shootout()
    env = dict(os.environ, SHOOTOUT_PEERS_DIR=str(peers), FAKE_SHOOTOUT_BIN=SHOOTOUT_BIN,
               TMPDIR=str(private_tmp(peers)), FAKE_DIRS_LOG=str(dirs_log(peers)))
    p = subprocess.run([SHOOTOUT_BIN] + [str(a) for a in args], env=env, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=timeout)
    for marker in SANITIZER_MARKERS:
        assert marker not in p.stderr, "sanitizer report:\n" + p.stderr
    return p


def rows(lines):
    """{label up to its version: the rest of the line} of a table's rows."""
    out = {}
    for line in lines[2:]:
        if line.startswith("--"):
            break
        label, rest = line.split(":", 1)
        out[label.split(" (")[0]] = rest.strip()
    return out


def leftovers(peers, text):
    """What the runs with peers left in their TMPDIR (contender.c's private
    directories among it), servers whose pids text names that still run,
    and processes of the fakes; and a --dir the fake "works" got that was
    not in that TMPDIR (where no test would see it left)."""
    left = sorted(os.listdir(private_tmp(peers)))
    if dirs_log(peers).exists():
        left += [d for d in dirs_log(peers).read_text().split()
                 if os.path.dirname(d) != str(private_tmp(peers))]
    for pid in map(int, re.findall(r", pid (\d+)", text)):
        if running(pid):
            left.append(pid)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if FAKES.encode() in f.read():
                    left.append(int(pid))
        except OSError:
            continue
    return left


def cmdlines():
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                yield f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue


def port_of(text, name):
    return int(re.search(r"^shootout run: %s \(.*\), pid \d+, on 127\.0\.0\.1:(\d+)" % name, text,
                         re.M).group(1))


def test_the_run_goes_on_past_contenders_that_fail(tmp_path):
    peers = peers_dir(tmp_path, mosquitto="works", rabbitmq="missing", activemq="nostart",
                      aedes="drops")
    out = tmp_path / "r.json"
    p = shootout("run", "--only", "mqtt", *TINY, "--json", out, peers=peers)
    assert p.returncode == 0, "exit %d\n%s\n%s" % (p.returncode, p.stdout, p.stderr)
    text = p.stdout
    # One line for each contender that is skipped, and why.
    assert "shootout run: rabbitmq skipped: not installed: apt-get install fake-broker" in text
    assert re.search(r"^shootout run: activemq skipped: could not start: exited during startup"
                     r".*cannot open its configuration", text, re.M), text
    assert re.search(r"^shootout run: mosquitto \(fake broker 1\.0 \(our broker\)\), pid \d+",
                     text, re.M)

    for title in ("loadtest (throughput", "pingtest (throughput", "loadtest: broker CPU",
                  "pingtest: mean round trip"):
        t = table(text, title)
        r = rows(t)
        # a row per contender in the registry's order, ours first, then the ratio
        assert list(r)[:5] == ["shootout", "mosquitto", "rabbitmq", "activemq", "aedes"], t
        assert "+/-" in r["shootout"] and "+/-" in r["mosquitto"] and "failed" not in r["mosquitto"]
        assert r["rabbitmq"] == "not measured: not installed: apt-get install fake-broker"
        assert r["activemq"].startswith("not measured: could not start: exited during startup")
        cells = re.split(r" {2,}", r["aedes"])
        assert cells and all(re.fullmatch(r"failed: lost \d+ of \d+ msgs", c) for c in cells), t
        # the lossy broker is never the best other: the one that works is
        ratio = re.split(r" {2,}", r["shootout/best other"])
        assert all(re.fullmatch(r"\d+\.\d\dx mosquitto", c) for c in ratio), t
    # The article's rows for the brokers that cannot be had, quoted and marked.
    load = table(text, "loadtest (throughput")
    quoted = next(i for i, line in enumerate(load) if line.startswith("-- the article's"))
    assert "2013 hardware" in load[quoted] and "not measured here" in load[quoted]
    assert [re.match(r"(.*?):\s", line).group(1) for line in load[quoted + 1:]] == \
        ["D + vibe.d", "Go", "C++11 + boost::asio"]
    assert load[quoted + 1].split(":")[1].split()[:3] == ["121.7", "+/-", "1.5"]

    doc = json.loads(out.read_text())
    contenders = {c["name"]: c for c in doc["context"]["contenders"]}
    assert list(contenders) == ALL_NAMES
    assert contenders["mosquitto"]["available"] is True and contenders["mosquitto"]["jvm"] is False
    assert contenders["activemq"]["jvm"] is True and contenders["rabbitmq"]["heavy"] is True
    assert contenders["mosquitto"]["version"] == "fake broker 1.0 (our broker)"
    assert contenders["rabbitmq"]["available"] is False
    assert "not installed" in contenders["grpc-java"]["unavailable"]
    iters = [b for b in doc["benchmarks"] if b["run_type"] == "iteration"]
    by_target = {}
    for b in iters:
        by_target.setdefault(b["target"], []).append(b)
        assert re.fullmatch(r"mqtt-(load|ping)/%s/\w+" % b["target"], b["name"]), b["name"]
    assert set(by_target) == {"shootout", "mosquitto", "aedes"}
    assert all(b["target_version"].startswith("shootout ") for b in by_target["shootout"])
    assert all(b["target_version"] == "fake broker 1.0 (our broker)" for b in by_target["mosquitto"])
    assert all(b["messages"]["lost"] > 0 and b["errors"]["message"] for b in by_target["aedes"])
    assert len(by_target["aedes"]) == 7  # every cell tried
    assert not leftovers(peers, text)


def test_a_contender_that_dies_mid_run_is_marked_and_ours_still_counts(tmp_path):
    peers = peers_dir(tmp_path, mosquitto="dies")
    p = shootout("run", "--only", "mqtt", "--peers", "mosquitto", *TINY, "--json", "-",
                 peers=peers)
    assert p.returncode == 0, p.stderr
    text = p.stderr  # --json -: the tables go to stderr
    assert re.search(r"^shootout run: mosquitto \(pid \d+\) died during the job \(exit 1\)",
                     text, re.M), text
    load = rows(table(text, "loadtest (throughput"))
    assert list(load)[:2] == ["shootout", "mosquitto"]
    cells = re.split(r" {2,}", load["mosquitto"])
    assert "+/-" in cells[0], load  # 100 connections: before its 150th
    assert cells[1:] == ["failed: died"] * 3, load
    ping = rows(table(text, "pingtest (throughput"))
    assert re.split(r" {2,}", ping["mosquitto"]) == ["failed: died"] * 3
    ratio = re.split(r" {2,}", load["shootout/best other"])
    assert re.fullmatch(r"\d+\.\d\dx mosquitto", ratio[0]) and ratio[1:] == ["-"] * 3
    doc = json.loads(p.stdout)
    assert [c["name"] for c in doc["context"]["contenders"]] == ["mosquitto"]
    assert not leftovers(peers, text)


def test_the_cell_cap_gives_a_slow_contender_fewer_runs_never_ours(tmp_path):
    """--cell-cap: a contender whose runs in a cell took so long that --runs
    of them would pass the cap in its next cell gets as many as fit there,
    two at least, each a whole run; its first cell of each experiment and
    every cell of ours keep --runs; the tables say which cells. A cap far
    below a run's time makes the fake (our broker) that slow contender."""
    peers = peers_dir(tmp_path, mosquitto="works")
    p = shootout("run", "--only", "mqtt", "--peers", "mosquitto", "--runs", "3", "--scale", "0.005",
                 "--timeout", "2", "--html", "none", "--cell-cap", "0.001", "--json", "-", peers=peers)
    assert p.returncode == 0, p.stderr
    text = p.stderr
    assert re.search(r"^  mosquitto, loadtest 500: 2 runs of 3: a run took \d+\.\d s in its previous "
                     r"cell, and 3 would pass the cell's time cap of 0\.001 s$", text, re.M), text
    load = table(text, "loadtest (throughput")
    assert load[0].endswith("over 3 runs - bigger is better)")
    assert load[-1] == ("(fewer runs in these loadtest cells, by the time cap of 0.001 s a cell "
                        "(--cell-cap): mosquitto: 2 at 500, 2 at 750, 2 at 1000)"), load
    assert "+/-" in rows(load)["mosquitto"]  # a capped cell keeps its stddev
    assert table(text, "pingtest (throughput")[-1].endswith("mosquitto: 2 at 200p 200w, 2 at 100p 400w)")
    reps = {}
    for b in json.loads(p.stdout)["benchmarks"]:
        assert not b["errors"].get("message"), b
        reps.setdefault((b["target"], b["name"].rsplit("/", 1)[1]), set()).add(b["repetitions"])
    assert {k: v for k, v in reps.items() if v != {3}} == {
        ("mosquitto", c): {2} for c in ("500c", "750c", "1000c", "200p200w", "100p400w")}, reps
    assert len(reps) == 14
    assert not leftovers(peers, text)


def test_peers_selects_and_orders_contenders(tmp_path):
    peers = peers_dir(tmp_path, mosquitto="works", aedes="wrapper")
    # Listed out of order: the tables keep the registry's.
    p = shootout("run", "--only", "mqtt", "--peers", "aedes,mosquitto", *TINY, "--json",
                 tmp_path / "r.json", peers=peers)
    assert p.returncode == 0, p.stderr
    assert list(rows(table(p.stdout, "loadtest (throughput")))[:3] == ["shootout", "mosquitto",
                                                                         "aedes"]
    # The ratio names the best other in each cell: the bigger throughput,
    # the smaller CPU time.
    for title, best in (("loadtest (throughput", max), ("loadtest: broker CPU", min)):
        r = rows(table(p.stdout, title))
        means = {n: [float(c.split()[0]) for c in re.split(r" {2,}", r[n])]
                 for n in ("mosquitto", "aedes")}
        named = [c.split()[1] for c in re.split(r" {2,}", r["shootout/best other"])]
        for k, name in enumerate(named):
            assert means[name][k] == best(means["mosquitto"][k], means["aedes"][k]), (title, r)
    assert "rabbitmq" not in p.stdout and "activemq" not in p.stdout
    doc = json.loads((tmp_path / "r.json").read_text())
    assert {b["target"] for b in doc["benchmarks"]} == {"shootout", "mosquitto", "aedes"}
    # Measured: the wrapper's broker, the largest process of its group, not the wrapper.
    wrapper = int(re.search(r"^shootout run: aedes \(.*\), pid (\d+)", p.stdout, re.M).group(1))
    pids = {b["server"]["pid"] for b in doc["benchmarks"] if b["target"] == "aedes"}
    assert len(pids) == 1 and wrapper not in pids
    assert all(b["server"]["cpu_s"] > 0 for b in doc["benchmarks"] if b["target"] == "aedes")
    # The wrapper's broker went with its process group.
    assert not [cmd for cmd in cmdlines() if "--port %d" % port_of(p.stdout, "aedes") in cmd]
    assert not leftovers(peers, p.stdout)

    for none in (("--peers", "none"), ("--no-peer",)):
        p = shootout("run", "--only", "mqtt", *none, *TINY, "--json", tmp_path / "n.json",
                     peers=peers)
        assert p.returncode == 0, p.stderr
        assert "measuring our servers alone" in p.stdout
        assert list(rows(table(p.stdout, "loadtest (throughput"))) == ["shootout"]
        assert "shootout/best other" not in p.stdout

    p = shootout("run", "--peers", "mosquitto,nats", peers=peers)
    assert p.returncode == 2
    assert "--peers: no contender 'nats' (see shootout peers)" in p.stderr


def test_rpc_rows_per_contender_and_protocol(tmp_path):
    peers = peers_dir(tmp_path, grpc_cpp="grpc", node_fastify="missing")
    out = tmp_path / "r.json"
    p = shootout("run", "--only", "rpc", "--runs", "1", "--scale", "0.02", "--html", "none",
                 "--json", out, peers=peers)
    assert p.returncode == 0, p.stderr
    sweep = rows(table(p.stdout, "gRPC vs REST: total time of N sequential calls"))
    assert list(sweep) == ["shootout REST", "shootout gRPC", "grpc-cpp gRPC",
                           "grpc-java gRPC, cold", "grpc-java gRPC, warm", "node-grpc gRPC",
                           "spring-rest REST, cold", "spring-rest REST, warm",
                           "node-fastify REST", "shootout gRPC/best other gRPC"], sweep
    assert "+/-" in sweep["grpc-cpp gRPC"]
    assert sweep["node-fastify REST"] == "not measured: not installed: apt-get install fake-broker"
    assert all(re.fullmatch(r"\d+\.\d\dx grpc-cpp gRPC", c)
               for c in re.split(r" {2,}", sweep["shootout gRPC/best other gRPC"]))
    doc = json.loads(out.read_text())
    names = {b["name"] for b in doc["benchmarks"]}
    assert "rpc-seq/grpc-cpp/grpc/100n1c" in names and "rpc-seq/shootout/rest/100n1c" in names
    assert {b["target_version"] for b in doc["benchmarks"] if b["target"] == "grpc-cpp"} == \
        {"fake car gRPC 1.0 (our car-server)"}
    assert not leftovers(peers, p.stdout)


def test_peers_command(tmp_path):
    peers = peers_dir(tmp_path, mosquitto="works", rabbitmq="missing")
    p = shootout("peers", peers=peers)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "the contenders of shootout run, from %s:" % peers
    assert lines[1].split() == ["name", "kind", "stack", "heavy", "installed", "version,", "or",
                                "how", "to", "install", "it"]
    table_rows = [re.split(r" {2,}", line) for line in lines[2:]]
    assert [r[0] for r in table_rows] == ALL_NAMES
    by_name = {r[0]: r for r in table_rows}
    assert by_name["mosquitto"][1:] == ["mqtt", "C, Mosquitto", "no", "yes",
                                        "fake broker 1.0 (our broker)"]
    assert by_name["rabbitmq"][3:] == ["yes", "no", "not installed: apt-get install fake-broker"]
    assert by_name["grpc-java"][1] == "grpc" and by_name["spring-rest"][1] == "rest"
    assert by_name["a2b-node"][3:] == ["no", "no",
                                       "not installed: no a2b-node/start (not in this tree)"]

    p = shootout("peers", "--help", peers=peers)
    assert p.returncode == 0 and p.stdout.startswith("usage: shootout peers")
    assert "SHOOTOUT_PEERS_DIR" in p.stdout
    p = shootout("peers", "extra", peers=peers)
    assert p.returncode == 2 and "unexpected argument 'extra'" in p.stderr


def test_the_repository_start_scripts_answer_version():
    """Every start script in peers/ follows the contract's --version:
    one line, exit 0 or 3."""
    root = os.path.join(os.path.dirname(os.path.dirname(HERE)), "peers")
    found = 0
    for name in sorted(os.listdir(root)):
        script = os.path.join(root, name, "start")
        if not os.access(script, os.X_OK):
            continue
        found += 1
        p = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=10)
        assert p.returncode in (0, 3), (name, p.returncode, p.stdout, p.stderr)
        assert len(p.stdout.splitlines()) == 1 and p.stdout.strip(), (name, p.stdout)
        if p.returncode == 3:
            assert re.match(r"(not installed|not built): ", p.stdout), (name, p.stdout)
    assert found >= 3  # mosquitto, grpc-cpp, a2b-node at least
