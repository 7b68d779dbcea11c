"""Retained messages (MQTT 3.1.1 section 3.3.1.3)."""

import pytest

import mqtt_raw as R


def publish_retained(broker, topic, payload, qos=1, client_id="ret-pub"):
    pub = broker.raw_connected(client_id)
    pid = 1
    pub.send(R.publish(topic, payload, qos=qos, retain=True, packet_id=pid if qos else None))
    if qos == 1:
        assert pub.expect(R.PUBACK).packet_id == pid
    elif qos == 2:
        assert pub.expect(R.PUBREC).packet_id == pid
        pub.send(R.pubrel(pid))
        assert pub.expect(R.PUBCOMP).packet_id == pid
    else:
        # QoS 0 has no ack; a PINGREQ round trip shows the PUBLISH was read
        pub.send(R.pingreq())
        pub.expect(R.PINGRESP)
    pub.send(R.disconnect())
    pub.wait_closed(5)


def retained_after_subscribe(client, flt, qos, sentinel_topic):
    """Subscribes to flt and to sentinel_topic (in one SUBSCRIBE, filter first),
    then publishes a live message to sentinel_topic from the same client.
    Returns the PUBLISHes that arrived before the sentinel."""
    ack = client.subscribe(1, [(flt, qos), (sentinel_topic, 0)])
    assert ack.granted == [qos, 0]
    client.send(R.publish(sentinel_topic, b"sentinel"))
    got, last = client.collect_until(lambda p: p.topic == sentinel_topic and p.payload == b"sentinel")
    assert not last.retain
    return got


@pytest.mark.parametrize("flt", ["ret/a/b", "ret/+/b", "ret/#", "+/a/+", "#"])
def test_retained_delivered_on_subscribe(broker, flt):
    publish_retained(broker, "ret/a/b", b"stored", qos=1)
    sub = broker.raw_connected("ret-sub")
    got = retained_after_subscribe(sub, flt, 1, "zz/sentinel")
    assert len(got) == 1, got
    p = got[0]
    assert (p.topic, p.payload, p.qos) == ("ret/a/b", b"stored", 1)
    assert p.retain, "a retained message sent on subscribe must have RETAIN=1 [MQTT-3.3.1-8]"


def test_retained_through_wildcard_gets_all_topics(broker):
    topics = {"rw/a": b"1", "rw/b/c": b"2", "rw/d": b"3", "rx/a": b"no"}
    for t, v in topics.items():
        publish_retained(broker, t, v, qos=0, client_id="rw-" + t.replace("/", "-"))
    sub = broker.raw_connected("rw-sub")
    got = retained_after_subscribe(sub, "rw/#", 0, "zz/sentinel")
    assert sorted((p.topic, p.payload) for p in got) == [("rw/a", b"1"), ("rw/b/c", b"2"), ("rw/d", b"3")]
    assert all(p.retain for p in got)
    sub2 = broker.raw_connected("rw-sub2")
    got = retained_after_subscribe(sub2, "+/a", 0, "zz/sentinel")
    assert sorted((p.topic, p.payload) for p in got) == [("rw/a", b"1"), ("rx/a", b"no")]


def test_retained_replaced_by_newer(broker):
    publish_retained(broker, "rep/t", b"old")
    publish_retained(broker, "rep/t", b"new", client_id="ret-pub2")
    sub = broker.raw_connected("rep-sub")
    got = retained_after_subscribe(sub, "rep/t", 1, "zz/sentinel")
    assert [(p.payload, p.retain) for p in got] == [(b"new", True)]


def test_retained_cleared_by_empty_payload(broker):
    publish_retained(broker, "clr/t", b"something")
    live = broker.raw_connected("clr-live")
    live.subscribe(1, [("clr/t", 1)])
    first = live.next_publish()
    assert first.payload == b"something" and first.retain
    live.send(R.puback(first.packet_id))
    publish_retained(broker, "clr/t", b"", client_id="ret-clear")
    # the empty retained PUBLISH is still delivered to existing subscribers,
    # as a normal (RETAIN=0) message [MQTT-3.3.1-10 / 3.3.1-9]
    p = live.next_publish()
    assert p.payload == b"" and p.topic == "clr/t" and not p.retain
    live.send(R.puback(p.packet_id))
    # and nothing is retained any more [MQTT-3.3.1-10, 3.3.1-11]
    for flt in ("clr/t", "clr/#", "#"):
        sub = broker.raw_connected("clr-sub")
        got = retained_after_subscribe(sub, flt, 1, "zz/sentinel")
        assert got == [], "retained message still delivered via %r: %r" % (flt, got)
        sub.close()


def test_empty_retained_on_unknown_topic_is_harmless(broker):
    publish_retained(broker, "never/stored", b"", qos=0)
    sub = broker.raw_connected("unk-sub")
    assert retained_after_subscribe(sub, "never/#", 1, "zz/sentinel") == []


def test_live_delivery_has_retain_0(broker):
    # [MQTT-3.3.1-9]: RETAIN=0 when sent because of an established subscription.
    sub = broker.paho("live-sub")
    sub.subscribe("live/#", 1)
    pub = broker.paho("live-pub")
    pub.publish("live/a", b"r", qos=1, retain=True)
    m = sub.get()
    assert (m.topic, m.payload) == ("live/a", b"r")
    assert not m.retain
    # yet it was retained: a new subscriber gets it with RETAIN=1
    sub2 = broker.paho("live-sub2")
    sub2.subscribe("live/a", 1)
    m2 = sub2.get()
    assert m2.payload == b"r" and m2.retain


@pytest.mark.parametrize("retained_qos,sub_qos", [(0, 2), (1, 2), (2, 2), (2, 1), (2, 0), (1, 0)])
def test_retained_delivered_at_min_qos(broker, retained_qos, sub_qos):
    publish_retained(broker, "rq/t", b"q", qos=retained_qos)
    sub = broker.raw_connected("rq-sub")
    got = retained_after_subscribe(sub, "rq/t", sub_qos, "zz/sentinel")
    assert len(got) == 1
    assert got[0].qos == min(retained_qos, sub_qos)
    assert got[0].retain


def test_retained_resent_on_resubscribe(broker):
    # [MQTT-3.8.4-3]: re-subscribing to an identical filter re-sends
    # the retained messages that match it.
    publish_retained(broker, "rs/t", b"again")
    sub = broker.raw_connected("rs-sub")
    got = retained_after_subscribe(sub, "rs/t", 1, "zz/sentinel")
    assert [p.payload for p in got] == [b"again"]
    got = retained_after_subscribe(sub, "rs/t", 1, "zz/sentinel")
    assert [p.payload for p in got] == [b"again"]
    assert got[0].retain


def test_retained_not_matched_by_hash_for_dollar_topics(broker):
    publish_retained(broker, "$ret/x", b"dollar")
    publish_retained(broker, "ret/x", b"plain", client_id="ret-pub2")
    sub = broker.raw_connected("rd-sub")
    got = retained_after_subscribe(sub, "#", 1, "zz/sentinel")
    assert [(p.topic, p.payload) for p in got] == [("ret/x", b"plain")]
    sub2 = broker.raw_connected("rd-sub2")
    got = retained_after_subscribe(sub2, "$ret/#", 1, "zz/sentinel")
    assert [(p.topic, p.payload) for p in got] == [("$ret/x", b"dollar")]
