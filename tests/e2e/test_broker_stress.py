"""Publishers and subscribers interleaved at QoS 0, 1 and 2, with a session
taken over by a new connection mid-stream: every subscriber gets every
message of each publisher and QoS in publish order, QoS 1 at least once,
QoS 2 exactly once, across the takeover too (MQTT 3.1.1 4.3, 4.6, 3.1.4-2).

Run on one event loop and on four (--threads 4): there every publisher is
on another loop than a subscriber, the connection taking a session over is
accepted on another loop than the session's (and handed to it), and a will
published on one loop reaches subscribers on the others, once each.

With persistence on, the same publishers and subscribers across a restart
of the broker halfway (SIGTERM, kill -9, and a power cut after the kill):
QoS 1 at least once and QoS 2 exactly once, each in order, with the
sessions restored on the home loop and every publisher on another loop."""

import time

import pytest

import mqtt_raw as R
from test_persistence import PowerCut
from test_session import publish_qos

PUBLISHERS = 4
SUBSCRIBERS = 3
MESSAGES = 150  # per publisher, QoS 0, 1, 2 in turn
DRAIN_S = 0.002


class Receiver:
    """One subscriber, as a client library with a persistent session keeps
    it: what it received, per publisher and QoS, and the QoS 2 packet ids it
    acknowledged with PUBREC and waits to see released (which outlive a
    connection, so that a PUBLISH the broker sends again is not received
    twice)."""

    def __init__(self, broker, index):
        self.client_id = "stress-sub-%d" % index
        self.got = {}  # (publisher, qos) -> [seq, ...] in arrival order
        self.awaiting_rel = set()
        # After a power cut a completed QoS 2 copy's PUBREL may come again
        # (its deletion is lazy): answered with PUBCOMP, nothing delivered.
        self.stray_rel_ok = False
        self.conn = broker.raw()
        ack = self.conn.connect(self.client_id, clean_session=False)
        assert ack.rc == 0
        assert self.conn.subscribe(1, [("stress/#", 2)]).granted == [2]

    def reconnect(self, broker):
        """After a restart of the broker: the session is there, and what
        the old connection had not read is sent again."""
        self.conn.close()
        self.conn = broker.raw()
        ack = self.conn.connect(self.client_id, clean_session=False)
        assert ack.rc == 0 and ack.session_present, "the session must survive the restart"

    def take_over(self, broker):
        """A new connection with the same client id takes the session; the
        old one is dropped unread, as a client that lost it would. With
        several loops the new connection is accepted on another loop than
        the session's, which the session's loop then takes."""
        old = self.conn
        loop = broker.loop_of(self.client_id)
        self.conn = broker.raw() if loop is None else broker.raw_accepted_apart({loop})
        ack = self.conn.connect(self.client_id, clean_session=False)
        assert ack.rc == 0 and ack.session_present, "the session must survive its takeover"
        if loop is not None:
            port = self.conn.sock.getsockname()[1]
            assert "connection 127.0.0.1:%d handed to its session's loop %d" % (
                port, loop) in broker.stderr_text()
            assert broker.loop_of(self.client_id) == loop
        old.wait_closed(5)  # [MQTT-3.1.4-2]: the old connection is closed
        old.close()

    def handle(self, p):
        if p.type == R.PUBREL:
            assert p.packet_id in self.awaiting_rel or self.stray_rel_ok, \
                "PUBREL for unknown packet id %d" % p.packet_id
            self.awaiting_rel.discard(p.packet_id)
            self.conn.send(R.pubcomp(p.packet_id))
            return
        assert p.type == R.PUBLISH, "unexpected %r" % p
        if p.qos == 1:
            self.conn.send(R.puback(p.packet_id))
        elif p.qos == 2:
            self.conn.send(R.pubrec(p.packet_id))
            if p.packet_id in self.awaiting_rel:
                return  # sent again before its PUBREL: received once already
            self.awaiting_rel.add(p.packet_id)
        _, pub, q = p.topic.split("/")
        publisher, seq = p.payload.decode().split(":")
        assert pub == publisher and q == "q%d" % p.qos, "topic and payload disagree: %r" % p
        self.got.setdefault((int(publisher), p.qos), []).append(int(seq))

    def drain(self, timeout=DRAIN_S):
        """Handles what has arrived; returns how many packets."""
        n = 0
        while True:
            try:
                p = self.conn.recv_packet(timeout)
            except TimeoutError:
                return n
            self.handle(p)
            n += 1

    def count(self):
        return sum(len(v) for v in self.got.values())


