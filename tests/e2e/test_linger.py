"""Lingering close: a server that ends a connection with an answer (an MQTT
5 DISCONNECT, a refused CONNACK, an HTTP error response, an HTTP/2 GOAWAY)
while the client is still sending must let the client read that answer. It
writes the answer, shuts its write side and drops what still comes for a
bounded time (docs/broker.md, "Lingering close"), instead of closing with
unread input, which resets the connection: the client's sends fail, its
reads fail with ECONNRESET, and whatever the server had not sent yet is
lost.

Every test here keeps writing while the server answers, then reads to the
end of the stream and asserts the answer is the last thing in it and that
the stream ends cleanly (EOF, never a reset). The MQTT ones first make the
broker's output to the client pile up (the client is subscribed to what it
floods and reads nothing), so that the DISCONNECT waits behind megabytes of
messages and a reset would lose it."""

import os
import signal
import socket
import ssl
import struct
import time

import pytest

import mqtt_raw as R
from conftest import HOST, free_port
from test_tls import tls_conf

pytestmark = pytest.mark.shootout_only  # the broker's own closing (Mosquitto resets)

PAYLOAD = 8192
# What the client sends after the answer: a bounded flood, stopped early
# when the server no longer reads (past its drop bound, a send blocks).
AFTER = 4 * 1024 * 1024
SEND_STALL = 0.3


def send_flood(sock, data, limit=AFTER, stall=SEND_STALL):
    """Sends data over and over, limit bytes at most, until a send blocks
    for `stall` seconds. Returns how it ended: "sent", "blocked" or the
    error (a reset shows here first)."""
    sock.settimeout(stall)
    sent = 0
    try:
        while sent < limit:
            sock.sendall(data)
            sent += len(data)
    except socket.timeout:
        return "blocked"
    except OSError as e:
        return "error: %r" % e
    return "sent"


def read_to_end(sock, timeout=10.0):
    """Every byte until the end of the stream; returns (data, end) where end
    is "eof" or the error that ended it."""
    sock.settimeout(timeout)
    chunks = []
    deadline = time.monotonic() + timeout
    while True:
        assert time.monotonic() < deadline, "no end of stream within %.0fs" % timeout
        try:
            data = sock.recv(1 << 20)
        except (OSError, ssl.SSLError) as e:
            return b"".join(chunks), "error: %r" % e
        if not data:
            return b"".join(chunks), "eof"
        chunks.append(data)


def ws_payloads(data):
    """The payloads of the unmasked server frames in data, joined."""
    out, pos = [], 0
    while pos + 2 <= len(data):
        n, hdr = data[pos + 1] & 0x7F, 2
        if n == 126:
            n, hdr = struct.unpack("!H", data[pos + 2:pos + 4])[0], 4
        elif n == 127:
            n, hdr = struct.unpack("!Q", data[pos + 2:pos + 10])[0], 10
        out.append(data[pos + hdr:pos + hdr + n])
        pos += hdr + n
    return b"".join(out)


def mqtt_packets(stream):
    """(first byte, body) of every whole MQTT packet in stream."""
    out, pos = [], 0
    while pos < len(stream):
        n, start = R.read_varint(stream, pos + 1)
        if start + n > len(stream):
            break
        out.append((stream[pos], stream[start:start + n]))
        pos = start + n
    return out


