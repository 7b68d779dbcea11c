"""A tiny raw-socket MQTT 3.1.1 and 5.0 client for end-to-end tests.

Builds packets byte by byte (so tests can send exactly what they want,
including malformed packets) and reads packets with timeouts. Written from
the MQTT 3.1.1 specification (OASIS Standard, 29 October 2014) and, for the
*5 builders and RawClient(v5=True) decoding, the MQTT 5.0 specification
(OASIS Standard, 7 March 2019).
"""

import socket
import struct
import time

CONNECT = 1
CONNACK = 2
PUBLISH = 3
PUBACK = 4
PUBREC = 5
PUBREL = 6
PUBCOMP = 7
SUBSCRIBE = 8
SUBACK = 9
UNSUBSCRIBE = 10
UNSUBACK = 11
PINGREQ = 12
PINGRESP = 13
DISCONNECT = 14
AUTH = 15

TYPE_NAMES = {
    AUTH: "AUTH",
    CONNECT: "CONNECT", CONNACK: "CONNACK", PUBLISH: "PUBLISH",
    PUBACK: "PUBACK", PUBREC: "PUBREC", PUBREL: "PUBREL",
    PUBCOMP: "PUBCOMP", SUBSCRIBE: "SUBSCRIBE", SUBACK: "SUBACK",
    UNSUBSCRIBE: "UNSUBSCRIBE", UNSUBACK: "UNSUBACK", PINGREQ: "PINGREQ",
    PINGRESP: "PINGRESP", DISCONNECT: "DISCONNECT",
}

DEFAULT_TIMEOUT = 5.0


# ---------------------------------------------------------------- encoding

def _b(s):
    if isinstance(s, str):
        return s.encode("utf-8")
    return bytes(s)


def varint(n):
    """Remaining Length encoding (MQTT 3.1.1, 2.2.3)."""
    if n < 0 or n > 268435455:
        raise ValueError("remaining length out of range: %d" % n)
    out = bytearray()
    while True:
        digit = n % 128
        n //= 128
        if n > 0:
            digit |= 0x80
        out.append(digit)
        if n == 0:
            return bytes(out)


def read_varint(buf, pos):
    """Decodes the Variable Byte Integer at buf[pos:]; returns (value, end).
    Raises ValueError for more than four bytes, IndexError if cut short."""
    value, mult = 0, 1
    for i in range(4):
        byte = buf[pos + i]
        value += (byte & 0x7F) * mult
        mult *= 128
        if not byte & 0x80:
            return value, pos + i + 1
    raise ValueError("variable byte integer longer than four bytes")


def mqtt_str(s):
    """A UTF-8 encoded string / binary field with a 2-byte length prefix.
    Accepts str or raw bytes (bytes are sent unchecked, for invalid UTF-8)."""
    data = _b(s)
    return struct.pack("!H", len(data)) + data


def packet(ptype, flags, body=b""):
    return bytes([(ptype << 4) | (flags & 0x0F)]) + varint(len(body)) + bytes(body)


def connect(client_id="", clean_session=True, keepalive=60,
            will_topic=None, will_message=b"", will_qos=0, will_retain=False,
            username=None, password=None,
            protocol_name="MQTT", protocol_level=4, reserved_flag=False,
            flags_override=None):
    flags = 0
    if clean_session:
        flags |= 0x02
    if will_topic is not None:
        flags |= 0x04 | ((will_qos & 3) << 3)
        if will_retain:
            flags |= 0x20
    if password is not None:
        flags |= 0x40
    if username is not None:
        flags |= 0x80
    if reserved_flag:
        flags |= 0x01
    if flags_override is not None:
        flags = flags_override
    body = mqtt_str(protocol_name) + bytes([protocol_level, flags]) + struct.pack("!H", keepalive)
    body += mqtt_str(client_id)
    if will_topic is not None:
        body += mqtt_str(will_topic) + mqtt_str(will_message)
    if username is not None:
        body += mqtt_str(username)
    if password is not None:
        body += mqtt_str(password)
    return packet(CONNECT, 0, body)


