"""Retained messages shared by the cluster (docs/cluster.md, "Retained
messages", issue 15): a clustered node keeps a client's retained message in
the JetStream KV bucket MQTT_RETAIN, so that a subscriber of any node,
started before or after the publish, gets it, with its QoS and MQTT 5
properties; an empty payload clears it everywhere. Topics without a subject
stay in the node's own store, and without JetStream a node falls back to
its own store.

The NATS fixtures live for the whole module, and so does the bucket: each
test uses topics of its own."""

import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.request

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

import mqtt_raw as R
import natsd
from conftest import free_port
from mqtt_paho import paho5

QUIET = 0.5  # seconds without a message: nothing more is coming


def drain(client, quiet=QUIET):
    """Every retained message (RETAIN 1) until none came for `quiet`
    seconds. Live copies (RETAIN 0) are left out: a publisher's node may
    send its message on to NATS after its PUBACK (libnats flushes in its
    own thread), so it can reach a subscriber of another node as a live
    message after that one's SUBACK."""
    out = []
    while True:
        try:
            m = client.messages.get(timeout=quiet)
        except Exception:
            return out
        if m.retain:
            out.append(m)


def got(client, quiet=QUIET):
    return sorted((m.topic, m.payload, m.qos, m.retain) for m in drain(client, quiet))


def node(broker_factory, url, name, extra=(), **kw):
    return broker_factory(extra_args=["--cluster", url, "--node-name", name] + list(extra), **kw)


def retain(broker, topic, payload, qos=1, cid="pub", properties=None):
    """A retained publish from a fresh MQTT 5 client, acknowledged."""
    c = paho5(broker, "%s-%d" % (cid, time.monotonic_ns()))
    c.publish(topic, payload, qos=qos, retain=True, properties=properties)
    c.disconnect()


def test_seen_by_another_node_with_wildcards(broker_factory, nats_server):
    a, b = node(broker_factory, nats_server.url, "a"), node(broker_factory, nats_server.url, "b")
    for t in ("w/a/b", "w/c", "$w/x"):
        retain(a, t, t.encode(), qos=0)
    want = {
        "w/a/b": ["w/a/b"],
        "w/+/b": ["w/a/b"],
        "w/#": ["w/a/b", "w/c"],
        "+/c": ["w/c"],
        "$w/#": ["$w/x"],
        "$w/+": ["$w/x"],
    }
    for i, (f, topics) in enumerate(want.items()):
        c = b.paho("w-sub-%d" % i)
        assert c.subscribe(f, 1) == [1]
        assert got(c) == sorted((t, t.encode(), 0, 1) for t in topics), f
    # '#' gets every retained topic of the bucket (other tests' too), never a '$' one.
    c = b.paho("w-all")
    c.subscribe("#", 0)
    seen = {m.topic for m in drain(c)}
    assert {"w/a/b", "w/c"} <= seen
    assert not any(t.startswith("$") for t in seen)


def test_node_started_after_the_publish(broker_factory, nats_server):
    a = node(broker_factory, nats_server.url, "a")
    retain(a, "late/t", b"before you")
    a.close_clients()
    assert a.stop() == 0  # no node holds it but NATS
    b = node(broker_factory, nats_server.url, "b")
    c = b.paho("late-sub")
    c.subscribe("late/#", 1)
    assert got(c) == [("late/t", b"before you", 1, 1)]


def test_broker_restart_keeps_them(broker_factory, nats_server):
    a = node(broker_factory, nats_server.url, "a")
    retain(a, "rs/t", b"kept")
    a.close_clients()
    assert a.stop() == 0
    a = node(broker_factory, nats_server.url, "a", port=a.port)  # no persistence: NATS has it
    c = a.paho("rs-sub")
    c.subscribe("rs/t", 1)
    assert got(c) == [("rs/t", b"kept", 1, 1)]


def test_empty_payload_clears_everywhere(broker_factory, nats_server):
    a, b = node(broker_factory, nats_server.url, "a"), node(broker_factory, nats_server.url, "b")
    retain(a, "clr/t", b"soon gone")
    c = b.paho("clr-sub-1")
    c.subscribe("clr/t", 0)
    assert [m.payload for m in drain(c)] == [b"soon gone"]
    retain(b, "clr/t", b"")
    for i, br in enumerate((a, b)):
        c = br.paho("clr-sub-2-%d" % i)
        c.subscribe("clr/#", 1)
        assert got(c) == []
    # Read, not timed out: a watch of keys with only a delete marker, or
    # of no key at all, ends at once, as does a get of a deleted key.
    c = b.paho("clr-sub-3")
    t = time.monotonic()
    c.subscribe("never/seen/#", 1)
    c.subscribe("clr/t", 1)
    assert time.monotonic() - t < 0.5
    for br in (a, b):
        assert "reading retained" not in br.stderr_text()


