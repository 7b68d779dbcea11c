"""`shootout bench ... --shard I/N --start-at T` and `shootout merge`, end to
end: N shard processes on loopback against our broker and car-server (and
http-open's fake server, whose log shows which feeder records each shard
used), their results merged and set against one unsharded run of the same
options; repetitions that start together (--start-every); per-second
series, latency included, merged by wall-clock second.

What is comparable, honestly: the counts (messages, calls, histogram
samples) are the experiment's, so they must equal the unsharded run's
exactly. Latencies are not: two runs never see the same latencies, and N
processes on a 2-core machine compete with each other. So the merge itself
is checked exactly (the merged histogram is the shards' added bucket by
bucket, its percentiles those of the sum to the histogram's precision, 1/256
of the value plus the bucket midpoint's half width), and against the
unsharded run only the counts. Not even that each run's median lies within
the other's range: three processes competing for 2 cores and one process
with three calls in flight are different experiments in time (CI saw the
shards' fastest call, 15.8 us, slower than the unsharded run's median,
14.8). No timing assertions."""

import json
import math
import subprocess
import time

import pytest

from conftest import HOST, SANITIZER_MARKERS, SHOOTOUT_BIN, require_shootout
from test_bench import iterations, target
from test_bench_http_open import fake  # noqa: F401 (a fixture)

EXIT_RUNTIME = 1
EXIT_USAGE = 2
TIMEOUT = 120

# hist.h's layout: exact below 256, then 128 sub-buckets per power of two.
SUB_BITS = 7
SUB = 1 << SUB_BITS


