"""PUBLISH / SUBSCRIBE / UNSUBSCRIBE (MQTT 3.1.1 sections 3.3-3.12, 4.3-4.7)
with paho, raw sockets and the mosquitto command line clients."""

import os
import queue
import shutil
import subprocess
import threading
import time

import pytest

import mqtt_raw as R
from conftest import need


# ---------------------------------------------------------------- paho QoS matrix

@pytest.mark.parametrize("sub_qos", [0, 1, 2])
@pytest.mark.parametrize("pub_qos", [0, 1, 2])
def test_qos_matrix(broker, pub_qos, sub_qos):
    sub = broker.paho("matrix-sub")
    assert sub.subscribe("matrix/t", sub_qos) == [sub_qos]  # granted = requested (<= 2)
    pub = broker.paho("matrix-pub")
    payload = ("p%d-s%d" % (pub_qos, sub_qos)).encode()
    pub.publish("matrix/t", payload, qos=pub_qos)
    m = sub.get()
    assert m.topic == "matrix/t"
    assert m.payload == payload
    assert m.qos == min(pub_qos, sub_qos), "delivered QoS must be min(publish, granted)"
    assert not m.retain
    pub.publish("matrix/t", b"sentinel", qos=pub_qos)
    before, _ = sub.until("matrix/t", b"sentinel")
    assert before == [], "duplicate delivery: %r" % [(x.topic, x.payload) for x in before]


def test_suback_grants_each_requested_qos(broker):
    c = broker.raw_connected("suback-multi")
    ack = c.subscribe(42, [("s/a", 0), ("s/b", 1), ("s/c", 2), ("s/+/d", 2), ("s/#", 1)])
    assert ack.packet_id == 42  # [MQTT-3.8.4-2]
    assert ack.granted == [0, 1, 2, 2, 1]  # one return code per filter, in order [MQTT-3.8.4-5]


def test_client_receives_its_own_publish(broker):
    # 3.1.1 has no "no local": a subscribed publisher gets its own messages.
    c = broker.paho("self-loop")
    c.subscribe("loop/#", 1)
    c.publish("loop/x", b"me", qos=1)
    m = c.get()
    assert (m.topic, m.payload, m.qos) == ("loop/x", b"me", 1)


def test_resubscribe_replaces_qos(broker):
    # [MQTT-3.8.4-3]: a SUBSCRIBE with an existing filter replaces it.
    sub = broker.paho("resub-sub")
    assert sub.subscribe("rs/t", 2) == [2]
    assert sub.subscribe("rs/t", 0) == [0]
    pub = broker.paho("resub-pub")
    pub.publish("rs/t", b"one", qos=2)
    m = sub.get()
    assert m.qos == 0 and m.payload == b"one"
    pub.publish("rs/t", b"sentinel", qos=2)
    before, _ = sub.until("rs/t", b"sentinel")
    assert before == [], "the replaced subscription must not deliver a second copy"


def test_large_payload_roundtrip(broker):
    sub = broker.paho("big-sub")
    sub.subscribe("big/t", 1)
    pub = broker.paho("big-pub")
    payload = bytes(range(256)) * 1024  # 256 KiB, every byte value
    pub.publish("big/t", payload, qos=1, timeout=15)
    m = sub.get(15)
    assert m.payload == payload


def test_empty_payload_roundtrip(broker):
    sub = broker.paho("empty-sub")
    sub.subscribe("empty/t", 1)
    pub = broker.paho("empty-pub")
    pub.publish("empty/t", b"", qos=1)
    m = sub.get()
    assert m.payload == b"" and m.topic == "empty/t"


def test_unicode_topic_roundtrip(broker):
    sub = broker.paho("uni-sub")
    topic = "ünï/cödé/€/\U0001F600"
    sub.subscribe("ünï/+/€/#", 1)
    pub = broker.paho("uni-pub")
    pub.publish(topic, b"u", qos=1)
    m = sub.get()
    assert m.topic == topic


# ---------------------------------------------------------------- raw QoS flows

def test_qos1_publish_acked_with_same_packet_id(broker):
    c = broker.raw_connected("q1-raw")
    for pid in (1, 0x1234, 0xFFFF):
        c.send(R.publish("q1/t", b"x", qos=1, packet_id=pid))
        ack = c.expect(R.PUBACK)
        assert ack.packet_id == pid and ack.flags == 0