def publish(topic, payload=b"", qos=0, retain=False, dup=False, packet_id=None):
    flags = ((qos & 3) << 1) | (0x08 if dup else 0) | (0x01 if retain else 0)
    body = mqtt_str(topic)
    if qos > 0:
        if packet_id is None:
            raise ValueError("QoS > 0 PUBLISH needs a packet id")
        body += struct.pack("!H", packet_id)
    elif packet_id is not None:
        body += struct.pack("!H", packet_id)
    body += _b(payload)
    return packet(PUBLISH, flags, body)


def _ack(ptype, packet_id, flags=0):
    return packet(ptype, flags, struct.pack("!H", packet_id))


def puback(packet_id):
    return _ack(PUBACK, packet_id)


def pubrec(packet_id):
    return _ack(PUBREC, packet_id)


def pubrel(packet_id, flags=0x02):
    return _ack(PUBREL, packet_id, flags)


def pubcomp(packet_id):
    return _ack(PUBCOMP, packet_id)


def subscribe(packet_id, topics, flags=0x02):
    """topics: list of (filter, requested_qos)."""
    body = struct.pack("!H", packet_id)
    body += b"".join(mqtt_str(topic) + bytes([qos]) for topic, qos in topics)
    return packet(SUBSCRIBE, flags, body)


def unsubscribe(packet_id, topics, flags=0x02):
    body = struct.pack("!H", packet_id)
    body += b"".join(mqtt_str(topic) for topic in topics)
    return packet(UNSUBSCRIBE, flags, body)


def pingreq():
    return packet(PINGREQ, 0)


def disconnect():
    return packet(DISCONNECT, 0)


# ---------------------------------------------------------------- MQTT 5

# Property identifiers (MQTT 5.0, 2.2.2.2) and their value types.
PAYLOAD_FORMAT = 0x01
MESSAGE_EXPIRY = 0x02
CONTENT_TYPE = 0x03
RESPONSE_TOPIC = 0x08
CORRELATION_DATA = 0x09
SUBSCRIPTION_ID = 0x0B
SESSION_EXPIRY = 0x11
ASSIGNED_CLIENT_ID = 0x12
SERVER_KEEP_ALIVE = 0x13
AUTH_METHOD = 0x15
AUTH_DATA = 0x16
REQUEST_PROBLEM_INFO = 0x17
WILL_DELAY = 0x18
REQUEST_RESPONSE_INFO = 0x19
RESPONSE_INFO = 0x1A
SERVER_REFERENCE = 0x1C
REASON_STRING = 0x1F
RECEIVE_MAX = 0x21
TOPIC_ALIAS_MAX = 0x22
TOPIC_ALIAS = 0x23
MAX_QOS = 0x24
RETAIN_AVAILABLE = 0x25
USER_PROPERTY = 0x26
MAX_PACKET_SIZE = 0x27
WILDCARD_SUB_AVAILABLE = 0x28
SUBSCRIPTION_ID_AVAILABLE = 0x29
SHARED_SUB_AVAILABLE = 0x2A

_BYTE, _U16, _U32, _VARINT, _STR, _BIN, _PAIR = range(7)
PROP_TYPES = {
    PAYLOAD_FORMAT: _BYTE, MESSAGE_EXPIRY: _U32, CONTENT_TYPE: _STR, RESPONSE_TOPIC: _STR,
    CORRELATION_DATA: _BIN, SUBSCRIPTION_ID: _VARINT, SESSION_EXPIRY: _U32,
    ASSIGNED_CLIENT_ID: _STR, SERVER_KEEP_ALIVE: _U16, AUTH_METHOD: _STR, AUTH_DATA: _BIN,
    REQUEST_PROBLEM_INFO: _BYTE, WILL_DELAY: _U32, REQUEST_RESPONSE_INFO: _BYTE,
    RESPONSE_INFO: _STR, SERVER_REFERENCE: _STR, REASON_STRING: _STR, RECEIVE_MAX: _U16,
    TOPIC_ALIAS_MAX: _U16, TOPIC_ALIAS: _U16, MAX_QOS: _BYTE, RETAIN_AVAILABLE: _BYTE,
    USER_PROPERTY: _PAIR, MAX_PACKET_SIZE: _U32, WILDCARD_SUB_AVAILABLE: _BYTE,
    SUBSCRIPTION_ID_AVAILABLE: _BYTE, SHARED_SUB_AVAILABLE: _BYTE,
}
# Properties a packet may carry more than once: decoded into lists.
REPEATABLE = (USER_PROPERTY, SUBSCRIPTION_ID)


