"""MQTT 5.0 PUBLISH: properties passed through (request/response, user
properties, payload format, content type) and stripped for MQTT 3.1.1
subscribers, Message Expiry Interval, topic aliases in both directions,
Receive Maximum in both directions, Maximum Packet Size in both directions,
and the reason codes of the acknowledgements. Normative references are to
the OASIS MQTT 5.0 standard."""

import time

import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

import mqtt_raw as R
from conftest import IS_PEER
from mqtt_paho import paho5


def still_works(broker, tag):
    """Another client's publish still reaches a third one."""
    sub = broker.raw()
    sub.connect5_ok(tag + "-sub")
    sub.subscribe(1, [(tag + "/alive", 1)])
    pub = broker.raw()
    pub.connect5_ok(tag + "-pub")
    pub.send(R.publish5(tag + "/alive", b"ok", qos=1, packet_id=1))
    assert pub.expect(R.PUBACK).reason == 0
    p = sub.next_publish()
    assert (p.topic, p.payload) == (tag + "/alive", b"ok")


def publish_props():
    p = Properties(PacketTypes.PUBLISH)
    p.ResponseTopic = "reply/here"
    p.CorrelationData = b"\x00req-42"
    p.UserProperty = [("k1", "v1"), ("k2", "v2"), ("k1", "again")]
    p.PayloadFormatIndicator = 1
    p.ContentType = "text/plain"
    return p


def test_properties_pass_through_to_v5(broker):
    sub = paho5(broker, "m5p-sub")
    sub.subscribe("props/t", 1)
    pub = paho5(broker, "m5p-pub")
    pub.publish("props/t", b"body", qos=1, properties=publish_props())
    m = sub.get()
    assert m.payload == b"body"
    got = m.properties
    assert got.ResponseTopic == "reply/here"
    assert got.CorrelationData == b"\x00req-42"
    assert got.UserProperty == [("k1", "v1"), ("k2", "v2"), ("k1", "again")]
    assert got.PayloadFormatIndicator == 1
    assert got.ContentType == "text/plain"


def test_v5_message_reaches_v3_without_properties(broker):
    v3 = broker.raw_connected("m5p-v3")
    v3.subscribe(1, [("props/v3", 1)])
    pub = paho5(broker, "m5p-pub3")
    pub.publish("props/v3", b"to v3", qos=1, properties=publish_props())
    p = v3.next_publish()  # the 3.1.1 decoder would choke on properties
    assert (p.topic, p.payload, p.qos) == ("props/v3", b"to v3", 1)


def test_v3_message_reaches_v5_without_properties(broker):
    sub = broker.raw().subscribed5("m5p-v5", [("props/from3", 2)])
    pub = broker.raw_connected("m5p-pubv3")
    pub.send(R.publish("props/from3", b"from v3", qos=2, packet_id=3))
    pub.expect(R.PUBREC)
    pub.send(R.pubrel(3))  # Mosquitto delivers QoS 2 on PUBREL
    pub.expect(R.PUBCOMP)
    p = sub.next_publish()
    assert (p.topic, p.payload, p.qos, p.props) == ("props/from3", b"from v3", 2, {})


def test_request_response(broker):
    responder = paho5(broker, "m5p-responder")
    responder.subscribe("rr/request", 1)
    requester = paho5(broker, "m5p-requester")
    requester.subscribe("rr/reply/requester", 1)
    props = Properties(PacketTypes.PUBLISH)
    props.ResponseTopic = "rr/reply/requester"
    props.CorrelationData = b"corr-1"
    requester.publish("rr/request", b"ping?", qos=1, properties=props)
    req = responder.get()
    reply = Properties(PacketTypes.PUBLISH)
    reply.CorrelationData = req.properties.CorrelationData
    responder.publish(req.properties.ResponseTopic, b"pong!", qos=1, properties=reply)
    m = requester.get()
    assert (m.topic, m.payload, m.properties.CorrelationData) == ("rr/reply/requester", b"pong!", b"corr-1")


def test_message_expiry_forwards_remaining_time(broker):
    broker.raw().park_session5("m5p-exp", [("exp/t", 1)], session_expiry=60)
    pub = broker.raw()
    pub.connect5_ok("m5p-exp-pub")
    pub.send(R.publish5("exp/t", b"long", qos=1, packet_id=1, properties=[(R.MESSAGE_EXPIRY, 60)]))
    pub.expect(R.PUBACK)
    time.sleep(1.2)
    sub2 = broker.raw()
    sub2.connect5_ok("m5p-exp", clean_start=False, properties=[(R.SESSION_EXPIRY, 60)])
    p = sub2.next_publish()
    assert p.payload == b"long"
    # [MQTT-3.3.2-6]: the remaining interval, so less than what was sent.
    assert 1 <= p.props[R.MESSAGE_EXPIRY] <= 59


