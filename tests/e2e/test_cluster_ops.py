"""The broker cluster in operation (docs/cluster.md, "Figures" and "Failure
behaviour"; issue 15): each node's cluster figures in $SYS and /metrics,
the cluster-wide ones (live nodes, sums), the node name kept in the data
directory, and the NATS faults: the node's nats-server stopped and started
again, and the server of a 3-server NATS cluster a node is connected to
killed. Each test has NATS servers of its own (nats_server_own,
nats_cluster_own): they are stopped and started."""

import json
import os
import socket
import time
import urllib.request

import pytest

from conftest import free_port

pytestmark = pytest.mark.shootout_only

INTERVAL = 1  # --sys-interval: the figures' period too


def wait_for(fn, what, timeout=10.0, every=0.1):
    """fn()'s first true value within timeout seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(every)
    raise AssertionError("%s: not within %.0f s (last: %r)" % (what, timeout, last))


def scrape(port):
    """/metrics as {name or name{labels}: value}."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def metric(port, name):
    return scrape(port).get(name)


def start_node(broker_factory, urls, name, **kw):
    port = free_port()
    extra = ["--cluster", urls, "--sys-interval", str(INTERVAL), "--metrics-port", str(port)]
    if name:
        extra += ["--node-name", name]
    b = broker_factory(extra_args=extra, **kw)
    b.metrics_port = port
    return b


def takes_clients(b):
    """Whether b answers a CONNECT with return code 0 (a node cut off from
    NATS answers 3, test_cluster_partition.py)."""
    with b.raw() as c:
        return c.connect("probe").rc == 0


def sys_cluster(b, client_id="sys-cluster"):
    """The latest value of every $SYS/broker/cluster/... topic (retained,
    so one round is there at once), as {suffix: text}."""
    c = b.paho(client_id)
    c.subscribe("$SYS/broker/cluster/#", 0)
    values = {}
    while True:
        try:
            m = c.get(timeout=0.5)
        except Exception:
            break
        values[m.topic[len("$SYS/broker/cluster/"):]] = m.payload.decode()
    c.close()
    return values


def connz_names(nats):
    url = "http://%s:%d/connz" % (nats.host, nats.monitor_port)
    with urllib.request.urlopen(url, timeout=5) as r:
        return sorted(c.get("name", "") for c in json.loads(r.read()).get("connections", []))


def delivered(pub, sub, topic, tries=100, every=0.1):
    """Publishes on topic from pub until sub gets one; the payloads sent.
    Proves a path works again without knowing when it came back."""
    while not sub.messages.empty():  # late copies of an earlier round
        sub.messages.get_nowait()
    sent = []
    for i in range(tries):
        payload = ("%s-%d" % (topic, i)).encode()
        pub.publish(topic, payload, qos=0)
        sent.append(payload)
        try:
            m = sub.get(timeout=every)
        except Exception:
            continue
        assert m.topic == topic and m.payload in sent
        return sent
    raise AssertionError("nothing on %s reached the other node in %d tries" % (topic, tries))


