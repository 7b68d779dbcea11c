"""Persistent sessions (MQTT 3.1.1 sections 3.1.2.4, 3.2.2.2, 4.1, 4.4)."""

import pytest

import mqtt_raw as R


def go_offline(client):
    """Clean DISCONNECT, and wait until the broker has closed the connection,
    so the session is certainly offline."""
    client.send(R.disconnect())
    client.wait_closed(5)


def publish_qos(pub, topic, payload, qos, pid):
    pub.send(R.publish(topic, payload, qos=qos, packet_id=pid if qos else None))
    if qos == 1:
        assert pub.expect(R.PUBACK).packet_id == pid
    elif qos == 2:
        assert pub.expect(R.PUBREC).packet_id == pid
        pub.send(R.pubrel(pid))
        assert pub.expect(R.PUBCOMP).packet_id == pid


def sentinel(broker, client, topic="zz/sentinel"):
    """Subscribes client to topic, publishes there from another client, and
    returns the PUBLISHes that reached client before the sentinel."""
    assert client.subscribe(9, [(topic, 0)]).granted == [0]
    s = broker.raw_connected("sentinel-pub")
    s.send(R.publish(topic, b"s", qos=1, packet_id=1))
    s.expect(R.PUBACK)
    s.close()
    before, _ = client.collect_until(lambda p: p.topic == topic)
    return before


def test_subscriptions_survive_disconnect(broker):
    sub = broker.raw()
    ack = sub.connect("sess-keep", clean_session=False)
    assert ack.rc == 0 and not ack.session_present
    sub.subscribe(1, [("sess/t", 1)])
    go_offline(sub)
    sub = broker.raw()
    ack = sub.connect("sess-keep", clean_session=False)
    assert ack.rc == 0 and ack.session_present, "CONNACK session present must be 1 [MQTT-3.2.2-2]"
    pub = broker.raw_connected("sess-keep-pub")
    publish_qos(pub, "sess/t", b"after", 1, 1)
    p = sub.next_publish()  # no new SUBSCRIBE was sent
    assert (p.topic, p.payload, p.qos) == ("sess/t", b"after", 1)
    sub.send(R.puback(p.packet_id))


@pytest.mark.parametrize("qos", [1, 2])
def test_offline_messages_delivered_after_reconnect(broker, qos):
    sub = broker.raw_connected("sess-off", clean_session=False)
    sub.subscribe(1, [("off/#", 2)])
    go_offline(sub)
    pub = broker.raw_connected("sess-off-pub")
    payloads = [b"offline-%d" % i for i in range(5)]
    for i, payload in enumerate(payloads):
        publish_qos(pub, "off/t", payload, qos, i + 1)
    sub = broker.raw()
    ack = sub.connect("sess-off", clean_session=False)
    assert ack.rc == 0 and ack.session_present
    before, last = sub.collect_until(lambda p: p.payload == payloads[-1])
    got = before + [last]
    assert [p.payload for p in got] == payloads
    assert all(p.qos == qos and p.topic == "off/t" for p in got)
    assert sentinel(broker, sub) == []


def test_offline_messages_delivered_to_paho_persistent_client(broker):
    sub = broker.paho("sess-paho", clean_session=False)
    sub.subscribe("pp/#", 2)
    sub.disconnect()
    pub = broker.paho("sess-paho-pub")
    pub.publish("pp/a", b"one", qos=1)
    pub.publish("pp/b", b"two", qos=2)
    sub2 = broker.paho("sess-paho", clean_session=False, connect=False)
    assert sub2.connect() is True  # session present
    msgs = sub2.get_n(2)
    assert [(m.topic, m.payload, m.qos) for m in msgs] == [("pp/a", b"one", 1), ("pp/b", b"two", 2)]


def test_clean_session_discards_session(broker):
    sub = broker.raw_connected("sess-clean", clean_session=False)
    sub.subscribe(1, [("cl/t", 1)])
    go_offline(sub)
    pub = broker.raw_connected("sess-clean-pub")
    publish_qos(pub, "cl/t", b"queued", 1, 1)
    # clean_session=1: the old session is discarded [MQTT-3.1.2-6]
    sub = broker.raw()
    ack = sub.connect("sess-clean", clean_session=True)
    assert ack.rc == 0 and not ack.session_present  # [MQTT-3.2.2-1]
    assert sentinel(broker, sub) == [], "messages of a discarded session were delivered"
    publish_qos(pub, "cl/t", b"live", 1, 2)  # the old subscription is gone too
    assert sentinel(broker, sub) == []
    go_offline(sub)
    # and a clean session does not outlive its connection
    sub = broker.raw()
    ack = sub.connect("sess-clean", clean_session=False)
    assert ack.rc == 0 and not ack.session_present
    publish_qos(pub, "cl/t", b"nobody", 1, 3)
    assert sentinel(broker, sub) == []