def test_expired_message_not_delivered_from_queue(broker):
    broker.raw().park_session5("m5p-exp2", [("exp2/t", 1)], session_expiry=60)
    pub = broker.raw()
    pub.connect5_ok("m5p-exp2-pub")
    pub.send(R.publish5("exp2/t", b"short", qos=1, packet_id=1, properties=[(R.MESSAGE_EXPIRY, 1)]))
    pub.send(R.publish5("exp2/t", b"keeps", qos=1, packet_id=2))
    pub.expect(R.PUBACK)
    pub.expect(R.PUBACK)
    time.sleep(2.2)
    sub2 = broker.raw()
    sub2.connect5_ok("m5p-exp2", clean_start=False, properties=[(R.SESSION_EXPIRY, 60)])
    p = sub2.next_publish()
    assert p.payload == b"keeps"  # [MQTT-3.3.2-5]: the expired one is gone
    sub2.send(R.ack5(R.PUBACK, p.packet_id))
    sub2.expect_nothing(0.5)


def test_expired_retained_message_not_sent(broker):
    pub = broker.raw()
    pub.connect5_ok("m5p-exp3")
    pub.send(R.publish5("exp3/t", b"stale", retain=True, properties=[(R.MESSAGE_EXPIRY, 1)]))
    time.sleep(2.2)
    sub = broker.raw().subscribed5("m5p-exp3-sub", [("exp3/t", 1)])
    assert sub.pending == []
    sub.expect_nothing(0.5)


def test_topic_alias_from_client(broker):
    sub = broker.raw().subscribed5("m5p-ta-sub", [("alias/#", 0)])
    pub = broker.raw()
    ack = pub.connect5_ok("m5p-ta-pub")
    assert ack.props[R.TOPIC_ALIAS_MAX] >= 2
    pub.send(R.publish5("alias/one", b"1", properties=[(R.TOPIC_ALIAS, 1)]))
    pub.send(R.publish5("", b"2", properties=[(R.TOPIC_ALIAS, 1)]))
    pub.send(R.publish5("alias/two", b"3", properties=[(R.TOPIC_ALIAS, 1)]))  # remapped
    pub.send(R.publish5("", b"4", properties=[(R.TOPIC_ALIAS, 1)]))
    got = [(p.topic, p.payload) for p in (sub.next_publish() for _ in range(4))]
    assert got == [("alias/one", b"1"), ("alias/one", b"2"), ("alias/two", b"3"), ("alias/two", b"4")]


@pytest.mark.parametrize("alias", [0, 11])
def test_topic_alias_invalid(broker, alias):
    # [MQTT-3.3.2-8], [MQTT-3.3.2-9]: 0 or above our Topic Alias Maximum (10).
    c = broker.raw()
    c.connect5_ok("m5p-ta-bad")
    c.send(R.publish5("alias/bad", b"x", properties=[(R.TOPIC_ALIAS, alias)]))
    c.expect_disconnect(0x94, strict=not IS_PEER)
    still_works(broker, "m5p-ta-bad%d" % alias)


def test_topic_alias_unknown_is_protocol_error(broker):
    c = broker.raw()
    c.connect5_ok("m5p-ta-unknown")
    c.send(R.publish5("", b"x", properties=[(R.TOPIC_ALIAS, 3)]))
    c.expect_disconnect(0x82, strict=not IS_PEER)
    still_works(broker, "m5p-ta-unknown")


# Mosquitto 2.0.11 never uses topic aliases towards clients (the spec lets a
# server choose, 3.3.2.3.4); shootout does when the client allows them.
@pytest.mark.shootout_only
def test_topic_alias_to_client(broker):
    sub = broker.raw().subscribed5("m5p-ta-out", [("out/#", 0)], properties=[(R.TOPIC_ALIAS_MAX, 2)])
    pub = broker.raw_connected("m5p-ta-out-pub")
    for topic in ("out/a", "out/a", "out/b", "out/c", "out/b", "out/c"):
        pub.send(R.publish(topic, topic.encode()))
    got = [sub.next_publish() for _ in range(6)]
    seen = [(p.topic, p.props.get(R.TOPIC_ALIAS), p.payload) for p in got]
    assert seen == [
        ("out/a", 1, b"out/a"),
        ("", 1, b"out/a"),      # alias only [MQTT-3.3.2-12]
        ("out/b", 2, b"out/b"),
        ("out/c", None, b"out/c"),  # aliases used up: the whole topic
        ("", 2, b"out/b"),
        ("out/c", None, b"out/c"),
    ]


def test_no_topic_alias_to_client_that_did_not_ask(broker):
    sub = broker.raw().subscribed5("m5p-ta-none", [("none/t", 0)])
    pub = broker.raw_connected("m5p-ta-none-pub")
    pub.send(R.publish("none/t", b"1") + R.publish("none/t", b"2"))
    for payload in (b"1", b"2"):
        p = sub.next_publish()
        assert (p.topic, p.payload, R.TOPIC_ALIAS in p.props) == ("none/t", payload, False)