def publish(pub, packet_id, publisher, seq):
    qos = seq % 3
    publish_qos(pub, "stress/%d/q%d" % (publisher, qos), b"%d:%d" % (publisher, seq), qos, packet_id)


def expected(qos):
    return [s for s in range(MESSAGES) if s % 3 == qos]


THREADS = pytest.mark.parametrize("threads", [1, 4])


def start(broker_factory, threads):
    # Debug lines say which loop accepted each connection.
    return broker_factory(verbose=threads > 1, extra_args=("--threads", str(threads)))


@THREADS
def test_interleaved_publishers_subscribers_and_a_takeover(broker_factory, threads):
    broker = start(broker_factory, threads)
    subs = [Receiver(broker, i) for i in range(SUBSCRIBERS)]
    # Publisher i on another loop than subscriber i's (mod SUBSCRIBERS).
    pubs = [broker.raw_connected_apart("stress-pub-%d" % i,
                                       {broker.loop_of(subs[i % SUBSCRIBERS].client_id)})[0]
            for i in range(PUBLISHERS)]
    takeover = MESSAGES // 2
    for seq in range(MESSAGES):
        for i, pub in enumerate(pubs):
            publish(pub, 1 + seq % 60000, i, seq)
        for s in subs:
            # The subscriber taken over reads nothing for a few rounds
            # first, so that its session has messages in flight and queued.
            if s is not subs[0] or not takeover - 6 <= seq <= takeover:
                s.drain()
        if seq == takeover:
            subs[0].take_over(broker)
    total = PUBLISHERS * MESSAGES
    deadline = time.monotonic() + 15
    for s in subs:
        # QoS 0 sent to the connection taken over may be lost with it.
        want = total - (PUBLISHERS * len(expected(0)) if s is subs[0] else 0)
        while (s.count() < want or s.awaiting_rel) and time.monotonic() < deadline:
            s.drain(0.05)
    for s in subs:
        for publisher in range(PUBLISHERS):
            for qos in (0, 1, 2):
                got = s.got.get((publisher, qos), [])
                want = expected(qos)
                what = "%s from publisher %d at QoS %d" % (s.client_id, publisher, qos)
                if qos == 2:
                    assert got == want, "%s: exactly once, in order" % what
                elif qos == 1:
                    assert set(got) == set(want), "%s: at least once" % what
                    # Order holds for first arrivals (a resent copy may repeat one).
                    firsts = [x for k, x in enumerate(got) if x not in got[:k]]
                    assert firsts == want, "%s: in order" % what
                elif s is not subs[0]:
                    assert got == want, "%s: all, in order" % what
                else:
                    assert got == sorted(set(got)), "%s: in order, none twice" % what
        assert not s.awaiting_rel, "%s: QoS 2 left unreleased: %r" % (s.client_id, s.awaiting_rel)


@THREADS
def test_will_reaches_subscribers_on_every_loop_once(broker_factory, threads):
    broker = start(broker_factory, threads)
    subs = [broker.raw_connected("will-sub-%d" % i) for i in range(6)]
    for s in subs:
        assert s.subscribe(1, [("will/#", 1)]).granted == [1]
    loops = {broker.loop_of("will-sub-%d" % i) for i in range(6)}
    # The dying client on another loop than some subscriber (with several);
    # chosen before its CONNECT, as a will would go with every other try.
    apart = {next(iter(loops))}
    dying = broker.raw_accepted_apart(apart) if threads > 1 else broker.raw()
    dying.connect_ok("will-dying", will_topic="will/gone", will_message=b"bye", will_qos=1)
    if threads > 1:
        assert broker.loop_of("will-dying") not in apart
    dying.close()  # no DISCONNECT: the will goes
    for s in subs:
        p = s.next_publish(timeout=5)
        assert (p.topic, p.payload) == ("will/gone", b"bye")
        s.send(R.puback(p.packet_id))
    for s in subs:
        with pytest.raises(AssertionError, match="no PUBLISH"):
            s.next_publish(timeout=0.3)  # once


