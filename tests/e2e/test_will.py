"""Will messages (MQTT 3.1.1 section 3.1.2.5) and keep alive (3.1.2.10)."""

import socket
import time

import pytest

import mqtt_raw as R


def will_watcher(broker, flt="will/#", qos=2, client_id="will-watch"):
    w = broker.raw_connected(client_id)
    assert w.subscribe(1, [(flt, qos), ("zz/sentinel", 0)]).granted == [qos, 0]
    return w


def assert_no_will(broker, watcher):
    """A sentinel published by a fresh client must be the next thing the
    watcher receives."""
    s = broker.raw_connected("sentinel-pub")
    s.send(R.publish("zz/sentinel", b"s", qos=1, packet_id=1))
    s.expect(R.PUBACK)
    before, _ = watcher.collect_until(lambda p: p.topic == "zz/sentinel")
    assert before == [], "unexpected will: %r" % before


@pytest.mark.parametrize("how", ["close", "reset"])
def test_will_published_on_close_without_disconnect(broker, how):
    watcher = will_watcher(broker)
    c = broker.raw_connected("will-close", will_topic="will/close", will_message=b"gone", will_qos=1)
    if how == "close":
        c.close()
    else:
        c.abort()
    before, p = watcher.collect_until(lambda p: p.topic == "will/close")
    assert before == []
    assert (p.payload, p.qos, p.retain) == (b"gone", 1, False)


def test_will_not_published_after_disconnect(broker):
    watcher = will_watcher(broker)
    c = broker.raw_connected("will-disc", will_topic="will/disc", will_message=b"never")
    c.send(R.disconnect())
    c.wait_closed(5)  # the broker has processed the DISCONNECT and closed
    assert_no_will(broker, watcher)


def test_will_published_by_paho_client_drop(broker):
    watcher = will_watcher(broker)
    c = broker.paho("will-paho", will={"topic": "will/paho", "payload": b"paho-bye", "qos": 2})
    c.drop()
    before, p = watcher.collect_until(lambda p: p.topic == "will/paho")
    assert (p.payload, p.qos) == (b"paho-bye", 2)


def test_will_not_published_by_paho_clean_disconnect(broker):
    watcher = will_watcher(broker)
    c = broker.paho("will-paho-clean", will={"topic": "will/paho", "payload": b"x", "qos": 1})
    c.disconnect()
    # paho's disconnect() returns once its socket is closed; the broker has
    # read the DISCONNECT before the EOF
    time.sleep(0.1)
    assert_no_will(broker, watcher)


@pytest.mark.parametrize("will_qos,sub_qos", [(0, 2), (1, 2), (2, 2), (2, 1), (1, 0)])
def test_will_qos(broker, will_qos, sub_qos):
    watcher = will_watcher(broker, qos=sub_qos)
    c = broker.raw_connected("will-qos", will_topic="will/qos", will_message=b"q", will_qos=will_qos)
    c.close()
    _, p = watcher.collect_until(lambda p: p.topic == "will/qos")
    assert p.qos == min(will_qos, sub_qos)


def test_will_with_empty_payload(broker):
    watcher = will_watcher(broker)
    c = broker.raw_connected("will-empty", will_topic="will/empty", will_message=b"")
    c.close()
    _, p = watcher.collect_until(lambda p: p.topic == "will/empty")
    assert p.payload == b""


def test_will_retain_flag_honoured(broker):
    watcher = will_watcher(broker)
    c = broker.raw_connected("will-ret", will_topic="will/ret", will_message=b"last words",
                             will_qos=1, will_retain=True)
    c.close()
    _, live = watcher.collect_until(lambda p: p.topic == "will/ret")
    assert live.payload == b"last words"
    assert not live.retain  # live delivery [MQTT-3.3.1-9]
    # it was retained [MQTT-3.1.2-17]
    later = broker.raw_connected("will-ret-later")
    later.subscribe(1, [("will/ret", 1)])
    p = later.next_publish()
    assert (p.payload, p.retain, p.qos) == (b"last words", True, 1)


def test_will_without_retain_is_not_retained(broker):
    watcher = will_watcher(broker)
    c = broker.raw_connected("will-noret", will_topic="will/noret", will_message=b"w")
    c.close()
    watcher.collect_until(lambda p: p.topic == "will/noret")
    later = broker.raw_connected("will-noret-later")
    later.subscribe(1, [("will/noret", 1), ("zz/sentinel", 0)])
    later.send(R.publish("zz/sentinel", b"s"))
    before, _ = later.collect_until(lambda p: p.topic == "zz/sentinel")
    assert before == [], "will with retain=0 must not be retained [MQTT-3.1.2-16]: %r" % before