class Client:
    """An MQTT 5 client over plain TCP, TLS or WebSocket, at the socket
    level: it can write without reading."""

    def __init__(self, port, transport="tcp", certs=None):
        self.transport = transport
        sock = socket.create_connection((HOST, port), timeout=5)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if transport == "tls":
            ctx = ssl.create_default_context(cafile=certs["ca"])
            sock = ctx.wrap_socket(sock, server_hostname="localhost")
        self.sock = sock
        self.buf = b""
        if transport == "ws":
            key = "dGhlIHNhbXBsZSBub25jZQ=="
            sock.sendall(("GET /mqtt HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
                          "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                          "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mqtt\r\n\r\n"
                          % key).encode())
            while b"\r\n\r\n" not in self.buf:
                self.buf += sock.recv(4096)
            head, self.buf = self.buf.split(b"\r\n\r\n", 1)
            assert b" 101 " in head.split(b"\r\n")[0], head

    def wrap(self, data):
        """data as it goes on the wire: one masked binary frame under WebSocket."""
        if self.transport != "ws":
            return data
        mask = os.urandom(4)
        n = len(data)
        hdr = bytes([0x82]) + (bytes([0x80 | n]) if n < 126 else
                               bytes([0x80 | 126]) + struct.pack("!H", n) if n < 65536 else
                               bytes([0x80 | 127]) + struct.pack("!Q", n))
        m = (mask * (n // 4 + 1))[:n]
        return hdr + mask + (int.from_bytes(data, "big") ^ int.from_bytes(m, "big")).to_bytes(n, "big")

    def unwrap(self, data):
        return ws_payloads(data) if self.transport == "ws" else data

    def send(self, data):
        self.sock.sendall(self.wrap(data))

    def expect(self, ptype):
        """Reads up to the next packet, which must be of type ptype."""
        self.sock.settimeout(5)
        while True:
            got = mqtt_packets(self.unwrap(self.buf))
            if got:
                first, body = got[0]
                assert first >> 4 == ptype, "expected type %d, got %r" % (ptype, got[0])
                # Handshake packets come one at a time: nothing else is buffered.
                self.buf = b""
                return R.Packet(first, body, True)
            data = self.sock.recv(65536)
            assert data, "closed while waiting for packet type %d" % ptype
            self.buf += data

    def connect(self, client_id):
        self.send(R.connect5(client_id))
        assert self.expect(R.CONNACK).rc == 0

    def backlog(self, topic, total=3 * 1024 * 1024):
        """Subscribes to topic and floods it, reading nothing: what the broker
        owes this client piles up in its output queue and both sockets."""
        self.send(R.subscribe5(1, [(topic, 0)]))
        self.expect(R.SUBACK)
        chunk = self.wrap(b"".join(R.publish5(topic, b"e" * PAYLOAD) for _ in range(8)))
        for _ in range(total // len(chunk) + 1):
            self.sock.sendall(chunk)

    def junk(self):
        """What the client keeps sending after the broker's answer."""
        return self.wrap(R.publish5("x", b"j" * PAYLOAD))

    def read_to_end(self):
        data, end = read_to_end(self.sock)
        return mqtt_packets(self.unwrap(self.buf + data)), end


def assert_ends_with_disconnect(c, reason):
    got, end = c.read_to_end()
    assert got, "nothing received (%s)" % end
    first, body = got[-1]
    last = R.Packet(first, body, True)
    assert last.type == R.DISCONNECT, "last packet %r of %d, stream end: %s" % (last, len(got), end)
    assert last.reason == reason, "DISCONNECT 0x%02x, expected 0x%02x" % (last.reason, reason)
    assert end == "eof", "the stream ended with %s, not the broker's end of stream" % end


def linger_broker(broker_factory, tls_certs=None, transport="tcp", **limits):
    """A broker with a small output bound, so that what a non-reading
    client is owed stays a few megabytes; and the port of the listener of
    that transport."""
    limits.setdefault("max_packet_size", 65536)
    extra = ["--max-output-bytes", "262144"]
    if transport == "tcp":
        b = broker_factory(extra_args=extra, **limits)
        return b, b.port
    port = free_port()
    conf = (tls_conf(tls_certs, port) if transport == "tls"
            else "listener %d %s\nprotocol websockets" % (port, HOST))
    return broker_factory(extra_args=extra, conf=conf, **limits), port


def backlogged(port, name, transport="tcp", certs=None):
    """A connected client that the broker owes a backlog of messages."""
    c = Client(port, transport, certs)
    c.connect("lg-" + name)
    c.backlog("lg/" + name)
    return c


def disconnected_while_flooding(b, port, name, trigger, reason, transport="tcp", certs=None):
    """A client with a backlog: trigger(b, c) makes the broker end it with
    reason while it keeps writing; it still reads the DISCONNECT."""
    c = backlogged(port, name, transport, certs)
    trigger(b, c)
    send_flood(c.sock, c.junk())
    assert_ends_with_disconnect(c, reason)


def too_large(b, c):
    # A PUBLISH announcing 100000 bytes, over max_packet_size: the broker
    # answers from its fixed header.
    c.sock.sendall(c.wrap(bytes([0x30]) + R.varint(100000)) + c.junk())


@pytest.mark.parametrize("transport", ["tcp", "tls", "ws"])
def test_packet_too_large_0x95_reaches_a_flooding_client(broker_factory, tls_certs, transport):
    b, port = linger_broker(broker_factory, tls_certs, transport)
    disconnected_while_flooding(b, port, "95-" + transport, too_large, 0x95, transport, tls_certs)
    b.assert_alive()


TRIGGERS = {
    # Three QoS 2 messages waiting for PUBREL, with a Receive Maximum of 2.
    "0x93": (0x93, dict(max_inflight_messages=2), lambda b, c: c.send(
        b"".join(R.publish5("lg/q2", b"q", qos=2, packet_id=i) for i in (1, 2, 3)))),
    # A PUBLISH with QoS 3: malformed.
    "0x81": (0x81, {}, lambda b, c: c.send(bytes([0x36, 3]) + b"\x00\x01x")),
    # A new connection with the same client id.
    "0x8e": (0x8E, {}, lambda b, c: b.raw().connect5_ok("lg-0x8e")),
    # SIGTERM.
    "0x8b": (0x8B, {}, lambda b, c: b.proc.send_signal(signal.SIGTERM)),
}


@pytest.mark.parametrize("name", sorted(TRIGGERS))
def test_disconnect_reaches_a_flooding_client(broker_factory, name):
    reason, limits, trigger = TRIGGERS[name]
    b, port = linger_broker(broker_factory, **limits)
    disconnected_while_flooding(b, port, name, trigger, reason)
    if reason == 0x8B:
        assert b.stop() == 0


def test_refused_connack_reaches_a_flooding_client(broker_factory):
    # A CONNECT the broker refuses (here: an authentication method, 0x8C),
    # with the client writing on behind it.
    b, port = linger_broker(broker_factory)
    c = Client(port)
    c.sock.sendall(R.connect5("lg-refused", properties=[(R.AUTH_METHOD, "x")]) + b"\x00" * 65536)
    send_flood(c.sock, b"\x00" * 65536)
    got, end = c.read_to_end()
    assert [(f >> 4, R.Packet(f, body, True).rc) for f, body in got] == [(R.CONNACK, 0x8C)]
    assert end == "eof", end


def test_linger_drops_1mib_at_most(broker_factory):
    # Past 1 MiB of dropped input the broker reads no more: the flood
    # blocks, and the client still reads its DISCONNECT.
    b, port = linger_broker(broker_factory)
    c = backlogged(port, "bytes")
    too_large(b, c)
    assert send_flood(c.sock, c.junk(), limit=256 * 1024 * 1024) == "blocked"
    assert_ends_with_disconnect(c, 0x95)


def test_linger_lasts_2s_at_most(broker_factory):
    # A client that read its DISCONNECT and the end of the stream but does
    # not close: 2 s on, the broker has closed the socket, and what the
    # client sends then is answered with a reset.
    b, port = linger_broker(broker_factory)
    c = backlogged(port, "time")
    too_large(b, c)
    assert_ends_with_disconnect(c, 0x95)
    c.sock.sendall(b"still lingering")  # dropped
    time.sleep(2.5)
    with pytest.raises(OSError):
        for _ in range(3):
            c.sock.sendall(b"x")
            time.sleep(0.1)


# ---- the HTTP servers and gRPC ---------------------------------------------

def http_error_to_flooding_client(port, head, status):
    """Sends head, then keeps sending body bytes while the server answers
    status; the client still reads that answer, then a clean end of stream."""
    s = socket.create_connection((HOST, port), timeout=5)
    try:
        s.sendall(head)
        how = send_flood(s, b"b" * 65536)
        assert not how.startswith("error"), how
        data, end = read_to_end(s)
    finally:
        s.close()
    assert data.startswith(b"HTTP/1.1 %d " % status), data[:200]
    assert end == "eof", end
    return data


BIG_POST = (b"POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 99999999\r\n\r\n")


def test_car_rest_413_reaches_a_flooding_client(car_server_factory):
    s = car_server_factory("--max-body-size", "1000")
    http_error_to_flooding_client(s.rest_port, BIG_POST, 413)


def test_a2b_413_reaches_a_flooding_client(a2b_server_factory):
    srv = a2b_server_factory()
    http_error_to_flooding_client(
        srv.port, b"POST /api/v1/users/1/transfers/2 HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 99999999\r\n\r\n", 413)


def test_broker_metrics_431_reaches_a_flooding_client(broker_factory):
    mport = free_port()
    broker_factory(extra_args=["--metrics-port", str(mport)])
    http_error_to_flooding_client(mport, b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"p" * 5000, 431)


def test_grpc_goaway_reaches_a_flooding_client(car_server):
    import h2_raw as H
    c = H.H2Conn(car_server.grpc_port)
    try:
        # DATA on stream 0 is a connection error [RFC 9113 6.1]: GOAWAY.
        c.send_frame(H.DATA, 0, 0, b"x")
        junk = H.H2Conn.frame_bytes(H.PING, 0, 0, b"12345678") * 4096
        how = send_flood(c.sock, junk)
        assert not how.startswith("error"), how
        data, end = read_to_end(c.sock)
    finally:
        c.close()
    frames, pos = [], 0
    while pos + 9 <= len(data):
        n = int.from_bytes(data[pos:pos + 3], "big")
        frames.append((data[pos + 3], data[pos + 9:pos + 9 + n]))
        pos += 9 + n
    assert frames and frames[-1][0] == H.GOAWAY, frames[-3:]
    assert int.from_bytes(frames[-1][1][4:8], "big") == H.PROTOCOL_ERROR
    assert end == "eof", end