def test_client_receive_maximum_limits_inflight(broker):
    sub = broker.raw().subscribed5("m5p-rm", [("rm/t", 1)], properties=[(R.RECEIVE_MAX, 2)])
    pub = broker.raw()
    pub.connect5_ok("m5p-rm-pub")
    for i in range(5):
        pub.send(R.publish5("rm/t", b"%d" % i, qos=1, packet_id=i + 1))
    for _ in range(5):
        pub.expect(R.PUBACK)
    first = [sub.next_publish() for _ in range(2)]
    sub.expect_nothing(0.5)  # [MQTT-3.3.4-7]: no more than 2 unacknowledged
    got = [p.payload for p in first]
    for _ in range(3):
        sub.send(R.ack5(R.PUBACK, first.pop(0).packet_id))
        p = sub.next_publish()
        got.append(p.payload)
        first.append(p)
    assert got == [b"0", b"1", b"2", b"3", b"4"]


# Mosquitto 2.0.11 refuses the extra QoS 2 message with PUBREC 0x97 (quota
# exceeded) and keeps the connection; the spec makes it a DISCONNECT 0x93
# [MQTT-3.3.4-9], which shootout sends.
@pytest.mark.shootout_only
def test_receive_maximum_exceeded(broker_factory):
    b = broker_factory(max_inflight_messages=2)
    c = b.raw()
    assert c.connect5_ok("m5p-rmx").props[R.RECEIVE_MAX] == 2
    for i in range(1, 4):  # QoS 2 left without PUBREL stays unacknowledged
        c.send(R.publish5("rmx/t", b"x", qos=2, packet_id=i))
    assert [c.expect(R.PUBREC).packet_id for _ in range(2)] == [1, 2]
    c.expect_disconnect(0x93)
    still_works(b, "m5p-rmx")


def test_client_maximum_packet_size_drops_larger(broker):
    small = broker.raw().subscribed5("m5p-mps", [("mps/#", 1)], properties=[(R.MAX_PACKET_SIZE, 64)])
    big = broker.raw()
    big.connect5_ok("m5p-mps-big")
    big.subscribe(1, [("mps/#", 1)])
    pub = broker.raw_connected("m5p-mps-pub")
    pub.send(R.publish("mps/a", b"s" * 10, qos=1, packet_id=1))
    pub.send(R.publish("mps/b", b"L" * 200, qos=1, packet_id=2))
    pub.send(R.publish("mps/c", b"t" * 10, qos=1, packet_id=3))
    # [MQTT-3.1.2-24]: never more than the client's maximum; the large one
    # is dropped for it alone, as if delivered [MQTT-3.1.2-25].
    got = []
    for _ in range(2):
        p = small.next_publish()
        small.send(R.ack5(R.PUBACK, p.packet_id))
        got.append(p.topic)
    assert got == ["mps/a", "mps/c"]
    small.expect_nothing(0.3)
    assert [big.next_publish().topic for _ in range(3)] == ["mps/a", "mps/b", "mps/c"]


def test_packet_too_large_from_client(broker_factory):
    b = broker_factory(max_packet_size=1024)
    c = b.raw()
    assert c.connect5_ok("m5p-tl").props[R.MAX_PACKET_SIZE] == 1024
    # Only the header and a few bytes: the broker refuses it on the header.
    c.send(bytes([0x30]) + R.varint(2000) + R.mqtt_str("tl/t") + b"\x00")
    c.expect_disconnect(0x95, strict=not IS_PEER)
    still_works(b, "m5p-tl")


def test_puback_no_matching_subscribers(broker):
    c = broker.raw()
    c.connect5_ok("m5p-nms")
    c.send(R.publish5("nobody/here", b"x", qos=1, packet_id=1))
    assert c.expect(R.PUBACK).reason == 0x10
    c.send(R.publish5("nobody/here", b"x", qos=2, packet_id=2))
    # 0x10 is a MAY (3.5.2.1); Mosquitto 2.0.11 says it on PUBACK only.
    assert c.expect(R.PUBREC).reason in ((0, 0x10) if IS_PEER else (0x10,))
    c.send(R.ack5(R.PUBREL, 2))
    assert c.expect(R.PUBCOMP).reason == 0


def test_pubrel_unknown_packet_id(broker):
    c = broker.raw()
    c.connect5_ok("m5p-rel")
    c.send(R.ack5(R.PUBREL, 99))
    # Mosquitto 2.0.11 completes it with 0x00; 0x92 (Packet Identifier not
    # found, 3.7.2.1) says what happened.
    assert c.expect(R.PUBCOMP).reason in ((0, 0x92) if IS_PEER else (0x92,))


def test_qos2_from_v5_delivered_once(broker):
    sub = paho5(broker, "m5p-q2-sub")
    sub.subscribe("q2/t", 2)
    c = broker.raw()
    c.connect5_ok("m5p-q2")
    c.send(R.publish5("q2/t", b"once", qos=2, packet_id=7))
    assert c.expect(R.PUBREC).reason == 0
    c.send(R.publish5("q2/t", b"once", qos=2, packet_id=7, dup=True))
    c.expect(R.PUBREC)
    c.send(R.ack5(R.PUBREL, 7))
    assert c.expect(R.PUBCOMP).reason == 0
    assert sub.get().payload == b"once"
    sub.expect_none(0.5)
