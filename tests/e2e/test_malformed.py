"""Malformed packets and protocol violations (MQTT 3.1.1 sections 1.5.3, 2,
3, 4.8): the broker closes the offending connection, and everyone else is
unaffected. "Closed" means EOF or reset within 5 s."""

import itertools
import struct

import pytest

import mqtt_raw as R

_counter = itertools.count(1)


@pytest.fixture
def witness(broker):
    """A client connected (and subscribed) before the misbehaving one."""
    w = broker.raw_connected("witness")
    w.subscribe(1, [("witness/t", 1)])
    return w


def assert_healthy(broker, witness):
    """The broker runs, the earlier client still publishes and receives, and
    a new client can connect and do the same."""
    broker.assert_alive()
    n = next(_counter)
    payload = b"still alive %d" % n
    witness.send(R.publish("witness/t", payload, qos=1, packet_id=n))
    got_ack = got_msg = False
    for _ in range(2):
        p = witness.expect_any(5, "waiting for the witness round trip")
        if p.type == R.PUBACK:
            assert p.packet_id == n
            got_ack = True
        else:
            assert p.type == R.PUBLISH and p.payload == payload, p
            witness.send(R.puback(p.packet_id))
            got_msg = True
    assert got_ack and got_msg
    fresh = broker.raw_connected("fresh-%d" % n)
    fresh.subscribe(1, [("fresh/t", 0)])
    fresh.send(R.publish("fresh/t", b"hello"))
    assert fresh.next_publish().payload == b"hello"
    fresh.send(R.disconnect())
    fresh.close()
    broker.assert_alive()


def send_quietly(client, data):
    """Sends; the broker may already have closed the connection."""
    try:
        client.send(data)
    except OSError:
        pass


def assert_closed_without_reply(client, allow=()):
    got = client.wait_closed(5)
    unexpected = [p for p in got if p.type not in allow]
    assert unexpected == [], "broker answered the bad packet before closing: %r" % unexpected
    return got


def raw_packet(first_byte, body):
    return bytes([first_byte]) + R.varint(len(body)) + body


def connect_body(flags, payload, keepalive=60, name=b"MQTT", level=4):
    return R.mqtt_str(name) + bytes([level, flags]) + struct.pack("!H", keepalive) + payload


# ---------------------------------------------------------------- before CONNECT

FIRST_PACKET_CASES = {
    "publish-first": R.publish("t", b"x"),
    "publish-qos1-first": R.publish("t", b"x", qos=1, packet_id=1),
    "pingreq-first": R.pingreq(),
    "subscribe-first": R.subscribe(1, [("t", 0)]),
    "disconnect-first": R.disconnect(),
    "bad-remaining-length-first": b"\x10\xff\xff\xff\xff\x01",
    "garbage-http": b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
    "garbage-zeros": b"\x00" * 16,
    "reserved-type-15": b"\xf0\x00",
    "connect-reserved-flag": R.connect("bad", reserved_flag=True),
    "connect-header-flags": raw_packet(0x11, connect_body(0x02, R.mqtt_str("bad"))),
    "connect-will-qos-3": raw_packet(0x10, connect_body(
        0x02 | 0x04 | 0x18, R.mqtt_str("bad") + R.mqtt_str("w") + R.mqtt_str("m"))),
    "connect-will-qos-without-will": raw_packet(0x10, connect_body(0x02 | 0x08, R.mqtt_str("bad"))),
    "connect-will-retain-without-will": raw_packet(0x10, connect_body(0x02 | 0x20, R.mqtt_str("bad"))),
    "connect-password-without-username": raw_packet(0x10, connect_body(
        0x02 | 0x40, R.mqtt_str("bad") + R.mqtt_str("pw"))),
    "connect-name-length-overflows": raw_packet(0x10, struct.pack("!H", 200) + b"MQTT\x04\x02\x00\x3c"),
    "connect-missing-client-id": raw_packet(0x10, R.mqtt_str("MQTT") + b"\x04\x02\x00\x3c"),
    "connect-client-id-invalid-utf8": raw_packet(0x10, connect_body(0x02, R.mqtt_str(b"id\xc0\x80"))),
    "connect-client-id-surrogate": raw_packet(0x10, connect_body(0x02, R.mqtt_str(b"id\xed\xa0\x80"))),
    "connect-will-topic-wildcard": raw_packet(0x10, connect_body(
        0x02 | 0x04, R.mqtt_str("bad") + R.mqtt_str("will/#") + R.mqtt_str("m"))),
    "connect-will-topic-invalid-utf8": raw_packet(0x10, connect_body(
        0x02 | 0x04, R.mqtt_str("bad") + R.mqtt_str(b"w\xc0\x80") + R.mqtt_str("m"))),
}


