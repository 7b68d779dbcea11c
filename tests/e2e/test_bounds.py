"""Bounds that keep one client from hurting the others (docs/broker.md,
"Bounds"): a packet must arrive within --packet-timeout and at
--min-packet-rate after it, keep alive 0 or not, over TCP, WebSockets and
TLS; each hit is counted in /metrics. The tests assert service to a healthy
client and that the hostile one is cut, with generous waits, never times."""

import socket
import ssl
import time

import pytest

import mqtt_raw as R
from conftest import HOST, free_port
from test_metrics import scrape
from test_tls import tls_conf
from test_websockets import RawWs, ws_conf

pytestmark = pytest.mark.shootout_only  # the options are shootout's

# A packet may take 2 s, then must come at 100 bytes a second: a client
# sending one byte a second is cut about 2 s after its first byte.
PACKET_ARGS = ("--packet-timeout", "2", "--min-packet-rate", "100")
CUT_WITHIN = 20.0  # generous: the expected cut is near 2.3 s


def bound_hits(port, bound):
    samples, _ = scrape(port)
    return samples.get('shootout_broker_bounds_hit_total{bound="%s"}' % bound, 0)


class Trickler:
    """A connected MQTT 3.1.1 client (keep alive 0) that sends a PUBLISH one
    byte at a time; send(data) writes MQTT bytes, whatever the transport."""

    def __init__(self, name, sock, send):
        self.name, self.sock, self.send = name, sock, send
        self.data = R.publish("slow/t", b"x" * 200)
        self.sent = 0

    def step(self):
        """Sends the next byte; returns False once the broker closed."""
        if self.closed():
            return False
        try:
            self.send(self.data[self.sent:self.sent + 1])
        except OSError:
            return False
        self.sent += 1
        assert self.sent < len(self.data), "%s: the whole packet went in" % self.name
        return True

    def closed(self):
        self.sock.setblocking(False)
        try:
            while True:
                data = self.sock.recv(4096)
                if not data:
                    return True
        except (BlockingIOError, ssl.SSLWantReadError):
            return False
        except OSError:  # reset, or TLS EOF
            return True
        finally:
            self.sock.setblocking(True)


def tcp_trickler(b):
    c = b.raw()
    c.connect_ok("trickle-tcp", keepalive=0)
    return Trickler("tcp", c.sock, c.send)


def ws_trickler(b, port):
    ws = RawWs(port)
    b.clients.append(ws)
    assert ws.status == 101, ws.head
    ws.send_frame(2, R.connect("trickle-ws", keepalive=0))
    assert ws.recv_packet().type == R.CONNACK
    assert not ws.buf, "nothing after the CONNACK"
    return Trickler("ws", ws.sock, lambda data: ws.send_frame(2, data))


def tls_trickler(b, port, certs):
    ctx = ssl.create_default_context(cafile=certs["ca"])
    ctx.check_hostname = False
    s = ctx.wrap_socket(socket.create_connection((HOST, port), timeout=5))
    b.clients.append(s)
    s.sendall(R.connect("trickle-tls", keepalive=0))
    got = b""
    while len(got) < 4:
        got += s.recv(4 - len(got))
    assert got[0] >> 4 == R.CONNACK and got[3] == 0
    return Trickler("tls", s, s.sendall)  # one TLS record per byte


def assert_tricklers_cut(b, tricklers, healthy):
    """Trickles one byte a second on each until the broker cuts them all,
    while the healthy client is served a round trip every step."""
    healthy.subscribe("alive/t", 1)
    live = list(tricklers)
    deadline = time.monotonic() + CUT_WITHIN
    i = 0
    while live:
        assert time.monotonic() < deadline, "not cut: %s" % [t.name for t in live]
        live = [t for t in live if t.step()]
        healthy.publish("alive/t", b"%d" % i, 1)
        assert healthy.get().payload == b"%d" % i
        i += 1
        time.sleep(1.0)
    healthy.publish("alive/t", b"after", 1)
    assert healthy.get().payload == b"after"
    b.assert_alive()


