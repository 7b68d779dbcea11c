"""A frame-level HTTP/2 client for the gRPC tests: it sends exactly the
frames a test asks for (a request body held back, a message cut anywhere,
garbage instead of the preface) and returns what the server sends, frame by
frame, with header blocks decoded.

Header blocks are encoded as HPACK literals without indexing and without
Huffman coding, which every decoder must accept. Decoding uses libnghttp2's
HPACK inflater through ctypes (the library is installed for the server), so
whatever the server's encoder chose (Huffman, dynamic table) is read back
exactly.
"""

import ctypes
import socket
import struct
import time

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
FLAG_END_STREAM = 0x1
FLAG_ACK = 0x1
FLAG_END_HEADERS = 0x4
FLAG_PADDED = 0x8
FLAG_PRIORITY = 0x20

NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR = 0, 1, 2
REFUSED_STREAM, CANCEL = 7, 8

SETTINGS_MAX_CONCURRENT_STREAMS = 3
SETTINGS_INITIAL_WINDOW_SIZE = 4
SETTINGS_MAX_HEADER_LIST_SIZE = 6

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
MAX_FRAME = 16384


class _NV(ctypes.Structure):
    _fields_ = [("name", ctypes.POINTER(ctypes.c_uint8)), ("value", ctypes.POINTER(ctypes.c_uint8)),
                ("namelen", ctypes.c_size_t), ("valuelen", ctypes.c_size_t), ("flags", ctypes.c_uint8)]


