"""Wills in a broker cluster on NATS (docs/cluster.md, "Sessions"): the
node that holds a client's connection publishes its will when the
connection ends without DISCONNECT, as on one node, and the will reaches
every matching subscriber on every node once; a clean DISCONNECT sends none
anywhere; an MQTT 5 Will Delay Interval is kept by that node, and a
reconnect within it (to the same node) cancels the will everywhere. (A will
of a node that dies with its clients is not built: docs/cluster.md.)"""

import time

import pytest

import mqtt_raw as R

QUIET = 0.5  # seconds without a message: nothing more is coming


def nodes(broker_factory, nats, n=3):
    return [broker_factory(extra_args=["--cluster", nats.url, "--node-name", "will%d" % i])
            for i in range(n)]


def drain(client, quiet=QUIET):
    return [(m.topic, m.payload, m.qos) for m in client.drain(quiet)]


def subscribers(ns, name, flt):
    subs = []
    for i, n in enumerate(ns):
        c = n.paho("%s-sub%d" % (name, i))
        c.subscribe(flt, 1)
        subs.append(c)
    return subs


@pytest.mark.parametrize("origin", [0, 2])
def test_will_reaches_every_node_once(broker_factory, nats_server, origin):
    ns = nodes(broker_factory, nats_server)
    subs = subscribers(ns, "wo%d" % origin, "wo/#")
    w = ns[origin].raw()
    w.connect_ok("wo-client-%d" % origin, will_topic="wo/gone", will_message=b"bye", will_qos=1)
    w.close()  # no DISCONNECT: the will goes
    for i, c in enumerate(subs):
        assert drain(c) == [("wo/gone", b"bye", 1)], "node %d" % i


def test_clean_disconnect_sends_no_will_anywhere(broker_factory, nats_server):
    ns = nodes(broker_factory, nats_server)
    subs = subscribers(ns, "wc", "wc/#")
    w = ns[1].raw()
    w.connect_ok("wc-client", will_topic="wc/gone", will_message=b"bye", will_qos=1)
    w.send(R.disconnect())
    w.wait_closed()
    # A message after it, from the same node, shows the routing works and
    # that the subscribers have waited long enough.
    p = ns[1].raw_connected("wc-pub")
    p.send(R.publish("wc/after", b"a", qos=1, packet_id=1))
    p.expect(R.PUBACK)
    for i, c in enumerate(subs):
        assert drain(c) == [("wc/after", b"a", 1)], "node %d" % i


def delayed_will_client(n, client_id, topic):
    w = n.raw()
    w.connect5_ok(client_id, clean_start=False, properties=[(R.SESSION_EXPIRY, 60)],
                  will_topic=topic, will_message=b"late", will_qos=1,
                  will_properties=[(R.WILL_DELAY, 1)])
    return w


def test_will_delay_kept_by_the_node_that_held_the_client(broker_factory, nats_server):
    ns = nodes(broker_factory, nats_server, 2)
    subs = subscribers(ns, "wd", "wd/#")
    w = delayed_will_client(ns[0], "wd-client", "wd/gone")
    w.close()
    t0 = time.time()
    for c in subs:
        with pytest.raises(Exception):
            c.messages.get(timeout=0.5)  # not before its delay, on either node
    for i, c in enumerate(subs):
        m = c.messages.get(timeout=5)
        assert (m.topic, m.payload) == ("wd/gone", b"late"), "node %d" % i
        assert time.time() - t0 >= 0.9
        assert drain(c) == [], "node %d: once" % i


def test_reconnect_within_the_delay_cancels_the_will_everywhere(broker_factory, nats_server):
    ns = nodes(broker_factory, nats_server, 2)
    subs = subscribers(ns, "wr", "wr/#")
    w = delayed_will_client(ns[0], "wr-client", "wr/gone")
    w.close()
    time.sleep(0.2)
    back = ns[0].raw()
    assert back.connect5_ok("wr-client", clean_start=False,
                            properties=[(R.SESSION_EXPIRY, 60)]).session_present
    time.sleep(1.5)  # past the delay
    for i, c in enumerate(subs):
        assert drain(c) == [], "node %d" % i


def test_will_properties_and_expiry_on_another_node(broker_factory, nats_server):
    # An MQTT 5 will's properties cross as a PUBLISH's do (the header
    # mapping of test_cluster_props.py), the Message Expiry Interval as
    # what is left of it when the will is published.
    a, b = nodes(broker_factory, nats_server, 2)
    here, there = [n.raw() for n in (a, b)]
    for i, c in enumerate((here, there)):
        c.connect5_ok("wp-sub%d" % i)
        c.subscribe(1, [("wp/#", 1)])
    w = a.raw()
    w.connect5_ok("wp-client", will_topic="wp/gone", will_message=b"bye", will_qos=1,
                  will_properties=[(R.CONTENT_TYPE, "text/plain"), (R.MESSAGE_EXPIRY, 60),
                                   (R.USER_PROPERTY, ("k", "v"))])
    w.close()
    p_here, p_there = here.next_publish(), there.next_publish()
    assert p_there.payload == p_here.payload == b"bye"
    assert p_there.props[R.CONTENT_TYPE] == "text/plain"
    assert 59 <= p_there.props[R.MESSAGE_EXPIRY] <= 60
    assert p_there.props[R.USER_PROPERTY] == p_here.props[R.USER_PROPERTY]
    for c in (here, there):
        c.expect_nothing(QUIET)


def test_takeover_from_another_node_publishes_the_old_connection_s_will(broker_factory,
                                                                       nats_server):
    # As on one node (test_will.py's takeover test): the connection taken
    # over ends without DISCONNECT, so its will goes, from the node that
    # held it, to every node once; the new connection's will does not.
    ns = nodes(broker_factory, nats_server, 2)
    subs = subscribers(ns, "wt", "wt/#")
    old = ns[0].raw()
    old.connect_ok("wt-client", will_topic="wt/gone", will_message=b"old conn")
    new = ns[1].raw()
    new.connect_ok("wt-client", will_topic="wt/gone", will_message=b"new conn")
    old.wait_closed()
    for i, c in enumerate(subs):
        assert drain(c) == [("wt/gone", b"old conn", 0)], "node %d" % i
    assert not new.is_closed_now()