@pytest.mark.parametrize("case", list(FIRST_PACKET_CASES))
def test_bad_first_packet_closed(broker, witness, case):
    bad = broker.raw()
    send_quietly(bad, FIRST_PACKET_CASES[case])
    got = bad.wait_closed(5)
    assert all(p.type == R.CONNACK and p.rc != 0 for p in got), \
        "broker accepted or answered a bad first packet: %r" % got
    assert_healthy(broker, witness)


# ---------------------------------------------------------------- after CONNECT

def topic_publish(topic_bytes, qos=0, packet_id=None, payload=b"x"):
    body = R.mqtt_str(topic_bytes)
    if qos:
        body += struct.pack("!H", packet_id)
    return raw_packet(0x30 | (qos << 1), body + payload)


CONNECTED_CASES = {
    "bad-remaining-length": b"\x30\xff\xff\xff\xff\x01",
    "subscribe-flags-0": R.subscribe(1, [("t", 0)], flags=0),
    "subscribe-flags-3": R.subscribe(1, [("t", 0)], flags=3),
    "unsubscribe-flags-0": R.unsubscribe(1, ["t"], flags=0),
    "pubrel-flags-0": R.pubrel(1, flags=0),
    "disconnect-flags": b"\xe1\x00",
    "reserved-type-0": b"\x00\x00",
    "reserved-type-15": b"\xf0\x00",
    "publish-qos-3": raw_packet(0x36, R.mqtt_str("t") + b"\x00\x01x"),
    "topic-invalid-utf8-c080": topic_publish(b"a/\xc0\x80"),
    "topic-surrogate-eda080": topic_publish(b"a/\xed\xa0\x80"),
    "topic-nul-char": topic_publish(b"a\x00b"),
    "topic-truncated-utf8": topic_publish(b"a/\xe2\x82"),
    "topic-empty": topic_publish(b""),
    "topic-length-overflows": raw_packet(0x30, struct.pack("!H", 100) + b"abc"),
    "publish-wildcard-plus": R.publish("a/+/b", b"x"),
    "publish-wildcard-hash": R.publish("a/#", b"x"),
    "publish-wildcard-hash-only": R.publish("#", b"x", qos=1, packet_id=1),
    "publish-qos1-packet-id-0": R.publish("t", b"x", qos=1, packet_id=0),
    "publish-qos2-packet-id-0": R.publish("t", b"x", qos=2, packet_id=0),
    "publish-qos1-no-packet-id": raw_packet(0x32, R.mqtt_str("t")),
    "second-connect": R.connect("again"),
    "subscribe-qos-3": R.subscribe(1, [("t", 3)]),
    "subscribe-options-reserved-bits": raw_packet(0x82, b"\x00\x01" + R.mqtt_str("t") + b"\x81"),
    "subscribe-no-topics": R.subscribe(1, []),
    "subscribe-packet-id-0": R.subscribe(0, [("t", 0)]),
    "subscribe-filter-invalid-utf8": R.subscribe(1, [(b"a/\xc0\x80", 0)]),
    "subscribe-missing-qos": raw_packet(0x82, b"\x00\x01" + R.mqtt_str("t")),
    "unsubscribe-no-topics": R.unsubscribe(1, []),
    "unsubscribe-packet-id-0": R.unsubscribe(0, ["t"]),
    "unsubscribe-filter-invalid-utf8": R.unsubscribe(1, [b"\xed\xa0\x80"]),
    "client-sends-connack": b"\x20\x02\x00\x00",
    "puback-too-short": b"\x40\x01\x00",
    "garbage": bytes(range(0xF0, 0x100)) * 4,
}


# Mosquitto 2.0.11 tolerates these (it answers a PINGREQ with flags or with a
# body, and ignores bad PUBACK flags and server-to-client packets sent by a
# client), but MQTT 3.1.1 requires closing: invalid fixed-header flags
# [MQTT-2.2.2-2], a PINGREQ has Remaining Length 0 (3.12), and 4.8 says a
# protocol violation MUST close the connection. Checked for shootout only.
LENIENT_PEER_CASES = {
    "pingreq-flags": b"\xc1\x00",
    "puback-flags": b"\x41\x02\x00\x01",
    "pingreq-with-body": b"\xc0\x01\x00",
    "client-sends-suback": b"\x90\x03\x00\x01\x00",
    "client-sends-unsuback": b"\xb0\x02\x00\x01",
    "client-sends-pingresp": b"\xd0\x00",
}

ALL_CONNECTED_CASES = dict(CONNECTED_CASES, **LENIENT_PEER_CASES)


@pytest.mark.parametrize("case", list(CONNECTED_CASES) + [
    pytest.param(c, marks=pytest.mark.shootout_only) for c in LENIENT_PEER_CASES])