def props(items=()):
    """A property block (length included) from (identifier, value) pairs, in
    the order given, duplicates and misplaced ones included: tests decide.
    Values: int, str/bytes, or a (name, value) pair for user properties."""
    out = bytearray()
    for pid, value in items:
        kind = PROP_TYPES.get(pid, _BYTE)
        out.append(pid)
        if kind == _BYTE:
            out.append(value)
        elif kind == _U16:
            out += struct.pack("!H", value)
        elif kind == _U32:
            out += struct.pack("!I", value)
        elif kind == _VARINT:
            out += varint(value)
        elif kind == _PAIR:
            out += mqtt_str(value[0]) + mqtt_str(value[1])
        else:
            out += mqtt_str(value)
    return varint(len(out)) + bytes(out)


def decode_props(body, pos):
    """Decodes the property block at body[pos:]; returns (dict, end). The
    repeatable properties are lists, user properties (name, value) pairs of
    str."""
    length, pos = read_varint(body, pos)
    end = pos + length
    out = {}
    while pos < end:
        pid = body[pos]
        pos += 1
        kind = PROP_TYPES[pid]
        if kind == _BYTE:
            value = body[pos]
            pos += 1
        elif kind == _U16:
            value = struct.unpack("!H", body[pos:pos + 2])[0]
            pos += 2
        elif kind == _U32:
            value = struct.unpack("!I", body[pos:pos + 4])[0]
            pos += 4
        elif kind == _VARINT:
            value, pos = read_varint(body, pos)
        else:
            n = struct.unpack("!H", body[pos:pos + 2])[0]
            value = bytes(body[pos + 2:pos + 2 + n])
            pos += 2 + n
            if kind == _PAIR:
                n2 = struct.unpack("!H", body[pos:pos + 2])[0]
                value = (value.decode("utf-8"), bytes(body[pos + 2:pos + 2 + n2]).decode("utf-8"))
                pos += 2 + n2
            elif kind == _STR:
                value = value.decode("utf-8")
        if pid in REPEATABLE:
            out.setdefault(pid, []).append(value)
        else:
            out[pid] = value
    return out, end


def connect5(client_id="", clean_start=True, keepalive=60, properties=(), will_topic=None,
             will_message=b"", will_qos=0, will_retain=False, will_properties=(),
             username=None, password=None, raw_props=None):
    """An MQTT 5 CONNECT. raw_props, if given, replaces the property block
    (bytes, length included) to send malformed ones."""
    flags = 0x02 if clean_start else 0
    if will_topic is not None:
        flags |= 0x04 | ((will_qos & 3) << 3) | (0x20 if will_retain else 0)
    if password is not None:
        flags |= 0x40
    if username is not None:
        flags |= 0x80
    body = mqtt_str("MQTT") + bytes([5, flags]) + struct.pack("!H", keepalive)
    body += raw_props if raw_props is not None else props(properties)
    body += mqtt_str(client_id)
    if will_topic is not None:
        body += props(will_properties) + mqtt_str(will_topic) + mqtt_str(will_message)
    if username is not None:
        body += mqtt_str(username)
    if password is not None:
        body += mqtt_str(password)
    return packet(CONNECT, 0, body)