def test_replaced_once_and_sent_once(broker_factory, nats_server):
    # A second retained publish replaces the first (history 1); a filter
    # matching a topic twice (a/# and its two NATS subscriptions) sends it once.
    a, b = node(broker_factory, nats_server.url, "a"), node(broker_factory, nats_server.url, "b")
    retain(a, "rep/t", b"one")
    retain(b, "rep/t", b"two")
    retain(a, "rep", b"parent")
    c = b.paho("rep-sub")
    c.subscribe("rep/#", 1)
    assert got(c) == [("rep", b"parent", 1, 1), ("rep/t", b"two", 1, 1)]


def test_qos_downgraded_to_granted(broker_factory, nats_server):
    a, b = node(broker_factory, nats_server.url, "a"), node(broker_factory, nats_server.url, "b")
    retain(a, "q/one", b"1", qos=1)
    retain(a, "q/zero", b"0", qos=0)
    for granted, want in ((0, [0, 0]), (1, [1, 0]), (2, [1, 0])):
        c = b.paho("q-sub-%d" % granted)
        c.subscribe("q/+", granted)
        ms = sorted(drain(c), key=lambda m: m.topic)
        assert [m.qos for m in ms] == want, (granted, [(m.topic, m.payload) for m in ms])


def test_mqtt5_properties_survive(broker_factory, nats_server):
    a, b = node(broker_factory, nats_server.url, "a"), node(broker_factory, nats_server.url, "b")
    p = Properties(PacketTypes.PUBLISH)
    p.PayloadFormatIndicator = 1
    p.ContentType = "text/plain"
    p.ResponseTopic = "p5/reply"
    p.CorrelationData = b"\x00corr\xff"
    p.UserProperty = [("k1", "v1"), ("k2", "v2"), ("k1", "again")]
    p.MessageExpiryInterval = 100
    retain(a, "p5/t", b"props", properties=p)
    short = Properties(PacketTypes.PUBLISH)
    short.MessageExpiryInterval = 1
    retain(a, "p5/short", b"expires", properties=short)
    time.sleep(2.2)  # the deadline is absolute: it passed for every node
    c = paho5(b, "p5-sub")
    c.subscribe("p5/#", 1)
    ms = drain(c)
    assert [(m.topic, m.payload, m.retain) for m in ms] == [("p5/t", b"props", 1)]
    q = ms[0].properties
    assert q.PayloadFormatIndicator == 1
    assert q.ContentType == "text/plain"
    assert q.ResponseTopic == "p5/reply"
    assert q.CorrelationData == b"\x00corr\xff"
    assert q.UserProperty == [("k1", "v1"), ("k2", "v2"), ("k1", "again")]
    assert 95 <= q.MessageExpiryInterval <= 98  # what is left of it


def test_retain_handling(broker_factory, nats_server):
    a, b = node(broker_factory, nats_server.url, "a"), node(broker_factory, nats_server.url, "b")
    retain(a, "rh/t", b"x")
    c = paho5(b, "rh-sub")
    assert c.subscribe("rh/t", options=mqtt.SubscribeOptions(qos=1, retainHandling=2)) == [1]
    assert got(c) == []  # 2: never
    assert c.subscribe("rh/#", options=mqtt.SubscribeOptions(qos=1, retainHandling=1)) == [1]
    assert [m.payload for m in drain(c)] == [b"x"]  # 1: a new subscription gets them
    assert c.subscribe("rh/#", options=mqtt.SubscribeOptions(qos=1, retainHandling=1)) == [1]
    assert got(c) == []  # ... an existing one does not
    c = paho5(b, "rh-shared")
    c.subscribe("$share/g/rh/t", 1)
    assert got(c) == []  # never on a shared subscription


