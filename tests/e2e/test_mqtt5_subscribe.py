"""MQTT 5.0 SUBSCRIBE and UNSUBSCRIBE: subscription options (No Local,
Retain As Published, Retain Handling 0/1/2), Subscription Identifiers
(forwarded, with overlapping subscriptions), SUBACK and UNSUBACK reason
codes. Normative references are to the OASIS MQTT 5.0 standard."""

import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

import mqtt_raw as R
from conftest import IS_PEER
from mqtt_paho import paho5

NO_LOCAL = 0x04
RETAIN_AS_PUBLISHED = 0x08


def rh(n):
    return n << 4


def test_no_local(broker):
    me = broker.raw().subscribed5("m5s-nl", [("nl/t", 1 | NO_LOCAL)])
    other = broker.raw()
    other.connect5_ok("m5s-nl-other")
    other.subscribe(1, [("nl/t", 1)])
    me.send(R.publish5("nl/t", b"mine", qos=1, packet_id=1))
    me.expect(R.PUBACK)  # [MQTT-3.8.3-3]: not sent back to its publisher
    assert other.next_publish().payload == b"mine"
    me.expect_nothing(0.5)
    # Others' messages still arrive.
    other.send(R.publish5("nl/t", b"theirs"))
    assert me.next_publish().payload == b"theirs"


def test_no_local_paho(broker):
    c = paho5(broker, "m5s-nl-paho")
    c.subscribe("nlp/t", options=SubscribeOptions(qos=1, noLocal=True))
    c.subscribe("nlp/echo", 1)
    c.publish("nlp/t", b"a", qos=1)
    c.publish("nlp/echo", b"b", qos=1)
    m = c.get()
    assert (m.topic, m.payload) == ("nlp/echo", b"b")
    c.expect_none(0.3)


def test_retain_as_published(broker):
    keep = broker.raw().subscribed5("m5s-rap", [("rap/t", 0 | RETAIN_AS_PUBLISHED)])
    plain = broker.raw()
    plain.connect5_ok("m5s-norap")
    plain.subscribe(1, [("rap/t", 0)])
    pub = broker.raw_connected("m5s-rap-pub")
    pub.send(R.publish("rap/t", b"r", retain=True))
    p = keep.next_publish()
    assert (p.payload, p.retain) == (b"r", True)
    p = plain.next_publish()
    assert (p.payload, p.retain) == (b"r", False)  # [MQTT-3.3.1-12]


def retained_then_connect(broker, client_id, topic, payload):
    """Stores a retained message (from an MQTT 3.1.1 client), then connects
    an MQTT 5 client."""
    pub = broker.raw_connected(client_id + "-pub")
    pub.send(R.publish(topic, payload, qos=1, packet_id=1, retain=True))
    pub.expect(R.PUBACK)
    c = broker.raw()
    c.connect5_ok(client_id)
    return c


def retained_after_subscribe(c, packet_id, options):
    ack = c.subscribe(packet_id, [("rh/t", options)])
    assert ack.granted == [options & 3]
    got = list(c.pending)
    c.pending.clear()
    try:
        while True:
            got.append(c.recv_packet(0.3))
    except TimeoutError:
        pass
    return [p.payload for p in got]


def test_retain_handling(broker):
    c = retained_then_connect(broker, "m5s-rh", "rh/t", b"kept")
    # 0: on every subscribe, even one that replaces a subscription.
    assert retained_after_subscribe(c, 1, 0 | rh(0)) == [b"kept"]
    assert retained_after_subscribe(c, 2, 0 | rh(0)) == [b"kept"]
    # 1: only when the subscription is new [MQTT-3.3.1-10].
    assert retained_after_subscribe(c, 3, 0 | rh(1)) == []
    c.send(R.unsubscribe5(4, ["rh/t"]))
    c.expect(R.UNSUBACK)
    assert retained_after_subscribe(c, 5, 0 | rh(1)) == [b"kept"]
    # 2: never [MQTT-3.3.1-11].
    c.send(R.unsubscribe5(6, ["rh/t"]))
    c.expect(R.UNSUBACK)
    assert retained_after_subscribe(c, 7, 0 | rh(2)) == []