def test_qos2_inbound_flow(broker):
    sub = broker.raw_connected("q2in-sub")
    sub.subscribe(1, [("q2in/t", 2)])
    pub = broker.raw_connected("q2in-pub")
    pub.send(R.publish("q2in/t", b"exactly-once", qos=2, packet_id=7))
    rec = pub.expect(R.PUBREC)
    assert rec.packet_id == 7 and rec.flags == 0
    pub.send(R.pubrel(7))
    comp = pub.expect(R.PUBCOMP)
    assert comp.packet_id == 7 and comp.flags == 0
    p = sub.next_publish()
    assert p.payload == b"exactly-once" and p.qos == 2 and not p.dup
    sub.send(R.pubrec(p.packet_id))
    rel = sub.expect(R.PUBREL)
    assert rel.flags == 0x02 and rel.packet_id == p.packet_id  # [MQTT-3.6.1-1]
    sub.send(R.pubcomp(p.packet_id))


def receive_qos2(client, n, timeout=5.0):
    """Plays the receiver of n broker->client QoS 2 messages in whatever
    order the broker interleaves them (PUBLISH -> PUBREC, PUBREL -> PUBCOMP).
    Returns the payloads. Asserts each PUBREL matches a received PUBLISH."""
    deadline = time.monotonic() + timeout
    payloads = []
    awaiting_rel = set()
    while len(payloads) < n or awaiting_rel:
        if getattr(client, "pending", None):
            p = client.pending.pop(0)
        else:
            p = client.expect_any(max(0.0, deadline - time.monotonic()), "in a QoS 2 exchange")
        if p.type == R.PUBLISH:
            assert p.qos == 2, p
            assert p.packet_id not in awaiting_rel, "PUBLISH re-sent after PUBREC: %r" % p
            payloads.append(p.payload)
            awaiting_rel.add(p.packet_id)
            client.send(R.pubrec(p.packet_id))
        elif p.type == R.PUBREL:
            assert p.flags == 0x02, "PUBREL flags must be 0010 [MQTT-3.6.1-1]"
            assert p.packet_id in awaiting_rel, "PUBREL for unknown id %d" % p.packet_id
            awaiting_rel.discard(p.packet_id)
            client.send(R.pubcomp(p.packet_id))
        else:
            raise AssertionError("unexpected %r in a QoS 2 exchange" % p)
    return payloads


def test_qos2_duplicate_publish_before_pubrel_delivered_once(broker):
    sub = broker.raw_connected("q2dup-sub")
    sub.subscribe(1, [("q2dup/t", 2)])
    pub = broker.raw_connected("q2dup-pub")
    pub.send(R.publish("q2dup/t", b"once", qos=2, packet_id=9))
    assert pub.expect(R.PUBREC).packet_id == 9
    # the client re-sends the PUBLISH (DUP=1) before releasing it
    pub.send(R.publish("q2dup/t", b"once", qos=2, packet_id=9, dup=True))
    assert pub.expect(R.PUBREC).packet_id == 9  # acknowledged again [MQTT-4.3.3-2]
    pub.send(R.pubrel(9))
    assert pub.expect(R.PUBCOMP).packet_id == 9
    # the packet id is free again: a new message with it is a new message
    pub.send(R.publish("q2dup/t", b"second", qos=2, packet_id=9))
    assert pub.expect(R.PUBREC).packet_id == 9
    pub.send(R.pubrel(9))
    assert pub.expect(R.PUBCOMP).packet_id == 9

    assert receive_qos2(sub, 2) == [b"once", b"second"]
    sub.expect_nothing(0.3)


def test_qos2_pubrel_for_unknown_id_gets_pubcomp(broker):
    # [MQTT-4.3.3-2]/4.4: a PUBREL must be answered with PUBCOMP even if the
    # message was already released (e.g. a re-sent PUBREL).
    c = broker.raw_connected("q2-rel-unknown")
    c.send(R.pubrel(4242))
    assert c.expect(R.PUBCOMP).packet_id == 4242


