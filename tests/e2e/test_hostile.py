"""No client can hurt another (issue 12): a SUBSCRIBE or UNSUBSCRIBE of tens
of thousands of filters, many subscribers that never read, the bound on
subscriptions per client, and a Maximum Packet Size smaller than a CONNACK.
Timing checks are generous bounds on what another client sees, not
measurements."""
import struct
import threading
import time

import pytest

import mqtt_raw as R
from conftest import free_port
from test_metrics import scrape

pytestmark = pytest.mark.shootout_only  # --max-subscriptions, slow-consumer timing


class RoundTrips(threading.Thread):
    """Another client's round trips while a test does something heavy: each
    time a fresh CONNECT, then a QoS 1 PUBLISH to its own subscription,
    until stopped. Records how long each took."""

    def __init__(self, broker):
        super().__init__(daemon=True)
        self.broker = broker
        self.stop = threading.Event()
        self.times = []
        self.error = None

    def run(self):
        try:
            sub = self.broker.raw_connected("rt-sub")
            sub.subscribe(1, [("rt/t", 1)])
            i = 0
            while not self.stop.is_set():
                i += 1
                t0 = time.monotonic()
                c = R.RawClient(self.broker.host, self.broker.port, timeout=10)
                c.connect_ok("rt-%d" % i)
                c.send(R.publish("rt/t", b"%d" % i, qos=1, packet_id=1))
                c.expect(R.PUBACK, timeout=10)
                p = sub.next_publish(timeout=10)
                assert p.payload == b"%d" % i
                sub.send(R.puback(p.packet_id))
                c.close()
                self.times.append(time.monotonic() - t0)
                time.sleep(0.02)
        except Exception as e:  # reported by finish()
            self.error = e

    def finish(self):
        self.stop.set()
        self.join(30)
        assert self.error is None, self.error
        assert self.times, "no round trip completed"
        return max(self.times)


def many_filters(prefix, n):
    return ["%s/%05d" % (prefix, i) for i in range(n)]


def test_large_subscribe_and_unsubscribe_do_not_stall_others(broker_factory):
    n = 80000  # 80,000 filters: 800 KB, within the default 1 MiB packets
    b = broker_factory(extra_args=("--max-subscriptions", "200000"))
    rt = RoundTrips(b)
    rt.start()
    time.sleep(0.2)
    big = b.raw(timeout=60)
    big.connect5_ok("big")
    for k, prefix in enumerate(("a", "b")):
        t0 = time.monotonic()
        # Options vary with the index, so that the codes show their order.
        ack = big.subscribe(10 + k, [(f, i % 3) for i, f in enumerate(many_filters(prefix, n))],
                            timeout=60)
        print("SUBSCRIBE of %d filters: %.2fs" % (n, time.monotonic() - t0))
        assert ack.packet_id == 10 + k
        assert ack.granted == [i % 3 for i in range(n)]
    # Every subscription works: one message on the last filter of each.
    pub = b.raw_connected("big-pub")
    pub.send(R.publish("a/%05d" % (n - 1), b"last a") + R.publish("b/00000", b"first b"))
    assert [big.next_publish().payload for _ in range(2)] == [b"last a", b"first b"]

    # Unsubscribing them all, then once more: the codes say which existed.
    filters = many_filters("a", n)
    big.send(R.unsubscribe5(20, filters))
    ack = big.expect(R.UNSUBACK, timeout=60)
    assert ack.packet_id == 20 and ack.granted == [0x00] * n
    big.send(R.unsubscribe5(21, filters[:10] + many_filters("b", n)[10:]))
    ack = big.expect(R.UNSUBACK, timeout=60)
    assert ack.granted == [0x11] * 10 + [0x00] * (n - 10)
    # The packet after a large one is handled after it, in order.
    big.send(R.unsubscribe5(22, many_filters("b", 10)) + R.pingreq())
    assert big.expect(R.UNSUBACK, timeout=60).granted == [0x00] * 10
    big.expect(R.PINGRESP)
    pub.send(R.publish("a/00000", b"gone"))
    big.expect_nothing(0.3)
    worst = rt.finish()
    print("other client's round trips: %d, worst %.3fs" % (len(rt.times), worst))
    assert worst < 2.0, "another client waited %.2fs for a round trip" % worst


