"""Sessions owned by one node of the cluster at a time (docs/cluster.md,
"Sessions", issue 15): a CONNECT on a clustered node claims its client id
in the JetStream KV bucket MQTT_SESS by compare-and-set before its CONNACK,
and the node that held the session closes its client (MQTT 5: DISCONNECT
0x8E Session taken over) and drops the session. Two CONNECTs of one id on
two nodes at once leave exactly one connected.

The NATS server lives for the whole module, and so does the bucket: each
test uses client ids of its own."""

import threading
import time

import mqtt_raw as R

SETTLE = 1.0  # seconds for a takeover to reach the other node


def node(broker_factory, url, name, extra=()):
    return broker_factory(extra_args=["--cluster", url, "--node-name", name] + list(extra))


def alive(c, v5):
    """Whether c's connection still answers a PINGREQ."""
    try:
        c.send(R.pingreq())
        while True:
            p = c.recv_packet(2.0)
            if p.type == R.PINGRESP:
                return True
    except (R.Closed, TimeoutError, OSError):
        return False


def connect(broker, cid, v5, **kw):
    c = broker.raw()
    if v5:
        c.connect5_ok(cid, **kw)
    else:
        c.connect_ok(cid, **kw)
    return c


def taken_over(c, v5):
    """MQTT 5 is told why (0x8E); MQTT 3.1.1 only sees the close."""
    if v5:
        c.expect_disconnect(0x8E)
    else:
        assert c.wait_closed() == []


def back_and_forth(broker_factory, nats_server, v5, cid):
    a, b = node(broker_factory, nats_server.url, "a"), node(broker_factory, nats_server.url, "b")
    held = connect(a, cid, v5)
    for i, (here, there) in enumerate([(b, a), (a, b), (b, a), (a, b)]):
        new = connect(here, cid, v5)
        taken_over(held, v5)
        assert alive(new, v5), "round %d: the new connection went too" % i
        held = new
    time.sleep(SETTLE)
    assert alive(held, v5)


def test_takeover_across_nodes_v5(broker_factory, nats_server):
    back_and_forth(broker_factory, nats_server, True, "xs-5")


def test_takeover_across_nodes_v311(broker_factory, nats_server):
    back_and_forth(broker_factory, nats_server, False, "xs-4")


def test_two_connects_at_once_leave_one(broker_factory, nats_server):
    a, b = node(broker_factory, nats_server.url, "a"), node(broker_factory, nats_server.url, "b")
    for i in range(20):
        cid = "race-%d-%d" % (i, time.monotonic_ns())
        socks = [a.raw(), b.raw()]
        for s in socks:
            s.v5 = True
        go = threading.Barrier(2)
        acks = [None, None]

        def run(k):
            go.wait()
            socks[k].send(R.connect5(cid))
            try:
                acks[k] = socks[k].recv_packet(5.0)
            except (R.Closed, TimeoutError) as e:
                acks[k] = e

        ts = [threading.Thread(target=run, args=(k,)) for k in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        accepted = [k for k in range(2) if getattr(acks[k], "type", None) == R.CONNACK
                    and acks[k].rc == 0]
        for k in range(2):
            if k not in accepted:  # refused: 0x89 Server busy, nothing else
                assert getattr(acks[k], "type", None) == R.CONNACK, (i, acks)
                assert acks[k].rc == 0x89, (i, acks)
        time.sleep(SETTLE)
        up = [k for k in range(2) if alive(socks[k], True)]
        assert len(up) == 1, "round %d: %r connected (CONNACKs %r)" % (i, up, acks)
        for s in socks:
            s.sock.close()


def test_other_ids_undisturbed(broker_factory, nats_server):
    a, b = node(broker_factory, nats_server.url, "a"), node(broker_factory, nats_server.url, "b")
    cs = []
    for i in range(6):
        cs.append(connect((a, b)[i % 2], "other-%d" % i, i % 3 == 0))
    time.sleep(SETTLE)
    assert [alive(c, i % 3 == 0) for i, c in enumerate(cs)] == [True] * 6


def test_persistent_session_dropped_by_the_old_node(broker_factory, nats_server):
    a, b = node(broker_factory, nats_server.url, "a"), node(broker_factory, nats_server.url, "b")
    keep = [(R.SESSION_EXPIRY, 300)]
    c = a.raw()
    c.park_session5("ps-1", [("ps/t", 1)], session_expiry=300)
    # On this node alone, the session is there:
    c = connect(a, "ps-1", True, clean_start=False, properties=keep)
    c.send(R.disconnect5())
    c.wait_closed()
    c = connect(b, "ps-1", True, clean_start=False, properties=keep)
    time.sleep(SETTLE)
    c.send(R.disconnect5())
    c.wait_closed()
    # a dropped it when b took it: its offline queue did not move (not built).
    c = a.raw()
    ack = c.connect5_ok("ps-1", clean_start=False, properties=keep)
    assert not ack.session_present


def test_plain_node_unchanged(broker_factory, nats_server):
    """Without --cluster a node knows nothing of the bucket: the same id on
    it and on a clustered node keeps both, and its own takeover is as
    ever."""
    plain = broker_factory()
    a = node(broker_factory, nats_server.url, "a")
    p1 = connect(plain, "plain-1", True)
    c1 = connect(a, "plain-1", True)
    time.sleep(SETTLE)
    assert alive(p1, True) and alive(c1, True)
    p2 = connect(plain, "plain-1", True)
    p1.expect_disconnect(0x8E)
    assert alive(p2, True) and alive(c1, True)