def test_qos2_outbound_flow(broker):
    sub = broker.raw_connected("q2out-sub")
    sub.subscribe(3, [("q2out/t", 2)])
    pub = broker.paho("q2out-pub")
    pub.publish("q2out/t", b"m1", qos=2)
    p = sub.next_publish()
    assert p.qos == 2 and p.payload == b"m1" and p.packet_id != 0 and not p.dup and not p.retain
    sub.send(R.pubrec(p.packet_id))
    rel = sub.expect(R.PUBREL)
    assert rel.packet_id == p.packet_id and rel.flags == 0x02
    sub.send(R.pubcomp(p.packet_id))
    # the flow is finished: nothing is re-sent, and the next message flows
    pub.publish("q2out/t", b"m2", qos=2)
    p2 = sub.next_publish()
    assert p2.payload == b"m2" and p2.qos == 2
    sub.send(R.pubrec(p2.packet_id))
    assert sub.expect(R.PUBREL).packet_id == p2.packet_id
    sub.send(R.pubcomp(p2.packet_id))
    sub.expect_nothing(0.3)


def test_qos1_outbound_to_raw_subscriber(broker):
    sub = broker.raw_connected("q1out-sub")
    sub.subscribe(1, [("q1out/t", 1)])
    pub = broker.raw_connected("q1out-pub")
    pub.send(R.publish("q1out/t", b"a", qos=1, packet_id=77))
    assert pub.expect(R.PUBACK).packet_id == 77
    p = sub.next_publish()
    assert p.qos == 1 and p.packet_id != 0 and p.payload == b"a"
    sub.send(R.puback(p.packet_id))
    sub.expect_nothing(0.3)


# ---------------------------------------------------------------- unsubscribe

def test_unsubscribe_stops_delivery(broker):
    sub = broker.raw_connected("unsub-sub")
    sub.subscribe(1, [("u/a", 0), ("u/b", 0)])
    sub.send(R.unsubscribe(0x0102, ["u/a"]))
    ack = sub.expect(R.UNSUBACK)
    assert ack.packet_id == 0x0102 and ack.flags == 0  # [MQTT-3.10.4-4]
    pub = broker.raw_connected("unsub-pub")
    pub.send(R.publish("u/a", b"gone"))
    pub.send(R.publish("u/b", b"kept"))
    p = sub.next_publish()
    assert (p.topic, p.payload) == ("u/b", b"kept")
    sub.expect_nothing(0.2)


def test_unsubscribe_of_unknown_filter_still_acked(broker):
    # [MQTT-3.10.4-5]: UNSUBACK even if no filter matched.
    c = broker.raw_connected("unsub-unknown")
    c.send(R.unsubscribe(9, ["never/subscribed", "x/#"]))
    assert c.expect(R.UNSUBACK).packet_id == 9


def test_unsubscribe_with_paho(broker):
    sub = broker.paho("unsub-paho")
    sub.subscribe([("up/a", 1), ("up/b", 1)])
    sub.unsubscribe("up/a")
    pub = broker.paho("unsub-paho-pub")
    pub.publish("up/a", b"x", qos=1)
    pub.publish("up/b", b"y", qos=1)
    before, m = sub.until("up/b", b"y")
    assert before == []


# ---------------------------------------------------------------- wildcards

WILDCARD_TOPICS = ["sport", "sport/", "sport/tennis", "sport/tennis/player1",
                   "sport/tennis/player1/ranking", "sport/golf", "/sport", "other",
                   "/finance", "a//b"]

WILDCARD_CASES = {
    # filter: topics (from WILDCARD_TOPICS) that must match (MQTT 3.1.1, 4.7.1)
    "sport/#": {"sport", "sport/", "sport/tennis", "sport/tennis/player1",
                "sport/tennis/player1/ranking", "sport/golf"},
    "sport/tennis/#": {"sport/tennis", "sport/tennis/player1", "sport/tennis/player1/ranking"},
    "sport/+": {"sport/", "sport/tennis", "sport/golf"},
    "sport/+/player1": {"sport/tennis/player1"},
    "+/+": {"sport/", "sport/tennis", "sport/golf", "/sport", "/finance"},
    "+": {"sport", "other"},
    "/+": {"/sport", "/finance"},
    "+/tennis/#": {"sport/tennis", "sport/tennis/player1", "sport/tennis/player1/ranking"},
    "#": set(WILDCARD_TOPICS),
    "a/+/b": {"a//b"},
    "sport/tennis/player1": {"sport/tennis/player1"},
}