def test_figures_per_node_and_cluster_wide(broker_factory, nats_server_own):
    url = nats_server_own.url
    a = start_node(broker_factory, url, "fa")
    b = start_node(broker_factory, url, "fb")
    sub = b.paho("fig-sub")
    sub.subscribe("fig/#", 0)
    sub2 = b.paho("fig-sub2")  # fig/x matches fig/+ and fig/#: a copy dropped each
    sub2.subscribe("fig/+", 0)
    member = b.paho("fig-member")  # q/# is two queue subscriptions, q and q.>
    member.subscribe("$share/g/q/#", 0)
    pub = a.paho("fig-pub")
    for i in range(5):
        pub.publish("fig/x", b"%d" % i, qos=0)
    assert len(sub.get_n(5)) == 5 and len(sub2.get_n(5)) == 5
    ma, mb = a.metrics_port, b.metrics_port
    assert metric(ma, "shootout_broker_cluster_connected") == 1
    assert metric(ma, "shootout_broker_cluster_messages_published_total") == 5
    assert metric(mb, "shootout_broker_cluster_messages_received_total") == 5
    assert metric(mb, "shootout_broker_cluster_duplicates_total") == 5
    assert metric(mb, "shootout_broker_cluster_inbox_dropped_total") == 0
    assert metric(mb, "shootout_broker_cluster_filters") == 2
    assert metric(mb, "shootout_broker_cluster_queue_subscriptions") == 2
    assert metric(ma, "shootout_broker_cluster_queue_subscriptions") == 0
    assert metric(ma, "shootout_broker_cluster_reconnects_total") == 0
    info = [n for n in scrape(ma) if n.startswith("shootout_broker_cluster_info{")]
    assert info == ['shootout_broker_cluster_info{node="fa",server_url="%s",server_id="%s"}' % (
        url, nats_server_own.varz()["server_id"])]
    # Each node hears the other's figures within an interval or two.
    for m in (ma, mb):
        wait_for(lambda: metric(m, "shootout_broker_cluster_nodes") == 2, "nodes=2")
    wait_for(lambda: metric(mb, "shootout_broker_cluster_all_messages_published") == 5 and
             metric(mb, "shootout_broker_cluster_all_messages_received") == 5, "sums on b")
    v = wait_for(lambda: (lambda v: v.get("nodes") == "2" and v)(sys_cluster(a)), "$SYS nodes=2")
    assert v["node"] == "fa" and v["connected"] == "1" and v["server/url"] == url
    assert v["messages/published"] == "5" and v["reconnects"] == "0"
    assert v["figures/malformed"] == "0"
    # A node stopped is gone after three of its intervals.
    b.close_clients()
    assert b.stop() == 0
    t0 = time.monotonic()
    wait_for(lambda: metric(ma, "shootout_broker_cluster_nodes") == 1, "nodes=1", timeout=3 * INTERVAL + 3)
    assert time.monotonic() - t0 > INTERVAL  # not at once: it expired
    wait_for(lambda: sys_cluster(a).get("nodes") == "1", "$SYS nodes=1")


def test_malformed_figures_ignored_and_counted(broker_factory, nats_server_own):
    a = start_node(broker_factory, nats_server_own.url, "ma")
    n = nats_server_own.client()
    for payload in [b"", b"v2 1 2 3", b"v1 1000 1 2 3", b"v1 0 0 0 0 0 0 0 0 0 0",
                    b"v1 1000 1 1 1 1 1 1 1 1 99999999999999999999999", b"\xff" * 300,
                    b"v1 1000 1 1 1 1 1 1 1 1 1 "]:
        n.pub("mqtt.n.bogus", payload)
    n.pub("mqtt.n.good", b"v1 1000 7 0 0 0 0 0 0 0 1")
    n.flush()
    n.close()
    wait_for(lambda: metric(a.metrics_port, "shootout_broker_cluster_figures_malformed_total") == 7,
             "7 malformed")
    assert metric(a.metrics_port, "shootout_broker_cluster_nodes") == 2  # "good" only
    assert metric(a.metrics_port, "shootout_broker_cluster_all_messages_published") == 7
    a.paho("still-alive").publish("x", b"y")


def test_node_name_kept_in_the_data_directory(broker_factory, nats_server_own, tmp_path):
    data = str(tmp_path / "data")
    a = broker_factory(persistence_dir=data, extra_args=["--cluster", nats_server_own.url])
    with open(os.path.join(data, "node-name")) as f:
        name = f.read().strip()
    assert name.startswith(socket.gethostname() + "-") and len(name) > len(socket.gethostname()) + 1
    assert "shootout/" + name in connz_names(nats_server_own)
    assert a.stop() == 0
    a = broker_factory(port=a.port, persistence_dir=data, extra_args=["--cluster", nats_server_own.url])
    assert "shootout/" + name in connz_names(nats_server_own)
    with open(os.path.join(data, "node-name")) as f:
        assert f.read().strip() == name
    assert not [p for p in os.listdir(data) if p.startswith("node-name.")]  # no temporary left
    assert a.stop() == 0
    # An explicit name wins; without persistence, hostname:port.
    a = broker_factory(persistence_dir=data,
                       extra_args=["--cluster", nats_server_own.url, "--node-name", "given"])
    b = broker_factory(extra_args=["--cluster", nats_server_own.url])
    names = connz_names(nats_server_own)
    assert "shootout/given" in names and "shootout/" + name not in names
    assert "shootout/%s:%d" % (socket.gethostname(), b.port) in names


