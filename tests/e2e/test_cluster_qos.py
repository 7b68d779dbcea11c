"""QoS 1 and 2 across the cluster through JetStream (docs/cluster.md, "QoS 1
and 2: JetStream"): a QoS 1/2 PUBLISH goes to the stream MQTT_MSGS, its
PUBACK/PUBREC waits for the stream's PubAck, and each node reads the stream
through one durable consumer of its own, so a subscriber on another node
gets each message exactly once and in order (never a second copy through
core NATS), a message acknowledged to its publisher survives the
publisher's node, and one published while the subscriber's node was down
arrives once it is back."""

import json
import time

import pytest

import mqtt_raw as R
from mqtt_paho import paho5

QUIET = 0.5
UNSPECIFIED = 0x80


def nodes(broker_factory, url, names=("q0", "q1"), extra=()):
    return [broker_factory(extra_args=["--cluster", url, "--node-name", n] + list(extra))
            for n in names]


def stream_info(nats, name="MQTT_MSGS"):
    c = nats.client()
    try:
        return json.loads(c.request("$JS.API.STREAM.INFO." + name, timeout=5))
    finally:
        c.close()


def last_seq(nats):
    return stream_info(nats)["state"]["last_seq"]


def client(broker, cid, v5, clean=True):
    if v5:
        return paho5(broker, cid, clean_start=clean)
    return broker.paho(cid, clean_session=clean)


@pytest.mark.parametrize("v5", [False, True], ids=["3.1.1", "5"])
@pytest.mark.parametrize("qos", [1, 2])
def test_exactly_once_in_order_across_nodes(broker_factory, nats_server, qos, v5):
    a, b = nodes(broker_factory, nats_server.url)
    sub = client(a, "o-sub-%d-%d" % (qos, v5), v5)
    sub.subscribe("o/#", 2)
    local = client(b, "o-local-%d-%d" % (qos, v5), v5)  # the publisher's node: delivered there
    local.subscribe("o/+", 2)
    pub = client(b, "o-pub-%d-%d" % (qos, v5), v5)
    before = last_seq(nats_server)
    n = 50
    for i in range(n):
        pub.publish("o/%d" % (i % 3), b"m%d" % i, qos=qos)  # waits for its PUBACK / PUBCOMP
    got = sub.get_n(n)
    assert [m.payload for m in got] == [b"m%d" % i for i in range(n)]
    assert {m.qos for m in got} == {qos}
    assert [m.payload for m in local.get_n(n)] == [b"m%d" % i for i in range(n)]
    sub.expect_none(QUIET)  # no second copy through core NATS
    local.expect_none(0)
    # Every one of them went through the stream.
    assert last_seq(nats_server) - before == n


def test_qos0_is_not_stored(broker_factory, nats_server):
    a, b = nodes(broker_factory, nats_server.url)
    sub = a.paho("z-sub")
    sub.subscribe("z/t", 1)
    pub = b.paho("z-pub")
    before = last_seq(nats_server)
    for i in range(5):
        pub.publish("z/t", b"%d" % i, qos=0)
    assert [m.payload for m in sub.get_n(5)] == [b"%d" % i for i in range(5)]
    assert last_seq(nats_server) == before
    sub.expect_none(QUIET)


def test_puback_waits_for_the_stream(broker_factory, nats_server_own):
    # Without the stream (deleted under the nodes) JetStream takes no QoS
    # 1/2 message: MQTT 5 is told in its PUBACK/PUBREC, 3.1.1 has its
    # connection closed; QoS 0 still crosses nodes; the refused message
    # was delivered on its own node only.
    a, b = nodes(broker_factory, nats_server_own.url)
    far = a.raw_connected("w-far")
    assert far.subscribe(1, [("w/#", 1)]).granted == [1]
    near = b.raw_connected("w-near")
    assert near.subscribe(1, [("w/#", 1)]).granted == [1]
    c = nats_server_own.client()
    reply = json.loads(c.request("$JS.API.STREAM.DELETE.MQTT_MSGS", timeout=5))
    c.close()
    assert reply.get("success"), reply
    p5 = b.raw()
    p5.connect5_ok("w-p5")
    p5.send(R.publish5("w/1", b"q1", qos=1, packet_id=3))
    ack = p5.expect(R.PUBACK)
    assert (ack.packet_id, ack.reason) == (3, UNSPECIFIED)
    assert "stream did not take the message" in ack.props.get(R.REASON_STRING, "")
    p5.send(R.publish5("w/2", b"q2", qos=2, packet_id=4))
    rec = p5.expect(R.PUBREC)
    assert (rec.packet_id, rec.reason) == (4, UNSPECIFIED)
    p3 = b.raw_connected("w-p3")
    p3.send(R.publish("w/3", b"q1-3", qos=1, packet_id=5))
    assert p3.wait_closed() == []  # no PUBACK before the close
    p5.send(R.publish5("w/0", b"q0", qos=0))
    got = far.next_publish()
    assert (got.topic, got.payload) == ("w/0", b"q0")
    far.expect_nothing(QUIET)  # none of the refused ones crossed
    assert [near.next_publish().payload for _ in range(4)] == [b"q1", b"q2", b"q1-3", b"q0"]
    assert "the cluster's stream did not take a QoS 1 PUBLISH, closing" in b.stderr_text()


