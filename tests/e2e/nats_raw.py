"""A tiny raw-socket NATS client for the end-to-end tests (no Python NATS
package is installed, and the text protocol is small): INFO, CONNECT, PUB,
SUB, UNSUB, MSG, PING/PONG, +OK/-ERR, HPUB, written from the protocol's
documentation (docs.nats.io, "Client Protocol").

    c = NatsClient(host, port)         # reads INFO, sends CONNECT, PING/PONG
    sid = c.sub("a.>", queue=None)
    c.pub("a.b", b"payload", reply=None)
    c.hpub("a.b", [("Name", "value")], b"payload")   # with headers
    c.flush()                          # PING and wait for PONG
    subject, sid, reply, payload = c.next_msg(timeout=5)
    c.request("$JS.API.INFO", b"")     # payload of the first reply
    c.close()
"""

import itertools
import json
import socket
import time


class NatsError(Exception):
    """The server said -ERR, or closed, or sent what we cannot read."""


class NatsClient:
    def __init__(self, host, port, timeout=5.0, name="e2e", headers=False):
        """headers: tell the server we take headers (HPUB needs it; what
        we receive then may be HMSG, which this client does not read)."""
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.timeout = timeout
        self.buf = b""
        self.msgs = []
        self._sids = itertools.count(1)
        line = self._line()
        if not line.startswith(b"INFO "):
            raise NatsError("expected INFO, got %r" % line[:100])
        self.info = json.loads(line[5:])
        # verbose off: no +OK after every command; pedantic on: the server
        # checks our subjects strictly
        self._send(b"CONNECT " + json.dumps({"verbose": False, "pedantic": True, "name": name,
                                             "lang": "python-raw", "version": "0",
                                             "headers": headers}).encode() + b"\r\n")
        self.flush()

    def _send(self, data):
        self.sock.sendall(data)

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no data from the NATS server in time")
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            raise TimeoutError("no data from the NATS server in time")
        if not chunk:
            raise NatsError("the NATS server closed the connection")
        self.buf += chunk

    def _line(self, deadline=None):
        deadline = deadline or time.monotonic() + self.timeout
        while b"\r\n" not in self.buf:
            self._fill(deadline)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _read_op(self, deadline):
        """Reads one server operation; MSGs are queued. Returns the line."""
        line = self._line(deadline)
        if line.startswith(b"MSG "):
            parts = line.split()
            # MSG <subject> <sid> [reply-to] <#bytes>
            subject, sid = parts[1].decode(), int(parts[2])
            reply = parts[3].decode() if len(parts) == 5 else None
            n = int(parts[-1])
            while len(self.buf) < n + 2:
                self._fill(deadline)
            payload, self.buf = self.buf[:n], self.buf[n + 2:]
            self.msgs.append((subject, sid, reply, payload))
        elif line == b"PING":
            self._send(b"PONG\r\n")
        elif line.startswith(b"-ERR"):
            raise NatsError(line.decode(errors="replace"))
        return line

    def flush(self, timeout=None):
        """PING, then reads until the PONG: everything sent before has been
        processed by the server."""
        self._send(b"PING\r\n")
        deadline = time.monotonic() + (timeout or self.timeout)
        while self._read_op(deadline) != b"PONG":
            pass

    def sub(self, subject, queue=None):
        sid = next(self._sids)
        self._send(("SUB %s %s%d\r\n" % (subject, queue + " " if queue else "", sid)).encode())
        return sid

    def unsub(self, sid):
        self._send(b"UNSUB %d\r\n" % sid)

    def pub(self, subject, payload=b"", reply=None):
        self._send(("PUB %s %s%d\r\n" % (subject, reply + " " if reply else "", len(payload))).encode()
                   + payload + b"\r\n")

    def hpub(self, subject, headers, payload=b""):
        """A message with headers, (name, value) pairs sent as given (str or
        bytes, repeats and malformed values included)."""
        raw = lambda v: v if isinstance(v, bytes) else v.encode()
        h = b"NATS/1.0\r\n" + b"".join(raw(k) + b": " + raw(v) + b"\r\n" for k, v in headers) + b"\r\n"
        self._send(b"HPUB %s %d %d\r\n" % (subject.encode(), len(h), len(h) + len(payload))
                   + h + payload + b"\r\n")

    def next_msg(self, timeout=None):
        """The next MSG as (subject, sid, reply, payload); TimeoutError if
        none comes in time."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while not self.msgs:
            self._read_op(deadline)
        return self.msgs.pop(0)

    def no_msg(self, wait=0.3):
        """True when no MSG arrives within wait seconds."""
        try:
            self.next_msg(timeout=wait)
        except TimeoutError:
            return True
        return False

    def request(self, subject, payload=b"", timeout=None):
        """Publishes with a fresh inbox as reply subject and returns the
        first reply's payload."""
        inbox = "_INBOX.e2e%d" % next(self._sids)
        sid = self.sub(inbox)
        self.pub(subject, payload, reply=inbox)
        try:
            while True:
                subj, got_sid, _, data = self.next_msg(timeout)
                if got_sid == sid:
                    return data
                self.msgs.append((subj, got_sid, None, data))  # not ours: keep it
        finally:
            self.unsub(sid)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
