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
