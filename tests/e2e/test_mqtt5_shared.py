"""Shared subscriptions, $share/<name>/<filter> (MQTT 5.0, 4.8.2): fair
round robin among connected members, MQTT 3.1.1 members too, independence
from ordinary subscriptions, no retained messages, members that are
offline, and the unacknowledged messages of a member that leaves going to
another member. Normative references are to the OASIS MQTT 5.0 standard."""

import pytest

import mqtt_raw as R


def drain(c, ack=True, quiet=0.5, limit=100):
    """Every PUBLISH that arrives until `quiet` seconds pass with none
    (QoS 1 ones acknowledged if ack)."""
    got = list(getattr(c, "pending", []))
    c.pending = []
    for _ in range(limit):
        try:
            p = c.recv_packet(quiet)
        except TimeoutError:
            break
        assert p.type == R.PUBLISH, "unexpected %r" % p
        got.append(p)
    if ack:
        for p in got:
            if p.qos == 1:
                c.send(R.ack5(R.PUBACK, p.packet_id) if c.v5 else R.puback(p.packet_id))
    return got


def members(broker, n, filt, v5=True, qos=1):
    out = []
    for i in range(n):
        c = broker.raw()
        if v5:
            c.connect5_ok("m5sh-%s-%d" % (filt.replace("/", "_"), i))
        else:
            c.connect_ok("m5sh3-%s-%d" % (filt.replace("/", "_"), i))
        assert c.subscribe(1, [(filt, qos)]).granted == [qos]
        out.append(c)
    return out


def publish_n(broker, topic, n, qos=1):
    pub = broker.raw_connected("m5sh-pub-" + topic.replace("/", "_"))
    for i in range(n):
        pub.send(R.publish(topic, b"%d" % i, qos=qos, packet_id=i + 1 if qos else None))
    for _ in range(n if qos else 0):
        pub.expect(R.PUBACK)
    return pub


def test_round_robin(broker):
    a, b = members(broker, 2, "$share/g/sh/t")
    publish_n(broker, "sh/t", 10)
    got_a, got_b = drain(a), drain(b)
    assert sorted(int(p.payload) for p in got_a + got_b) == list(range(10))
    assert len(got_a) == len(got_b) == 5


def test_v3_members(broker):
    a, b = members(broker, 2, "$share/g3/sh3/t", v5=False)
    publish_n(broker, "sh3/t", 6)
    got_a, got_b = drain(a), drain(b)
    assert sorted(int(p.payload) for p in got_a + got_b) == list(range(6))
    assert len(got_a) == len(got_b) == 3


def test_groups_and_plain_subscriptions_each_get_a_copy(broker):
    g1 = members(broker, 2, "$share/one/shx/#")
    g2 = members(broker, 1, "$share/two/shx/t")
    plain = members(broker, 1, "shx/t")[0]
    publish_n(broker, "shx/t", 4)
    assert len(drain(g1[0])) + len(drain(g1[1])) == 4
    assert len(drain(g2[0])) == 4
    assert len(drain(plain)) == 4


# Mosquitto 2.0.11 sends retained messages to a new shared subscription;
# the spec sends them "when a new non-shared subscription is established"
# (3.3.1.3).
@pytest.mark.shootout_only
def test_no_retained_on_shared_subscribe(broker):
    pub = broker.raw_connected("m5sh-ret-pub")
    pub.send(R.publish("shr/t", b"kept", qos=1, packet_id=1, retain=True))
    pub.expect(R.PUBACK)
    c = broker.raw().subscribed5("m5sh-ret", [("$share/g/shr/t", 1)])
    assert drain(c) == []


# Mosquitto 2.0.11 takes turns over every member, queueing for offline ones;
# shootout prefers the connected ones (the spec leaves the choice to the
# server, 4.8.2).
@pytest.mark.shootout_only
def test_offline_member_skipped(broker):
    broker.raw().park_session5("m5sh-off-a", [("$share/g/sho/t", 1)], session_expiry=60)
    b = members(broker, 1, "$share/g/sho/t")[0]
    publish_n(broker, "sho/t", 4)
    assert len(drain(b)) == 4


# Mosquitto 2.0.11 grants malformed share names as ordinary filters;
# [MQTT-4.8.2-1] and [MQTT-4.8.2-2] make them invalid (SUBACK 0x8F).
@pytest.mark.shootout_only
def test_invalid_share_names(broker):
    c = broker.raw()
    c.connect5_ok("m5sh-bad")
    ack = c.subscribe(1, [("$share/+/x", 1), ("$share/g", 1), ("$share//x", 1), ("$share/ok/x", 1)])
    assert ack.granted == [0x8F, 0x8F, 0x8F, 1]


# Mosquitto 2.0.11 grants it; [MQTT-3.8.3-4] makes it a Protocol Error.
@pytest.mark.shootout_only
def test_no_local_on_shared_is_protocol_error(broker):
    c = broker.raw()
    c.connect5_ok("m5sh-nl")
    c.send(R.subscribe5(1, [("$share/g/shnl/t", 1 | 0x04)]))
    c.expect_disconnect(0x82)


# Mosquitto 2.0.11 keeps a departed member's unacknowledged messages in its
# session instead of handing them on (the spec's SHOULD, 4.8.2).
@pytest.mark.shootout_only
def test_unacknowledged_messages_go_to_another_member(broker):
    a, b = members(broker, 2, "$share/g/shl/t")
    publish_n(broker, "shl/t", 6)
    got_a = drain(a, ack=False)  # a keeps its 3 unacknowledged
    got_b = drain(b)
    assert len(got_a) == len(got_b) == 3
    a.close()
    again = drain(b, quiet=1.0)
    assert sorted(p.payload for p in again) == sorted(p.payload for p in got_a)
    publish_n(broker, "shl/t", 2)
    assert len(drain(b)) == 2  # the only member left
