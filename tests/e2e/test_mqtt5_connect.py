"""MQTT 5.0 CONNECT and CONNACK, sessions and server-sent DISCONNECTs:
CONNACK properties, assigned client identifiers, enhanced authentication
refused, Session Expiry Interval (CONNECT and DISCONNECT), Clean Start,
session takeover and keep alive timeout (DISCONNECT 0x8E, 0x8D), shutdown
(0x8B), and MQTT 3.1.1 and 5.0 clients side by side on one listener.
Normative references are to the OASIS MQTT 5.0 standard."""

import signal
import time

import pytest

import mqtt_raw as R
from conftest import IS_PEER
from mqtt_paho import paho5


def test_connack_properties(broker_factory):
    b = broker_factory(max_inflight_messages=7, max_packet_size=4096)
    c = b.raw()
    ack = c.connect5_ok("m5-props")
    assert ack.session_present is False
    assert ack.props[R.RECEIVE_MAX] == 7
    assert ack.props[R.TOPIC_ALIAS_MAX] == 10
    assert ack.props[R.MAX_PACKET_SIZE] == 4096
    # Absent Maximum QoS means QoS 2; the property may only say 0 or 1 [MQTT-3.2.2-9].
    assert R.MAX_QOS not in ack.props
    assert ack.props.get(R.RETAIN_AVAILABLE, 1) == 1
    assert R.ASSIGNED_CLIENT_ID not in ack.props


# Mosquitto 2.0.11 leaves out the "available" flags (absent means available)
# and Maximum Packet Size when unset; shootout states every one.
@pytest.mark.shootout_only
def test_connack_states_every_feature(broker):
    c = broker.raw()
    ack = c.connect5_ok("m5-features")
    for prop in (R.RETAIN_AVAILABLE, R.WILDCARD_SUB_AVAILABLE, R.SUBSCRIPTION_ID_AVAILABLE,
                 R.SHARED_SUB_AVAILABLE):
        assert ack.props[prop] == 1, "property 0x%02x" % prop
    assert ack.props[R.MAX_PACKET_SIZE] == 1048576
    assert ack.props[R.RECEIVE_MAX] == 20


def test_empty_client_id_gets_assigned_id(broker):
    c = broker.raw()
    ack = c.connect5_ok("", clean_start=False, properties=[(R.SESSION_EXPIRY, 60)])
    assigned = ack.props[R.ASSIGNED_CLIENT_ID]
    assert assigned
    # The assigned id names a session the client can resume.
    c.send(R.disconnect5())
    assert c.wait_closed() == []
    c2 = broker.raw()
    ack2 = c2.connect5_ok(assigned, clean_start=False, properties=[(R.SESSION_EXPIRY, 60)])
    assert ack2.session_present is True


def test_paho_v5_connects_and_exchanges(broker):
    sub = paho5(broker, "m5-paho-sub")
    assert sub.subscribe("m5/paho", 1) == [1]
    pub = paho5(broker, "m5-paho-pub")
    pub.publish("m5/paho", b"hello", qos=1)
    m = sub.get()
    assert (m.topic, m.payload, m.qos) == ("m5/paho", b"hello", 1)


def test_v3_and_v5_on_one_listener(broker):
    v3 = broker.paho("m5-mixed-v3")
    v5 = paho5(broker, "m5-mixed-v5")
    v3.subscribe("mixed/#", 1)
    v5.subscribe("mixed/#", 1)
    v3.publish("mixed/from3", b"a", qos=1)
    v5.publish("mixed/from5", b"b", qos=1)
    got3 = sorted((m.topic, m.payload) for m in v3.get_n(2))
    got5 = sorted((m.topic, m.payload) for m in v5.get_n(2))
    assert got3 == got5 == [("mixed/from3", b"a"), ("mixed/from5", b"b")]


