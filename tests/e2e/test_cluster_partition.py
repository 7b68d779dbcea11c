"""A broker node cut off from its cluster (docs/cluster.md, "Failure
behaviour"): once its NATS link has been down for the partition grace (2 s)
it refuses new work rather than diverge from the other nodes, with the
reason codes each protocol has: CONNECT "server unavailable" (3.1.1 return
code 3, MQTT 5 0x88), SUBSCRIBE failure (0x80), a QoS 1/2 PUBLISH refused
in its PUBACK/PUBREC (MQTT 5, 0x80) or with the connection closed (3.1.1);
QoS 0 goes on locally. Within the grace (a NATS restart that libnats rides
out) nothing is refused as cut off (a QoS 1/2 PUBLISH still waits for the
cluster's stream, and is refused when the stream does not answer in time), and once the link is back everything is taken
again. Each test has its own nats-server, which it kills and restarts."""

import time

import pytest

import mqtt_raw as R

from conftest import start_nats

GRACE = 2.0  # CLUSTER_PARTITION_MS
UNAVAILABLE = 3  # MQTT 3.1.1 CONNACK return code
SERVER_UNAVAILABLE = 0x88
UNSPECIFIED = 0x80


@pytest.fixture
def nats():
    cluster = start_nats(1)
    yield cluster.nodes[0]
    cluster.destroy()


def cut_off(nats, node):
    """Kills the NATS server and waits past the grace, until node refuses
    a CONNECT."""
    nats.kill()
    deadline = time.monotonic() + GRACE + 10
    while time.monotonic() < deadline:
        with node.raw() as c:
            if c.connect("probe").rc == UNAVAILABLE:
                return
        time.sleep(0.2)
    raise AssertionError("the node never refused a CONNECT while cut off")


def back(nats, node):
    """Restarts the NATS server (same port) and waits until node takes a
    CONNECT again."""
    nats.start()
    nats.wait_ready(time.monotonic() + 20)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with node.raw() as c:
            if c.connect("probe").rc == 0:
                return
        time.sleep(0.2)
    raise AssertionError("the node never took a CONNECT again")


def test_cut_off_node_refuses_new_work_and_takes_it_again(broker_factory, nats):
    a = broker_factory(extra_args=["--cluster", nats.url, "--node-name", "a"])
    # Connected before the partition: a 3.1.1 and an MQTT 5 client, and a
    # local subscriber of everything.
    sub = a.raw_connected("p-sub")
    assert sub.subscribe(1, [("p/#", 1)]).granted == [1]
    old5 = a.raw()
    old5.connect5_ok("p-old5")
    old3 = a.raw_connected("p-old3")

    cut_off(nats, a)
    # CONNECT: server unavailable, in both protocols.
    with a.raw() as c:
        assert c.connect("p-new3").rc == UNAVAILABLE
        assert c.wait_closed() == []
    with a.raw() as c:
        assert c.connect5("p-new5").rc == SERVER_UNAVAILABLE
        assert c.wait_closed() == []
    # SUBSCRIBE: refused, filter by filter; nothing subscribed.
    assert old3.subscribe(2, [("q/1", 0), ("q/2", 1)]).granted == [0x80, 0x80]
    assert old5.subscribe(3, [("q/5", 1)]).granted == [UNSPECIFIED]
    # QoS 1/2 PUBLISH: MQTT 5 is told in its PUBACK/PUBREC, not delivered.
    old5.send(R.publish5("p/x", b"q1", qos=1, packet_id=7))
    ack = old5.expect(R.PUBACK)
    assert (ack.packet_id, ack.reason) == (7, UNSPECIFIED)
    assert "cut off from its cluster" in ack.props.get(R.REASON_STRING, "")
    old5.send(R.publish5("p/x", b"q2", qos=2, packet_id=8))
    rec = old5.expect(R.PUBREC)
    assert (rec.packet_id, rec.reason) == (8, UNSPECIFIED)
    # QoS 0 goes on, to this node's subscribers only.
    old5.send(R.publish5("p/x", b"q0", qos=0))
    got = sub.next_publish()
    assert (got.topic, got.payload) == ("p/x", b"q0")
    # 3.1.1 cannot be told: its QoS 1 PUBLISH closes the connection.
    old3.send(R.publish("p/x", b"q1-3", qos=1, packet_id=9))
    assert old3.wait_closed() == []
    sub.expect_nothing(0.5)  # neither refused message was delivered

    back(nats, a)
    # Everything is taken again, on the old connections and new ones.
    old5.send(R.publish5("p/x", b"again", qos=1, packet_id=10))
    assert old5.expect(R.PUBACK).reason in (0, 0x10)
    got = sub.next_publish()
    assert (got.topic, got.payload) == ("p/x", b"again")
    assert old5.subscribe(11, [("q/5", 1)]).granted == [1]
    new3 = a.raw_connected("p-new3")
    assert new3.subscribe(12, [("q/1", 0)]).granted == [0]
    for c in (sub, old5, new3):
        c.close()
    log = a.stderr_text()
    assert "refused: cut off from the cluster for" in log
    assert "QoS 1 PUBLISH while cut off from the cluster, closing" in log


def test_a_short_outage_is_not_a_partition(broker_factory, nats):
    # Within the grace after the link is lost (a NATS restart that libnats
    # rides out) the node refuses nothing as cut off: a SUBSCRIBE right
    # after it noticed goes through, and the subscription works once NATS
    # is back, however long its restart took. What needs JetStream is
    # refused all the same: a CONNECT (return code 3, as for a partition:
    # its session claim, test_cluster_sessions.py) and a QoS 1 PUBLISH
    # once its stream's PubAck is 2 s late (test_cluster_qos.py).
    a = broker_factory(extra_args=["--cluster", nats.url, "--node-name", "a"])
    c5 = a.raw()
    c5.connect5_ok("s-5")
    nats.kill()
    deadline = time.monotonic() + 10
    while "lost the NATS connection" not in a.stderr_text():
        assert time.monotonic() < deadline, "the node never noticed the NATS server's end"
        time.sleep(0.02)
    with a.raw() as c:
        assert c.connect("s-new").rc == 3
    # Not refused as cut off; but its PUBACK waits for the cluster's stream
    # (JetStream, docs/cluster.md), which cannot answer before the server
    # is back: after JS_MSGS_WAIT_MS (2 s) the message is refused as one
    # the stream did not take.
    c5.send(R.publish5("s/0", b"x", qos=1, packet_id=2))
    # Right after, not refused: its flush waits for the server that is
    # gone (1 s at most), before the PUBACK's wait is over.
    assert c5.subscribe(1, [("s/1", 1)]).granted == [1]
    ack = c5.expect(R.PUBACK, timeout=5)
    assert ack.reason == UNSPECIFIED
    assert "stream did not take" in ack.props.get(R.REASON_STRING, "")
    back(nats, a)
    c5.send(R.publish5("s/1", b"y", qos=1, packet_id=3))
    assert c5.expect_skipping(R.PUBACK).reason == 0
    c5.close()
