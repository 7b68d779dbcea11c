"""Malformed and forbidden MQTT 5.0 input, sent byte by byte: each gets the
right CONNACK or DISCONNECT reason code, the connection closes, and another
connected client keeps working. Normative references are to the OASIS MQTT
5.0 standard (1.5, 2.2.2, 3.x, 4.13)."""

import pytest

import mqtt_raw as R
from conftest import IS_PEER


@pytest.fixture
def bystander(broker):
    """A connected subscriber that must not notice anything."""
    b = broker.raw().subscribed5("m5m-bystander", [("bystander/t", 1)])
    yield b
    pub = broker.raw()
    pub.connect5_ok("m5m-bystander-pub")
    pub.send(R.publish5("bystander/t", b"still here", qos=1, packet_id=1))
    pub.expect(R.PUBACK)
    p = b.next_publish()
    assert (p.topic, p.payload) == ("bystander/t", b"still here")


def two_clients(b, tag):
    """Two MQTT 5 clients of broker b: a bystander and the one under test."""
    other = b.raw()
    other.connect5_ok(tag + "-other")
    c = b.raw()
    c.connect5_ok(tag)
    return other, c


def assert_alive(c):
    c.send(R.pingreq())
    c.expect(R.PINGRESP)


def refused_with(c, reason):
    """A CONNACK with the reason code, then close. A server MAY answer a
    malformed CONNECT this way (3.1.4); Mosquitto 2.0.11 closes at once."""
    if IS_PEER:
        c.wait_closed()
        return
    ack = c.expect(R.CONNACK)
    assert ack.rc == reason, "CONNACK reason 0x%02x, expected 0x%02x" % (ack.rc, reason)
    assert c.wait_closed() == []


CONNECT_CASES = {
    # identifier 0x05 does not exist
    "unknown property": (b"\x02\x05\x00", 0x81),
    # Session Expiry twice [MQTT-2.2.2-2 / 3.1.2.11.2]
    "duplicate property": (R.props([(R.SESSION_EXPIRY, 1), (R.SESSION_EXPIRY, 2)]), 0x82),
    # Topic Alias belongs to PUBLISH
    "property of another packet": (R.props([(R.TOPIC_ALIAS, 1)]), 0x81),
    # Receive Maximum 0 is a Protocol Error (3.1.2.11.3)
    "receive maximum 0": (R.props([(R.RECEIVE_MAX, 0)]), 0x82),
    # the block says 9 bytes, the packet has 3
    "truncated block": (b"\x09\x11\x00\x00", 0x81),
}


@pytest.mark.parametrize("case", sorted(CONNECT_CASES))
def test_bad_connect_properties(broker, bystander, case):
    raw_props, reason = CONNECT_CASES[case]
    c = broker.raw()
    c.v5 = True
    c.send(R.connect5("m5m-conn", raw_props=raw_props))
    refused_with(c, reason)


PUBLISH_CASES = {
    "unknown property": (b"\x02\x05\x00", 0x81),
    "duplicate property": (R.props([(R.CONTENT_TYPE, "a"), (R.CONTENT_TYPE, "b")]), 0x82),
    "property of another packet": (R.props([(R.SESSION_EXPIRY, 1)]), 0x81),
    # A client may not send a Subscription Identifier [MQTT-3.3.4-6]
    "subscription identifier from client": (R.props([(R.SUBSCRIPTION_ID, 3)]), 0x82),
    # 0 or 1 only (3.3.2.3.2)
    "payload format out of range": (R.props([(R.PAYLOAD_FORMAT, 2)]), 0x82),
}
# Mosquitto 2.0.11 accepts (and forwards) these two.
LAX_IN_MOSQUITTO = ("subscription identifier from client", "payload format out of range")


@pytest.mark.parametrize("case", [
    pytest.param(k, marks=pytest.mark.shootout_only) if k in LAX_IN_MOSQUITTO else k
    for k in sorted(PUBLISH_CASES)])