def test_authentication_method_refused(broker):
    # No enhanced authentication is configured: CONNACK 0x8C, then close.
    c = broker.raw()
    ack = c.connect5("m5-auth", properties=[(R.AUTH_METHOD, "SCRAM-SHA-1")])
    assert ack.rc == 0x8C
    assert c.wait_closed() == []
    other = broker.raw()
    other.connect5_ok("m5-auth-after")


def test_auth_packet_without_method_is_protocol_error(broker):
    c = broker.raw()
    c.connect5_ok("m5-auth-pkt")
    c.send(R.auth5(0x19))
    c.expect_disconnect(0x82, strict=not IS_PEER)


def test_session_expiry_zero_ends_session_at_disconnect(broker):
    broker.raw().park_session5("m5-se0", [("se0/t", 1)])
    c2 = broker.raw()
    assert c2.connect5_ok("m5-se0", clean_start=False).session_present is False


def test_session_expiry_keeps_session_and_queues(broker):
    broker.raw().park_session5("m5-se", [("se/t", 1)], session_expiry=30)
    pub = broker.raw_connected("m5-se-pub")
    pub.send(R.publish("se/t", b"while away", qos=1, packet_id=5))
    pub.expect(R.PUBACK)
    c2 = broker.raw()
    assert c2.connect5_ok("m5-se", clean_start=False, properties=[(R.SESSION_EXPIRY, 30)]).session_present
    p = c2.next_publish()
    assert (p.topic, p.payload, p.qos) == ("se/t", b"while away", 1)


def test_session_expires_on_timer(broker):
    c = broker.raw()
    c.connect5_ok("m5-se1", clean_start=False, properties=[(R.SESSION_EXPIRY, 1)])
    c.subscribe(1, [("se1/t", 1)])
    c.close()  # no DISCONNECT: the interval runs from the connection's end
    time.sleep(2.5)
    c2 = broker.raw()
    assert c2.connect5_ok("m5-se1", clean_start=False).session_present is False


def test_clean_start_discards_session(broker):
    broker.raw().park_session5("m5-cs", [("cs/t", 1)], session_expiry=60)
    c2 = broker.raw()
    assert c2.connect5_ok("m5-cs", clean_start=True).session_present is False
    pub = broker.raw_connected("m5-cs-pub")
    pub.send(R.publish("cs/t", b"x", qos=1, packet_id=1))
    pub.expect(R.PUBACK)
    c2.expect_nothing(0.5)


def test_disconnect_sets_session_expiry(broker):
    c = broker.raw()
    c.connect5_ok("m5-dse", clean_start=False, properties=[(R.SESSION_EXPIRY, 60)])
    c.subscribe(1, [("dse/t", 1)])
    # The DISCONNECT ends the session right away [MQTT-3.1.2-23 with 3.14.2.2.2].
    c.send(R.disconnect5(0, [(R.SESSION_EXPIRY, 0)]))
    c.wait_closed()
    c2 = broker.raw()
    assert c2.connect5_ok("m5-dse", clean_start=False).session_present is False


def test_disconnect_cannot_revive_zero_expiry(broker):
    # [MQTT-3.14.2-2]: expiry 0 in CONNECT, non-zero in DISCONNECT.
    c = broker.raw()
    c.connect5_ok("m5-dse0")
    c.send(R.disconnect5(0, [(R.SESSION_EXPIRY, 30)]))
    c.expect_disconnect(0x82, strict=not IS_PEER)


def test_v3_persistent_session_never_expires(broker):
    c = broker.raw_connected("m5-v3p", clean_session=False)
    c.subscribe(1, [("v3p/t", 1)])
    c.send(R.disconnect())
    c.wait_closed()
    time.sleep(1.5)
    c2 = broker.raw()
    assert c2.connect("m5-v3p", clean_session=False).session_present is True


def test_takeover_sends_disconnect_8e(broker):
    old = broker.raw()
    old.connect5_ok("m5-take")
    new = broker.raw()
    new.connect5_ok("m5-take")
    old.expect_disconnect(0x8E, strict=not IS_PEER)
    new.send(R.pingreq())
    new.expect(R.PINGRESP)