@pytest.mark.parametrize("flt", list(WILDCARD_CASES))
def test_wildcard_matching(broker, flt):
    sub = broker.raw_connected("wc-sub")
    assert sub.subscribe(1, [(flt, 0), ("sentinel/wc", 0)]).granted == [0, 0]
    pub = broker.raw_connected("wc-pub")
    for t in WILDCARD_TOPICS:
        pub.send(R.publish(t, t.encode()))
    pub.send(R.publish("sentinel/wc", b"end"))
    got = []
    for _ in range(len(WILDCARD_TOPICS) + 2):
        p = sub.next_publish()
        if p.topic == "sentinel/wc":
            break
        got.append(p.topic)
    assert sorted(got) == sorted(WILDCARD_CASES[flt])
    assert len(got) == len(set(got)), "duplicate deliveries: %r" % got


def test_dollar_topics_not_matched_by_leading_wildcards(broker):
    # [MQTT-4.7.2-1]: '#' and '+/...' must not match topics starting with '$'.
    explicit = broker.raw_connected("dollar-explicit")
    explicit.subscribe(1, [("$dollar/y", 1), ("$dollar/#", 1)])
    wild = broker.raw_connected("dollar-wild")
    wild.subscribe(1, [("#", 1), ("+/y", 1), ("+/#", 1), ("+", 1)])
    pub = broker.raw_connected("dollar-pub")
    pub.send(R.publish("$dollar/y", b"dollar", qos=1, packet_id=1))
    pub.expect(R.PUBACK)
    pub.send(R.publish("plain/y", b"plain", qos=1, packet_id=2))
    pub.expect(R.PUBACK)
    # explicitly subscribed client does get the $ message (one copy)
    p = explicit.next_publish()
    assert (p.topic, p.payload) == ("$dollar/y", b"dollar")
    explicit.send(R.puback(p.packet_id))
    # the wildcard subscriber gets only the plain one
    p = wild.next_publish()
    assert (p.topic, p.payload) == ("plain/y", b"plain"), "got %r" % p
    wild.send(R.puback(p.packet_id))
    wild.expect_nothing(0.2)
    explicit.expect_nothing(0.1)


def test_overlapping_subscriptions_one_copy_at_max_qos(broker):
    # [MQTT-3.3.5-1]: deliver respecting the maximum QoS of all matching
    # subscriptions. shootout (like Mosquitto) delivers exactly one copy.
    sub = broker.raw_connected("overlap-sub")
    assert sub.subscribe(1, [("ov/#", 0), ("ov/+", 2)]).granted == [0, 2]
    pub = broker.raw_connected("overlap-pub")
    pub.send(R.publish("ov/x", b"hello", qos=2, packet_id=3))
    assert pub.expect(R.PUBREC).packet_id == 3
    pub.send(R.pubrel(3))
    pub.expect(R.PUBCOMP)
    p = sub.next_publish()
    assert (p.payload, p.qos) == (b"hello", 2)
    sub.send(R.pubrec(p.packet_id))
    sub.expect(R.PUBREL)
    sub.send(R.pubcomp(p.packet_id))
    # only matched by ov/# (QoS 0): delivered once at QoS 0
    pub.send(R.publish("ov/x/deeper", b"deep", qos=1, packet_id=4))
    pub.expect(R.PUBACK)
    p = sub.next_publish()
    assert (p.topic, p.qos) == ("ov/x/deeper", 0), "a second copy of the first message? %r" % p
    sub.expect_nothing(0.3)


