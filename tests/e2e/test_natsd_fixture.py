"""The NATS test fixture (natsd.py, nats_raw.py) works, and so does the C
toolchain the broker cluster will use: a lone server and a 3-node cluster
start on loopback with JetStream, route messages (across nodes too), create
a replicated stream, stop; and the libnats smoke program
(tests/e2e/nats_smoke.c, built by make) talks to them through subjects
mapped by cluster/subject.c.
"""

import json
import os
import subprocess
import time

import pytest

from conftest import SHOOTOUT_BIN, need, start_nats
import natsd


def test_lone_server_pub_sub(nats_server):
    sub = nats_server.client()
    sid = sub.sub("mqtt.t.a.>")
    sub.flush()
    pub = nats_server.client()
    pub.pub("mqtt.t.a.b", b"hello")
    pub.pub("mqtt.t.other", b"not for us")
    pub.flush()
    subject, got_sid, reply, payload = sub.next_msg()
    assert (subject, got_sid, reply, payload) == ("mqtt.t.a.b", sid, None, b"hello")
    assert sub.no_msg()
    sub.close()
    pub.close()


def test_lone_server_jetstream(nats_server):
    c = nats_server.client()
    info = json.loads(c.request("$JS.API.INFO"))
    assert info["type"] == "io.nats.jetstream.api.v1.account_info_response", info
    c.close()
    # the store is in the fixture's directory, not the system's
    assert nats_server.varz()["jetstream"]["config"]["store_dir"].startswith(nats_server.dir)


def _drain(c, wait=0.5):
    out = []
    while True:
        try:
            out.append(c.next_msg(timeout=wait))
        except TimeoutError:
            return out


def test_queue_group(nats_server):
    """Two members of one queue group share the messages, each message to
    exactly one of them (what shared subscriptions will use)."""
    a, b = nats_server.client(), nats_server.client()
    a.sub("q.y", queue="g")
    b.sub("q.y", queue="g")
    a.flush()
    b.flush()
    pub = nats_server.client()
    for i in range(40):
        pub.pub("q.y", b"%d" % i)
    pub.flush()
    ga = [int(m[3]) for m in _drain(a)]
    gb = [int(m[3]) for m in _drain(b)]
    assert sorted(ga + gb) == list(range(40))
    for c in (a, b, pub):
        c.close()


def test_cluster_routes_across_nodes(nats_cluster):
    assert len(nats_cluster.nodes) == 3
    assert len(set(n.port for n in nats_cluster.nodes)) == 3
    subs = [n.client() for n in nats_cluster.nodes]
    for s in subs:
        s.sub("mqtt.t.x.*")
        s.flush()
    pub = nats_cluster.nodes[0].client()
    # interest propagates over the routes asynchronously: publish until the
    # far nodes see one, bounded
    for i in range(50):
        pub.pub("mqtt.t.x.y", b"m%d" % i)
        pub.flush()
        try:
            subs[2].next_msg(timeout=0.1)
            subs[1].next_msg(timeout=0.5)
            break
        except TimeoutError:
            continue
    else:
        pytest.fail("no message crossed the cluster: %s" % nats_cluster.logs()[-2000:])
    for c in subs + [pub]:
        c.close()


def test_cluster_jetstream_r3(nats_cluster):
    """A stream with three replicas can be created and written: the cluster's
    JetStream has a meta leader and all three nodes' storage."""
    c = nats_cluster.nodes[1].client(timeout=15)
    cfg = {"name": "E2E", "subjects": ["e2e.>"], "num_replicas": 3, "storage": "file"}
    r = json.loads(c.request("$JS.API.STREAM.CREATE.E2E", json.dumps(cfg).encode(), timeout=15))
    assert "error" not in r, r
    assert r["config"]["num_replicas"] == 3
    ack = json.loads(c.request("e2e.one", b"payload", timeout=15))
    assert ack.get("stream") == "E2E" and ack.get("seq") == 1, ack
    c.close()


def test_kill_and_restart_node(nats_cluster):
    n = nats_cluster.nodes[2]
    n.kill()
    assert not n.running()
    n.start()
    n.wait_ready(time.monotonic() + natsd.START_TIMEOUT)
    c = n.client()
    c.flush()
    c.close()


def test_stop_removes_everything():
    cluster = start_nats(1)
    node = cluster.nodes[0]
    d = cluster.dir
    assert os.path.isdir(os.path.join(node.dir, "js"))
    cluster.destroy()
    assert not node.running() and node.proc.returncode == 0, node.server_log(500)
    assert not os.path.exists(d)


def test_missing_binary_says_why(monkeypatch):
    monkeypatch.setenv("SHOOTOUT_NATS_SERVER", "/nonexistent/nats-server")
    with pytest.raises(natsd.NatsUnavailable, match="SHOOTOUT_NATS_SERVER"):
        natsd.NatsCluster(1)


# ---- the C client: tests/e2e/nats_smoke.c, linked with libnats by make

SMOKE = os.environ.get("SHOOTOUT_NATS_SMOKE",
                       os.path.join(os.path.dirname(SHOOTOUT_BIN), "tests", "nats_smoke"))


def run_smoke(urls, topic, filter_):
    need(os.access(SMOKE, os.X_OK), "no %s (make builds it; set SHOOTOUT_NATS_SMOKE)" % SMOKE)
    return subprocess.run([SMOKE, urls, topic, filter_], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("topic,filter_", [
    ("a/b", "a/#"),
    ("a", "a/#"),                      # the parent level, through the second subscription
    ("sp ace/dot.ted/*/>", "+/+/*/>"),
    ("$SYS/broker/load", "$SYS/#"),
    ("caf\u00e9//x", "#"),
])
def test_c_client_round_trip(nats_server, topic, filter_):
    r = run_smoke(nats_server.url, topic, filter_)
    assert r.returncode == 0, r.stdout + r.stderr
    # it says what it sent and got: the mapped subject and the topic back
    assert "received %s" % topic in r.stdout, r.stdout


def test_c_client_leading_wildcard_misses_dollar(nats_server):
    r = run_smoke(nats_server.url, "$SYS/x", "#")
    assert r.returncode == 3, r.stdout + r.stderr   # 3: nothing received, as MQTT wants
    assert "nothing received" in r.stdout


def test_c_client_across_cluster(nats_cluster):
    """Subscribing on one node and publishing on another: the smoke connects
    its subscriber to the first URL and its publisher to the last."""
    urls = [n.url for n in nats_cluster.nodes]
    r = run_smoke(urls[0] + "," + urls[2], "x/y", "x/+")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "received x/y" in r.stdout
