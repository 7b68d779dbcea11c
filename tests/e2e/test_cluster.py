"""The broker cluster on NATS, QoS 0 routing across nodes (docs/cluster.md,
issue 15): brokers started with --cluster on a private nats-server (or a
3-server NATS cluster) deliver what a client of one node publishes to the
subscribers of the others, once each whatever the filters' overlaps, never
back to the publisher's node, from the moment the SUBACK is sent, and no
more after UNSUBSCRIBE."""

import json
import subprocess
import time
import urllib.request

import pytest

import mqtt_raw as R

from conftest import SHOOTOUT_BIN

QUIET = 0.5  # seconds without a message: nothing more is coming

# A topic and the filters that match it; every filter shape, the '$' rule
# (a filter starting with a wildcard does not match a '$' topic) included.
TOPICS = ["f/a/b", "f/a", "f/c/b", "$x/a"]
FILTERS = {
    "f/a/b": ["f/a/b"],
    "f/+/b": ["f/a/b", "f/c/b"],
    "f/#": ["f/a/b", "f/a", "f/c/b"],
    "f/a/#": ["f/a/b", "f/a"],
    "#": ["f/a/b", "f/a", "f/c/b"],
    "+/a": ["f/a"],
    "$x/#": ["$x/a"],
}


def drain(client, quiet=QUIET):
    """Every message until none came for `quiet` seconds, as (topic, payload)."""
    return [(m.topic, m.payload) for m in client.drain(quiet)]


def node_subs(nats, name):
    """The NATS subjects node `name`'s connection is subscribed to, from the
    server's monitor (/connz), one entry per subscription; `name`/share is
    its shared subscriptions' connection."""
    url = "http://%s:%d/connz?subs=1" % (nats.host, nats.monitor_port)
    with urllib.request.urlopen(url, timeout=5) as r:
        conns = json.loads(r.read()).get("connections", [])
    return sorted(s for c in conns if c.get("name") == "shootout/" + name
                  for s in c.get("subscriptions_list", []))


def nodes(broker_factory, urls, n=2, extra=()):
    return [broker_factory(extra_args=["--cluster", urls, "--node-name", "node%d" % i] + list(extra))
            for i in range(n)]


def test_every_filter_once_from_another_node(broker_factory, nats_server):
    a, b = nodes(broker_factory, nats_server.url)
    subs = {f: a.paho("sub-%d" % i) for i, f in enumerate(FILTERS)}
    for f, c in subs.items():
        assert c.subscribe(f, 0) == [0]
    every = a.paho("sub-all")  # one session holding every filter: one copy each
    for f in FILTERS:
        every.subscribe(f, 0)
    local = b.paho("sub-local")  # the publisher's node: no echo back from NATS
    local.subscribe("#", 0)
    pub = b.paho("pub")
    for t in TOPICS:
        pub.publish(t, t.encode(), qos=0)
    for f, c in subs.items():
        assert sorted(drain(c)) == sorted((t, t.encode()) for t in FILTERS[f]), f
    assert sorted(drain(every)) == sorted((t, t.encode()) for t in TOPICS)
    assert sorted(drain(local)) == sorted((t, t.encode()) for t in TOPICS if not t.startswith("$"))


def test_subscribed_when_acknowledged(broker_factory, nats_server):
    # The SUBACK follows the flush that put the interest on the server: a
    # message published on the other node right after it arrives.
    a, b = nodes(broker_factory, nats_server.url)
    pub = b.paho("pub")
    for i in range(10):
        c = a.paho("now-%d" % i)
        assert c.subscribe("now/%d/+" % i, 0) == [0]
        pub.publish("now/%d/x" % i, b"go", qos=0)
        m = c.get(timeout=2)
        assert (m.topic, m.payload) == ("now/%d/x" % i, b"go")


