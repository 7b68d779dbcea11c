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


def test_overlapping_subscriptions_carry_every_identifier(broker):
    # [MQTT-3.3.4-3..5]: one copy per subscription, each with its id (what
    # shootout does), or one copy with both ids.
    c = broker.raw()
    c.connect5_ok("m5s-ovl")
    c.subscribe(1, [("ovl/#", 0)], properties=[(R.SUBSCRIPTION_ID, 1)])
    c.subscribe(2, [("ovl/+", 1)], properties=[(R.SUBSCRIPTION_ID, 2)])
    pub = broker.raw_connected("m5s-ovl-pub")
    pub.send(R.publish("ovl/x", b"m", qos=1, packet_id=1))
    pub.expect(R.PUBACK)
    copies = [c.next_publish()]
    try:
        copies.append(c.recv_packet(0.5))
    except TimeoutError:
        pass
    ids = sorted(i for p in copies for i in p.props.get(R.SUBSCRIPTION_ID, []))
    assert ids == [1, 2]
    if not IS_PEER:
        by_id = {p.props[R.SUBSCRIPTION_ID][0]: p.qos for p in copies}
        assert by_id == {1: 0, 2: 1}  # each at its own subscription's QoS


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
    # MQTT 3.1.1 keeps one copy at the highest granted QoS (shootout's
    # choice; Mosquitto 2.0 sends one per subscription).
    c = broker.raw_connected("m5s-v3ovl")
    c.subscribe(1, [("v3ovl/#", 0), ("v3ovl/+", 1)])
    pub = broker.raw()
    pub.connect5_ok("m5s-v3ovl-pub")
    pub.send(R.publish5("v3ovl/x", b"m", qos=1, packet_id=1, properties=[(R.USER_PROPERTY, ("a", "b"))]))
    p = c.next_publish()
    assert (p.payload, p.qos) == (b"m", 1)
    if not IS_PEER:
        c.expect_nothing(0.3)