def test_trickling_clients_are_cut_over_tcp_ws_and_tls(broker_factory, tls_certs):
    ws_port, tls_port, mport = free_port(), free_port(), free_port()
    b = broker_factory(conf=ws_conf(ws_port) + "\n" + tls_conf(tls_certs, tls_port),
                       extra_args=PACKET_ARGS + ("--metrics-port", str(mport)))
    idle = b.raw_connected("idle-ka0", keepalive=0)  # silent, nothing partial: stays
    tricklers = [tcp_trickler(b), ws_trickler(b, ws_port), tls_trickler(b, tls_port, tls_certs)]
    assert_tricklers_cut(b, tricklers, b.paho("healthy"))
    assert bound_hits(mport, "packet_timeout") == 3
    idle.send(R.pingreq())
    idle.expect(R.PINGRESP)
    assert "bound packet_timeout hit" in b.stderr_text()


def test_fast_large_packet_is_not_cut(broker_factory):
    """A packet bigger than the rate times the timeout, sent in pieces at a
    good pace, takes longer than --packet-timeout and still gets through."""
    b = broker_factory(extra_args=("--packet-timeout", "1", "--min-packet-rate", "2000"))
    sub = b.raw_connected("big-sub")
    sub.subscribe(1, [("big/t", 0)])
    pub = b.raw_connected("big-pub", keepalive=0)
    data = R.publish("big/t", b"y" * 9000)
    for k in range(0, len(data), 1500):  # 1500 bytes every 0.25 s: 6000/s
        pub.send(data[k:k + 1500])
        time.sleep(0.25)
    assert sub.next_publish(10).payload == b"y" * 9000
    pub.send(R.pingreq())
    pub.expect(R.PINGRESP)


@pytest.mark.parametrize("v5", [False, True], ids=["v311", "v5"])
def test_stalled_packet_mqtt5_disconnect_0x80_v311_close(broker_factory, v5):
    b = broker_factory(extra_args=("--packet-timeout", "1", "--min-packet-rate", "100"))
    c = b.raw()
    if v5:
        c.v5 = True
        c.connect5_ok("stall5", keepalive=0)
    else:
        c.connect_ok("stall3", keepalive=0)
    c.send(R.publish("s/t", b"z" * 100)[:10])  # and then nothing
    if v5:
        d = c.expect_disconnect(0x80, timeout=CUT_WITHIN)
        assert b"packet not received in time" in repr(d.props).encode()
    else:
        assert c.wait_closed(CUT_WITHIN) == []
    ok = b.raw_connected("after")
    ok.send(R.pingreq())
    ok.expect(R.PINGRESP)


def retained_topics(b, pattern):
    """The retained messages a new subscriber to pattern gets: {topic: payload}."""
    c = b.raw_connected("look-%f" % time.monotonic())
    c.subscribe(1, [(pattern, 0)])
    got = {}
    try:
        while True:
            p = c.next_publish(1.0)
            got[p.topic] = p.payload
    except (AssertionError, TimeoutError):
        pass
    c.close()
    return got


def pub5(c, topic, payload, pid):
    """A retained QoS 1 PUBLISH from an MQTT 5 client; returns its PUBACK's reason."""
    c.send(R.publish5(topic, payload, qos=1, retain=True, packet_id=pid))
    ack = c.expect(R.PUBACK)
    assert ack.packet_id == pid
    return ack.reason


NO_SUBSCRIBERS, QUOTA = 0x10, 0x97