PERSISTED_MESSAGES = 120  # per publisher, QoS 1 and 2 in turn; the restart halfway


def publish_persisted(pub, packet_id, publisher, seq):
    qos = 1 + seq % 2
    publish_qos(pub, "stress/%d/q%d" % (publisher, qos), b"%d:%d" % (publisher, seq), qos, packet_id)


def distinct(s):
    return sum(len(set(v)) for v in s.got.values())


def connect_publishers(broker, subs):
    """Publisher i on another loop than subscriber i's (mod SUBSCRIBERS)."""
    return [broker.raw_connected_apart("stress-pub-%d" % i,
                                       {broker.loop_of(subs[i % SUBSCRIBERS].client_id)})[0]
            for i in range(PUBLISHERS)]


@pytest.mark.shootout_only  # Mosquitto keeps nothing it had not autosaved at kill -9
@pytest.mark.parametrize("crash", ["sigterm", "kill9", "powercut"])
@THREADS
def test_persistent_sessions_across_loops_and_a_restart(broker_factory, tmp_path, threads, crash):
    data = str(tmp_path / "data")

    def start_broker(port=None):
        return broker_factory(port=port, persistence_dir=data, verbose=threads > 1,
                              extra_args=("--threads", str(threads)))

    broker = start_broker()
    power = PowerCut(broker, data) if crash == "powercut" else None
    subs = [Receiver(broker, i) for i in range(SUBSCRIBERS)]
    pubs = connect_publishers(broker, subs)
    restart = PERSISTED_MESSAGES // 2
    for seq in range(PERSISTED_MESSAGES):
        if seq == restart:
            # Every subscriber has messages queued and in flight, in every
            # state: it stopped reading a few rounds ago.
            if crash == "sigterm":
                assert broker.stop() == 0
            else:
                broker.kill()
            if power:
                power.cut()
            for pub in pubs:
                pub.close()
            broker = start_broker(broker.port)
            for s in subs:
                s.stray_rel_ok = power is not None
                s.reconnect(broker)
            if threads > 1:  # restored sessions go round the loops
                assert len({broker.loop_of(s.client_id) for s in subs}) == min(SUBSCRIBERS,
                                                                                threads)
            pubs = connect_publishers(broker, subs)
        for i, pub in enumerate(pubs):
            publish_persisted(pub, 1 + seq % 60000, i, seq)
        if not restart - 6 <= seq < restart:
            for s in subs:
                s.drain()
    deadline = time.monotonic() + 20
    want = {qos: [x for x in range(PERSISTED_MESSAGES) if 1 + x % 2 == qos] for qos in (1, 2)}
    for s in subs:
        while (distinct(s) < PUBLISHERS * PERSISTED_MESSAGES or s.awaiting_rel) and \
                time.monotonic() < deadline:
            s.drain(0.05)
    for s in subs:
        for publisher in range(PUBLISHERS):
            for qos in (1, 2):
                got = s.got.get((publisher, qos), [])
                what = "%s from publisher %d at QoS %d (%s)" % (s.client_id, publisher, qos, crash)
                if qos == 2:
                    assert got == want[2], "%s: exactly once, in order" % what
                else:
                    firsts = [x for k, x in enumerate(got) if x not in got[:k]]
                    assert firsts == want[1], "%s: at least once, in order" % what
        assert not s.awaiting_rel, "%s: QoS 2 left unreleased: %r" % (s.client_id, s.awaiting_rel)