_lib = ctypes.CDLL("libnghttp2.so.14")
_lib.nghttp2_hd_inflate_new.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
_lib.nghttp2_hd_inflate_hd2.restype = ctypes.c_ssize_t
_lib.nghttp2_hd_inflate_hd2.argtypes = [ctypes.c_void_p, ctypes.POINTER(_NV), ctypes.POINTER(ctypes.c_int),
                                        ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_lib.nghttp2_hd_inflate_end_headers.argtypes = [ctypes.c_void_p]
_lib.nghttp2_hd_inflate_del.argtypes = [ctypes.c_void_p]
_INFLATE_FINAL, _INFLATE_EMIT = 0x01, 0x02


class HpackDecoder:
    def __init__(self):
        self._inf = ctypes.c_void_p()
        if _lib.nghttp2_hd_inflate_new(ctypes.byref(self._inf)) != 0:
            raise MemoryError("nghttp2_hd_inflate_new")

    def decode(self, block):
        buf = ctypes.create_string_buffer(bytes(block), len(block))
        base = ctypes.addressof(buf)
        pos, out = 0, []
        while True:
            nv, flags = _NV(), ctypes.c_int(0)
            rv = _lib.nghttp2_hd_inflate_hd2(self._inf, ctypes.byref(nv), ctypes.byref(flags), base + pos,
                                             len(block) - pos, 1)
            if rv < 0:
                raise ValueError("HPACK decoding failed (%d)" % rv)
            pos += rv
            if flags.value & _INFLATE_EMIT:
                out.append((ctypes.string_at(nv.name, nv.namelen).decode("latin-1"),
                            ctypes.string_at(nv.value, nv.valuelen).decode("latin-1")))
            if flags.value & _INFLATE_FINAL:
                _lib.nghttp2_hd_inflate_end_headers(self._inf)
                return out

    def __del__(self):
        if self._inf:
            _lib.nghttp2_hd_inflate_del(self._inf)


def _hpack_int(value, prefix_bits):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([value])
    out, value = [limit], value - limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def encode_headers(headers):
    """Literal header fields without indexing, new names, no Huffman."""
    out = b""
    for name, value in headers:
        n, v = name.encode("latin-1"), value.encode("latin-1")
        out += b"\x00" + _hpack_int(len(n), 7) + n + _hpack_int(len(v), 7) + v
    return out


class Frame:
    def __init__(self, ftype, flags, sid, payload, headers=None):
        self.type, self.flags, self.sid, self.payload, self.headers = ftype, flags, sid, payload, headers

    def __repr__(self):
        return "Frame(type=%d flags=%#x sid=%d len=%d%s)" % (
            self.type, self.flags, self.sid, len(self.payload), " headers=%r" % self.headers if self.headers else "")

    @property
    def end_stream(self):
        return self.type in (DATA, HEADERS) and bool(self.flags & FLAG_END_STREAM)

    def error_code(self):
        """RST_STREAM's code, or GOAWAY's."""
        if self.type == RST_STREAM:
            return struct.unpack(">I", self.payload[:4])[0]
        if self.type == GOAWAY:
            return struct.unpack(">I", self.payload[4:8])[0]
        raise ValueError("no error code in %r" % self)

    def last_stream_id(self):
        return struct.unpack(">I", self.payload[:4])[0] & 0x7FFFFFFF

    def settings(self):
        return dict(struct.unpack(">HI", self.payload[i:i + 6]) for i in range(0, len(self.payload), 6))


class Closed(Exception):
    """The server closed the connection."""


class H2Conn:
    """One connection. With preface=True the client preface and an empty
    SETTINGS go out at once. Frames the server sends are read with
    next_frame(); its SETTINGS are acknowledged on the way."""

    def __init__(self, port, host="127.0.0.1", preface=True, timeout=5.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""
        self.decoder = HpackDecoder()
        self.server_settings = {}
        self.log = []
        if preface:
            self.sock.sendall(PREFACE + self.frame_bytes(SETTINGS, 0, 0, b""))

    def close(self):
        self.sock.close()

    @staticmethod
    def frame_bytes(ftype, flags, sid, payload):
        return struct.pack(">I", len(payload))[1:] + struct.pack(">BBI", ftype, flags, sid) + payload

    def send_frame(self, ftype, flags, sid, payload=b""):
        self.sock.sendall(self.frame_bytes(ftype, flags, sid, payload))

    def send_headers(self, sid, headers, end_stream=False):
        """HEADERS, with CONTINUATION frames if the block is long."""
        block = encode_headers(headers)
        first, rest = block[:MAX_FRAME], block[MAX_FRAME:]
        flags = (FLAG_END_STREAM if end_stream else 0) | (0 if rest else FLAG_END_HEADERS)
        out = self.frame_bytes(HEADERS, flags, sid, first)
        while rest:
            piece, rest = rest[:MAX_FRAME], rest[MAX_FRAME:]
            out += self.frame_bytes(CONTINUATION, 0 if rest else FLAG_END_HEADERS, sid, piece)
        self.sock.sendall(out)

    def send_data(self, sid, payload, end_stream=False):
        self.send_frame(DATA, FLAG_END_STREAM if end_stream else 0, sid, payload)

    def send_rst(self, sid, code):
        self.send_frame(RST_STREAM, 0, sid, struct.pack(">I", code))

    def send_ping(self, opaque=b"12345678"):
        self.send_frame(PING, 0, 0, opaque)

    def _read_exact(self, n, deadline):
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no frame from the server in time")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise Closed()
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _raw_frame(self, deadline):
        head = self._read_exact(9, deadline)
        length = int.from_bytes(head[:3], "big")
        ftype, flags, sid = head[3], head[4], struct.unpack(">I", head[5:9])[0] & 0x7FFFFFFF
        return ftype, flags, sid, self._read_exact(length, deadline)

    def next_frame(self, timeout=5.0):
        """The next frame, header blocks decoded (CONTINUATION folded in).
        Raises Closed at the end of the connection."""
        deadline = time.monotonic() + timeout
        ftype, flags, sid, payload = self._raw_frame(deadline)
        if ftype == HEADERS:
            block = payload
            if flags & FLAG_PADDED:
                block = block[1:len(block) - block[0]]
            if flags & FLAG_PRIORITY:
                block = block[5:]
            while not flags & FLAG_END_HEADERS:
                _, cflags, _, more = self._raw_frame(deadline)
                block += more
                flags |= cflags & FLAG_END_HEADERS
            frame = Frame(ftype, flags, sid, payload, self.decoder.decode(block))
        else:
            frame = Frame(ftype, flags, sid, payload)
        if ftype == SETTINGS and not flags & FLAG_ACK:
            self.server_settings.update(frame.settings())
            self.send_frame(SETTINGS, FLAG_ACK, 0)
        self.log.append(frame)
        return frame

    def frames_until(self, pred, timeout=5.0):
        """Frames up to and including the first for which pred is true."""
        deadline = time.monotonic() + timeout
        out = []
        while True:
            f = self.next_frame(max(0.0, deadline - time.monotonic()))
            out.append(f)
            if pred(f):
                return out

    def stream_frames(self, sid, timeout=5.0, until_rst=False):
        """The frames of stream sid up to its end: END_STREAM or RST_STREAM,
        or with until_rst the RST_STREAM that follows an early answer."""
        if until_rst:
            done = lambda f: f.sid == sid and f.type == RST_STREAM
        else:
            done = lambda f: f.sid == sid and (f.end_stream or f.type == RST_STREAM)
        return [f for f in self.frames_until(done, timeout) if f.sid == sid]

    def wait_closed(self, timeout=5.0):
        """Frames until the server closes the connection."""
        deadline = time.monotonic() + timeout
        out = []
        while True:
            try:
                out.append(self.next_frame(max(0.0, deadline - time.monotonic())))
            except Closed:
                return out
