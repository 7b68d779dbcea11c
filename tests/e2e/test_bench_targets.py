"""`shootout bench mqtt-load` and `mqtt-ping` with several targets: the
connections go round-robin over them by the spread rule of docs/bench.md
(pair j's subscriber on target j, its publisher on target j + 1 with
--spread cross, on j with --spread local). Our brokers are not clustered
yet, so: two listeners of one broker carry cross-spread runs, two separate
brokers carry local-spread runs (each counts its share of the connections
in /metrics), and a cross-spread run over two separate brokers must miss
every message, which proves that each publisher was on the other broker."""

import json
import urllib.request

import pytest

from conftest import free_port
from test_bench import EXIT_MISSED, EXIT_USAGE, bench, bench_json, iterations

MESSAGES = 50


def metric(broker, name):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % broker.metrics_port, timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError("no %s in /metrics" % name)


@pytest.fixture
def metered(broker_factory):
    """broker_factory, with /metrics on a free port as b.metrics_port."""
    def start(**kw):
        port = free_port()
        b = broker_factory(extra_args=("--metrics-port", str(port)), **kw)
        b.metrics_port = port
        return b
    return start


def counts(brokers):
    return [(metric(b, "shootout_broker_connections_total"),
             metric(b, "shootout_broker_messages_received_total")) for b in brokers]


def deltas(before, after):
    return [(a[0] - b[0], a[1] - b[1]) for b, a in zip(before, after)]


def addr(b, port=None):
    return "127.0.0.1:%d" % (port or b.port)


@pytest.mark.shootout_only
def test_load_cross_over_two_listeners(metered, tmp_path):
    p2 = free_port()
    b = metered(conf="listener %d 127.0.0.1\n" % p2)
    doc, _ = bench_json(tmp_path, "mqtt-load", "--conns", 20, "--messages", MESSAGES, "--runs", 1,
                        "--target", "%s,%s" % (addr(b), addr(b, p2)))
    it = iterations(doc)[0]
    assert it["messages"]["received"] == 10 * MESSAGES
    assert it["target"] == "%s,%s" % (addr(b), addr(b, p2))


@pytest.mark.shootout_only
def test_load_local_over_two_brokers(metered, tmp_path):
    a, b = metered(), metered()
    before = counts([a, b])
    # repeated --target is the same as a comma-separated list
    doc, _ = bench_json(tmp_path, "mqtt-load", "--conns", 20, "--messages", MESSAGES, "--runs", 1,
                        "--spread", "local", "--target", addr(a), "--target", addr(b))
    assert iterations(doc)[0]["messages"]["received"] == 10 * MESSAGES
    # 10 pairs: 0, 2, 4, 6, 8 on a, the others on b, both ends of each
    assert deltas(before, counts([a, b])) == [(10, 5 * MESSAGES), (10, 5 * MESSAGES)]


@pytest.mark.shootout_only
def test_load_cross_over_unclustered_brokers_misses_everything(metered):
    a, b = metered(), metered()
    before = counts([a, b])
    p = bench("mqtt-load", "--conns", 20, "--messages", MESSAGES, "--runs", 1, "--timeout", 1,
              "--target", "%s,%s" % (addr(a), addr(b)))
    assert p.returncode == EXIT_MISSED, p.stdout + p.stderr
    assert "10 of 10 subscribers are missing messages" in p.stdout + p.stderr
    # each broker got its half of the connections, and the publishes of the
    # other's subscribers
    assert deltas(before, counts([a, b])) == [(10, 5 * MESSAGES), (10, 5 * MESSAGES)]


@pytest.mark.shootout_only
def test_ping_cross_over_two_listeners(metered, tmp_path):
    p2 = free_port()
    b = metered(conf="listener %d 127.0.0.1\n" % p2)
    doc, _ = bench_json(tmp_path, "mqtt-ping", "--pairs", 4, "--wsubs", 2, "--messages", MESSAGES,
                        "--runs", 1, "--target", "%s,%s" % (addr(b), addr(b, p2)))
    assert iterations(doc)[0]["messages"]["received"] == 2 * MESSAGES * (4 + 2)


@pytest.mark.shootout_only
def test_ping_local_over_two_brokers(metered, tmp_path):
    a, b = metered(), metered()
    before = counts([a, b])
    doc, _ = bench_json(tmp_path, "mqtt-ping", "--pairs", 4, "--wsubs", 2, "--messages", MESSAGES,
                        "--runs", 1, "--spread", "local", "--target", "%s,%s" % (addr(a), addr(b)))
    assert iterations(doc)[0]["messages"]["received"] == 2 * MESSAGES * (4 + 2)
    # pairs 0 and 2 on a, 1 and 3 on b; the wildcard subscribers with the
    # pair they watch (0), on a. Requests and replies: 2 per message per pair.
    assert deltas(before, counts([a, b])) == [(6, 4 * MESSAGES), (4, 4 * MESSAGES)]


@pytest.mark.shootout_only
def test_ping_cross_over_unclustered_brokers_misses(metered):
    a, b = metered(), metered()
    before = counts([a, b])
    p = bench("mqtt-ping", "--pairs", 4, "--wsubs", 2, "--messages", MESSAGES, "--runs", 1,
              "--timeout", 1, "--target", "%s,%s" % (addr(a), addr(b)))
    assert p.returncode == EXIT_MISSED, p.stdout + p.stderr
    # responders 0, 2 and requesters 1, 3 and wildcard subscriber 0 on a;
    # the first request of each pair went to the other broker and got no reply
    assert deltas(before, counts([a, b])) == [(5, 2), (5, 2)]


def test_target_list_refusals():
    for bad, why in (("127.0.0.1:1883,", "no usable host"),
                     ("127.0.0.1:1883,,127.0.0.1:1884", "no usable host"),
                     ("127.0.0.1:1883,127.0.0.1:99999", "port wants a whole number"),
                     (",".join(["127.0.0.1:%d" % (2000 + i) for i in range(17)]), "at most 16 targets")):
        for exp in ("mqtt-load", "mqtt-ping"):
            p = bench(exp, "--target", bad)
            assert p.returncode == EXIT_USAGE, (exp, bad, p.stdout, p.stderr)
            assert why in p.stderr, (exp, bad, p.stderr)


def test_help_documents_targets():
    for exp in ("mqtt-load", "mqtt-ping"):
        p = bench(exp, "--help")
        assert p.returncode == 0
        assert "--target HOST:PORT[,...]" in p.stdout and "--spread cross|local" in p.stdout