def test_topic_without_subject_is_refused_not_retained(broker_factory, nats_server):
    # 1100 bytes of escaped non-ASCII are 3300 bytes of subject, over
    # SUBJECT_MAX: a clustered node refuses the topic (0x90,
    # test_cluster_props.py) and retains it nowhere, neither in its own
    # store nor in the bucket.
    a, b = node(broker_factory, nats_server.url, "a"), node(broker_factory, nats_server.url, "b")
    long_topic = "long/" + "é" * 550
    pub = a.raw()
    pub.connect5_ok("long-pub")
    pub.send(R.publish5(long_topic, b"here", qos=1, packet_id=1, retain=True))
    assert pub.expect(R.PUBACK).reason == 0x90
    for n, cid in ((a, "long-a"), (b, "long-b")):
        c = n.paho(cid)
        c.subscribe("long/#", 0)
        assert got(c) == []


def test_local_will_and_bucket_sent_once(broker_factory, nats_server):
    # A will is the node's own (its store, not the bucket): a topic both
    # there and in the bucket reaches a subscriber once, the node's copy.
    a = node(broker_factory, nats_server.url, "a")
    retain(a, "dd/w", b"from the bucket")
    w = a.paho("dd-will", will={"topic": "dd/w", "payload": b"the will", "qos": 1, "retain": True})
    w.drop()  # no DISCONNECT: the will goes
    time.sleep(0.5)
    c = a.paho("dd-sub")
    c.subscribe("dd/#", 1)
    assert got(c) == [("dd/w", b"the will", 1, 1)]
    retain(a, "dd/w", b"bucket again")  # a client's retained publish: the bucket's, and only there
    c = a.paho("dd-sub-2")
    c.subscribe("dd/#", 1)
    assert got(c) == [("dd/w", b"bucket again", 1, 1)]


def test_failed_put_is_reason_0x80_and_still_delivered(broker_factory):
    # Its own NATS, killed under the node: the put times out (1 s), the
    # publisher hears 0x80, and the live subscriber still gets the message.
    cluster = natsd.NatsCluster(1)
    try:
        n = cluster.nodes[0]
        a = node(broker_factory, n.url, "a")
        sub = a.paho("fail-sub")
        sub.subscribe("fail/t", 1)
        # Connected first: without NATS a clustered node refuses CONNECTs
        # (it cannot claim the session, test_cluster_sessions.py).
        c = a.raw()
        c.connect5_ok("fail-pub")
        n.kill()
        c.send(R.publish5("fail/t", b"live", qos=1, retain=True, packet_id=1))
        assert c.expect(R.PUBACK, timeout=5).reason == 0x80
        m = sub.get()
        assert (m.topic, m.payload, m.retain) == ("fail/t", b"live", 0)
        n.start()
        n.wait_ready(time.monotonic() + 20)
        a.close_clients()
        c.close()
    finally:
        cluster.destroy()


def test_without_jetstream_retained_stay_per_node(broker_factory):
    # A nats-server without -js: the node warns and keeps its own store.
    port = free_port()
    d = tempfile.mkdtemp(prefix="shootout_nojs_")
    srv = subprocess.Popen([natsd.binary(), "-a", "127.0.0.1", "-p", str(port)],
                           stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "log"), "w"))
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "nats-server did not start"
                time.sleep(0.05)
        url = "nats://127.0.0.1:%d" % port
        a, b = node(broker_factory, url, "a"), node(broker_factory, url, "b")
        retain(a, "nojs/t", b"mine")
        c = a.paho("nojs-a")
        c.subscribe("nojs/t", 0)
        assert [m.payload for m in drain(c)] == [b"mine"]
        c = b.paho("nojs-b")
        c.subscribe("nojs/t", 0)
        assert got(c) == []
        assert "no KV bucket MQTT_RETAIN" in a.stderr_text()
    finally:
        srv.kill()
        srv.wait(timeout=10)


def test_prefix_has_its_own_bucket(broker_factory, nats_server):
    # Two clusters on one NATS (different prefixes) share no retained message.
    a = node(broker_factory, nats_server.url, "a", extra=["--cluster-prefix", "site.one"])
    b = node(broker_factory, nats_server.url, "b")
    retain(a, "px/t", b"site one")
    c = b.paho("px-b")
    c.subscribe("px/t", 0)
    assert got(c) == []
    a2 = node(broker_factory, nats_server.url, "a2", extra=["--cluster-prefix", "site.one"])
    c = a2.paho("px-a2")
    c.subscribe("px/t", 0)
    assert [m.payload for m in drain(c)] == [b"site one"]
    assert "KV bucket MQTT_RETAIN_site_one" in a.stderr_text()