def test_unsubscribe_stops_delivery(broker_factory, nats_server):
    a, b = nodes(broker_factory, nats_server.url)
    one, two = a.paho("u-one"), a.paho("u-two")
    one.subscribe("u/t", 0)
    two.subscribe("u/t", 0)
    two.subscribe("u/#", 0)
    # One NATS subscription per distinct filter of the node (two for u/#).
    assert node_subs(nats_server, "node0") == ["mqtt.t.u", "mqtt.t.u.>", "mqtt.t.u.t"]
    two.unsubscribe("u/#")
    pub = b.paho("pub")
    pub.publish("u/t", b"1", qos=0)
    assert one.get().payload == b"1" and two.get().payload == b"1"
    one.unsubscribe("u/t")  # the node keeps its interest: two still holds the filter
    pub.publish("u/t", b"2", qos=0)
    assert two.get().payload == b"2"
    one.expect_none(QUIET)
    assert node_subs(nats_server, "node0") == ["mqtt.t.u.t"]
    two.unsubscribe("u/t")  # the last one: the node leaves NATS
    pub.publish("u/t", b"3", qos=0)
    two.expect_none(QUIET)
    one.expect_none(0)
    assert node_subs(nats_server, "node0") == []


def test_qos_travels_at_most_once(broker_factory, nats_server):
    # The subscriber gets the QoS it was granted, from its own node (QoS
    # 1/2 through the stream, test_cluster_qos.py); so does a shared
    # group's member, from its shared subscription's (core NATS, at most
    # once).
    a, b = nodes(broker_factory, nats_server.url)
    sub = a.paho("q-sub")
    sub.subscribe("q/t", 2)
    member = a.paho("q-member")
    member.subscribe("$share/g/q/t", 1)
    pub = b.paho("q-pub")
    for q in (0, 1, 2):
        pub.publish("q/t", b"q%d" % q, qos=q)
    got = sorted((m.payload, m.qos) for m in sub.get_n(3))
    assert got == [(b"q0", 0), (b"q1", 1), (b"q2", 2)]
    got = sorted((m.payload, m.qos) for m in member.get_n(3))
    assert got == [(b"q0", 0), (b"q1", 1), (b"q2", 1)]
    sub.expect_none(QUIET)
    member.expect_none(0)


def test_three_nodes_over_a_nats_cluster(broker_factory, nats_cluster):
    # Each broker on its own NATS server: messages cross NATS routes too.
    # Interest reaches the other servers asynchronously, so first wait
    # until a probe gets through.
    brokers = [broker_factory(extra_args=["--cluster", n.url]) for n in nats_cluster.nodes]
    subs = [br.paho("c-sub-%d" % i) for i, br in enumerate(brokers)]
    for c in subs:
        c.subscribe("c/#", 0)
        c.subscribe("c/+", 0)  # overlapping: still one copy
    pubs = [br.paho("c-pub-%d" % i) for i, br in enumerate(brokers)]
    deadline = time.monotonic() + 5
    for i, p in enumerate(pubs):
        while True:
            p.publish("c/probe", b"%d" % i, qos=0)
            if all(any(m == ("c/probe", b"%d" % i) for m in drain(c, 0.2)) for c in subs):
                break
            assert time.monotonic() < deadline, "interest did not reach every NATS server"
    for c in subs:
        drain(c, 0.3)
    for i, p in enumerate(pubs):
        p.publish("c/x", b"from%d" % i, qos=0)
    for c in subs:
        assert sorted(drain(c)) == sorted(("c/x", b"from%d" % i) for i in range(3))


def test_threads4(broker_factory, nats_server):
    # Subscribers on every loop of a 4-loop node get what another 4-loop
    # node publishes: NATS's messages are routed from the home loop.
    a, b = nodes(broker_factory, nats_server.url, extra=["--threads", "4"])
    subs = [a.paho("t4-%d" % i) for i in range(8)]
    for c in subs:
        c.subscribe("t4/+", 0)
    pubs = [b.paho("t4-pub-%d" % i) for i in range(4)]
    for i, p in enumerate(pubs):
        for k in range(20):
            p.publish("t4/%d" % i, b"%d" % k, qos=0)
    want = sorted(("t4/%d" % i, b"%d" % k) for i in range(4) for k in range(20))
    for c in subs:
        assert sorted(drain(c)) == want


