"""MQTT over WebSockets (RFC 6455) on its own listener: paho across
transports (ws, tcp, tls, wss), and a raw client for what paho does not do:
bad upgrades, fragmented frames, several packets in one frame, ping/pong,
close."""

import base64
import os
import socket
import struct
import time

import pytest

import mqtt_raw as R
from conftest import HOST, free_port
from mqtt_paho import PahoClient, PahoClient5
from test_tls import CONNECT_TIMEOUT, assert_stalled_clients_are_cut, tls_conf

TIMEOUT = 5.0


def ws_conf(port):
    return "listener %d %s\nprotocol websockets" % (port, HOST)


class RawWs:
    """A WebSocket client over a plain socket, frame by frame."""

    def __init__(self, port, request=None):
        self.sock = socket.create_connection((HOST, port), timeout=TIMEOUT)
        self.buf = b""
        self.stream = b""  # MQTT bytes from binary frames
        key = base64.b64encode(os.urandom(16)).decode()
        if request is None:
            request = ("GET /mqtt HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
                       "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                       "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mqtt\r\n\r\n" % key)
        self.sock.sendall(request.encode())
        self.status, self.head = self._read_head()

    def _recv(self):
        data = self.sock.recv(65536)
        if not data:
            raise R.Closed("closed by the broker")
        self.buf += data

    def _read_head(self):
        deadline = time.monotonic() + TIMEOUT
        while b"\r\n\r\n" not in self.buf:
            assert time.monotonic() < deadline, "no HTTP answer"
            self._recv()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        return int(head.split(b" ", 2)[1]), head.decode()

    def send_frame(self, opcode, payload, fin=True):
        mask = os.urandom(4)
        n = len(payload)
        hdr = bytes([(0x80 if fin else 0) | opcode])
        if n < 126:
            hdr += bytes([0x80 | n])
        elif n < 65536:
            hdr += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            hdr += bytes([0x80 | 127]) + struct.pack("!Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(hdr + mask + masked)

    def recv_frame(self):
        """Returns (opcode, payload) of the next frame; server frames are
        unmasked and final."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            if len(self.buf) >= 2:
                b0, b1 = self.buf[0], self.buf[1]
                assert b1 & 0x80 == 0, "server frames are not masked"
                assert b0 & 0x80, "server frames are final"
                n, pos = b1 & 0x7F, 2
                if n == 126 and len(self.buf) >= 4:
                    n, pos = struct.unpack("!H", self.buf[2:4])[0], 4
                elif n == 127 and len(self.buf) >= 10:
                    n, pos = struct.unpack("!Q", self.buf[2:10])[0], 10
                if (b1 & 0x7F) < 126 or pos > 2:
                    if len(self.buf) >= pos + n:
                        payload, self.buf = self.buf[pos:pos + n], self.buf[pos + n:]
                        return b0 & 0x0F, payload
            assert time.monotonic() < deadline, "no frame within %.0fs" % TIMEOUT
            self._recv()

    def recv_packet(self):
        """The next MQTT packet, from the binary frames' byte stream."""
        while True:
            if len(self.stream) >= 2:
                try:
                    n, pos = R.read_varint(self.stream, 1)
                except (IndexError, ValueError):
                    n = None
                if n is not None and len(self.stream) >= pos + n:
                    p = R.Packet(self.stream[0], self.stream[pos:pos + n])
                    self.stream = self.stream[pos + n:]
                    return p
            op, payload = self.recv_frame()
            assert op == 2, "expected a binary frame, got opcode %d" % op
            self.stream += payload

    def closed_by_peer(self):
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                if not self.sock.recv(65536):
                    return True
            except ConnectionResetError:
                return True
        return False

    def close(self):
        self.sock.close()


@pytest.fixture
def ws_broker(broker_factory):
    port = free_port()
    b = broker_factory(conf=ws_conf(port))
    b.ws_port = port
    return b


def raw_connected(b, cid):
    ws = RawWs(b.ws_port)
    b.clients.append(ws)
    assert ws.status == 101, ws.head
    assert "sec-websocket-protocol: mqtt" in ws.head.lower()
    ws.send_frame(2, R.connect(cid))
    p = ws.recv_packet()
    assert p.type == R.CONNACK and p.rc == 0
    return ws


@pytest.mark.parametrize("v5", [False, True], ids=["v311", "v5"])
def test_paho_over_websockets_and_tcp(ws_broker, v5):
    cls = PahoClient5 if v5 else PahoClient
    ws = cls(HOST, ws_broker.ws_port, "ws-client", transport="websockets")
    ws_broker.clients.append(ws)
    ws.connect()
    ws.subscribe("t/#", 2)
    tcp = ws_broker.paho("tcp-client")
    tcp.subscribe("t/#", 2)
    for qos in (0, 1, 2):
        ws.publish("t/ws", b"from ws %d" % qos + b"." * 70000 * qos, qos)
        tcp.publish("t/tcp", b"from tcp %d" % qos, qos)
    for c in (ws, tcp):
        got = sorted((m.topic, m.payload[:12].rstrip(b".")) for m in c.get_n(6))
        assert got == sorted([("t/ws", b"from ws %d" % q) for q in range(3)] +
                             [("t/tcp", b"from tcp %d" % q) for q in range(3)])


def test_wss_and_tls_cross(broker_factory, tls_certs):
    wss_port, tls_port = free_port(), free_port()
    b = broker_factory(conf=tls_conf(tls_certs, wss_port, protocol="websockets") + "\n" +
                       tls_conf(tls_certs, tls_port))
    tls = dict(ca_certs=tls_certs["ca"])
    wss = PahoClient(HOST, wss_port, "wss", transport="websockets", tls=tls)
    over_tls = PahoClient(HOST, tls_port, "tls", tls=tls)
    b.clients += [wss, over_tls]
    plain = b.paho("plain")
    for c in (wss, over_tls):
        c.connect()
    for c in (wss, over_tls, plain):
        c.subscribe("x", 1)
    wss.publish("x", b"wss", 1)
    over_tls.publish("x", b"tls", 1)
    plain.publish("x", b"tcp", 1)
    for c in (wss, over_tls, plain):
        assert sorted(m.payload for m in c.get_n(3)) == [b"tcp", b"tls", b"wss"]


# Mosquitto 2.0.11 (libwebsockets) closes some bad upgrades without an
# answer and takes Sec-WebSocket-Version 8.
@pytest.mark.shootout_only
@pytest.mark.parametrize("request_text,status", [
    ("POST /mqtt HTTP/1.1\r\nHost: x\r\n\r\n", 405),
    ("GET /mqtt HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ("GET /mqtt HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n", 426),
])
def test_bad_upgrade_gets_http_error_and_close(ws_broker, request_text, status):
    ws = RawWs(ws_broker.ws_port, request_text)
    ws_broker.clients.append(ws)
    assert ws.status == status, ws.head
    assert ws.closed_by_peer()


def test_fragmented_frames_and_packets_split_across_frames(ws_broker):
    sub = raw_connected(ws_broker, "frag-sub")
    sub.send_frame(2, R.subscribe(1, [("f/t", 0)]))
    assert sub.recv_packet().type == R.SUBACK
    pub = raw_connected(ws_broker, "frag-pub")
    data = R.publish("f/t", b"p" * 300)
    # One message in three fragments, the packet split across them.
    pub.send_frame(2, data[:5], fin=False)
    pub.send_frame(0, data[5:200], fin=False)
    pub.send_frame(0, data[200:], fin=True)
    # One packet across two messages.
    data = R.publish("f/t", b"second")
    pub.send_frame(2, data[:3])
    pub.send_frame(2, data[3:])
    got = [sub.recv_packet() for _ in range(2)]
    assert [p.payload for p in got] == [b"p" * 300, b"second"]


def test_frame_with_several_packets(ws_broker):
    sub = raw_connected(ws_broker, "multi-sub")
    sub.send_frame(2, R.subscribe(1, [("m/t", 1)]) + R.pingreq())
    assert sub.recv_packet().type == R.SUBACK
    assert sub.recv_packet().type == R.PINGRESP
    pub = raw_connected(ws_broker, "multi-pub")
    pub.send_frame(2, b"".join(R.publish("m/t", b"%d" % i, 1, packet_id=i + 1) for i in range(5)))
    assert sorted(pub.recv_packet().packet_id for _ in range(5)) == [1, 2, 3, 4, 5]
    assert [sub.recv_packet().payload for _ in range(5)] == [b"%d" % i for i in range(5)]


def test_ping_pong_between_fragments(ws_broker):
    ws = raw_connected(ws_broker, "pinger")
    data = R.pingreq()
    ws.send_frame(2, data[:1], fin=False)
    ws.send_frame(9, b"hello")
    assert ws.recv_frame() == (10, b"hello")
    ws.send_frame(10, b"unsolicited")  # a pong answers nothing
    ws.send_frame(0, data[1:], fin=True)
    assert ws.recv_packet().type == R.PINGRESP


def test_close_handshake_and_will(ws_broker):
    watcher = ws_broker.paho("watcher")
    watcher.subscribe("will/t", 0)
    ws = RawWs(ws_broker.ws_port)
    ws_broker.clients.append(ws)
    ws.send_frame(2, R.connect("closer", will_topic="will/t", will_message=b"gone"))
    assert ws.recv_packet().type == R.CONNACK
    ws.send_frame(8, struct.pack("!H", 1000))
    op, payload = ws.recv_frame()
    assert op == 8 and struct.unpack("!H", payload[:2])[0] == 1000
    assert ws.closed_by_peer()
    # Closing the WebSocket without DISCONNECT is not a clean MQTT close.
    assert watcher.get().payload == b"gone"


@pytest.mark.shootout_only  # Mosquitto 2.0.11 ignores text frames
def test_text_frame_is_refused_with_1003(ws_broker):
    ws = raw_connected(ws_broker, "texter")
    ws.send_frame(1, b"hello")
    op, payload = ws.recv_frame()
    assert op == 8
    assert struct.unpack("!H", payload[:2])[0] == 1003
    assert ws.closed_by_peer()


@pytest.mark.shootout_only  # exit code and log on SIGTERM are shootout's
def test_sigterm_closes_every_transport(broker_factory, tls_certs):
    ws_port, tls_port = free_port(), free_port()
    b = broker_factory(conf=ws_conf(ws_port) + "\n" + tls_conf(tls_certs, tls_port))
    ws = PahoClient(HOST, ws_port, "ws", transport="websockets")
    tls = PahoClient(HOST, tls_port, "tls", tls=dict(ca_certs=tls_certs["ca"]))
    b.clients += [ws, tls]
    for c in (ws, tls):
        c.connect()
    tcp = b.paho("tcp")
    assert b.stop() == 0
    for c in (ws, tls, tcp):
        assert c.wait_disconnected()


@pytest.mark.shootout_only  # --connect-timeout is shootout's
def test_unfinished_upgrades_are_cut_at_the_connect_timeout(broker_factory):
    """A client that never sends its upgrade request, or stops in the
    middle of it, is closed once --connect-timeout passes; a WebSocket
    client connected at the same time is served throughout."""
    port = free_port()
    b = broker_factory(conf=ws_conf(port), extra_args=("--connect-timeout", str(CONNECT_TIMEOUT)))
    working = PahoClient5(HOST, port, "ws-working", transport="websockets")
    b.clients.append(working)
    working.connect()
    half = b"GET /mqtt HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
    assert_stalled_clients_are_cut(b, port, [lambda s: None, lambda s: s.sendall(half)], working)