def test_retained_message_carries_retain_flag_and_sub_id(broker):
    c = retained_then_connect(broker, "m5s-rsid", "rsid/t", b"old")
    c.subscribe(1, [("rsid/#", 1)], properties=[(R.SUBSCRIPTION_ID, 9)])
    p = c.next_publish()
    assert (p.payload, p.retain, p.props.get(R.SUBSCRIPTION_ID)) == (b"old", True, [9])


def test_subscription_identifier_forwarded(broker):
    c = paho5(broker, "m5s-sid")
    props = Properties(PacketTypes.SUBSCRIBE)
    props.SubscriptionIdentifier = 42
    c.subscribe("sid/t", 1, properties=props)
    c.subscribe("sid/none", 1)
    pub = broker.raw_connected("m5s-sid-pub")
    pub.send(R.publish("sid/t", b"a") + R.publish("sid/none", b"b"))
    ms = sorted(c.get_n(2), key=lambda m: m.topic)
    assert ms[0].topic == "sid/none" and not hasattr(ms[0].properties, "SubscriptionIdentifier")
    assert ms[1].topic == "sid/t" and ms[1].properties.SubscriptionIdentifier == [42]


def arrivals(c, quiet=0.5):
    """Every packet that arrives until none has for `quiet` seconds."""
    got = []
    try:
        while True:
            got.append(c.recv_packet(quiet))
    except TimeoutError:
        pass
    return got


def all_publishes(c):
    """The next PUBLISH and every packet that follows it closely."""
    return [c.next_publish()] + arrivals(c)


@pytest.mark.shootout_only  # Mosquitto sends one copy per subscription
def test_overlapping_subscriptions_one_copy_every_identifier(broker):
    # [MQTT-3.3.4-2], [MQTT-3.3.4-4]: one copy, at the highest QoS of the
    # matching subscriptions, with the identifier of every one that has one,
    # identical ones repeated (3.3.4: "multiple identical Subscription
    # Identifiers").
    c = broker.raw()
    c.connect5_ok("m5s-ovl")
    c.subscribe(1, [("ovl/#", 0)], properties=[(R.SUBSCRIPTION_ID, 1)])
    c.subscribe(2, [("ovl/+", 1)], properties=[(R.SUBSCRIPTION_ID, 2)])
    c.subscribe(3, [("+/x", 0)], properties=[(R.SUBSCRIPTION_ID, 1)])
    c.subscribe(4, [("ovl/x", 0)])  # matches too, without an identifier
    pub = broker.raw_connected("m5s-ovl-pub")
    pub.send(R.publish("ovl/x", b"m", qos=2, packet_id=1))
    pub.expect(R.PUBREC)
    (p,) = all_publishes(c)
    assert (p.payload, p.qos) == (b"m", 1)
    assert sorted(p.props[R.SUBSCRIPTION_ID]) == [1, 1, 2]
    # A topic only one of them matches gets that one's identifier alone.
    pub.send(R.publish("ovl/y/z", b"n"))
    (p,) = all_publishes(c)
    assert (p.payload, p.qos, p.props[R.SUBSCRIPTION_ID]) == (b"n", 0, [1])


def test_overlapping_subscriptions_paho(broker):
    c = paho5(broker, "m5s-ovl-paho")
    for topic, qos, sid in (("ovp/#", 0, 7), ("ovp/+/c", 2, 9)):
        props = Properties(PacketTypes.SUBSCRIBE)
        props.SubscriptionIdentifier = sid
        c.subscribe(topic, qos, properties=props)
    c.subscribe("ovp/b/+", 1)
    pub = paho5(broker, "m5s-ovl-paho-pub")
    pub.publish("ovp/b/c", b"x", qos=2)
    m = c.get()
    assert (m.topic, m.payload, sorted(m.properties.SubscriptionIdentifier)) == ("ovp/b/c", b"x", [7, 9])
    if not IS_PEER:
        assert m.qos == 2
        c.expect_none(0.5)