# Mosquitto 2.0.11 deviates from [MQTT-3.3.5-1] here: with a literal filter at a
# lower QoS than a matching wildcard filter it delivers at the literal filter's
# QoS (e.g. QoS 0 for 'ov/x'@0 + 'ov/#'@2). The spec requires the maximum.
@pytest.mark.shootout_only
@pytest.mark.parametrize("subs", [
    [("ov/x", 0), ("ov/#", 2)],
    [("ov/#", 2), ("ov/x", 0)],
    [("ov/#", 0), ("ov/+", 2), ("ov/x", 1)],
    [("+/x", 2), ("ov/x", 1), ("#", 0)],
], ids=["literal0-hash2", "hash2-literal0", "three", "plus2-literal1-hash0"])
def test_overlapping_subscriptions_max_qos_wins_over_literal(broker, subs):
    sub = broker.raw_connected("overlap2-sub")
    assert sub.subscribe(1, subs).granted == [q for _, q in subs]
    pub = broker.raw_connected("overlap2-pub")
    pub.send(R.publish("ov/x", b"hello", qos=2, packet_id=3))
    assert pub.expect(R.PUBREC).packet_id == 3
    pub.send(R.pubrel(3))
    pub.expect(R.PUBCOMP)
    p = sub.next_publish()
    assert (p.payload, p.qos) == (b"hello", 2)
    receive_qos2_rest(sub, p)
    sub.expect_nothing(0.3)


def receive_qos2_rest(client, publish):
    client.send(R.pubrec(publish.packet_id))
    rel = client.expect(R.PUBREL)
    assert rel.packet_id == publish.packet_id
    client.send(R.pubcomp(publish.packet_id))


@pytest.mark.parametrize("qos", [0, 1, 2])
def test_ordering_preserved_per_publisher(broker, qos):
    n = 300
    sub = broker.paho("order-sub")
    sub.subscribe("order/t", 2)
    pub = broker.paho("order-pub")
    infos = [pub.c.publish("order/t", b"%05d" % i, qos) for i in range(n)]
    deadline = time.monotonic() + 20
    for info in infos:
        info.wait_for_publish(max(0.1, deadline - time.monotonic()))
        assert info.is_published()
    msgs = sub.get_n(n, timeout=20)
    assert [m.payload for m in msgs] == [b"%05d" % i for i in range(n)]
    assert all(m.qos == qos for m in msgs)


def test_ordering_two_publishers_each_in_order(broker):
    sub = broker.raw_connected("order2-sub")
    sub.subscribe(1, [("o2/#", 1)])
    a = broker.raw_connected("order2-a")
    b = broker.raw_connected("order2-b")
    n = 100
    for i in range(n):
        a.send(R.publish("o2/a", b"a%03d" % i, qos=1, packet_id=i + 1))
        b.send(R.publish("o2/b", b"b%03d" % i, qos=1, packet_id=i + 1))
    got = {"o2/a": [], "o2/b": []}
    for _ in range(2 * n):
        p = sub.next_publish()
        sub.send(R.puback(p.packet_id))
        got[p.topic].append(p.payload)
    assert got["o2/a"] == [b"a%03d" % i for i in range(n)]
    assert got["o2/b"] == [b"b%03d" % i for i in range(n)]


# ---------------------------------------------------------------- ping

def test_pingreq_answered_by_pingresp(broker):
    c = broker.raw_connected("pinger")
    for _ in range(3):
        c.send(R.pingreq())
        p = c.expect(R.PINGRESP)
        assert p.flags == 0 and p.body == b""


def test_disconnect_closes_connection(broker):
    c = broker.raw_connected("disconnecter")
    c.send(R.disconnect())
    assert c.wait_closed(5) == []  # the server closes after DISCONNECT [MQTT-3.14.4-1]


# ---------------------------------------------------------------- mosquitto clients

MOSQUITTO_PUB = shutil.which("mosquitto_pub") or "/usr/bin/mosquitto_pub"
MOSQUITTO_SUB = shutil.which("mosquitto_sub") or "/usr/bin/mosquitto_sub"



@pytest.fixture
def mosquitto_clients():
    need(os.path.exists(MOSQUITTO_PUB) and os.path.exists(MOSQUITTO_SUB),
         "mosquitto_pub/mosquitto_sub not installed")


needs_mosquitto_clients = pytest.mark.usefixtures("mosquitto_clients")


