"""`shootout compare` end to end: the real binary on two small results files
(tests/e2e/data/compare, written in the result model's shape: five runs of
two RPC points, one that regressed and one that improved, a point with two
runs, a failed iteration, a point whose every new run failed, and a point in
each file only), in every output
form, with --fail-on-regression's exit code, and on files it must refuse."""

import json
import os
import subprocess

import pytest

from conftest import SANITIZER_MARKERS, SHOOTOUT_BIN, require_shootout

EXIT_REGRESSION = 1
EXIT_USAGE = 2
DATA = os.path.join(os.path.dirname(__file__), "data", "compare")
OLD = os.path.join(DATA, "old.json")
NEW = os.path.join(DATA, "new.json")
REST = "rpc-seq/shootout/rest/500n1c"
GRPC = "rpc-seq/shootout/grpc/500n1c"


def compare(*args):
    require_shootout()
    p = subprocess.run([SHOOTOUT_BIN, "compare"] + [str(a) for a in args],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    for marker in SANITIZER_MARKERS:
        assert marker not in p.stderr, "sanitizer report:\n" + p.stderr
    return p


def ok(p, code=0):
    assert p.returncode == code, "exit %d\nstdout:\n%s\nstderr:\n%s" % (
        p.returncode, p.stdout, p.stderr)
    return p


def figures(doc):
    return {(f["name"], f["figure"]): f for f in doc["figures"]}


def test_table():
    out = ok(compare(OLD, NEW)).stdout
    lines = out.splitlines()
    header = next(l for l in lines if l.startswith("point"))
    for title in ("figure", "old", "new", "ratio", "delta", "p", "runs"):
        assert title in header.split()
    rest = next(l for l in lines if l.startswith(REST))
    assert "throughput call/s" in rest and "10000" in rest and "8000" in rest
    assert "0.800" in rest and "-20.00%" in rest and "worse" in rest
    grpc = next(l for l in lines if l.startswith(GRPC))
    assert "+10.00%" in grpc and "better" in grpc
    # p50 of grpc moved 0.5%: significant, but under the 1% noise threshold.
    p50 = lines[lines.index(grpc) + 1]
    assert "p50 us" in p50 and " ~ " in p50 and "p=0.008" in p50
    few = next(l for l in lines if l.startswith("mqtt-load/shootout/100c"))
    assert "too few runs" in few and "2+2" in few
    assert "only in old: mqtt-load/mosquitto/100c" in lines
    assert "only in new: mqtt-load/mosquitto/5000c" in lines
    assert ("in both, no figure to compare: rpc-seq/grpc-c++/grpc/500n1c"
            " (failed runs: 0 old, 2 new)") in lines
    assert "too few runs: " in out and "at least 1%" in out
    # The failed iteration of the new file is not a sample: still 5+5.
    assert "5+6" not in out
    # Every row of the table lines up: each column starts where its title does.
    start = header.index("runs")
    for l in lines[lines.index(header) + 1:lines.index(header) + 15]:
        assert l[start - 1] == " " and l[start:start + 3].strip()[:1].isdigit(), l


def test_files_from_different_machines_are_warned_about(tmp_path):
    # The fixtures come from one machine: no warning.
    assert "warning" not in ok(compare(OLD, NEW)).stderr
    doc = json.load(open(NEW))
    doc["context"].update(host_name="other", num_cpus=16, cpu_model="Some CPU")
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    p = ok(compare(OLD, other))
    assert ("shootout compare: warning: the files come from different machines (host fixture vs other; "
            "CPUs 2 vs 16)") in p.stderr
    # The comparison itself is the same, but for the file's name and host.
    assert p.stdout.split("\n", 2)[2] == ok(compare(OLD, NEW)).stdout.split("\n", 2)[2]


def test_markdown():
    out = ok(compare("--format", "markdown", OLD, NEW)).stdout
    assert "| point | figure | old | new | ratio | delta | p | runs | note |" in out
    row = next(l for l in out.splitlines() if l.startswith("| %s | throughput" % REST))
    assert row.count("|") == 10 and "-20.00%" in row
    assert "- only in old: `mqtt-load/mosquitto/100c`" in out
    assert "- only in new: `mqtt-load/mosquitto/5000c`" in out
    assert "- in both, no figure to compare: `rpc-seq/grpc-c++/grpc/500n1c`" in out


def test_json():
    doc = json.loads(ok(compare("-f", "json", OLD, NEW)).stdout)
    assert doc["schema_version"] == 1 and doc["alpha"] == 0.05 and doc["noise_pct"] == 1
    assert doc["old"]["path"] == OLD and doc["new"]["date"] == "2026-12-02T10:00:00Z"
    f = figures(doc)
    t = f[(REST, "throughput")]
    assert t["unit"] == "call/s" and t["better"] == "higher"
    assert t["old"]["median"] == 10000 and t["new"]["median"] == 8000
    assert len(t["old"]["values"]) == 5 and len(t["new"]["values"]) == 5
    assert t["verdict"] == "worse" and abs(t["delta_pct"] + 20) < 1e-9
    assert abs(t["p"] - 2 / 252) < 1e-12 and t["regression"] is False
    assert f[(REST, "p99.9")]["better"] == "lower" and f[(REST, "p99.9")]["verdict"] == "worse"
    assert f[(GRPC, "throughput")]["verdict"] == "better"
    assert f[(GRPC, "p50")]["verdict"] == "same"
    assert f[(GRPC, "server CPU")]["unit"] == "us/op"
    assert f[("mqtt-load/shootout/100c", "throughput")]["verdict"] == "too_few_runs"
    assert ("mqtt-load/shootout/100c", "p50") not in f  # no latency in that experiment
    assert doc["only_old"] == ["mqtt-load/mosquitto/100c"]
    assert doc["only_new"] == ["mqtt-load/mosquitto/5000c"]
    assert doc["not_compared"] == [
        {"name": "rpc-seq/grpc-c++/grpc/500n1c", "old_failed": 0, "new_failed": 2}]
    assert doc["fail_on_regression_pct"] is None and doc["regressions"] == 0


def test_fail_on_regression():
    # Throughput -20% and latency +25%: five regressions past 15%, none past 30%.
    p = ok(compare("--fail-on-regression", "15", OLD, NEW), EXIT_REGRESSION)
    assert "5 regressions worse than 15%" in p.stdout
    assert "REGRESSION" in next(l for l in p.stdout.splitlines() if l.startswith(REST))
    doc = json.loads(ok(compare("-f", "json", "--fail-on-regression", "22", OLD, NEW),
                        EXIT_REGRESSION).stdout)
    assert doc["regressions"] == 4 and not figures(doc)[(REST, "throughput")]["regression"]
    ok(compare("--fail-on-regression", "30", OLD, NEW))
    # Swapped, the improvement is a regression.
    p = ok(compare("--fail-on-regression", "5", NEW, OLD), EXIT_REGRESSION)
    grpc = next(l for l in p.stdout.splitlines() if l.startswith(GRPC))
    assert "-9.09%" in grpc and "REGRESSION" in grpc


def test_html(tmp_path):
    page = tmp_path / "compare.html"
    ok(compare("--fail-on-regression", "15", "--html", page, OLD, NEW), EXIT_REGRESSION)
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert "<script" not in html and "http://" not in html and "https://" not in html
    assert html.count('<tr class="REGRESSION">') == 5 and '<tr class="better">' in html
    assert "<li>mqtt-load/mosquitto/100c</li>" in html
    assert "<li>mqtt-load/mosquitto/5000c</li>" in html
    assert "<li>rpc-seq/grpc-c++/grpc/500n1c (failed runs: 0 old, 2 new)</li>" in html
    assert "p &lt; 0.05" in html


def test_same_file_is_all_same():
    doc = json.loads(ok(compare("-f", "json", "--fail-on-regression", "0", OLD, OLD)).stdout)
    assert {f["verdict"] for f in doc["figures"]} <= {"same", "too_few_runs"}
    assert doc["only_old"] == [] and doc["only_new"] == [] and doc["not_compared"] == []


@pytest.mark.parametrize("text, says", [
    ("", "ends early"),
    ("{\"schema_version\": 1, \"benchmarks\": [{\"name\": \"x\", ", "ends early"),
    ("{\"benchmarks\": []}", "not a shootout results file"),
    ("[]", "not a shootout results file"),
    ("{\"schema_version\": 1, \"benchmarks\": [{\"name\": \"x\",, }]}", "malformed JSON"),
    ("{\"schema_version\": 1, \"benchmarks\": [{\"name\": \"x\", \"run_type\": \"iteration\","
     " \"throughput\": {\"value\": \"fast\"}}]}", "value is not a number"),
])
def test_malformed(tmp_path, text, says):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    for args in ((bad, NEW), (OLD, bad)):
        p = ok(compare(*args), EXIT_USAGE)
        assert p.stdout == ""
        line = p.stderr.strip()
        assert line.startswith("shootout compare: %s: byte " % bad) and says in line, line


@pytest.mark.parametrize("args, says", [
    ((OLD,), "wants two results files"),
    ((OLD, NEW, NEW), "wants two results files"),
    (("--format", "xml", OLD, NEW), "--format wants text, markdown (or md) or json"),
    (("--alpha", "0", OLD, NEW), "--alpha wants a number above 0"),
    (("--fail-on-regression", "-1", OLD, NEW), "--fail-on-regression wants a percentage"),
    (("/nonexistent/old.json", NEW), "/nonexistent/old.json"),
    (("--html", "/nonexistent/dir/page.html", OLD, NEW), "cannot write /nonexistent/dir"),
])
def test_usage(args, says):
    p = ok(compare(*args), EXIT_USAGE)
    assert says in p.stderr, p.stderr


def test_help_states_defaults():
    out = " ".join(ok(compare("--help")).stdout.split())
    assert "(default 0.05)" in out and "(default 1)" in out and "--runs 4" in out
    assert "exit status: 0" in out
