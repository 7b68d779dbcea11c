"""Back-pressure: a publisher faster than its subscriber waits for it instead of
losing messages at the subscriber's queue limit, and a subscriber that stops
reading altogether is flagged a slow consumer so publishers move on. Each
test runs on one loop and on four (--threads 4) with the publisher on
another loop than its subscriber, where the wait crosses loops."""
import time

import pytest

import mqtt_raw as R

pytestmark = pytest.mark.shootout_only  # Mosquitto drops at max_queued_messages instead


# One loop, and four with publisher and subscriber apart.
THREADS = pytest.mark.parametrize("threads", [1, 4])


def start(broker_factory, threads, extra_args=(), **limits):
    return broker_factory(extra_args=tuple(extra_args) + ("--threads", str(threads)), **limits)


def publisher(b, sub_id, pub_id):
    """The publisher, on another loop than the subscriber sub_id's when the
    broker has several."""
    return b.raw_connected_apart(pub_id, {b.loop_of(sub_id)})[0]


def flood(pub, topic, n, qos):
    """Sends n PUBLISHes without waiting, as a fast publisher does."""
    pub.send(b"".join(R.publish(topic, b"m%04d" % i, qos=qos, packet_id=(i % 65535) + 1 if qos else None) for i in range(n)))


@THREADS
@pytest.mark.parametrize("qos", [1, 2])
def test_fast_publisher_waits_for_slow_subscriber_without_loss(broker_factory, qos, threads):
    # A queue of 10 behind a window of 2: without back-pressure most of 300
    # messages published at once would be dropped.
    b = start(broker_factory, threads, max_queued_messages=10, max_inflight_messages=2)
    sub = b.raw_connected("bp-sub")
    sub.subscribe(1, [("bp/t", 2)])
    pub = publisher(b, "bp-sub", "bp-pub")
    n = 300
    flood(pub, "bp/t", n, qos)
    got = []
    while len(got) < n:
        p = sub.expect_any(timeout=5)
        if p.type == R.PUBREL:
            sub.send(R.pubcomp(p.packet_id))
            continue
        assert p.type == R.PUBLISH, p
        got.append(p.payload)
        sub.send(R.puback(p.packet_id) if qos == 1 else R.pubrec(p.packet_id))
    assert got == [b"m%04d" % i for i in range(n)]
    assert "dropped" not in b.stderr_text()


@THREADS
def test_subscriber_that_never_acks_becomes_slow_consumer(broker_factory, threads):
    b = start(broker_factory, threads, max_queued_messages=10, max_inflight_messages=2)
    stuck = b.raw_connected("bp-stuck")
    stuck.subscribe(1, [("bp/s", 1)])
    pub = publisher(b, "bp-stuck", "bp-pub2")
    n = 100
    t0 = time.monotonic()
    flood(pub, "bp/s", n, 1)
    # The publisher waits about a second for the subscriber, then the broker
    # gives up on it and handles the rest: every PUBLISH is acknowledged.
    acks = [pub.expect(R.PUBACK, timeout=6).packet_id for _ in range(n)]
    assert acks == list(range(1, n + 1))
    assert time.monotonic() - t0 >= 0.9, "the publisher was never made to wait"
    text = b.stderr_text()
    assert "client bp-stuck is a slow consumer" in text
    assert "message dropped (max-queued-messages reached)" in text
    # Meanwhile other traffic was served, and the publisher still works.
    other = b.raw_connected("bp-other")
    other.subscribe(2, [("bp/o", 0)])
    pub.send(R.publish("bp/o", b"still here"))
    assert other.next_publish().payload == b"still here"


@THREADS
def test_qos0_flood_to_reading_subscriber_loses_nothing(broker_factory, threads):
    # Output bound of 64 KiB per client: a 20,000-message flood far exceeds
    # it, so only waiting for the subscriber keeps every message.
    b = start(broker_factory, threads, ("--max-output-bytes", "65536"))
    sub = b.raw_connected("bp0-sub")
    sub.subscribe(1, [("bp0/t", 0)])
    pub = publisher(b, "bp0-sub", "bp0-pub")
    n = 20000
    flood(pub, "bp0/t", n, 0)
    pub.send(R.pingreq())
    got = 0
    while got < n:
        p = sub.next_publish(timeout=5)
        assert p.payload == b"m%04d" % got
        got += 1
    pub.expect(R.PINGRESP)
    assert "dropped" not in b.stderr_text()