def test_acknowledged_messages_survive_the_publishers_node(broker_factory, nats_server):
    a, b = nodes(broker_factory, nats_server.url, names=("k0", "k1"))
    sub = a.paho("k-sub")
    sub.subscribe("k/t", 1)
    pub = b.paho("k-pub")
    n = 200
    infos = [pub.c.publish("k/t", b"%d" % i, qos=1) for i in range(n)]
    for info in infos:
        info.wait_for_publish(10)
        assert info.is_published()
    b.kill()  # right after the last PUBACK
    got = [m.payload for m in sub.get_n(n, timeout=20)]
    assert got == [b"%d" % i for i in range(n)]
    sub.expect_none(QUIET)


def test_subscribers_node_restarted_gets_what_it_missed(broker_factory, nats_server, tmp_path):
    data = str(tmp_path / "r0-data")
    args = ["--cluster", nats_server.url, "--node-name", "r0"]
    a = broker_factory(extra_args=args, persistence_dir=data)
    (b,) = nodes(broker_factory, nats_server.url, names=("r1",))
    sub = a.paho("r-sub", clean_session=False)
    sub.subscribe("r/t", 1)
    sub.disconnect()
    port = a.port
    a.stop()
    pub = b.paho("r-pub")
    for i in range(20):
        pub.publish("r/t", b"%d" % i, qos=1)  # acknowledged: in the stream, for r0's consumer
    a = broker_factory(extra_args=args, persistence_dir=data, port=port)
    sub = a.paho("r-sub", clean_session=False)
    got = [m.payload for m in sub.get_n(20, timeout=10)]
    assert got == [b"%d" % i for i in range(20)]
    sub.expect_none(QUIET)


def test_subscribers_node_killed_while_messages_flow(broker_factory, nats_server, tmp_path):
    # The node acknowledges a stream message only once its log has the
    # offline session's copy: SIGKILLed while messages come in, restarted
    # on the same data directory, it loses none (one it had logged but not
    # acknowledged comes again: QoS 1 allows the duplicate).
    data = str(tmp_path / "x0-data")
    args = ["--cluster", nats_server.url, "--node-name", "x0"]
    a = broker_factory(extra_args=args, persistence_dir=data)
    (b,) = nodes(broker_factory, nats_server.url, names=("x1",))
    sub = a.paho("x-sub", clean_session=False)
    sub.subscribe("x/t", 1)
    sub.disconnect()
    port = a.port
    pub = b.paho("x-pub")
    n = 300
    for i in range(n):
        pub.publish("x/t", b"%d" % i, qos=1)
        if i == n // 2:
            a.kill()
    a = broker_factory(extra_args=args, persistence_dir=data, port=port)
    sub = a.paho("x-sub", clean_session=False)
    got = []
    deadline = time.monotonic() + 30  # one fetched, not acknowledged: again after AckWait (10 s)
    while len(set(got)) < n and time.monotonic() < deadline:
        try:
            got.append(sub.get(timeout=1).payload)
        except AssertionError:
            pass
    assert set(got) == {b"%d" % i for i in range(n)}


def test_r3_stream_without_a_quorum_refuses(broker_factory, nats_cluster_own):
    # --cluster-replicas 3: the stream is R3, and a message crosses nodes
    # from it; with two of the three NATS servers down JetStream has no
    # quorum and stores nothing: MQTT 5 is refused 0x80 (no PubAck within
    # 2 s), while QoS 0 still crosses (both nodes on the surviving server).
    n0, n1, n2 = nats_cluster_own.nodes
    a, b = nodes(broker_factory, n0.url, names=("t0", "t1"), extra=["--cluster-replicas", "3"])
    sub = a.raw_connected("t-sub")
    assert sub.subscribe(1, [("t/#", 1)]).granted == [1]
    pub = b.raw()
    pub.connect5_ok("t-pub")
    deadline = time.monotonic() + 20  # the R3 stream and its consumers, once elected
    while True:
        pub.send(R.publish5("t/1", b"stored", qos=1, packet_id=1))
        if pub.expect(R.PUBACK, timeout=5).reason == 0:
            break
        assert time.monotonic() < deadline, "the R3 stream never took a message"
        time.sleep(0.5)
    assert sub.next_publish(timeout=10).payload == b"stored"
    while True:  # a refused try may have been stored after its timeout
        try:
            sub.next_publish(timeout=QUIET)
        except Exception:
            break
    assert stream_info(n0)["config"]["num_replicas"] == 3
    n1.kill()
    n2.kill()
    pub.send(R.publish5("t/2", b"no quorum", qos=1, packet_id=2))
    ack = pub.expect(R.PUBACK, timeout=10)
    assert (ack.packet_id, ack.reason) == (2, UNSPECIFIED)
    pub.send(R.publish5("t/0", b"q0", qos=0))
    got = sub.next_publish(timeout=5)
    assert (got.topic, got.payload) == ("t/0", b"q0")