def test_bad_packet_after_connect_closed(broker, witness, case):
    bad = broker.raw_connected("bad-%s" % case)
    send_quietly(bad, ALL_CONNECTED_CASES[case])
    assert_closed_without_reply(bad)
    assert_healthy(broker, witness)


@pytest.mark.parametrize("flt", ["a/#/b", "a#", "a/b+", "+a/b", "#/a"])
def test_invalid_topic_filter_refused(broker, witness, flt):
    # An invalid filter (4.7.1) is a protocol violation: close (4.8), or at
    # least a SUBACK failure code 0x80 for it; it must never be granted.
    bad = broker.raw_connected("bad-filter")
    send_quietly(bad, R.subscribe(7, [(flt, 1)]))
    try:
        p = bad.recv_packet(5)
    except R.Closed:
        p = None
    if p is not None:
        assert p.type == R.SUBACK and p.granted == [0x80], "invalid filter %r: %r" % (flt, p)
    assert_healthy(broker, witness)


def test_oversized_remaining_length_closed_without_body(broker_factory):
    # Only the fixed header of a packet far above --max-packet-size is sent:
    # the broker must close at once instead of waiting for the body.
    b = broker_factory(max_packet_size=1024)
    w = b.raw_connected("witness")
    w.subscribe(1, [("witness/t", 1)])
    bad = b.raw_connected("oversized")
    send_quietly(bad, b"\x30" + R.varint(10 * 1024 * 1024))
    assert_closed_without_reply(bad)
    assert_healthy(b, w)


def test_oversized_first_packet_closed_without_body(broker_factory):
    b = broker_factory(max_packet_size=1024)
    w = b.raw_connected("witness")
    w.subscribe(1, [("witness/t", 1)])
    bad = b.raw()
    send_quietly(bad, b"\x10" + R.varint(200 * 1024 * 1024))
    assert_closed_without_reply(bad)
    assert_healthy(b, w)


def test_truncated_packet_then_close(broker, witness):
    bad = broker.raw_connected("truncated")
    whole = R.publish("trunc/t", b"y" * 500, qos=1, packet_id=3)
    bad.send(whole[: len(whole) // 2])
    bad.close()
    assert_healthy(broker, witness)
    # and a half packet before CONNECT too
    bad2 = broker.raw()
    bad2.send(R.connect("half")[:7])
    bad2.abort()
    assert_healthy(broker, witness)


def test_packet_split_into_single_bytes_is_fine(broker, witness):
    # Not malformed: TCP may deliver a packet in any number of pieces.
    c = broker.raw()
    for byte in R.connect("bytewise"):
        c.send(bytes([byte]))
    assert c.expect(R.CONNACK).rc == 0
    for byte in R.subscribe(5, [("bytewise/t", 1)]):
        c.send(bytes([byte]))
    assert c.expect(R.SUBACK).granted == [1]
    data = R.publish("bytewise/t", b"z" * 300, qos=1, packet_id=6) + R.pingreq()
    for byte in data:
        c.send(bytes([byte]))
    seen = set()
    for _ in range(3):
        p = c.expect_any(5)
        seen.add(p.name)
        if p.type == R.PUBLISH:
            assert p.payload == b"z" * 300
            c.send(R.puback(p.packet_id))
    assert seen == {"PUBACK", "PUBLISH", "PINGRESP"}
    assert_healthy(broker, witness)


def test_many_packets_in_one_segment(broker, witness):
    c = broker.raw_connected("batched")
    c.subscribe(1, [("batch/t", 0)])
    n = 200
    c.send(b"".join(R.publish("batch/t", b"%03d" % i) for i in range(n)) + R.pingreq())
    payloads = []
    for _ in range(n):
        payloads.append(c.next_publish().payload)
    assert payloads == [b"%03d" % i for i in range(n)]
    c.expect(R.PINGRESP)
    assert_healthy(broker, witness)


def test_idle_connection_does_not_disturb_others(broker, witness):
    idle = broker.raw()  # connects and sends nothing
    assert_healthy(broker, witness)
    # the broker may close it after a connect timeout; it must never answer
    try:
        p = idle.recv_packet(0.3)
        raise AssertionError("broker sent %r to a client that sent nothing" % p)
    except (TimeoutError, R.Closed):
        pass
    idle.close()
    assert_healthy(broker, witness)


def test_malformed_storm(broker, witness):
    # Many misbehaving connections in a row, then a normal round trip.
    cases = list(CONNECTED_CASES.values())[:20] + list(FIRST_PACKET_CASES.values())[:10]
    for i, data in enumerate(cases):
        c = broker.raw()
        if i < 20:
            c.connect_ok("storm-%d" % i)
        send_quietly(c, data)
        c.wait_closed(5)
    assert_healthy(broker, witness)
