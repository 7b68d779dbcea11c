"""Hostile HTTP/1.1 requests and the exact answer each must get, for every
server that parses requests with src/http/http1.c, all through the one
HTTP/1.1 engine (src/http/http_proto.c): car-server's REST side,
a2b-server and the broker's metrics responder
(docs/http1.md, "What it refuses, and why").

Each case is answered with one error response saying `Connection: close`,
and then the connection closes. The request smuggling cases of RFC 9112
section 6.3 (Transfer-Encoding with Content-Length, conflicting lengths,
codings other than a final chunked, obs-fold) are among them: a server
that took any of them for a request with a body would answer it, and then
the request sent after it on the same connection, which must never be
answered."""

import re
import socket

from conftest import HOST

# Sent after every hostile request, on the same connection.
SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

BODY = b'{"description":"x"}'


def cases(post, get):
    """(name, request bytes, status, message, in_body) for a server whose
    `post` target takes a JSON body and whose `get` target answers GET;
    message is http1_strerror()'s text, which servers that explain an error
    give; in_body is true where the head is fine and the body is not."""
    n = b"%d" % len(BODY)
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY)

    def P(fields, body, version=b"1.1"):
        host = b"Host: x\r\n" if version == b"1.1" else b""
        return (b"POST " + post + b" HTTP/" + version + b"\r\n" + host +
                b"Content-Type: application/json\r\n" + fields + b"\r\n" + body)

    def G(fields=b"", line=None):
        return (line or b"GET " + get + b" HTTP/1.1") + b"\r\nHost: x\r\n" + fields + b"\r\n"

    def TE(value, body=chunked, **kw):
        return P(b"Transfer-Encoding: " + value + b"\r\n", body, **kw)

    def CL(value, body=BODY):
        return P(b"Content-Length: " + value + b"\r\n", body)

    both = "both Transfer-Encoding and Content-Length"
    bad_cl, bad_te = "invalid Content-Length", "invalid Transfer-Encoding"
    bad_name, bad_value = "bad header name", "bad character in header value"
    fold, bare_lf, chunk_line = "obsolete line folding", "line ends in LF without CR", "bad chunk size line"
    method, too_large = "bad method token", "request header section too large"
    head = [
        # Request smuggling (RFC 9112 section 6.3).
        ("TE then CL", P(b"Transfer-Encoding: chunked\r\nContent-Length: " + n + b"\r\n", chunked), 400, both),
        ("CL then TE", P(b"Content-Length: " + n + b"\r\nTransfer-Encoding: chunked\r\n", chunked), 400, both),
        ("CL and TE in other case", P(b"content-length: " + n + b"\r\ntransfer-encoding: CHUNKED\r\n", chunked),
         400, both),
        ("CL and TE: gzip", P(b"Content-Length: " + n + b"\r\nTransfer-Encoding: gzip\r\n", BODY), 400, both),
        ("two CLs that differ", P(b"Content-Length: " + n + b"\r\nContent-Length: 5\r\n", BODY), 400, bad_cl),
        ("CL list", CL(n + b", " + n), 400, bad_cl),
        ("CL +", CL(b"+" + n), 400, bad_cl),
        ("CL -1", CL(b"-1"), 400, bad_cl),
        ("CL hex", CL(b"0x13"), 400, bad_cl),
        ("CL 1e3", CL(b"1e3"), 400, bad_cl),
        ("CL over 2^64", CL(b"99999999999999999999999"), 400, bad_cl),
        ("CL with a space inside", CL(b"1 9"), 400, bad_cl),
        ("CL empty", CL(b""), 400, bad_cl),
        ("space before CL's colon", P(b"Content-Length : " + n + b"\r\n", BODY), 400, bad_name),
        ("TE gzip", TE(b"gzip"), 400, bad_te),
        ("TE identity", TE(b"identity"), 400, bad_te),
        ("TE chunked, gzip", TE(b"chunked, gzip"), 400, bad_te),
        ("TE chunked twice", TE(b"chunked, chunked"), 400, bad_te),
        ("two TE chunked fields", P(b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", chunked),
         400, bad_te),
        ("TE empty", TE(b""), 400, bad_te),
        ("TE xchunked", TE(b"xchunked"), 400, bad_te),
        ("TE chunked in HTTP/1.0", TE(b"chunked", version=b"1.0"), 400, bad_te),
        ("TE gzip, chunked", TE(b"gzip, chunked"), 501, "unsupported transfer coding"),
        ("TE gzip and TE chunked fields", P(b"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", chunked),
         501, "unsupported transfer coding"),
        ("space before TE's colon", P(b"Transfer-Encoding : chunked\r\n", chunked), 400, bad_name),
        ("TE after a vertical tab", P(b"Transfer-Encoding:\x0bchunked\r\n", chunked), 400, bad_value),
        ("TE folded", P(b"Transfer-Encoding: chunked\r\n identity\r\n", chunked), 400, fold),
        ("CL folded", P(b"Content-Length: " + n + b"\r\n 5\r\n", BODY), 400, fold),
        ("field folded", G(b"X: a\r\n folded\r\n"), 400, fold),
        # Field lines (section 5) and Host (section 3.2).
        ("bare CR in a value", G(b"X: a\rb\r\n"), 400, bad_value),
        ("NUL in a value", G(b"X: a\x00b\r\n"), 400, bad_value),
        ("bare LF", b"GET " + get + b" HTTP/1.1\nHost: x\n\n", 400, bare_lf),
        ("field without a colon", G(b"NoColon\r\n"), 400, bad_name),
        ("space in a field name", G(b"Bad Header: v\r\n"), 400, bad_name),
        ("Host twice", G(b"Host: y\r\n"), 400, "missing or repeated Host"),
        ("no Host", b"GET " + get + b" HTTP/1.1\r\n\r\n", 400, "missing or repeated Host"),
        ("Content-Type twice", P(b"Content-Type: text/plain\r\nContent-Length: " + n + b"\r\n", BODY), 400,
         "repeated Content-Type"),
        # Request lines (section 3).
        ("two spaces", G(line=b"GET  " + get + b" HTTP/1.1"), 400, "bad request target"),
        ("DEL in the target", G(line=b"GET " + get + b"\x7f HTTP/1.1"), 400, "bad request target"),
        ("space after the version", G(line=b"GET " + get + b" HTTP/1.1 "), 400, "malformed request line"),
        ("version in lower case", G(line=b"GET " + get + b" http/1.1"), 400, "malformed request line"),
        ("HTTP/9.9", G(line=b"GET " + get + b" HTTP/9.9"), 505, "unsupported HTTP version"),
        ("HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "unsupported HTTP version"),
        ("NUL in the method", G(line=b"G\x00T " + get + b" HTTP/1.1"), 400, method),
        ("NULs", b"\x00" * 64, 400, method),
        ("binary", b"\xff\xfe\xfd" * 50 + b"\r\n\r\n", 400, method),
        ("TLS ClientHello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64, 400, method),
        # Limits.
        ("20 KB without a line end", b"X" * 20000, 431, too_large),
        ("20 KB target", G(line=b"GET /" + b"a" * 20000 + b" HTTP/1.1"), 431, too_large),
        ("5000 empty lines", b"\r\n" * 5000, 431, too_large),
        ("100 fields", G(b"".join(b"X-%d: v\r\n" % i for i in range(100))), 431, "too many headers"),
    ]
    body = [
        # Chunked bodies (section 7.1): the head is fine.
        ("chunk size 0x5", TE(b"chunked", b"0x5\r\nabcde\r\n0\r\n\r\n"), 400, chunk_line),
        ("chunk size then a space", TE(b"chunked", b"5 \r\nabcde\r\n0\r\n\r\n"), 400, chunk_line),
        ("chunk size -5", TE(b"chunked", b"-5\r\nabcde\r\n0\r\n\r\n"), 400, chunk_line),
        ("chunk lines end in LF", TE(b"chunked", b"5\nabcde\n0\n\n"), 400, bare_lf),
        ("chunk longer than its size", TE(b"chunked", b"5\r\nabcdeXX\r\n0\r\n\r\n"), 400,
         "chunk data not followed by CRLF"),
        ("chunk size over 2^64", TE(b"chunked", b"ffffffffffffffffffff\r\n"), 413, "body too large"),
        ("trailer over 8 KiB", TE(b"chunked", b"3\r\nabc\r\n0\r\nT: " + b"t" * 10000 + b"\r\n\r\n"), 400,
         "bad or oversized trailer section"),
    ]
    return [c + (False,) for c in head] + [c + (True,) for c in body]


def answer(port, data, timeout=5.0):
    """Sends data and then SMUGGLED, half-closes, and reads until the
    server closes: (status, headers with lower-case names, body, the bytes
    after the first response)."""
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        try:
            s.sendall(data + SMUGGLED)
            s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may have answered and closed already
        got = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        except socket.timeout:
            raise AssertionError("not closed within %.0fs (received %r)" % (timeout, got[:200]))
        except ConnectionResetError:
            raise AssertionError("reset, which can destroy the answer (received %r)" % got[:200])
    head, sep, rest = got.partition(b"\r\n\r\n")
    m = re.match(rb"HTTP/1\.1 (\d{3}) [^\r\n]*", head)
    assert sep and m, "no response head: %r" % got[:200]
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        headers[name.decode().lower()] = value.strip().decode()
    length = int(headers["content-length"])
    return int(m.group(1)), headers, rest[:length], rest[length:]


def check_all(port, post, get, message_of, serves, head_only=None):
    """Runs every case of cases(post, get) against port; a server that
    answers from the head alone expects head_only (its status for a good
    POST head) where only the body is bad. message_of(status,
    headers, body) returns the error text in the server's answer, or None
    for a server that gives none; serves() is true while the server still
    answers a good request on a new connection. Returns the mismatches, one
    line each."""
    wrong = []
    for name, data, status, message, in_body in cases(post, get):
        if in_body and head_only:
            status, message = head_only, None
        try:
            st, headers, body, after = answer(port, data)
            said = message_of(st, headers, body)
            if st != status or said not in (None, message):
                wrong.append("%s: %d %r, expected %d %r" % (name, st, said, status, message))
            elif headers.get("connection") != "close":
                wrong.append("%s: no Connection: close (%r)" % (name, headers))
            elif after:
                wrong.append("%s: more after the answer (smuggled?): %r" % (name, after[:200]))
        except AssertionError as e:
            wrong.append("%s: %s" % (name, e))
        if not serves():
            wrong.append("%s: the server no longer serves" % name)
            break
    return wrong


def closed_unanswered(s, timeout=5.0):
    """True if the socket s closes (EOF or reset) within timeout without
    a byte from the server."""
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