def _mosquitto_pub(broker, *args, timeout=10):
    r = subprocess.run([MOSQUITTO_PUB, "-h", broker.host, "-p", str(broker.port), "-V", "mqttv311"]
                       + list(args), stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    assert r.returncode == 0, "mosquitto_pub %r exited %d: %r" % (args, r.returncode, r.stderr)
    return r


class MosquittoSub:
    """mosquitto_sub in debug mode; waits until its SUBACK has arrived."""

    def __init__(self, broker, *args):
        # stdbuf: mosquitto_sub's stdout is a pipe here; make it line buffered
        stdbuf = ["stdbuf", "-oL"] if shutil.which("stdbuf") else []
        self.proc = subprocess.Popen(
            stdbuf + [MOSQUITTO_SUB, "-h", broker.host, "-p", str(broker.port), "-V", "mqttv311", "-d"] + list(args),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = queue.Queue()
        self.all = []
        self.thread = threading.Thread(target=self._reader, daemon=True)
        self.thread.start()

    def _reader(self):
        for raw in self.proc.stdout:
            line = raw.rstrip(b"\n")
            self.all.append(line)
            self.lines.put(line)

    def wait_subscribed(self, timeout=5):
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError("mosquitto_sub not subscribed within %.0fs: %r" % (timeout, self.all))
            if line.startswith(b"Subscribed (mid:"):
                return line

    def finish(self, timeout=10):
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise AssertionError("mosquitto_sub did not exit; output %r" % self.all)
        self.thread.join(5)
        err = self.proc.stderr.read()
        assert self.proc.returncode == 0, "mosquitto_sub exited %d: %r" % (self.proc.returncode, err)
        # message lines are the ones that are not debug output
        return [l for l in self.all if not (l.startswith(b"Client ") or l.startswith(b"Subscribed"))]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@needs_mosquitto_clients
@pytest.mark.parametrize("qos", [0, 1, 2])
def test_mosquitto_sub_receives_from_paho(broker, qos):
    ms = MosquittoSub(broker, "-C", "3", "-t", "interop/#", "-v", "-q", str(qos))
    try:
        assert ms.wait_subscribed().endswith(b": %d" % qos)
        pub = broker.paho("interop-pub")
        for i in range(3):
            pub.publish("interop/t%d" % i, b"hello %d" % i, qos=qos)
        lines = ms.finish()
    finally:
        ms.kill()
    assert lines == [b"interop/t%d hello %d" % (i, i) for i in range(3)]


@needs_mosquitto_clients
def test_mosquitto_pub_message(broker):
    sub = broker.paho("mpub-sub")
    sub.subscribe("mpub/t", 2)
    _mosquitto_pub(broker, "-t", "mpub/t", "-m", "from mosquitto_pub")
    m = sub.get()
    assert (m.payload, m.qos, m.retain) == (b"from mosquitto_pub", 0, False)


@needs_mosquitto_clients
def test_mosquitto_pub_file_binary(broker, tmp_path):
    payload = bytes(range(256)) * 40 + b"\x00\xff\x00"
    f = tmp_path / "payload.bin"
    f.write_bytes(payload)
    sub = broker.paho("mpubf-sub")
    sub.subscribe("mpub/file", 1)
    _mosquitto_pub(broker, "-t", "mpub/file", "-f", str(f), "-q", "1")
    m = sub.get()
    assert m.payload == payload and m.qos == 1


@needs_mosquitto_clients
@pytest.mark.parametrize("qos", [1, 2])
def test_mosquitto_pub_qos(broker, qos):
    sub = broker.paho("mpubq-sub")
    sub.subscribe("mpub/q", 2)
    _mosquitto_pub(broker, "-t", "mpub/q", "-m", "q%d" % qos, "-q", str(qos))
    m = sub.get()
    assert (m.payload, m.qos) == (b"q%d" % qos, qos)
    sub.expect_none(0.2)


@needs_mosquitto_clients
def test_mosquitto_pub_retained_then_mosquitto_sub(broker):
    _mosquitto_pub(broker, "-t", "mpub/r", "-m", "kept", "-r", "-q", "1")
    # a later subscriber gets it as a retained message
    sub = broker.paho("mpubr-sub")
    sub.subscribe("mpub/#", 1)
    m = sub.get()
    assert (m.topic, m.payload, m.retain, m.qos) == ("mpub/r", b"kept", True, 1)
    # and so does mosquitto_sub (which exits after one message)
    ms = MosquittoSub(broker, "-C", "1", "-t", "mpub/r", "-v")
    try:
        lines = ms.finish()
    finally:
        ms.kill()
    assert lines == [b"mpub/r kept"]