@pytest.mark.shootout_only
def test_overlapping_no_local_subscription_takes_no_part(broker):
    # [MQTT-3.8.3-3] per subscription: the No Local one is left out, QoS
    # and identifier included; the others still deliver the client's own
    # message, in one copy.
    c = broker.raw()
    c.connect5_ok("m5s-ovnl")
    c.subscribe(1, [("ovnl/#", 2 | NO_LOCAL)], properties=[(R.SUBSCRIPTION_ID, 1)])
    c.subscribe(2, [("ovnl/+", 0)], properties=[(R.SUBSCRIPTION_ID, 2)])
    c.subscribe(3, [("ovnl/only", 1 | NO_LOCAL)], properties=[(R.SUBSCRIPTION_ID, 3)])
    c.send(R.publish5("ovnl/a", b"mine", qos=1, packet_id=10))
    # ovnl/only/x matches ovnl/# alone, which has No Local: nothing comes
    # back; ovnl/only matches all three, and ovnl/+ alone takes part.
    c.send(R.publish5("ovnl/only/x", b"x", qos=1, packet_id=11))
    c.send(R.publish5("ovnl/only", b"y", qos=1, packet_id=12))
    got = arrivals(c)
    assert sorted(p.packet_id for p in got if p.type == R.PUBACK) == [10, 11, 12]
    copies = [(p.payload, p.qos, p.props[R.SUBSCRIPTION_ID]) for p in got if p.type == R.PUBLISH]
    assert copies == [(b"mine", 0, [2]), (b"y", 0, [2])]


@pytest.mark.shootout_only
def test_overlapping_retain_as_published_if_any_asks(broker):
    # One copy cannot both keep and clear RETAIN: it is kept as published
    # when any contributing subscription has Retain As Published, as the
    # copy takes the highest QoS of them too.
    c = broker.raw()
    c.connect5_ok("m5s-ovrap")
    c.subscribe(1, [("ovrap/#", 0)])
    c.subscribe(2, [("ovrap/+", 0 | RETAIN_AS_PUBLISHED)])
    pub = broker.raw_connected("m5s-ovrap-pub")
    pub.send(R.publish("ovrap/t", b"r", retain=True))
    (p,) = all_publishes(c)
    assert (p.payload, p.retain) == (b"r", True)
    pub.send(R.publish("ovrap/t/u", b"s", retain=True))  # ovrap/# alone
    (p,) = all_publishes(c)
    assert (p.payload, p.retain) == (b"s", False)
    # A No Local subscription with Retain As Published does not count for
    # the client's own message.
    c.subscribe(3, [("ovrap/t/u", 0 | RETAIN_AS_PUBLISHED | NO_LOCAL | rh(2))])
    c.send(R.publish5("ovrap/t/u", b"own", retain=True))
    (p,) = all_publishes(c)
    assert (p.payload, p.retain) == (b"own", False)
    for t in ("ovrap/t", "ovrap/t/u"):
        pub.send(R.publish(t, b"", retain=True))


@pytest.mark.shootout_only
def test_overlapping_copy_queued_and_resent_keeps_identifiers(broker):
    # The copy waits in the session (offline, then behind a Receive Maximum
    # of 1) with all its identifiers, and is resent with them.
    c = broker.raw()
    c.connect5_ok("m5s-ovq", clean_start=True, properties=[(R.SESSION_EXPIRY, 60)])
    c.subscribe(1, [("ovq/#", 1)], properties=[(R.SUBSCRIPTION_ID, 4)])
    c.subscribe(2, [("ovq/+", 1)], properties=[(R.SUBSCRIPTION_ID, 5)])
    c.send(R.disconnect5())
    c.close()
    pub = broker.raw_connected("m5s-ovq-pub")
    for i in range(3):
        pub.send(R.publish("ovq/t", b"q%d" % i, qos=1, packet_id=1 + i))
        pub.expect(R.PUBACK)
    c = broker.raw()
    c.connect5_ok("m5s-ovq", clean_start=False, properties=[(R.RECEIVE_MAX, 1)])
    for i in range(3):
        p = c.next_publish()
        assert (p.payload, sorted(p.props[R.SUBSCRIPTION_ID])) == (b"q%d" % i, [4, 5])
        c.send(R.puback(p.packet_id))
    c.expect_nothing(0.3)


