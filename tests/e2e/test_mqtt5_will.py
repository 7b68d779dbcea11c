"""MQTT 5.0 wills: Will Delay Interval (sent after the delay unless the
session resumes; at the session's end if that comes first), will
properties passed through, DISCONNECT with reason 0x04 (send the will) and a
normal DISCONNECT (no will). Normative references are to the OASIS MQTT
5.0 standard."""

import time

import mqtt_raw as R

WILL_PROPS = [(R.CONTENT_TYPE, "text/plain"), (R.RESPONSE_TOPIC, "will/reply"),
              (R.CORRELATION_DATA, b"w-1"), (R.USER_PROPERTY, ("who", "dev-1")),
              (R.PAYLOAD_FORMAT, 1)]


def watcher(broker, tag, topic="will/#"):
    w = broker.raw()
    w.connect5_ok("m5w-watch-" + tag)
    w.subscribe(1, [(topic, 1)])
    return w


def client_with_will(broker, cid, delay, session_expiry, will_topic, properties=()):
    c = broker.raw()
    c.connect5_ok(cid, clean_start=False, properties=[(R.SESSION_EXPIRY, session_expiry)],
                  will_topic=will_topic, will_message=b"gone", will_qos=1,
                  will_properties=[(R.WILL_DELAY, delay)] + list(properties))
    return c


def test_will_properties_pass_through(broker):
    w = watcher(broker, "props")
    c = client_with_will(broker, "m5w-props", 0, 0, "will/props", WILL_PROPS)
    c.close()
    p = w.next_publish()
    assert (p.topic, p.payload) == ("will/props", b"gone")
    assert p.props[R.CONTENT_TYPE] == "text/plain"
    assert p.props[R.RESPONSE_TOPIC] == "will/reply"
    assert p.props[R.CORRELATION_DATA] == b"w-1"
    assert p.props[R.USER_PROPERTY] == [("who", "dev-1")]
    assert p.props[R.PAYLOAD_FORMAT] == 1
    assert R.WILL_DELAY not in p.props


def test_will_delay(broker):
    w = watcher(broker, "delay")
    c = client_with_will(broker, "m5w-delay", 2, 60, "will/delay")
    c.close()
    w.expect_nothing(1.0)  # [MQTT-3.1.3-9]: not before the delay
    p = w.next_publish(timeout=4.0)
    assert (p.topic, p.payload) == ("will/delay", b"gone")


def test_will_cancelled_when_session_resumes(broker):
    w = watcher(broker, "resume")
    c = client_with_will(broker, "m5w-resume", 2, 60, "will/resume")
    c.close()
    time.sleep(0.2)  # for the broker to see the close; the resume must beat the 2 s delay
    c2 = broker.raw()
    assert c2.connect5_ok("m5w-resume", clean_start=False,
                          properties=[(R.SESSION_EXPIRY, 60)]).session_present
    w.expect_nothing(3.0)


def test_will_sent_at_session_end_before_delay(broker):
    w = watcher(broker, "end")
    c = client_with_will(broker, "m5w-end", 30, 1, "will/end")
    c.close()
    # The session ends after 1 s, long before the 30 s delay: the will goes then.
    p = w.next_publish(timeout=4.0)
    assert (p.topic, p.payload) == ("will/end", b"gone")


def test_disconnect_with_will_message(broker):
    w = watcher(broker, "0x04")
    c = client_with_will(broker, "m5w-04", 0, 0, "will/04")
    c.send(R.disconnect5(0x04))
    c.wait_closed()
    assert w.next_publish().topic == "will/04"


def test_normal_disconnect_discards_will(broker):
    w = watcher(broker, "normal")
    c = client_with_will(broker, "m5w-normal", 0, 0, "will/normal")
    c.send(R.disconnect5(0))
    c.wait_closed()
    w.expect_nothing(1.0)


def test_will_from_v5_reaches_v3(broker):
    w = broker.raw_connected("m5w-v3watch")
    w.subscribe(1, [("will/v3", 1)])
    c = client_with_will(broker, "m5w-v3", 0, 0, "will/v3", WILL_PROPS)
    c.close()
    p = w.next_publish()
    assert (p.topic, p.payload, p.qos) == ("will/v3", b"gone", 1)


def test_will_expiry_starts_when_the_will_is_published(broker):
    """The Will's Message Expiry Interval is the lifetime of the published
    message (3.1.3.2.4): a connection that lasts longer than the interval
    still leaves a live will, which a subscriber that was offline gets."""
    w = broker.raw()
    w.park_session5("m5w-exp-watch", [("will/exp", 1)], session_expiry=60)
    live = watcher(broker, "exp-live", "will/exp")
    c = client_with_will(broker, "m5w-exp", 0, 0, "will/exp", [(R.MESSAGE_EXPIRY, 2)])
    time.sleep(2.5)  # at least: longer than the interval
    c.close()
    live.next_publish()  # published, so queued for the parked session too
    w = broker.raw()
    assert w.connect5_ok("m5w-exp-watch", clean_start=False,
                         properties=[(R.SESSION_EXPIRY, 60)]).session_present
    p = w.next_publish()
    assert (p.topic, p.payload) == ("will/exp", b"gone")
    assert 1 <= p.props[R.MESSAGE_EXPIRY] <= 2