def publish5(topic, payload=b"", qos=0, retain=False, dup=False, packet_id=None, properties=(),
             raw_props=None):
    flags = ((qos & 3) << 1) | (0x08 if dup else 0) | (0x01 if retain else 0)
    body = mqtt_str(topic)
    if qos > 0:
        body += struct.pack("!H", packet_id)
    body += raw_props if raw_props is not None else props(properties)
    return packet(PUBLISH, flags, body + _b(payload))


def ack5(ptype, packet_id, reason=0, properties=()):
    """PUBACK, PUBREC, PUBREL or PUBCOMP with a reason code and properties
    (the short form when both are empty)."""
    body = struct.pack("!H", packet_id)
    if reason or properties:
        body += bytes([reason]) + props(properties)
    return packet(ptype, 0x02 if ptype == PUBREL else 0, body)


def subscribe5(packet_id, topics, properties=()):
    """topics: list of (filter, options byte): QoS | 0x04 No Local | 0x08
    Retain As Published | Retain Handling << 4."""
    body = struct.pack("!H", packet_id) + props(properties)
    body += b"".join(mqtt_str(topic) + bytes([options]) for topic, options in topics)
    return packet(SUBSCRIBE, 0x02, body)


def unsubscribe5(packet_id, topics, properties=()):
    body = struct.pack("!H", packet_id) + props(properties)
    body += b"".join(mqtt_str(topic) for topic in topics)
    return packet(UNSUBSCRIBE, 0x02, body)


def disconnect5(reason=0, properties=()):
    if not reason and not properties:
        return packet(DISCONNECT, 0)
    return packet(DISCONNECT, 0, bytes([reason]) + props(properties))


def auth5(reason=0, properties=()):
    return packet(AUTH, 0, bytes([reason]) + props(properties))


# ---------------------------------------------------------------- decoding

class Packet:
    """One decoded control packet. Common fields: type, flags, body.
    CONNACK: session_present, rc. PUBLISH: topic, payload, qos, dup, retain,
    packet_id. Acks: packet_id. SUBACK: packet_id, granted (list of ints)."""

    def __init__(self, first_byte, body, v5=False):
        self.type = first_byte >> 4
        self.flags = first_byte & 0x0F
        self.body = body
        self.packet_id = None
        self.props = {}
        if v5:
            self._decode_v5(body)
        elif self.type == CONNACK:
            if len(body) != 2:
                raise ValueError("bad CONNACK length %d" % len(body))
            self.session_present = bool(body[0] & 0x01)
            self.ack_flags = body[0]
            self.rc = body[1]
        elif self.type == PUBLISH:
            self.payload = bytes(body[self._publish_head(body):])
        elif self.type in (PUBACK, PUBREC, PUBREL, PUBCOMP, UNSUBACK):
            if len(body) != 2:
                raise ValueError("bad %s length %d" % (self.name, len(body)))
            self.packet_id = struct.unpack("!H", body)[0]
        elif self.type == SUBACK:
            self.packet_id = struct.unpack("!H", body[:2])[0]
            self.granted = list(body[2:])

    def _publish_head(self, body):
        """PUBLISH flags, topic and packet id, the same in both versions;
        returns where the rest starts."""
        self.dup = bool(self.flags & 0x08)
        self.qos = (self.flags >> 1) & 0x03
        self.retain = bool(self.flags & 0x01)
        tlen = struct.unpack("!H", body[:2])[0]
        self.topic = body[2:2 + tlen].decode("utf-8")
        pos = 2 + tlen
        if self.qos > 0:
            self.packet_id = struct.unpack("!H", body[pos:pos + 2])[0]
            pos += 2
        return pos

    def _decode_v5(self, body):
        """MQTT 5 forms: CONNACK session_present, rc (reason) and props;
        PUBLISH also props; acks packet_id, reason, props; SUBACK and
        UNSUBACK packet_id, props, granted (reason codes); DISCONNECT and
        AUTH reason, props."""
        t = self.type
        if t == CONNACK:
            self.session_present = bool(body[0] & 0x01)
            self.ack_flags = body[0]
            self.rc = self.reason = body[1]
            self.props, _ = decode_props(body, 2)
        elif t == PUBLISH:
            self.props, pos = decode_props(body, self._publish_head(body))
            self.payload = bytes(body[pos:])
        elif t in (PUBACK, PUBREC, PUBREL, PUBCOMP):
            self.packet_id = struct.unpack("!H", body[:2])[0]
            self.reason = body[2] if len(body) > 2 else 0
            if len(body) > 3:
                self.props, _ = decode_props(body, 3)
        elif t in (SUBACK, UNSUBACK):
            self.packet_id = struct.unpack("!H", body[:2])[0]
            self.props, pos = decode_props(body, 2)
            self.granted = list(body[pos:])
        elif t in (DISCONNECT, AUTH):
            self.reason = body[0] if body else 0
            if len(body) > 1:
                self.props, _ = decode_props(body, 1)

    @property
    def name(self):
        return TYPE_NAMES.get(self.type, "TYPE%d" % self.type)

    def __repr__(self):
        if self.type == PUBLISH:
            return "<PUBLISH topic=%r qos=%d dup=%d retain=%d id=%r payload=%r>" % (
                self.topic, self.qos, self.dup, self.retain, self.packet_id, self.payload[:64])
        if self.type == CONNACK:
            return "<CONNACK sp=%d rc=%d>" % (self.session_present, self.rc)
        if self.type == SUBACK:
            return "<SUBACK id=%d granted=%r>" % (self.packet_id, self.granted)
        if self.packet_id is not None:
            return "<%s id=%d>" % (self.name, self.packet_id)
        return "<%s flags=%d len=%d>" % (self.name, self.flags, len(self.body))