def test_retained_on_subscribe_not_merged(broker):
    # Retained messages sent for a SUBSCRIBE carry that subscription's
    # identifier only, whatever else the client has subscribed.
    c = retained_then_connect(broker, "m5s-rsm", "rsm/t", b"old")
    c.subscribe(1, [("rsm/#", 0)], properties=[(R.SUBSCRIPTION_ID, 1)])
    p = c.next_publish()
    assert (p.payload, p.retain, p.props[R.SUBSCRIPTION_ID]) == (b"old", True, [1])
    c.subscribe(2, [("rsm/+", 1)], properties=[(R.SUBSCRIPTION_ID, 2)])
    p = c.next_publish()
    assert (p.payload, p.retain, p.props[R.SUBSCRIPTION_ID]) == (b"old", True, [2])
    c.expect_nothing(0.3)


@pytest.mark.shootout_only
def test_overlapping_shared_subscription_is_a_copy_of_its_own(broker):
    # 4.8.2: a shared subscription's group delivers apart from the client's
    # ordinary subscriptions, which still merge into one copy.
    c = broker.raw()
    c.connect5_ok("m5s-ovsh")
    c.subscribe(1, [("$share/g/ovsh/#", 1)], properties=[(R.SUBSCRIPTION_ID, 1)])
    c.subscribe(2, [("ovsh/#", 0)], properties=[(R.SUBSCRIPTION_ID, 2)])
    c.subscribe(3, [("ovsh/+", 0)], properties=[(R.SUBSCRIPTION_ID, 3)])
    pub = broker.raw_connected("m5s-ovsh-pub")
    pub.send(R.publish("ovsh/t", b"s", qos=1, packet_id=1))
    pub.expect(R.PUBACK)
    got = all_publishes(c)
    assert sorted((p.qos, sorted(p.props[R.SUBSCRIPTION_ID])) for p in got) == [(0, [2, 3]), (1, [1])]


def test_resubscribe_replaces_identifier(broker):
    c = broker.raw()
    c.connect5_ok("m5s-resid")
    c.subscribe(1, [("resid/t", 0)], properties=[(R.SUBSCRIPTION_ID, 5)])
    c.subscribe(2, [("resid/t", 0)])
    pub = broker.raw_connected("m5s-resid-pub")
    pub.send(R.publish("resid/t", b"x"))
    p = c.next_publish()
    assert R.SUBSCRIPTION_ID not in p.props
    c.expect_nothing(0.3)


def test_suback_and_unsuback_reason_codes(broker):
    c = broker.raw()
    c.connect5_ok("m5s-codes")
    assert c.subscribe(1, [("codes/0", 0), ("codes/1", 1), ("codes/2", 2)]).granted == [0, 1, 2]
    c.send(R.unsubscribe5(2, ["codes/1", "codes/never"]))
    ack = c.expect(R.UNSUBACK)
    assert ack.granted == [0x00, 0x11]  # Success, No subscription existed


def test_v3_overlapping_still_one_copy(broker):
    # MQTT 3.1.1 gets one copy at the highest granted QoS [MQTT-3.3.5-1]
    # (Mosquitto 2.0 too, with allow_duplicate_messages false, its default).
    c = broker.raw_connected("m5s-v3ovl")
    c.subscribe(1, [("v3ovl/#", 0), ("v3ovl/+", 1)])
    pub = broker.raw()
    pub.connect5_ok("m5s-v3ovl-pub")
    pub.send(R.publish5("v3ovl/x", b"m", qos=1, packet_id=1, properties=[(R.USER_PROPERTY, ("a", "b"))]))
    p = c.next_publish()
    assert (p.payload, p.qos) == (b"m", 1)
    c.expect_nothing(0.3)