def test_bad_publish_properties(broker, bystander, case):
    raw_props, reason = PUBLISH_CASES[case]
    c = broker.raw()
    c.connect5_ok("m5m-pub")
    c.send(R.publish5("bystander/t", b"never", qos=1, packet_id=1, raw_props=raw_props))
    c.expect_disconnect(reason, strict=not IS_PEER)


def test_bad_subscribe_property(broker, bystander):
    c = broker.raw()
    c.connect5_ok("m5m-sub")
    c.send(R.subscribe5(1, [("x/y", 1)], properties=[(R.SUBSCRIPTION_ID, 1), (R.SUBSCRIPTION_ID, 2)]))
    c.expect_disconnect(0x82, strict=not IS_PEER)


def test_subscription_identifier_zero(broker, bystander):
    c = broker.raw()
    c.connect5_ok("m5m-sub0")
    c.send(R.subscribe5(1, [("x/y", 1)], properties=[(R.SUBSCRIPTION_ID, 0)]))
    c.expect_disconnect(0x82, strict=not IS_PEER)


def test_retain_handling_3(broker, bystander):
    c = broker.raw()
    c.connect5_ok("m5m-rh3")
    c.send(R.subscribe5(1, [("x/y", 0x30)]))
    c.expect_disconnect(0x82, strict=not IS_PEER)  # 3.8.3.1: Retain Handling 3 is a Protocol Error


def test_topic_alias_zero(broker, bystander):
    c = broker.raw()
    c.connect5_ok("m5m-ta0")
    c.send(R.publish5("bystander/t", b"never", properties=[(R.TOPIC_ALIAS, 0)]))
    c.expect_disconnect(0x94, strict=not IS_PEER)


def test_topic_alias_over_maximum(broker, bystander):
    c = broker.raw()
    top = c.connect5_ok("m5m-tamax").props[R.TOPIC_ALIAS_MAX]
    c.send(R.publish5("bystander/t", b"never", properties=[(R.TOPIC_ALIAS, top + 1)]))
    c.expect_disconnect(0x94, strict=not IS_PEER)


# Mosquitto 2.0.11 answers with PUBREC 0x97 and keeps the connection
# (see test_mqtt5_publish.py).
@pytest.mark.shootout_only
def test_receive_maximum_exceeded(broker_factory):
    other, c = two_clients(broker_factory(max_inflight_messages=1), "m5m-rmx")
    c.send(R.publish5("rmx", b"1", qos=2, packet_id=1) + R.publish5("rmx", b"2", qos=2, packet_id=2))
    c.expect(R.PUBREC)
    c.expect_disconnect(0x93)
    assert_alive(other)


def test_oversized_packet(broker_factory):
    other, c = two_clients(broker_factory(max_packet_size=512), "m5m-big")
    c.send(bytes([0x30]) + R.varint(600) + R.mqtt_str("big") + b"\x00")
    c.expect_disconnect(0x95, strict=not IS_PEER)
    assert_alive(other)


# Mosquitto 2.0.11 accepts a non-minimal Remaining Length.
@pytest.mark.shootout_only
def test_non_minimal_remaining_length(broker, bystander):
    c = broker.raw()
    c.connect5_ok("m5m-varint")
    c.send(bytes([0xC0, 0x80, 0x00]))  # PINGREQ, length 0 in two bytes [MQTT-1.5.5-1]
    c.expect_disconnect(0x81, strict=not IS_PEER)


# Mosquitto 2.0.11 ignores DUP on QoS 0; [MQTT-3.3.1-2] forbids it.
@pytest.mark.shootout_only
def test_dup_on_qos0(broker, bystander):
    c = broker.raw()
    c.connect5_ok("m5m-dup")
    c.send(R.publish5("bystander/t", b"never", dup=True))
    c.expect_disconnect(0x81, strict=not IS_PEER)


def test_empty_topic_without_alias(broker, bystander):
    c = broker.raw()
    c.connect5_ok("m5m-empty")
    c.send(R.publish5("", b"never"))
    c.expect_disconnect(0x82, strict=not IS_PEER)