def test_no_nats_server_refuses_to_start():
    r = subprocess.run([SHOOTOUT_BIN, "broker", "--port", "0", "--cluster", "nats://127.0.0.1:1"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "cluster: cannot connect to nats://127.0.0.1:1" in r.stderr


@pytest.mark.parametrize("prefix", ["$bad", "a..b", "a b", ""])
def test_bad_prefix_refused(prefix):
    r = subprocess.run([SHOOTOUT_BIN, "broker", "--cluster-prefix", prefix], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2
    assert "cluster-prefix" in r.stderr


def test_mqtt5_puback_does_not_claim_no_subscribers(broker_factory, nats_server):
    # A node cannot know the other nodes' subscribers: a message that went
    # to the cluster is acknowledged 0x00, not 0x10 No matching subscribers.
    a, b = nodes(broker_factory, nats_server.url)
    sub = a.paho("p5-sub")
    sub.subscribe("p5/t", 1)
    c = b.raw()
    c.connect5_ok("p5-pub")
    c.send(R.publish5("p5/t", b"x", qos=1, packet_id=1))
    assert c.expect(R.PUBACK).reason == 0
    assert sub.get().payload == b"x"


def test_restored_sessions_resubscribe(broker_factory, nats_server, tmp_path):
    # A persistent session's subscriptions, restored from the log at start,
    # are the node's interest again: what another node publishes while the
    # client is away waits in its session.
    data = str(tmp_path / "a-data")
    args = ["--cluster", nats_server.url, "--node-name", "node0"]
    a = broker_factory(persistence_dir=data, extra_args=args)
    c = a.paho("keep", clean_session=False)
    c.subscribe("keep/+", 1)
    c.disconnect()
    a.close_clients()
    assert a.stop() == 0
    a = broker_factory(port=a.port, persistence_dir=data, extra_args=args)
    assert node_subs(nats_server, "node0") == ["mqtt.t.keep.*"]
    b = broker_factory(extra_args=["--cluster", nats_server.url, "--node-name", "node1"])
    b.paho("keep-pub").publish("keep/1", b"waited", qos=1)
    time.sleep(0.3)
    c = a.paho("keep", clean_session=False)
    m = c.get()
    assert (m.topic, m.payload, m.qos) == ("keep/1", b"waited", 1)


# Shared subscriptions across nodes: one NATS queue subscription set per
# member, in the queue group of the group's name.
SHARED_N = 200


def publish_from_both(pubs, topic, n):
    """n messages on topic, alternately from each publisher; their payloads."""
    sent = [b"%d" % i for i in range(n)]
    for i, p in enumerate(sent):
        pubs[i % len(pubs)].publish(topic, p, qos=0)
    return sent


def test_shared_group_fair_across_nodes(broker_factory, nats_server):
    a, b = nodes(broker_factory, nats_server.url)
    members = [a.paho("g-a"), b.paho("g-b")]
    for c in members:
        assert c.subscribe("$share/g/sh/+", 0) == [0]
    other = a.paho("h-a")  # another group: every message, once
    assert other.subscribe("$share/h/sh/#", 0) == [0]
    plain = b.paho("plain")  # a non-shared subscriber beside: every message, once
    assert plain.subscribe("sh/+", 0) == [0]
    assert node_subs(nats_server, "node0/share") == ["mqtt.t.sh", "mqtt.t.sh.*", "mqtt.t.sh.>"]
    sent = publish_from_both([a.paho("p-a"), b.paho("p-b")], "sh/x", SHARED_N)
    got = [[p for _, p in drain(c)] for c in members]
    assert sorted(got[0] + got[1]) == sorted(sent)  # each once, to one member
    for g in got:
        assert len(g) >= SHARED_N // 5, [len(x) for x in got]
    assert sorted(p for _, p in drain(other)) == sorted(sent)
    assert sorted(p for _, p in drain(plain)) == sorted(sent)


def test_shared_member_leaves(broker_factory, nats_server):
    a, b = nodes(broker_factory, nats_server.url)
    one, gone, stay = a.paho("l-one"), a.paho("l-gone"), b.paho("l-stay")
    for c in (one, gone, stay):
        c.subscribe("$share/g/lv/t", 0)
    assert node_subs(nats_server, "node0/share") == ["mqtt.t.lv.t", "mqtt.t.lv.t"]
    one.unsubscribe("$share/g/lv/t")
    gone.disconnect()  # its session ends: its queue subscription goes too
    deadline = time.monotonic() + 5
    while node_subs(nats_server, "node0/share"):
        assert time.monotonic() < deadline, node_subs(nats_server, "node0/share")
        time.sleep(0.05)
    sent = publish_from_both([a.paho("lp-a"), b.paho("lp-b")], "lv/t", 40)
    assert sorted(p for _, p in drain(stay)) == sorted(sent)
    one.expect_none(0)
    assert node_subs(nats_server, "node1/share") == ["mqtt.t.lv.t"]


def test_shared_overlapping_filters_one_copy(broker_factory, nats_server):
    # One member holding $share/g/ov/+ and $share/g/ov/# (a second shared
    # subscription of the same group name): NATS picks once per queue group
    # name among every subscription matching, so in a cluster it gets each
    # message once (a single node would send one per filter).
    a, b = nodes(broker_factory, nats_server.url)
    m = a.paho("ov")
    m.subscribe("$share/g/ov/+", 1)
    m.subscribe("$share/g/ov/#", 0)
    sent = publish_from_both([a.paho("ovp-a"), b.paho("ovp-b")], "ov/x", 40)
    assert sorted(p for _, p in drain(m)) == sorted(sent)


def test_home_loop_holds_the_inbox_while_other_loops_are_behind(broker_factory, nats_server,
                                                               tmp_path):
    # Node a's home loop routes what NATS brings without waiting for anyone.
    # Its other loop is made the slower one: its 30 subscribers' filter
    # overlaps 500 deny rules, so it asks the ACL per delivery, which the
    # home loop does not for another loop's sessions. A flood, in bursts so
    # that NATS brings it in many batches, then puts the home loop over its
    # mark (16384 entries not taken, docs/broker.md
    # "Back-pressure across loops"): it stops taking the inbox, and takes it
    # again once that loop caught up, so every message still arrives, in
    # order (4000 stay within the inbox's 65536: none is dropped).
    acl = tmp_path / "acl"
    acl.write_text("topic read hold/#\n" + "".join("topic deny hold/x%d\n" % i for i in range(500)))
    a = broker_factory(verbose=True, conf_lines=["acl_file %s" % acl],
                       extra_args=["--cluster", nats_server.url, "--node-name", "node0",
                                   "--threads", "2"])
    b = broker_factory(extra_args=["--cluster", nats_server.url, "--node-name", "node1"])
    subs = []
    for i in range(30):
        c, _ = a.raw_connected_apart("hold-%03d" % i, {0})
        assert c.subscribe(1, [("hold/#", 0)]).granted == [0]
        subs.append(c)
    n = 4000
    pub = b.raw_connected("hold-pub")
    for k in range(0, n, 100):
        pub.send(b"".join(R.publish("hold/t", b"m%05d" % i) for i in range(k, k + 100)))
        time.sleep(0.005)
    for c in subs:
        got = [c.next_publish(timeout=30).payload for _ in range(n)]
        assert got == [b"m%05d" % i for i in range(n)]
    held = a.stderr_text().count("cluster inbox held")
    print("held %d times" % held)
    assert held >= 1
    assert a.stderr_text().count("cluster inbox taken again") == held