class Closed(Exception):
    """The peer closed the connection (EOF or reset)."""


class RawClient:
    """A blocking socket with a receive buffer and packet-level reads."""

    def __init__(self, host, port, timeout=DEFAULT_TIMEOUT, v5=False):
        self.host = host
        self.port = port
        self.v5 = v5  # decode what arrives as MQTT 5 packets
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.eof = False

    # -- low level
    def send(self, data):
        self.sock.sendall(bytes(data))

    def _fill(self, deadline):
        """Reads more bytes into buf. Raises Closed on EOF/reset, TimeoutError
        when the deadline passes with nothing read."""
        if self.eof:
            raise Closed()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no data from broker before the deadline")
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            raise TimeoutError("no data from broker before the deadline")
        except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError):
            self.eof = True
            raise Closed()
        if not data:
            self.eof = True
            raise Closed()
        self.buf += data

    def _try_parse(self):
        """Returns (first_byte, body, total_len) if a whole packet is buffered."""
        if len(self.buf) < 2:
            return None
        try:
            value, pos = read_varint(self.buf, 1)
        except IndexError:
            return None
        except ValueError:
            raise ValueError("broker sent a bad remaining length")
        if len(self.buf) < pos + value:
            return None
        return self.buf[0], bytes(self.buf[pos:pos + value]), pos + value

    def recv_packet(self, timeout=DEFAULT_TIMEOUT):
        """Returns the next Packet. Raises TimeoutError if none arrives within
        timeout seconds, Closed if the connection is closed first."""
        deadline = time.monotonic() + timeout
        while True:
            parsed = self._try_parse()
            if parsed is not None:
                first, body, total = parsed
                del self.buf[:total]
                return Packet(first, body, self.v5)
            self._fill(deadline)

    def expect(self, ptype, timeout=DEFAULT_TIMEOUT):
        """Reads the next packet and asserts its type."""
        try:
            p = self.recv_packet(timeout)
        except Closed:
            raise AssertionError("connection closed while waiting for %s" % TYPE_NAMES[ptype])
        except TimeoutError:
            raise AssertionError("no %s within %.1fs" % (TYPE_NAMES[ptype], timeout))
        assert p.type == ptype, "expected %s, got %r" % (TYPE_NAMES[ptype], p)
        return p

    def expect_nothing(self, timeout):
        """Asserts no packet arrives (and the connection stays open) for
        timeout seconds."""
        try:
            p = self.recv_packet(timeout)
        except TimeoutError:
            return
        except Closed:
            raise AssertionError("connection closed; expected it to stay open and quiet")
        raise AssertionError("expected no packet, got %r" % p)

    def wait_closed(self, timeout=DEFAULT_TIMEOUT):
        """Reads (and returns) whatever packets arrive until the broker closes
        the connection. Asserts the close happens within timeout seconds."""
        got = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                got.append(self.recv_packet(max(0.0, deadline - time.monotonic())))
            except Closed:
                return got
            except TimeoutError:
                raise AssertionError(
                    "broker did not close the connection within %.1fs (received %r)" % (timeout, got))
            except ValueError:
                # undecodable bytes; drop them and keep waiting for the close
                self.buf.clear()

    def is_closed_now(self, timeout=0.5):
        """True if the connection is closed (EOF/reset) within timeout,
        ignoring any packets that arrive before."""
        try:
            self.wait_closed(timeout)
            return True
        except AssertionError:
            return False

    # -- convenience
    def connect(self, client_id="", clean_session=True, keepalive=60, timeout=DEFAULT_TIMEOUT, **kw):
        """Sends CONNECT and returns the CONNACK packet."""
        self.send(connect(client_id, clean_session, keepalive, **kw))
        return self.expect(CONNACK, timeout)

    def connect_ok(self, client_id="", clean_session=True, keepalive=60, **kw):
        ack = self.connect(client_id, clean_session, keepalive, **kw)
        assert ack.rc == 0, "CONNACK return code %d" % ack.rc
        return ack

    def connect5(self, client_id="", timeout=DEFAULT_TIMEOUT, **kw):
        """Switches to MQTT 5, sends a v5 CONNECT (see connect5()) and
        returns the CONNACK."""
        self.v5 = True
        self.send(connect5(client_id, **kw))
        return self.expect(CONNACK, timeout)

    def connect5_ok(self, client_id="", **kw):
        ack = self.connect5(client_id, **kw)
        assert ack.rc == 0, "CONNACK reason 0x%02x" % ack.rc
        return ack

    def expect_disconnect(self, reason, timeout=DEFAULT_TIMEOUT, strict=True):
        """Asserts that the next packet other than a PUBLISH is an MQTT 5
        DISCONNECT with the reason code, and that the broker then closes the
        connection; returns the DISCONNECT. With strict=False only the close
        is asserted: a server MAY send a DISCONNECT first (4.13.1), and
        Mosquitto 2.0.11, the peer these tests also run against, says 0x81
        for several protocol errors or nothing at all."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                p = self.recv_packet(max(0.0, deadline - time.monotonic()))
            except Closed:
                assert not strict, "connection closed without DISCONNECT 0x%02x" % reason
                return None
            except TimeoutError:
                raise AssertionError("no DISCONNECT 0x%02x within %.1fs" % (reason, timeout))
            if p.type != PUBLISH:
                break
        assert p.type == DISCONNECT, "expected DISCONNECT, got %r" % p
        assert p.reason == reason or not strict, "DISCONNECT reason 0x%02x, expected 0x%02x (%r)" % (
            p.reason, reason, p.props)
        assert self.wait_closed(timeout) == []
        return p

    def subscribed5(self, client_id, filters, properties=()):
        """MQTT 5: connects (CONNECT properties as given) and subscribes to
        filters ((filter, options) pairs). Returns self."""
        self.connect5_ok(client_id, properties=properties)
        self.subscribe(1, filters)
        return self

    def park_session5(self, client_id, filters, session_expiry=None):
        """MQTT 5: connects without Clean Start (with the Session Expiry
        Interval if given), subscribes to filters ((filter, options) pairs),
        then DISCONNECTs and waits for the close, leaving the session to the
        broker."""
        props = [] if session_expiry is None else [(SESSION_EXPIRY, session_expiry)]
        self.connect5_ok(client_id, clean_start=False, properties=props)
        self.subscribe(1, filters)
        self.send(disconnect5())
        assert self.wait_closed() == []

    def subscribe(self, packet_id, topics, timeout=DEFAULT_TIMEOUT, properties=()):
        """Subscribes and returns the SUBACK; PUBLISHes that arrive before the
        SUBACK (e.g. retained) are kept in self.pending. In MQTT 5 the
        second item of each topic is the whole options byte."""
        if self.v5:
            self.send(subscribe5(packet_id, topics, properties))
        else:
            self.send(subscribe(packet_id, topics))
        return self.expect_skipping(SUBACK, timeout)

    def expect_skipping(self, ptype, timeout=DEFAULT_TIMEOUT):
        """Like expect(), but PUBLISH packets that arrive first are stored in
        self.pending instead of failing the test."""
        deadline = time.monotonic() + timeout
        if not hasattr(self, "pending"):
            self.pending = []
        while True:
            p = self.expect_any(max(0.0, deadline - time.monotonic()), "waiting for %s" % TYPE_NAMES[ptype])
            if p.type == ptype:
                return p
            if p.type == PUBLISH:
                self.pending.append(p)
                continue
            raise AssertionError("expected %s, got %r" % (TYPE_NAMES[ptype], p))

    def expect_any(self, timeout=DEFAULT_TIMEOUT, what="waiting for a packet"):
        try:
            return self.recv_packet(timeout)
        except Closed:
            raise AssertionError("connection closed while %s" % what)
        except TimeoutError:
            raise AssertionError("timed out after %.1fs %s" % (timeout, what))

    def next_publish(self, timeout=DEFAULT_TIMEOUT):
        """Returns a stored pending PUBLISH first, then reads the next packet,
        which must be a PUBLISH."""
        if getattr(self, "pending", None):
            return self.pending.pop(0)
        return self.expect(PUBLISH, timeout)

    def collect_until(self, is_last, timeout=DEFAULT_TIMEOUT, max_packets=10000):
        """Receives PUBLISHes (acknowledging QoS 1 and playing the QoS 2
        receiver: PUBREC, then PUBCOMP for each PUBREL) until one satisfies
        is_last(p). Returns (publishes_before, last). Before returning, waits
        for the PUBRELs of QoS 2 messages it has PUBREC'd, so no exchange is
        left half done."""
        deadline = time.monotonic() + timeout
        awaiting_rel = set()
        before = []
        last = None
        for _ in range(max_packets):
            if last is not None and not awaiting_rel:
                return before, last
            if getattr(self, "pending", None):
                p = self.pending.pop(0)
            else:
                p = self.expect_any(max(0.0, deadline - time.monotonic()),
                                    "collecting PUBLISHes (so far %r)" % before)
            if p.type == PUBLISH:
                if p.qos == 1:
                    self.send(puback(p.packet_id))
                elif p.qos == 2:
                    assert p.packet_id not in awaiting_rel, "PUBLISH re-sent after PUBREC: %r" % p
                    awaiting_rel.add(p.packet_id)
                    self.send(pubrec(p.packet_id))
                if last is None and is_last(p):
                    last = p
                elif last is None:
                    before.append(p)
                else:
                    raise AssertionError("PUBLISH after the last expected one: %r" % p)
            elif p.type == PUBREL:
                assert p.flags == 0x02, "PUBREL flags must be 0010 [MQTT-3.6.1-1]"
                assert p.packet_id in awaiting_rel, "PUBREL for unknown packet id %d" % p.packet_id
                awaiting_rel.discard(p.packet_id)
                self.send(pubcomp(p.packet_id))
            else:
                raise AssertionError("unexpected %r while collecting PUBLISHes" % p)
        raise AssertionError("too many packets while collecting PUBLISHes")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def abort(self):
        """Closes the socket with a TCP RST (SO_LINGER 0)."""
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