def test_retained_message_count_bound(broker_factory):
    mport = free_port()
    b = broker_factory(extra_args=("--max-retained-messages", "3", "--sys-interval", "0",
                                   "--metrics-port", str(mport)))
    live = b.raw_connected("live")
    live.subscribe(1, [("other/#", 0)])
    c = b.raw()
    c.connect5_ok("retainer")
    for i in (1, 2, 3):
        assert pub5(c, "r/%d" % i, b"v%d" % i, i) == NO_SUBSCRIBERS
    assert pub5(c, "r/4", b"v4", 4) == QUOTA  # a new topic over the bound
    assert pub5(c, "r/1", b"v1 again", 5) == NO_SUBSCRIBERS  # replacing still works
    assert pub5(c, "r/2", b"", 6) == NO_SUBSCRIBERS  # and clearing
    assert pub5(c, "r/4", b"v4", 7) == NO_SUBSCRIBERS  # which makes room
    # MQTT 3.1.1 has no reason codes: acknowledged, sent on, not stored.
    old = b.raw_connected("old-retainer")
    old.send(R.publish("other/5", b"v5", qos=1, retain=True, packet_id=1))
    assert old.expect(R.PUBACK).packet_id == 1
    assert live.next_publish().payload == b"v5"
    assert retained_topics(b, "#") == {"r/1": b"v1 again", "r/3": b"v3", "r/4": b"v4"}
    assert bound_hits(mport, "retained_messages") == 2
    assert "bound retained_messages hit by retainer" in b.stderr_text()


def test_retained_bytes_bound(broker_factory):
    mport = free_port()
    b = broker_factory(extra_args=("--max-retained-bytes", "1000", "--sys-interval", "0",
                                   "--metrics-port", str(mport)))
    c = b.raw()
    c.connect5_ok("bytes")
    assert pub5(c, "b/1", b"x" * 600, 1) == NO_SUBSCRIBERS  # 603 bytes with its topic
    assert pub5(c, "b/2", b"y" * 600, 2) == QUOTA
    assert pub5(c, "b/2", b"y" * 300, 3) == NO_SUBSCRIBERS  # 906
    assert pub5(c, "b/1", b"x" * 700, 4) == QUOTA  # would be 906 - 603 + 703
    assert pub5(c, "b/1", b"x" * 500, 5) == NO_SUBSCRIBERS  # smaller: always
    assert retained_topics(b, "b/#") == {"b/1": b"x" * 500, "b/2": b"y" * 300}
    assert bound_hits(mport, "retained_bytes") == 2


def test_partial_packet_memory_bound(broker_factory):
    """Two clients each start a large PUBLISH and stop: the one whose
    buffer takes the total over the bound is closed, MQTT 5 with
    DISCONNECT 0x97; the other and a healthy client go on."""
    mport = free_port()
    b = broker_factory(extra_args=("--max-partial-packet-bytes", "65536",
                                   "--metrics-port", str(mport)))
    healthy = b.paho("healthy")
    healthy.subscribe("h/t", 1)
    head = R.publish5("big/t", b"p" * 500000)[:40000]
    first = b.raw()
    first.connect5_ok("first", keepalive=0)
    first.send(head)
    time.sleep(0.5)
    second = b.raw()
    second.connect5_ok("second", keepalive=0)
    second.send(head)
    d = second.expect_disconnect(QUOTA)
    assert b"memory bound" in repr(d.props).encode()
    assert not first.is_closed_now(0.5)
    healthy.publish("h/t", b"fine", 1)
    assert healthy.get().payload == b"fine"
    assert bound_hits(mport, "partial_packet_memory") == 1


def test_connections_per_address(broker_factory):
    """Over --max-connections-per-address a connection is closed before
    anything is read (no CONNACK is possible yet); other addresses and
    the connections within the limit are served."""
    mport = free_port()
    b = broker_factory(extra_args=("--max-connections-per-address", "2",
                                   "--metrics-port", str(mport)))
    held = [b.raw_connected("pa-%d" % i) for i in range(2)]
    for _ in range(3):
        s = socket.create_connection((HOST, b.port), timeout=5, source_address=("127.0.0.1", 0))
        s.settimeout(5)
        try:
            assert s.recv(1) == b""
        except ConnectionResetError:
            pass
        s.close()
    other = socket.create_connection((HOST, b.port), timeout=5, source_address=("127.0.0.2", 0))
    other.sendall(R.connect("pa-other"))
    assert other.recv(4)[:1] == bytes([R.CONNACK << 4])
    other.close()
    for c in held:
        c.send(R.pingreq())
        c.expect(R.PINGRESP)
    assert bound_hits(mport, "connections_per_address") == 3
    assert "max_connections_per_address" in b.stderr_text()