def test_large_subscribe_in_mqtt311_and_retained(broker_factory):
    # 3.1.1 codes, and the retained messages after the SUBACK of a sliced
    # SUBSCRIBE: each filter's own, in filter order.
    n = 5000
    b = broker_factory()
    pub = b.raw_connected("ret-pub")
    for i in range(0, n, 1000):
        pub.send(R.publish("r/%05d" % i, b"kept %d" % i, retain=True))
    pub.send(R.pingreq())
    pub.expect(R.PINGRESP)
    sub = b.raw_connected("ret-sub")
    ack = sub.subscribe(1, [(f, 1) for f in many_filters("r", n)], timeout=30)
    assert ack.granted == [1] * n
    got = [sub.pending.pop(0) if sub.pending else sub.next_publish() for _ in range(n // 1000)]
    assert [p.payload for p in got] == [b"kept %d" % i for i in range(0, n, 1000)]
    assert all(p.retain for p in got)


@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("layout", ["one_topic", "topic_each"])
def test_slow_consumers_cost_one_grace_period(broker_factory, layout, threads):
    # 30 subscribers that never read beside a healthy one. one_topic: all on
    # the publisher's topic, congested together; topic_each: each on a topic
    # of its own the publisher reaches in turn, congested one after another.
    # A queue of 100 (behind at 50): a healthy subscriber wrongly flagged would
    # lose messages only 50 behind; 120 a topic put each slow one behind, on
    # another loop too, where a publisher is held once 50 deliveries are on
    # their way, then once the subscriber's loop found it behind.
    # At 4 loops every subscriber is on another loop than the publisher: its
    # grace is spent and used across loops as on one.
    slow_n, per_topic = 30, 120
    b = broker_factory(max_queued_messages=100, max_inflight_messages=2,
                       extra_args=("--threads", str(threads)))
    pub = b.raw_connected("slow-pub")
    apart = {b.loop_of("slow-pub")} if threads > 1 else set()
    for i in range(slow_n):
        s, _ = b.raw_connected_apart("slow-%02d" % i, apart)
        s.subscribe(1, [("slow/t" if layout == "one_topic" else "slow/%02d" % i, 1)])
    healthy, _ = b.raw_connected_apart("healthy", apart)
    healthy.subscribe(1, [("slow/#", 1)])
    topics = (["slow/t"] * (slow_n * per_topic) if layout == "one_topic"
              else ["slow/%02d" % (i // per_topic) for i in range(slow_n * per_topic)])
    n = len(topics)
    t0 = time.monotonic()
    pub.send(b"".join(R.publish(t, b"m%05d" % i, qos=1, packet_id=i % 65535 + 1)
                      for i, t in enumerate(topics)))
    got = []
    while len(got) < n:
        p = healthy.next_publish(timeout=10)
        healthy.send(R.puback(p.packet_id))
        got.append(p.payload)
    took = time.monotonic() - t0
    acks = [pub.expect(R.PUBACK, timeout=10).packet_id for _ in range(n)]
    print("%s: %d messages to the healthy subscriber in %.2fs" % (layout, n, took))
    assert got == [b"m%05d" % i for i in range(n)]
    assert acks == [i % 65535 + 1 for i in range(n)]
    # one_topic: one grace period (1 s, seen at a 250 ms sweep), not thirty.
    # topic_each: one, then 0.1 s of no progress for each later subscriber.
    bound = 6 if layout == "one_topic" else 8
    assert took < bound, "the healthy subscriber waited %.1fs" % took
    assert b.stderr_text().count("is a slow consumer") == slow_n


def test_subscription_bound(broker_factory):
    mport = free_port()
    t0 = time.monotonic()
    b = broker_factory(extra_args=("--max-subscriptions", "5", "--metrics-port", str(mport)))
    c5 = b.raw(timeout=5)
    c5.connect5_ok("quota5")
    ack = c5.subscribe(1, [("q/%d" % i, 1) for i in range(7)])
    assert ack.granted == [1] * 5 + [0x97] * 2
    # Changing one it has is no new subscription; after an unsubscribe there
    # is room for one more.
    assert c5.subscribe(2, [("q/0", 0), ("q/new", 0)]).granted == [0, 0x97]
    c5.send(R.unsubscribe5(3, ["q/1"]))
    assert c5.expect(R.UNSUBACK).granted == [0]
    assert c5.subscribe(4, [("q/new", 2), ("q/more", 2)]).granted == [2, 0x97]
    # MQTT 3.1.1 says failure, 0x80; a shared subscription counts too.
    c3 = b.raw_connected("quota3")
    ack = c3.subscribe(1, [("$share/g/s/%d" % i, 0) for i in range(4)] + [("s/x", 1), ("s/y", 1)])
    assert ack.granted == [0] * 4 + [1, 0x80]
    samples, types = scrape(mport)
    assert types["shootout_broker_subscriptions_refused_total"] == "counter"
    assert samples["shootout_broker_subscriptions_refused_total"] == 5
    # Logged at most once a second, not once per refusal.
    lines = b.stderr_text().count("subscription refused (max-subscriptions 5 reached)")
    assert 1 <= lines <= 1 + time.monotonic() - t0


def connack_wire_len(p):
    return 2 + len(p.body)  # the Remaining Length fits one byte here


@pytest.mark.parametrize("limit, dropped", [
    (1000, ()),
    (23, (R.RETAIN_AVAILABLE, R.WILDCARD_SUB_AVAILABLE, R.SUBSCRIPTION_ID_AVAILABLE,
          R.SHARED_SUB_AVAILABLE)),
    (15, (R.RETAIN_AVAILABLE, R.TOPIC_ALIAS_MAX)),
    (13, (R.SHARED_SUB_AVAILABLE, R.TOPIC_ALIAS_MAX)),
])
def test_connack_within_client_maximum_packet_size(broker_factory, limit, dropped):
    b = broker_factory()
    c = b.raw()
    ack = c.connect5("mps-%d" % limit, properties=[(R.MAX_PACKET_SIZE, limit)])
    assert ack.rc == 0
    assert connack_wire_len(ack) <= limit
    # What carries a limit the client must know is always there.
    assert ack.props[R.RECEIVE_MAX] == 20 and ack.props[R.MAX_PACKET_SIZE] == 1048576
    for prop in dropped:
        assert prop not in ack.props
    if not dropped:
        assert ack.props[R.TOPIC_ALIAS_MAX] == 10 and connack_wire_len(ack) == 24


def test_connack_larger_than_client_maximum_closes_without_it(broker_factory):
    b = broker_factory()
    owner = b.raw()
    owner.connect5_ok("mps-owner")
    # 12 bytes cannot hold the smallest CONNACK we may send (13): closed,
    # nothing sent, and the session it asked for is not taken over.
    c = b.raw()
    c.v5 = True
    c.send(R.connect5("mps-owner", properties=[(R.MAX_PACKET_SIZE, 12)]))
    assert c.wait_closed() == []
    owner.send(R.pingreq())
    owner.expect(R.PINGRESP)
    # With an assigned client id the smallest is 29 bytes.
    c = b.raw()
    c.v5 = True
    c.send(R.connect5("", properties=[(R.MAX_PACKET_SIZE, 28)]))
    assert c.wait_closed() == []
    c = b.raw()
    ack = c.connect5("", properties=[(R.MAX_PACKET_SIZE, 29)])
    assert ack.rc == 0 and connack_wire_len(ack) == 29 and R.ASSIGNED_CLIENT_ID in ack.props
    assert "Maximum Packet Size 12 is smaller than the CONNACK" in b.stderr_text()
