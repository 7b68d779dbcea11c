"""The Car service over gRPC (`shootout car-server`, car_grpc.c), from two
clients: grpcio (python3-grpcio 1.51, gRPC core underneath) for what a real
gRPC client sees, and a frame-level HTTP/2 client (h2_raw.py) for what
grpcio cannot do on purpose: hold a request body, cut a message anywhere,
send two messages, a wrong content-type or garbage, and watch every frame
the server answers with (RST_STREAM, GOAWAY, compressed flags).

The message classes are generated from src/car/*.proto at test time with
protoc, so the tests use the very schema the server was built from.
"""

import gzip
import importlib
import os
import signal
import socket
import struct
import subprocess
import sys
import time

import grpc
import pytest

import h2_raw
from conftest import HOST, REPO

SEND = "/com.stevenpg.rvg.MessageService/send"
CHECK = "/grpc.health.v1.Health/Check"

# grpc status codes
OK, CANCELLED, DEADLINE_EXCEEDED, NOT_FOUND, RESOURCE_EXHAUSTED, UNIMPLEMENTED, INTERNAL = 0, 1, 4, 5, 8, 12, 13


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    """The protoc-generated modules: pb.car (Message, Result), pb.health."""
    out = tmp_path_factory.mktemp("pb")
    src = os.path.join(REPO, "src", "car")
    subprocess.run(["protoc", "--python_out=%s" % out, "-I", src, "car.proto", "health.proto"], check=True)
    sys.path.insert(0, str(out))
    try:
        class PB:
            car = importlib.import_module("car_pb2")
            health = importlib.import_module("health_pb2")
        yield PB
    finally:
        sys.path.remove(str(out))


def article_message(pb):
    """The article's sample record (message.json)."""
    m = pb.car.Message()
    m.car.make, m.car.model, m.car.trim, m.car.color = "toyota", "corolla", "4DR Sedan", "gray"
    m.car.year, m.car.mileage = 2012, 120000
    m.driver.firstname, m.driver.lastname, m.driver.driverId = "John", "Smith", "someId"
    return m


def channel(server):
    return grpc.insecure_channel("%s:%d" % (HOST, server.grpc_port))


def send_stub(ch, pb):
    return ch.unary_unary(SEND, request_serializer=pb.car.Message.SerializeToString,
                          response_deserializer=pb.car.Result.FromString)


def check_stub(ch, pb):
    return ch.unary_unary(CHECK, request_serializer=pb.health.HealthCheckRequest.SerializeToString,
                          response_deserializer=pb.health.HealthCheckResponse.FromString)


def rpc_error(fn, *args, **kwargs):
    with pytest.raises(grpc.RpcError) as e:
        fn(*args, **kwargs)
    return e.value


# ---- raw HTTP/2 helpers ------------------------------------------------------

def framed(payload, compressed=False):
    return struct.pack(">BI", 1 if compressed else 0, len(payload)) + payload


def grpc_headers(path=SEND, content_type="application/grpc", method="POST", extra=()):
    return [(":method", method), (":scheme", "http"), (":path", path), (":authority", "test"),
            ("te", "trailers"), ("content-type", content_type)] + list(extra)


def raw_conn(server):
    c = h2_raw.H2Conn(server.grpc_port)
    return c


def headers_of(frames):
    """All header fields of a stream's HEADERS frames, as one dict."""
    out = {}
    for f in frames:
        if f.type == h2_raw.HEADERS:
            out.update(dict(f.headers))
    return out


def grpc_status(frames):
    status = headers_of(frames).get("grpc-status")
    return None if status is None else int(status)


def data_of(frames):
    return b"".join(f.payload for f in frames if f.type == h2_raw.DATA)