def test_keepalive_timeout_sends_disconnect_8d(broker):
    c = broker.raw()
    c.connect5_ok("m5-ka", keepalive=1)
    c.expect_disconnect(0x8D, timeout=10, strict=not IS_PEER)


@pytest.mark.shootout_only  # the broker's own SIGTERM handling
def test_sigterm_sends_disconnect_8b(broker):
    c = broker.raw()
    c.connect5_ok("m5-term")
    v3 = broker.raw_connected("m5-term-v3")
    broker.stop(signal.SIGTERM)
    c.expect_disconnect(0x8B)
    assert v3.wait_closed() == []


def test_second_connect_is_protocol_error(broker):
    c = broker.raw()
    c.connect5_ok("m5-twice")
    c.send(R.connect5("m5-twice"))
    c.expect_disconnect(0x82, strict=not IS_PEER)


@pytest.mark.parametrize("level", [3, 6])
def test_other_levels_still_refused(broker, level):
    c = broker.raw()
    c.send(R.connect("m5-lvl", protocol_level=level))
    assert c.expect(R.CONNACK).rc == 1


# ---- max_keepalive (Mosquitto's keyword, --max-keepalive) -------------------

def max_ka(secs):
    """conf_lines for both brokers (Mosquitto's drop allow_anonymous when
    given lines of their own)."""
    return ["allow_anonymous true", "max_keepalive %d" % secs]


@pytest.mark.shootout_only  # Mosquitto 2.0.11 takes max_keepalive 10 at the least
def test_max_keepalive_server_keep_alive_v5(broker_factory):
    # [MQTT-3.2.2-21]: a longer keep alive, or none (0), is answered with
    # the maximum as Server Keep Alive, and the broker holds the client to
    # it: 1.5 s of silence ends the connection with 0x8D.
    b = broker_factory(conf_lines=max_ka(1))
    for asked in (60, 0):
        c = b.raw()
        ack = c.connect5_ok("m5-maxka-%d" % asked, keepalive=asked)
        assert ack.props.get(R.SERVER_KEEP_ALIVE) == 1
        t0 = time.monotonic()
        c.expect_disconnect(0x8D, timeout=10)
        assert time.monotonic() - t0 >= 1.0
    # One within the limit is used as asked, and not answered.
    c = b.raw()
    ack = c.connect5_ok("m5-maxka-ok", keepalive=1)
    assert R.SERVER_KEEP_ALIVE not in ack.props


def test_max_keepalive_paho_flag(broker_factory):
    b = broker_factory(extra_args=["--max-keepalive", "30"]) if not IS_PEER else \
        broker_factory(conf_lines=max_ka(30))
    c = paho5(b, "m5-maxka-paho", keepalive=300)
    assert c.connack_props.ServerKeepAlive == 30
    c.publish("maxka/t", b"still here", qos=1)


# Mosquitto 2.0.11 lets a longer one through; its documentation, and the
# versions after it, refuse it so.
@pytest.mark.shootout_only
def test_max_keepalive_refuses_v3_client(broker_factory, tmp_path):
    # MQTT 3.1.1 has no way to be told another keep alive: as Mosquitto,
    # CONNACK 2 (identifier rejected) and the connection closed. (With an
    # ACL: the refusal comes before the client gets an ACL handle.)
    acl = tmp_path / "acl"
    acl.write_text("topic read #\n")
    b = broker_factory(conf_lines=max_ka(10) + ["acl_file %s" % acl])
    c = b.raw()
    ack = c.connect("m3-maxka", keepalive=11)
    assert ack.rc == 2
    c.wait_closed()
    b.raw_connected("m3-maxka-ok", keepalive=10)


@pytest.mark.shootout_only
def test_max_keepalive_refuses_v3_keepalive_0(broker_factory):
    b = broker_factory(conf_lines=max_ka(10))
    c = b.raw()
    assert c.connect("m3-maxka0", keepalive=0).rc == 2
    c.wait_closed()