def test_threads4(broker_factory, nats_server):
    # Subscribers on every loop of a 4-loop node read the bucket.
    a = node(broker_factory, nats_server.url, "a", extra=["--threads", "4"])
    b = node(broker_factory, nats_server.url, "b", extra=["--threads", "4"])
    for i in range(4):
        retain(a, "t4r/%d" % i, b"%d" % i)
    want = [("t4r/%d" % i, b"%d" % i, 0, 1) for i in range(4)]
    for i in range(8):
        c = b.paho("t4r-%d" % i)
        c.subscribe("t4r/+", 0)
        assert got(c) == want


def read_until(broker, flt, want, name, timeout=30):
    """Fresh subscribers of flt until one gets want (JetStream may be
    electing a leader, when a SUBSCRIBE reads nothing); how many tried."""
    deadline = time.monotonic() + timeout
    for i in range(1000):
        try:
            c = broker.paho("%s-%d" % (name, i))
        except AssertionError:  # refused (0x89) while the session bucket cannot be written
            assert time.monotonic() < deadline, "never connected"
            time.sleep(0.2)
            continue
        c.subscribe(flt, 1)
        seen = got(c, 1.0)
        c.disconnect()
        if seen == want:
            return i + 1
        assert time.monotonic() < deadline, "never read %r, last %r" % (want, seen)


def retain_until_stored(broker, topic, payload, timeout=20):
    """Retained publishes until one is acknowledged 0x00 (not 0x80: the
    bucket did not store it); how many tried. The CONNECT too is tried
    again while refused (0x89: the session bucket cannot be written either,
    test_cluster_sessions.py)."""
    deadline = time.monotonic() + timeout
    while True:
        c = broker.raw()
        if c.connect5("r3-pub").rc == 0:
            break
        assert time.monotonic() < deadline, "never connected"
        c.close()
        time.sleep(0.2)
    # Bounded by time, not count: a refusal can come at once (the QoS 1
    # stream's PubAck error as well as the bucket's), a thousand in 20 s.
    i = 0
    while True:
        i += 1
        c.send(R.publish5(topic, payload, qos=1, retain=True, packet_id=i % 65535 + 1))
        if c.expect(R.PUBACK, timeout=5).reason == 0:
            c.close()
            return i
        assert time.monotonic() < deadline, "the bucket never stored %r" % topic
        time.sleep(0.05)


def test_bucket_bound_once_jetstream_answers(broker_factory, nats_cluster):
    # Two of three NATS servers down before the bucket exists (this test
    # runs first on the module's NATS cluster): JetStream has no quorum to
    # create it and does not answer. The node starts all the same, per-put failures say 0x80, and
    # once the servers are back the bucket is bound and used.
    n0, n1, n2 = nats_cluster.nodes
    n1.kill()
    n2.kill()
    try:
        a = node(broker_factory, n0.url, "a", extra=["--cluster-replicas", "3"])
        assert "not bound yet" in a.stderr_text()
    finally:
        for n in (n1, n2):
            n.start()
        for n in (n1, n2):
            n.wait_ready(time.monotonic() + 20)
    retain_until_stored(a, "late-bind/t", b"bound")
    read_until(a, "late-bind/#", [("late-bind/t", b"bound", 1, 1)], "lb")


def test_r3_bucket_with_a_nats_server_down(broker_factory, nats_cluster):
    # R3: any one NATS server may die. If it led the bucket's stream (or
    # JetStream's meta group), the other two elect another first, for a
    # few seconds during which reads and writes time out.
    n0, n1, n2 = nats_cluster.nodes
    a = node(broker_factory, n0.url, "a", extra=["--cluster-replicas", "3"])
    retain(a, "r3/t", b"replicated")
    url = "http://%s:%d/jsz?streams=1&config=1" % (n0.host, n0.monitor_port)
    with urllib.request.urlopen(url, timeout=5) as r:
        streams = [st for acc in json.loads(r.read()).get("account_details", [])
                   for st in acc.get("stream_detail", [])]
    assert [st["config"]["num_replicas"] for st in streams if st["name"] == "KV_MQTT_RETAIN"] == [3]
    n2.kill()
    try:
        b = node(broker_factory, n1.url, "b", extra=["--cluster-replicas", "3"])
        tries = read_until(b, "r3/#", [("r3/t", b"replicated", 1, 1)], "r3-b")
        tries += retain_until_stored(b, "r3/u", b"while one is down")
        tries += read_until(a, "r3/u", [("r3/u", b"while one is down", 1, 1)], "r3-a")
        print("r3: %d tries in all (3 without an election)" % tries)
    finally:
        n2.start()
        n2.wait_ready(time.monotonic() + 20)