def test_nats_server_restart(broker_factory, nats_server_own):
    nats = nats_server_own
    a = start_node(broker_factory, nats.url, "ra")
    b = start_node(broker_factory, nats.url, "rb")
    before = b.paho("r-before")
    before.subscribe("r/before", 0)
    local_a = a.paho("r-local-a")  # every message published on a, outage or not
    local_a.subscribe("r/#", 0)
    local_b = b.paho("r-local-b")
    local_b.subscribe("local/b", 0)
    pub = a.paho("r-pub")
    pub_b = b.paho("r-pub-b")
    sent = delivered(pub, before, "r/before")
    # $SYS during the outage from a client connected before it: a new one
    # would be refused once the node counts as cut off.
    sys_connected = a.paho("r-sys")
    sys_connected.subscribe("$SYS/broker/cluster/connected", 0)
    assert sys_connected.get(timeout=3).payload == b"1"

    during = b.paho("r-during")
    nats.stop()
    # At once, within the partition grace (2 s; past it the node refuses new
    # clients and subscriptions: test_cluster_partition.py): its flush
    # fails, a warning, the SUBACK anyway.
    during.subscribe("r/during", 0)
    for m in (a.metrics_port, b.metrics_port):
        wait_for(lambda: metric(m, "shootout_broker_cluster_connected") == 0, "connected 0")
    wait_for(lambda: sys_connected.get(timeout=3).payload == b"0", "$SYS connected 0", timeout=3)
    # Local clients are served meanwhile, QoS 0 included.
    for i in range(20):
        pub.publish("r/outage", b"o%d" % i, qos=0)
        pub_b.publish("local/b", b"b%d" % i, qos=0)
    sent += [b"o%d" % i for i in range(20)]
    assert [m.payload for m in local_b.get_n(20)] == [b"b%d" % i for i in range(20)]

    nats.restart()
    # Both subscriptions, the one made before and the one made during the
    # outage, reach the server again (libnats replays them at reconnect).
    sent += delivered(pub, before, "r/before")
    sent += delivered(pub, during, "r/during")
    for m in (a.metrics_port, b.metrics_port):
        wait_for(lambda: metric(m, "shootout_broker_cluster_connected") == 1, "connected 1")
        assert metric(m, "shootout_broker_cluster_reconnects_total") == 1
        assert metric(m, "shootout_broker_cluster_disconnects_total") == 1
    # New clients again once every routing connection is back (the shared
    # subscriptions' one may follow the first by a reconnect wait).
    wait_for(lambda: takes_clients(b), "b takes new clients again")
    wait_for(lambda: sys_cluster(b).get("reconnects") == "1", "$SYS reconnects 1", timeout=5)
    # Not one local message lost on a.
    got = [m.payload for m in local_a.get_n(len(sent))]
    assert sorted(got) == sorted(sent)
    local_a.expect_none(0.3)
    a.assert_alive()
    b.assert_alive()


def test_failover_in_a_nats_cluster(broker_factory, nats_cluster_own):
    urls = nats_cluster_own.urls()
    a = start_node(broker_factory, urls, "xa")
    b = start_node(broker_factory, urls, "xb")
    sub = b.paho("x-sub")
    sub.subscribe("x/t", 0)
    pub = a.paho("x-pub")
    delivered(pub, sub, "x/t")
    was = info_url(a)
    victim = [n for n in nats_cluster_own.nodes if n.url == was]
    assert victim, (was, urls)
    victim[0].kill()
    now = wait_for(lambda: (lambda u: u and u != was and u)(info_url(a)), "a on another server")
    assert now in urls.split(",")
    delivered(pub, sub, "x/t")
    assert metric(a.metrics_port, "shootout_broker_cluster_reconnects_total") == 1


def info_url(b):
    for name in scrape(b.metrics_port):
        if name.startswith("shootout_broker_cluster_info{"):
            part = name.split('server_url="', 1)[1]
            return part.split('"', 1)[0]
    return None


def test_figures_every_5_s_without_sys(broker_factory, nats_server_own):
    # With $SYS off the figures still go out, every 5 s, on the node name
    # escaped as one token (what cannot be in a NATS token: '.', '*').
    n = nats_server_own.client()
    n.sub("mqtt.n.*")
    n.flush()
    a = broker_factory(extra_args=["--cluster", nats_server_own.url, "--node-name", "z.a*b",
                                   "--sys-interval", "0"])
    subj, _, _, first = n.next_msg(timeout=5)
    t0 = time.monotonic()
    assert subj == "mqtt.n.z=2Ea=2Ab"
    assert first.split()[:2] == [b"v1", b"5000"] and first.split()[-1] == b"1"
    subj, _, _, second = n.next_msg(timeout=10)
    assert subj == "mqtt.n.z=2Ea=2Ab" and 4.0 < time.monotonic() - t0 < 9.0  # 5 s, on loaded cores
    n.close()
    a.assert_alive()