def unary(conn, sid, body, headers=None, pieces=1):
    """Sends a whole call on stream sid, the body cut into `pieces` DATA
    frames; returns the stream's frames."""
    conn.send_headers(sid, headers or grpc_headers())
    step = max(1, -(-len(body) // pieces))
    for i in range(0, len(body), step):
        conn.send_data(sid, body[i:i + step], end_stream=i + step >= len(body))
    return conn.stream_frames(sid)


# ---- grpcio: what a real client sees ---------------------------------------------

def test_send_answers_successful(car_server, pb):
    with channel(car_server) as ch:
        reply, call = send_stub(ch, pb).with_call(article_message(pb), timeout=5)
        assert reply.status == "successful"
        assert call.code() == grpc.StatusCode.OK


def test_1000_sequential_calls_on_one_channel(car_server_factory, pb):
    s = car_server_factory("-v")
    with channel(s) as ch:
        stub, m = send_stub(ch, pb), article_message(pb)
        for i in range(1000):
            m.car.mileage = i
            assert stub(m, timeout=10).status == "successful"
    assert s.stop() == 0
    log = s.stderr_text()
    assert log.count("grpc fd") >= 1000
    assert log.count("connection accepted") == 1
    assert "1000 gRPC calls (0 errors)" in log


def test_unimplemented_method_and_service(car_server, pb):
    with channel(car_server) as ch:
        for path, word in (("/com.stevenpg.rvg.MessageService/Send", "method"),
                           ("/grpc.health.v1.Health/Watch", "method"),
                           ("/com.stevenpg.rvg.Nope/send", "service"),
                           ("/nopath", "service")):
            e = rpc_error(ch.unary_unary(path), b"", timeout=5)
            assert e.code() == grpc.StatusCode.UNIMPLEMENTED, path
            assert ("unknown %s" % word) in e.details(), (path, e.details())


def test_oversized_message_is_resource_exhausted(car_server_factory, pb):
    s = car_server_factory("--max-message-size", "32")
    with channel(s) as ch:
        e = rpc_error(send_stub(ch, pb), article_message(pb), timeout=5)  # 66 bytes
        assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        small = pb.car.Message()
        small.car.make = "vw"
        assert send_stub(ch, pb)(small, timeout=5).status == "successful"


def test_gzip_request_and_reply(car_server, pb):
    with channel(car_server) as ch:
        reply = send_stub(ch, pb)(article_message(pb), timeout=5, compression=grpc.Compression.Gzip)
        assert reply.status == "successful"
    with grpc.insecure_channel("%s:%d" % (HOST, car_server.grpc_port), compression=grpc.Compression.Gzip) as ch:
        for _ in range(3):
            assert send_stub(ch, pb)(article_message(pb), timeout=5).status == "successful"


def test_gzip_bomb_is_resource_exhausted(car_server_factory, pb):
    """Small on the wire, over the limit once inflated."""
    s = car_server_factory("--max-message-size", "1000")
    m = article_message(pb)
    m.car.trim = "a" * 100000
    with channel(s) as ch:
        e = rpc_error(send_stub(ch, pb), m, timeout=5, compression=grpc.Compression.Gzip)
        assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "decompressed" in e.details()


def test_health_check(car_server, pb):
    Status = pb.health.HealthCheckResponse
    with channel(car_server) as ch:
        check = check_stub(ch, pb)
        for name in ("", "com.stevenpg.rvg.MessageService"):
            r = check(pb.health.HealthCheckRequest(service=name), timeout=5)
            assert r.status == Status.SERVING, name
        e = rpc_error(check, pb.health.HealthCheckRequest(service="no.such.Service"), timeout=5)
        assert e.code() == grpc.StatusCode.NOT_FOUND


def test_malformed_request_message_is_internal(car_server, pb):
    with channel(car_server) as ch:
        send_raw = ch.unary_unary(SEND)
        e = rpc_error(send_raw, b"\x0a\x40abc", timeout=5)  # a length running past the end
        assert e.code() == grpc.StatusCode.INTERNAL
        assert "cannot parse" in e.details()
        # The connection goes on serving.
        assert send_stub(ch, pb)(article_message(pb), timeout=5).status == "successful"


def test_grpc_message_is_percent_encoded(car_server):
    with channel(car_server) as ch:
        e = rpc_error(ch.unary_unary("/x.Y/100%\u00e9".encode("utf-8").decode("latin-1")), b"", timeout=5)
    assert e.code() == grpc.StatusCode.UNIMPLEMENTED
    c = raw_conn(car_server)
    frames = unary(c, 1, framed(b""), grpc_headers(path="/x.Y/100%"))
    msg = headers_of(frames)["grpc-message"]
    assert msg == "unknown service /x.Y/100%25"
    assert all(0x20 <= ord(ch) <= 0x7E for ch in msg)


# ---- frame level ----------------------------------------------------------------

def test_reply_frames_headers_message_trailers(car_server, pb):
    c = raw_conn(car_server)
    body = framed(article_message(pb).SerializeToString())
    frames = unary(c, 1, body)
    kinds = [f.type for f in frames]
    assert kinds == [h2_raw.HEADERS, h2_raw.DATA, h2_raw.HEADERS], frames
    head, trailers = dict(frames[0].headers), dict(frames[2].headers)
    assert head[":status"] == "200" and head["content-type"] == "application/grpc"
    assert "gzip" in head["grpc-accept-encoding"]
    assert trailers == {"grpc-status": "0"} and frames[2].end_stream
    data = frames[1].payload
    assert data[0] == 0 and struct.unpack(">I", data[1:5])[0] == len(data) - 5
    assert pb.car.Result.FromString(data[5:]).status == "successful"
    # Our SETTINGS: bounded streams, a header list limit of at least 8 KiB.
    assert c.server_settings[h2_raw.SETTINGS_MAX_CONCURRENT_STREAMS] == 100
    assert c.server_settings[h2_raw.SETTINGS_MAX_HEADER_LIST_SIZE] >= 8192


def test_message_split_anywhere_and_te_optional(car_server, pb):
    c = raw_conn(car_server)
    body = framed(article_message(pb).SerializeToString())
    for sid, pieces in ((1, len(body)), (3, 2), (5, 7)):
        frames = unary(c, sid, body, pieces=pieces)
        assert grpc_status(frames) == OK, pieces
    # Without te: trailers, and with application/grpc+proto; charset: still served.
    headers = [h for h in grpc_headers(content_type="application/grpc+proto; charset=utf-8") if h[0] != "te"]
    assert grpc_status(unary(c, 7, body, headers)) == OK


def test_request_cardinality(car_server, pb):
    c = raw_conn(car_server)
    one = framed(article_message(pb).SerializeToString())
    frames = unary(c, 1, one + one)
    assert grpc_status(frames) == UNIMPLEMENTED
    assert "more than one" in headers_of(frames)["grpc-message"]
    c.send_headers(3, grpc_headers(), end_stream=True)
    frames = c.stream_frames(3)
    assert grpc_status(frames) == UNIMPLEMENTED and len(frames) == 1  # Trailers-Only
    # A message cut short by END_STREAM.
    frames = unary(c, 5, one[:-3])
    assert grpc_status(frames) == INTERNAL


def test_wrong_content_type_is_415_and_wrong_method_405(car_server):
    c = raw_conn(car_server)
    frames = unary(c, 1, b'{"car":{}}', grpc_headers(content_type="application/json"))
    assert headers_of(frames)[":status"] == "415"
    frames = unary(c, 3, framed(b""), grpc_headers(content_type="application/grpc+json"))
    assert headers_of(frames)[":status"] == "415"
    c.send_headers(5, [h for h in grpc_headers() if h[0] != "content-type"], end_stream=True)
    assert headers_of(c.stream_frames(5))[":status"] == "415"
    c.send_headers(7, grpc_headers(method="GET"), end_stream=True)
    assert headers_of(c.stream_frames(7))[":status"] == "405"


def test_gzip_both_ways_on_the_wire(car_server, pb):
    c = raw_conn(car_server)
    packed = gzip.compress(article_message(pb).SerializeToString())
    headers = grpc_headers(extra=[("grpc-encoding", "gzip"), ("grpc-accept-encoding", "identity, gzip")])
    frames = unary(c, 1, framed(packed, compressed=True), headers)
    assert grpc_status(frames) == OK
    assert headers_of(frames)["grpc-encoding"] == "gzip"
    data = data_of(frames)
    assert data[0] == 1
    assert pb.car.Result.FromString(gzip.decompress(data[5:])).status == "successful"
    # A client that does not accept gzip gets an identity reply.
    headers = grpc_headers(extra=[("grpc-encoding", "gzip"), ("grpc-accept-encoding", "identity")])
    frames = unary(c, 3, framed(packed, compressed=True), headers)
    assert grpc_status(frames) == OK and data_of(frames)[0] == 0
    assert "grpc-encoding" not in headers_of(frames)
    # An encoding we do not have: UNIMPLEMENTED, naming what we accept.
    frames = unary(c, 5, framed(b"x", compressed=True), grpc_headers(extra=[("grpc-encoding", "snappy")]))
    assert grpc_status(frames) == UNIMPLEMENTED
    assert "gzip" in headers_of(frames)["grpc-accept-encoding"]
    # The compressed flag without grpc-encoding; gzip that is not gzip.
    frames = unary(c, 7, framed(packed, compressed=True))
    assert grpc_status(frames) == INTERNAL
    frames = unary(c, 9, framed(b"not gzip", compressed=True), grpc_headers(extra=[("grpc-encoding", "gzip")]))
    assert grpc_status(frames) == INTERNAL


def test_deadline_passes_while_the_body_is_held(car_server, pb):
    """The handler answers at once, so a deadline can only pass while the
    client holds its request back: the server must then answer
    DEADLINE_EXCEEDED with RST_STREAM(CANCEL), not wait for the body."""
    c = raw_conn(car_server)
    body = framed(article_message(pb).SerializeToString())
    start = time.monotonic()
    c.send_headers(1, grpc_headers(extra=[("grpc-timeout", "200m")]))
    c.send_data(1, body[:3])
    frames = c.stream_frames(1, until_rst=True)
    elapsed = time.monotonic() - start
    assert elapsed >= 0.19, elapsed  # not before the deadline
    assert grpc_status(frames) == DEADLINE_EXCEEDED
    assert frames[-1].type == h2_raw.RST_STREAM and frames[-1].error_code() == h2_raw.CANCEL
    # The same call with a deadline that does not pass is served.
    c.send_headers(3, grpc_headers(extra=[("grpc-timeout", "5S")]))
    c.send_data(3, body[:3])
    time.sleep(0.3)
    c.send_data(3, body[3:], end_stream=True)
    assert grpc_status(c.stream_frames(3)) == OK
    # A malformed grpc-timeout is refused.
    frames = unary(c, 5, body, grpc_headers(extra=[("grpc-timeout", "1s")]))
    assert grpc_status(frames) == INTERNAL


def test_request_timeout_bounds_calls_without_deadline(car_server_factory, pb):
    s = car_server_factory("--request-timeout", "1")
    c = raw_conn(s)
    start = time.monotonic()  # before the request: load cannot break the lower bound
    c.send_headers(1, grpc_headers())
    frames = c.stream_frames(1, timeout=5, until_rst=True)
    assert time.monotonic() - start >= 0.9
    assert grpc_status(frames) == DEADLINE_EXCEEDED
    assert "request timeout" in headers_of(frames)["grpc-message"]


def test_early_error_while_client_still_sending(car_server_factory):
    """An answer before the client's END_STREAM is followed by
    RST_STREAM(NO_ERROR), so the client stops sending."""
    s = car_server_factory("--max-message-size", "10")
    c = raw_conn(s)
    c.send_headers(1, grpc_headers())
    c.send_data(1, struct.pack(">BI", 0, 1000) + b"x" * 20)
    frames = c.stream_frames(1, until_rst=True)
    assert grpc_status(frames) == RESOURCE_EXHAUSTED
    assert frames[-1].error_code() == h2_raw.NO_ERROR
    # The rest of that body is ignored, and the connection goes on.
    c.send_data(1, b"x" * 100, end_stream=True)
    assert grpc_status(unary(c, 3, framed(b""))) == OK


def test_client_reset_and_ping(car_server, pb):
    c = raw_conn(car_server)
    c.send_headers(1, grpc_headers())
    c.send_rst(1, h2_raw.CANCEL)
    c.send_ping(b"pingpong")
    ack = c.frames_until(lambda f: f.type == h2_raw.PING)[-1]
    assert ack.flags & h2_raw.FLAG_ACK and ack.payload == b"pingpong"
    assert grpc_status(unary(c, 3, framed(article_message(pb).SerializeToString()))) == OK
    assert not [f for f in c.log if f.sid == 1]  # nothing answered on the reset stream


def test_header_list_too_large(car_server):
    c = raw_conn(car_server)
    frames = unary(c, 1, framed(b""), grpc_headers(extra=[("x-big", "v" * 20000)]))
    assert grpc_status(frames) == RESOURCE_EXHAUSTED


def test_garbage_instead_of_preface(car_server, pb):
    c = h2_raw.H2Conn(car_server.grpc_port, preface=False)
    c.sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    c.wait_closed(timeout=5)
    c.close()
    with channel(car_server) as ch:
        assert send_stub(ch, pb)(article_message(pb), timeout=5).status == "successful"


def test_idle_connection_gets_goaway_and_is_closed(car_server_factory):
    s = car_server_factory("--idle-timeout", "1")
    start = time.monotonic()  # before the connection: load cannot break the lower bound
    c = raw_conn(s)
    frames = c.wait_closed(timeout=5)
    assert time.monotonic() - start >= 0.9
    goaways = [f for f in frames if f.type == h2_raw.GOAWAY]
    assert goaways and goaways[0].error_code() == h2_raw.NO_ERROR


def closed_while_trickling(sock, data, limit=10.0):
    """Sends data a byte every 0.2 s until the server closes sock; fails
    if it is still open after limit seconds or all of data went in."""
    sock.settimeout(0.2)
    deadline = time.monotonic() + limit
    for i in range(len(data)):
        assert time.monotonic() < deadline, "still open after %.0fs" % limit
        try:
            sock.sendall(data[i:i + 1])
            while sock.recv(65536):
                pass
            return  # EOF
        except socket.timeout:
            continue
        except OSError:  # reset
            return
    raise AssertionError("the whole of the trickled bytes went in")


def test_preface_and_header_block_within_the_request_timeout(car_server_factory, pb):
    """Keep alive and idle timeout aside, a connection must bring its
    preface, and a call its whole header block, within --request-timeout:
    silence, a preface a byte at a time and a header block trickled in
    CONTINUATION frames are each cut while a real client is served."""
    s = car_server_factory("--request-timeout", "1", "--idle-timeout", "60")
    silent = socket.create_connection((HOST, s.grpc_port), timeout=5)
    preface = socket.create_connection((HOST, s.grpc_port), timeout=5)
    closed_while_trickling(preface, h2_raw.PREFACE)
    frames = h2_raw.H2Conn(s.grpc_port)
    block = h2_raw.encode_headers(grpc_headers())
    frames.send_frame(h2_raw.HEADERS, 0, 1, block[:5])  # no END_HEADERS
    trickle = b"".join(h2_raw.H2Conn.frame_bytes(h2_raw.CONTINUATION, 0, 1, block[i:i + 1])
                       for i in range(5, len(block) - 1))
    closed_while_trickling(frames.sock, trickle * 10)
    with channel(s) as ch:
        assert send_stub(ch, pb)(article_message(pb), timeout=5).status == "successful"
    silent.settimeout(10)  # generous: the cut is due a second after the accept
    try:
        while silent.recv(65536):  # our SETTINGS, then GOAWAY
            pass
    except ConnectionResetError:
        pass
    silent.close()
    preface.close()
    frames.close()


def test_goaway_on_sigterm_with_a_call_in_flight(car_server_factory, pb):
    s = car_server_factory()
    c = raw_conn(s)
    c.send_headers(1, grpc_headers())
    c.send_ping()  # answered after the HEADERS were processed
    c.frames_until(lambda f: f.type == h2_raw.PING)
    s.proc.send_signal(signal.SIGTERM)
    goaway = c.frames_until(lambda f: f.type == h2_raw.GOAWAY)[-1]
    assert goaway.last_stream_id() == 1 and goaway.error_code() == h2_raw.NO_ERROR
    # The call in flight still completes; then the server closes and exits.
    c.send_data(1, framed(article_message(pb).SerializeToString()), end_stream=True)
    frames = c.stream_frames(1)
    assert grpc_status(frames) == OK
    c.wait_closed(timeout=5)
    assert s.proc.wait(5) == 0
    assert "1 gRPC calls (0 errors)" in s.stderr_text()


def test_concurrent_calls_multiplexed_on_one_channel(car_server_factory, pb):
    """200 calls in flight at once on one connection (over the 100-stream limit)."""
    s = car_server_factory("--threads", "2")
    with channel(s) as ch:
        stub = send_stub(ch, pb)
        futures = [stub.future(article_message(pb), timeout=10) for _ in range(200)]
        assert all(f.result().status == "successful" for f in futures)