def bucket_low(b):
    if b < 2 * SUB:
        return b
    return (SUB + b % SUB) << (b // SUB - 1)


def bucket_width(b):
    return 1 if b < 2 * SUB else 1 << (b // SUB - 1)


def percentile_ns(h, p):
    """hist_percentile in Python: the midpoint of the bucket holding the
    sample of rank ceil(p/100 * count), clamped to [min, max]."""
    rank = min(max(math.ceil(p / 100.0 * h["count"]), 1), h["count"])
    seen = 0
    for b, n in h["buckets"]:
        seen += n
        if seen >= rank:
            v = bucket_low(b) + bucket_width(b) // 2
            return min(max(v, h["min"]), h["max"])
    raise AssertionError("rank beyond the buckets")


def check_clean(p):
    for marker in SANITIZER_MARKERS:
        assert marker not in p.stderr, "sanitizer report:\n" + p.stderr


def run_shards(tmp_path, experiment, n, *args, start_in=2.0, start=None):
    """Starts n shard processes together (--start-at now + start_in, or
    start) and returns their JSON paths once all have exited 0."""
    require_shootout()
    start = start or time.time() + start_in
    procs, paths = [], []
    for i in range(n):
        path = tmp_path / ("shard%d.json" % i)
        paths.append(path)
        procs.append(subprocess.Popen(
            [SHOOTOUT_BIN, "bench", experiment] + [str(a) for a in args] +
            ["--shard", "%d/%d" % (i, n), "--start-at", "%.3f" % start, "--json", str(path)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for i, p in enumerate(procs):
        out, err = p.communicate(timeout=TIMEOUT)
        assert p.returncode == 0, "shard %d exit %d:\n%s\n%s" % (i, p.returncode, out, err)
        for marker in SANITIZER_MARKERS:
            assert marker not in err, "sanitizer report from shard %d:\n%s" % (i, err)
    return paths


def unsharded(tmp_path, experiment, *args):
    path = tmp_path / "whole.json"
    p = subprocess.run([SHOOTOUT_BIN, "bench", experiment] + [str(a) for a in args] +
                       ["--json", str(path)], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=TIMEOUT)
    check_clean(p)
    assert p.returncode == 0, p.stderr
    with open(path) as f:
        return json.load(f)


def merge(*paths):
    require_shootout()
    p = subprocess.run([SHOOTOUT_BIN, "merge"] + [str(x) for x in paths],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT)
    check_clean(p)
    return p


def merged_doc(*paths):
    p = merge(*paths)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), p


def load(path):
    with open(path) as f:
        return json.load(f)


def check_merge_exact(merged, shards):
    """The merged row against its shards: counters summed, the histogram
    added bucket by bucket, percentiles those of the sum."""
    rows = [iterations(s)[0] for s in shards]
    m = iterations(merged)[0]
    for key in ("sent", "received", "lost"):
        assert m["messages"][key] == sum(r["messages"][key] for r in rows), key
    assert m["client"]["cpu_s"] == pytest.approx(sum(r["client"]["cpu_s"] for r in rows))
    assert m["shard"]["count"] == len(shards) and "index" not in m["shard"]
    assert m["shard"]["window_start"] == min(r["shard"]["window_start"] for r in rows)
    assert m["shard"]["window_end"] == max(r["shard"]["window_end"] for r in rows)
    assert m["duration_s"] == pytest.approx(m["shard"]["window_end"] - m["shard"]["window_start"])
    if m["latency"] is None:
        return
    total = {}
    for r in rows:
        for b, n in r["latency"]["histogram"]["buckets"]:
            total[b] = total.get(b, 0) + n
    h = m["latency"]["histogram"]
    assert dict(h["buckets"]) == total
    assert h["count"] == sum(r["latency"]["histogram"]["count"] for r in rows)
    assert h["min"] == min(r["latency"]["histogram"]["min"] for r in rows)
    assert h["max"] == max(r["latency"]["histogram"]["max"] for r in rows)
    assert int(h["sum"]) == sum(int(r["latency"]["histogram"]["sum"]) for r in rows)
    for key, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p99_9", 99.9)):
        assert m["latency"][key] == pytest.approx(percentile_ns(h, p) / 1e3, abs=1e-3), key


def check_against_unsharded(merged, whole):
    m, w = iterations(merged)[0], iterations(whole)[0]
    assert m["name"] == w["name"] and m["config"] == w["config"]
    for key in ("sent", "received", "lost"):
        assert m["messages"][key] == w["messages"][key], key
    if w["latency"] is None:
        assert m["latency"] is None
        return
    assert m["latency"]["histogram"]["count"] == w["latency"]["histogram"]["count"]


def test_rpc_seq_three_shards(car_server, tmp_path):
    args = ("--target", "%s:%d" % (HOST, car_server.rest_port), "--requests", 3000,
            "--concurrency", 3)
    paths = run_shards(tmp_path, "rpc-seq", 3, *args)
    shards = [load(p) for p in paths]
    assert [iterations(s)[0]["messages"]["sent"] for s in shards] == [1000, 1000, 1000]
    merged, _ = merged_doc(*paths)
    assert merged["schema_version"] == 1
    check_merge_exact(merged, shards)
    check_against_unsharded(merged, unsharded(tmp_path, "rpc-seq", *args))
    # The order the files are given in does not matter.
    again, _ = merged_doc(paths[2], paths[0], paths[1])
    assert iterations(again)[0]["latency"] == iterations(merged)[0]["latency"]


def test_mqtt_load_three_shards(broker, tmp_path):
    args = ("--target", target(broker), "--conns", 60, "--messages", 300)
    paths = run_shards(tmp_path, "mqtt-load", 3, *args)
    shards = [load(p) for p in paths]
    assert [iterations(s)[0]["messages"]["received"] for s in shards] == [3000] * 3
    merged, _ = merged_doc(*paths)
    check_merge_exact(merged, shards)
    check_against_unsharded(merged, unsharded(tmp_path, "mqtt-load", *args))
    assert iterations(merged)[0]["messages"]["received"] == 30 * 300


def test_mqtt_ping_three_shards_with_repetitions(broker, tmp_path):
    args = ("--target", target(broker), "--pairs", 9, "--wsubs", 3, "--messages", 100,
            "--runs", 2)
    paths = run_shards(tmp_path, "mqtt-ping", 3, *args, "--start-every", "4s")
    shards = [load(p) for p in paths]
    merged, _ = merged_doc(*paths)
    its = iterations(merged)
    assert len(its) == 2
    assert [b["aggregate_name"] for b in merged["benchmarks"] if b["run_type"] == "aggregate"] \
        == ["mean", "median", "stddev"]
    check_merge_exact({"benchmarks": [its[0]]}, [{"benchmarks": [iterations(s)[0]]} for s in shards])
    whole = unsharded(tmp_path, "mqtt-ping", *args)
    check_against_unsharded(merged, whole)


def test_merge_refuses_what_is_not_one_run(car_server, broker, tmp_path):
    rest = ("--target", "%s:%d" % (HOST, car_server.rest_port), "--concurrency", 3,
            "--requests", 300)
    for d in ("a", "b", "c"):
        (tmp_path / d).mkdir()
    a = run_shards(tmp_path / "a", "rpc-seq", 3, *rest)
    b = run_shards(tmp_path / "b", "rpc-seq", 3, *rest[:-1], 600)  # another run
    two = run_shards(tmp_path / "c", "rpc-seq", 2, *rest)
    cases = [
        ((a[0], a[1]), "shard 2/3 is missing"),
        ((a[0], a[0], a[2]), "shard 0/3 is given twice"),
        ((a[0], b[1], a[2]), "are not shards of one run"),
    ]
    unsharded(tmp_path, "rpc-seq", *rest)
    whole = tmp_path / "whole.json"
    cases.append(((whole,), "is not one shard's results"))
    cases.append(((a[0], a[1], two[1]), "but"))
    cut = tmp_path / "cut.json"
    cut.write_text(a[0].read_text()[:200])
    cases.append(((cut, a[1], a[2]), "ends early"))
    for files, message in cases:
        p = merge(*files)
        assert p.returncode == EXIT_USAGE, (files, p.stderr)
        assert message in p.stderr, (message, p.stderr)
        assert p.stdout == ""


def test_merge_flags_a_saturated_shard(car_server, tmp_path):
    paths = run_shards(tmp_path, "rpc-seq", 2, "--target", "%s:%d" % (HOST, car_server.rest_port),
                       "--concurrency", 2, "--requests", 200)
    doc = load(paths[1])
    row = iterations(doc)[0]
    row["client"]["cpu_s"] = row["duration_s"]  # one core busy all the window
    with open(paths[1], "w") as f:
        json.dump(doc, f)
    merged, p = merged_doc(*paths)
    assert "shard 1/2" in p.stderr and "client's limit" in p.stderr
    assert iterations(merged)[0]["shard"]["saturated"] == [1]


@pytest.mark.parametrize("args, message", [
    (("--shard", "3/3"), "--shard wants I/N"),
    (("--shard", "1"), "--shard wants I/N"),
    (("--shard", "-1/2"), "--shard wants I/N"),
    (("--shard", "0/65"), "--shard wants I/N"),
    (("--start-at", "tomorrow"), "--start-at wants unix seconds or an RFC 3339 time"),
    (("--start-at", "2026-13-02T07:30:00Z"), "--start-at wants"),
    (("--shard", "0/4", "--concurrency", 3), "--concurrency 3 cannot be split over 4 shards"),
])
def test_shard_options_refused(args, message):
    require_shootout()
    p = subprocess.run([SHOOTOUT_BIN, "bench", "rpc-seq"] + [str(a) for a in args],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == EXIT_USAGE, p.stderr
    assert message in p.stderr


def test_start_at_long_past_fails_the_run(car_server, tmp_path):
    out = tmp_path / "late.json"
    p = subprocess.run([SHOOTOUT_BIN, "bench", "rpc-seq", "--target",
                        "%s:%d" % (HOST, car_server.rest_port), "--requests", "10", "--shard", "0/1",
                        "--start-at", "2020-01-01T00:00:00+01:00", "--json", str(out)],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == EXIT_RUNTIME, p.stderr
    assert "would not run with the others" in p.stderr
    p = subprocess.run([SHOOTOUT_BIN, "bench", "rpc-seq", "--target",
                        "%s:%d" % (HOST, car_server.rest_port), "--requests", "10",
                        "--start-at", "%d" % (time.time() + 3 * 86400)],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == EXIT_RUNTIME, p.stderr
    assert "more than a day" in p.stderr


def check_series_merged(merged, shards):
    """The merged per-second series: each shard's second t at the merged
    window's second t + its offset, throughput and latency buckets summed,
    each second's p50 and p99 those of the summed buckets."""
    m = iterations(merged)[0]
    start = m["shard"]["window_start"]
    total, buckets = {}, {}
    for doc in shards:
        r = iterations(doc)[0]
        off = int(math.floor(r["shard"]["window_start"] - start + 0.5))
        for t, pt in enumerate(r["series"]["points"]):
            total[off + t] = total.get(off + t, 0) + pt["throughput"]
            b = buckets.setdefault(off + t, {})
            for i, n in pt["lat_us_buckets"]:
                b[i] = b.get(i, 0) + n
    pts = m["series"]["points"]
    assert len(pts) == max(total) + 1
    for t, pt in enumerate(pts):
        assert pt["throughput"] == pytest.approx(total.get(t, 0)), t
        assert dict(pt["lat_us_buckets"]) == buckets.get(t, {}), t
        if buckets.get(t):
            assert pt["p50_ms"] == pytest.approx(seclat_percentile_ms(buckets[t], 50)), t
            assert pt["p99_ms"] == pytest.approx(seclat_percentile_ms(buckets[t], 99)), t


def seclat_bucket_mid_us(b):
    """report/seclat.h's bucket midpoints: exact below 16 us, then 8 buckets
    per power of two."""
    if b < 16:
        return b
    msb, sub = (b - 16) // 8 + 4, (b - 16) % 8
    return (8 + sub) * (1 << (msb - 3)) + (1 << (msb - 3)) / 2


def seclat_percentile_ms(buckets, p):
    n = sum(buckets.values())
    rank, seen = max(math.ceil(p / 100.0 * n), 1), 0
    for b in sorted(buckets):
        seen += buckets[b]
        if seen >= rank:
            return seclat_bucket_mid_us(b) / 1e3
    raise AssertionError("rank beyond the buckets")


def test_per_second_latency_merged(broker, tmp_path):
    args = ("--target", target(broker), "--pairs", 4, "--wsubs", 2, "--messages", 4000)
    paths = run_shards(tmp_path, "mqtt-ping", 2, *args)
    shards = [load(p) for p in paths]
    for doc in shards:  # the pingtest's series carries latency per second
        pts = iterations(doc)[0]["series"]["points"]
        assert pts and all("lat_us_buckets" in pt for pt in pts)
        assert sum(n for pt in pts for _, n in pt["lat_us_buckets"]) == 4000 * 2
        assert any(pt.get("p99_ms", 0) > 0 for pt in pts)
    merged, _ = merged_doc(*paths)
    check_series_merged(merged, shards)


HC_SCENARIO = """scenario hc
feed id 1 1000
request GET /healthz?id=${id} health
pause 0.01
request GET /healthz ping
"""


def test_http_open_two_shards(car_server, tmp_path):
    scn = tmp_path / "hc.scn"
    scn.write_text(HC_SCENARIO)
    args = ("--target", "%s:%d" % (HOST, car_server.rest_port), "--scenario", scn,
            "--inject", "constant-users-per-sec 60 2s", "--inject", "at-once 7", "--threads", 2)
    paths = run_shards(tmp_path, "http-open", 2, *args)
    shards = [load(p) for p in paths]
    rows = [iterations(s)[0] for s in shards]
    # Each shard every other arrival of the whole profile: 60 and 3 or 4.
    assert sorted(r["http_open"]["users_started"] for r in rows) == [63, 64]
    assert [r["http_open"]["levels"][0]["load_from"] for r in rows] == [30, 30]
    merged, _ = merged_doc(*paths)
    check_merge_exact(merged, shards)
    whole = unsharded(tmp_path, "http-open", *args)
    check_against_unsharded(merged, whole)
    m, w = iterations(merged)[0]["http_open"], iterations(whole)[0]["http_open"]
    # The merged report: what counts is the unsharded run's exactly...
    assert m["users_started"] == w["users_started"] == 127
    assert m["requests_sent"] == w["requests_sent"] == 254
    assert m["global"]["count"] == w["global"]["count"]
    for mr, wr in zip(m["requests"], w["requests"]):
        assert (mr["name"], mr["count"], mr["ok"]) == (wr["name"], wr["count"], wr["ok"])
    assert m["errors"]["server_total"] == w["errors"]["server_total"] == 0
    # ... each request's histogram is the shards' added bucket by bucket,
    # its percentiles those of the sum ...
    for i, mr in enumerate(m["requests"]):
        total = {}
        for r in rows:
            for b, n in r["http_open"]["requests"][i]["histogram"]["buckets"]:
                total[b] = total.get(b, 0) + n
        assert dict(mr["histogram"]["buckets"]) == total
        assert mr["p95_ms"] == pytest.approx(percentile_ns(mr["histogram"], 95) / 1e6, abs=1e-6)
    # ... the levels' loads and rates sum to the unsharded run's ...
    for ml, wl in zip(m["levels"], w["levels"]):
        assert ml["load_from"] == wl["load_from"]
        assert ml["requests"] == wl["requests"]
        assert ml["rps"] == pytest.approx(sum(r["http_open"]["levels"][0]["rps"] for r in rows))
        assert ml["rps"] == pytest.approx(wl["rps"], rel=0.05)
    # ... and the series is the shards' by wall-clock second.
    assert sum(s["requests"] for s in m["series"]) == 254
    assert sum(n for s in m["series"] for _, n in s["lat_us_buckets"]) == m["global"]["ok"]
    assert len(iterations(merged)[0]["series"]["points"]) == len(m["series"])


FEED_SCENARIO = """scenario feed
feed-csv {csv} queue
feed u 1 9
request GET /item/${{rec}}?u=${{u}} item
"""


def test_http_open_shards_feed_disjoint_records(fake, tmp_path):
    csv = tmp_path / "recs.csv"
    csv.write_text("rec\n" + "".join("%d\n" % i for i in range(100, 110)))
    scn = tmp_path / "feed.scn"
    scn.write_text(FEED_SCENARIO.format(csv=csv))
    seen = []
    for i in range(3):  # one after the other, to tell their requests apart
        before = len(fake.paths("/item/"))
        p = subprocess.run([SHOOTOUT_BIN, "bench", "http-open", "--target", fake.target,
                            "--scenario", str(scn), "--inject", "at-once 10", "--shard",
                            "%d/3" % i], stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=TIMEOUT)
        check_clean(p)
        # Each shard starts every third of the 10 users, as many as its
        # records of the queue feeder (the fake answers 404 for them).
        assert p.returncode == 0, p.stderr
        paths = fake.paths("/item/")[before:]
        recs = [int(x.split("/")[2].split("?")[0]) for x in paths]
        us = [int(x.split("u=")[1]) for x in paths]
        # record j goes to shard j mod 3; the range 1..9 in blocks of 3
        assert sorted(recs) == [100 + j for j in range(10) if j % 3 == i]
        assert all(3 * i + 1 <= u <= 3 * i + 3 for u in us), us
        seen += recs
    assert sorted(seen) == list(range(100, 110))


def test_runs_start_together(car_server, tmp_path):
    start = time.time() + 2
    paths = run_shards(tmp_path, "rpc-seq", 2, "--target",
                       "%s:%d" % (HOST, car_server.rest_port), "--requests", 400,
                       "--concurrency", 2, "--runs", 2, "--start-every", "3s", start=start)
    for path in paths:
        for r in iterations(load(path)):
            k = r["repetition_index"]
            began = r["shard"]["window_start"] - r["setup_s"]
            assert r["shard"]["start_at"] == pytest.approx(start, abs=1e-3)
            # run k of every shard starts at --start-at + k x 3 s
            assert start + 3 * k - 0.01 <= began < start + 3 * k + 0.5, (path, k, began - start)
    merged, _ = merged_doc(*paths)
    its = iterations(merged)
    # (the same 10 ms allowance as above: the times pass through the JSON
    # and back, and the merged window is the earliest shard's)
    assert len(its) == 2 and its[1]["shard"]["window_start"] >= start + 3 - 0.01
    assert [i["messages"]["sent"] for i in its] == [400, 400]


def test_start_every_too_short_fails(car_server, tmp_path):
    require_shootout()
    scn = tmp_path / "hc.scn"
    scn.write_text(HC_SCENARIO)
    # A profile of 2.5 s cannot start again a second later.
    p = subprocess.run([SHOOTOUT_BIN, "bench", "http-open", "--target",
                        "%s:%d" % (HOST, car_server.rest_port), "--scenario", str(scn),
                        "--inject", "constant-users-per-sec 4 2500ms", "--runs", "2",
                        "--start-every", "1s", "--start-at", "%.3f" % (time.time() + 0.5)],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT)
    check_clean(p)
    assert p.returncode == EXIT_RUNTIME, p.stderr
    assert "outlasted --start-every" in p.stderr


@pytest.mark.parametrize("experiment, args, message", [
    ("rpc-seq", ("--runs", 2, "--start-at", "%d" % (time.time() + 600)),
     "--runs 2 with --start-at needs --start-every"),
    ("rpc-seq", ("--start-every", "5s"), "--start-every needs --start-at"),
    ("http-open", ("--shard", "0/2", "--until-saturated"), "--until-saturated cannot be sharded"),
])
def test_start_every_and_http_open_shard_refused(experiment, args, message):
    require_shootout()
    p = subprocess.run([SHOOTOUT_BIN, "bench", experiment] + [str(a) for a in args],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == EXIT_USAGE, p.stderr
    assert message in p.stderr


def test_http_open_shard_needs_a_record_each(tmp_path):
    require_shootout()
    csv = tmp_path / "two.csv"
    csv.write_text("rec\n1\n2\n")
    scn = tmp_path / "s.scn"
    scn.write_text("scenario s\nfeed-csv %s\nrequest GET /x x\n" % csv)
    p = subprocess.run([SHOOTOUT_BIN, "bench", "http-open", "--scenario", str(scn), "--shard",
                        "0/3"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=TIMEOUT)
    assert p.returncode == EXIT_USAGE, p.stderr
    assert "has 2 records, fewer than the 3 shards" in p.stderr