def test_qos1_redelivered_with_dup_after_reconnect(broker):
    sub = broker.raw_connected("sess-dup", clean_session=False)
    sub.subscribe(1, [("dup/t", 1)])
    pub = broker.raw_connected("sess-dup-pub")
    publish_qos(pub, "dup/t", b"ack me", 1, 1)
    first = sub.next_publish()
    assert first.payload == b"ack me" and not first.dup
    sub.close()  # no PUBACK
    sub = broker.raw()
    ack = sub.connect("sess-dup", clean_session=False)
    assert ack.session_present
    again = sub.next_publish()
    assert again.payload == b"ack me" and again.qos == 1
    assert again.dup, "a re-sent PUBLISH must have DUP=1 [MQTT-3.3.1-1]"
    assert again.packet_id == first.packet_id, "re-send must use the original packet id [MQTT-4.4.0-1]"
    sub.send(R.puback(again.packet_id))
    go_offline(sub)
    # once acknowledged it is not sent again
    sub = broker.raw()
    assert sub.connect("sess-dup", clean_session=False).session_present
    assert sentinel(broker, sub) == []


def test_qos2_unacked_publish_redelivered_with_dup(broker):
    sub = broker.raw_connected("sess-dup2", clean_session=False)
    sub.subscribe(1, [("dup2/t", 2)])
    pub = broker.raw_connected("sess-dup2-pub")
    publish_qos(pub, "dup2/t", b"two", 2, 1)
    first = sub.next_publish()
    assert first.qos == 2 and not first.dup
    sub.close()  # no PUBREC
    sub = broker.raw()
    assert sub.connect("sess-dup2", clean_session=False).session_present
    again = sub.next_publish()
    assert (again.payload, again.qos, again.dup, again.packet_id) == (b"two", 2, True, first.packet_id)
    sub.send(R.pubrec(again.packet_id))
    assert sub.expect(R.PUBREL).packet_id == again.packet_id
    sub.send(R.pubcomp(again.packet_id))
    assert sentinel(broker, sub) == []


def test_qos2_pubrel_resent_after_reconnect(broker):
    sub = broker.raw_connected("sess-rel", clean_session=False)
    sub.subscribe(1, [("rel/t", 2)])
    pub = broker.raw_connected("sess-rel-pub")
    publish_qos(pub, "rel/t", b"half", 2, 1)
    p = sub.next_publish()
    sub.send(R.pubrec(p.packet_id))
    rel = sub.expect(R.PUBREL)
    assert rel.packet_id == p.packet_id
    sub.close()  # no PUBCOMP
    sub = broker.raw()
    assert sub.connect("sess-rel", clean_session=False).session_present
    # the broker re-sends the PUBREL, not the PUBLISH [MQTT-4.4.0-1]
    again = sub.expect(R.PUBREL)
    assert again.packet_id == p.packet_id and again.flags == 0x02
    sub.send(R.pubcomp(again.packet_id))
    assert sentinel(broker, sub) == []


def test_inbound_qos2_state_survives_reconnect(broker):
    # The server keeps "QoS 2 messages received but not completely
    # acknowledged" in the session (4.1): the re-sent PUBLISH after a reconnect
    # must not be delivered twice, and the PUBREL must complete it.
    sub = broker.raw_connected("sess-in2-sub")
    sub.subscribe(1, [("in2/t", 2)])
    pub = broker.raw_connected("sess-in2-pub", clean_session=False)
    pub.send(R.publish("in2/t", b"exactly once", qos=2, packet_id=5))
    assert pub.expect(R.PUBREC).packet_id == 5
    pub.close()  # before PUBREL
    pub = broker.raw()
    assert pub.connect("sess-in2-pub", clean_session=False).session_present
    pub.send(R.publish("in2/t", b"exactly once", qos=2, packet_id=5, dup=True))
    assert pub.expect(R.PUBREC).packet_id == 5
    pub.send(R.pubrel(5))
    assert pub.expect(R.PUBCOMP).packet_id == 5
    before, last = sub.collect_until(lambda p: True)
    assert last.payload == b"exactly once"
    assert sentinel(broker, sub) == [], "QoS 2 message delivered twice"


def test_qos0_not_queued_for_offline_client(broker):
    sub = broker.raw_connected("sess-q0", clean_session=False)
    sub.subscribe(1, [("q0/#", 2)])
    go_offline(sub)
    pub = broker.raw_connected("sess-q0-pub")
    publish_qos(pub, "q0/a", b"qos0", 0, None)
    publish_qos(pub, "q0/b", b"qos1", 1, 1)
    sub = broker.raw()
    assert sub.connect("sess-q0", clean_session=False).session_present
    before, last = sub.collect_until(lambda p: p.topic == "q0/b")
    assert before == [], "QoS 0 message queued for an offline client: %r" % before
    assert last.payload == b"qos1"


def test_takeover_keeps_persistent_session(broker):
    a = broker.raw_connected("sess-take", clean_session=False)
    a.subscribe(1, [("take/t", 1)])
    b = broker.raw()
    ack = b.connect("sess-take", clean_session=False)
    assert ack.rc == 0 and ack.session_present
    a.wait_closed(5)
    pub = broker.raw_connected("sess-take-pub")
    publish_qos(pub, "take/t", b"to b", 1, 1)
    p = b.next_publish()
    assert p.payload == b"to b"
    b.send(R.puback(p.packet_id))