def test_will_published_on_keepalive_expiry(broker):
    # [MQTT-3.1.2-24]: no packet within 1.5 x keep alive -> the server
    # disconnects, and the will is published. The upper bound here is loose
    # (Mosquitto 2.0.11 only checks keep alives every few seconds); the spec
    # timing is asserted in test_keepalive_expiry_timing below.
    watcher = will_watcher(broker)
    c = broker.raw()
    t0 = time.monotonic()  # before the CONNECT, the last packet the client sends
    c.connect_ok("will-ka", keepalive=1, will_topic="will/ka", will_message=b"timeout")
    _, p = watcher.collect_until(lambda p: p.topic == "will/ka", timeout=12)
    elapsed = time.monotonic() - t0
    assert p.payload == b"timeout"
    assert elapsed >= 1.45, "will after %.2fs: the broker must allow 1.5 x keep alive" % elapsed
    c.wait_closed(3)


@pytest.mark.shootout_only  # Mosquitto 2.0.11 takes ~5-6 s for keep alive 1 (checks periodically).
def test_keepalive_expiry_timing(broker):
    watcher = will_watcher(broker)
    c = broker.raw()
    sent = time.monotonic()  # the CONNECT, the last packet the client sends, goes after
    c.connect_ok("will-ka-timing", keepalive=1, will_topic="will/ka", will_message=b"timeout")
    acked = time.monotonic()  # and it arrived before
    _, p = watcher.collect_until(lambda p: p.topic == "will/ka", timeout=8)
    now = time.monotonic()
    assert now - sent >= 1.45, "will published %.2fs after the CONNECT (keep alive 1 s)" % (now - sent)
    # 1.5 s plus the broker's 0.25 s sweep, with room for a loaded machine:
    # a broker that checks keep alives every few seconds (as Mosquitto) fails.
    assert now - acked <= 4.0, "will published %.2fs after the CONNACK (keep alive 1 s)" % (now - acked)
    c.wait_closed(3)
    closed = time.monotonic() - acked
    assert closed <= 4.5, "silent connection closed only after %.2fs" % closed


def test_keepalive_respected_while_client_pings(broker):
    watcher = will_watcher(broker)
    c = broker.raw_connected("ka-pinger", keepalive=1, will_topic="will/pinger", will_message=b"x")
    end = time.monotonic() + 2.1
    while time.monotonic() < end:
        time.sleep(0.25)  # well inside the 1.5 s allowed, even on a loaded machine
        c.send(R.pingreq())
        c.expect(R.PINGRESP, 2)
    c.send(R.disconnect())
    c.wait_closed(5)
    assert_no_will(broker, watcher)


def test_keepalive_reset_by_any_packet(broker):
    # Any control packet (not only PINGREQ) counts as activity.
    c = broker.raw_connected("ka-publisher", keepalive=1)
    end = time.monotonic() + 2.1
    i = 0
    while time.monotonic() < end:
        time.sleep(0.25)
        i += 1
        c.send(R.publish("ka/pub", b"%d" % i, qos=1, packet_id=i))
        c.expect(R.PUBACK, 2)
    c.send(R.pingreq())
    c.expect(R.PINGRESP)


def test_will_published_on_session_takeover(broker):
    # MQTT 3.1.1 lists the situations in 3.1.2.5 (I/O error, keep alive,
    # closed without DISCONNECT, protocol error). On takeover the server closes
    # the old network connection without having received a DISCONNECT, so
    # the will is published; Mosquitto 2.0.11 does this too.
    watcher = will_watcher(broker)
    old = broker.raw_connected("will-takeover", will_topic="will/takeover", will_message=b"old conn")
    new = broker.raw_connected("will-takeover")
    old.wait_closed(5)
    _, p = watcher.collect_until(lambda p: p.topic == "will/takeover")
    assert p.payload == b"old conn"
    # the new connection (without a will) leaves cleanly: no second will
    new.send(R.disconnect())
    new.wait_closed(5)
    assert_no_will(broker, watcher)


def test_will_published_on_protocol_error(broker):
    # 3.1.2.5: "The Server closes the Network Connection because of a protocol error."
    watcher = will_watcher(broker)
    c = broker.raw_connected("will-proto", will_topic="will/proto", will_message=b"bad client")
    c.send(R.subscribe(1, [("x", 0)], flags=0))  # reserved flags wrong -> malformed
    c.wait_closed(5)
    _, p = watcher.collect_until(lambda p: p.topic == "will/proto")
    assert p.payload == b"bad client"


def test_will_not_published_for_refused_connect(broker):
    watcher = will_watcher(broker)
    c = broker.raw()
    ack = c.connect("", clean_session=False, will_topic="will/refused", will_message=b"no")
    assert ack.rc == 2
    c.wait_closed(5)
    assert_no_will(broker, watcher)


def test_will_when_close_arrives_with_the_data(broker):
    """CONNECT, a packet and the close in one burst: the broker must see the
    end of the stream behind the data, not wait for an edge that never comes."""
    watcher = will_watcher(broker)
    for i in range(20):
        s = socket.create_connection((broker.host, broker.port))
        s.sendall(R.connect("burst-%d" % i, will_topic="will/burst", will_message=b"b%d" % i) +
                  R.pingreq())
        s.shutdown(socket.SHUT_WR)
        _, p = watcher.collect_until(lambda p: p.topic == "will/burst", timeout=3)
        assert p.payload == b"b%d" % i
        s.close()
