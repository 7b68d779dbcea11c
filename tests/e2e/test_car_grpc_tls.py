"""gRPC over TLS with ALPN h2 (`shootout car-server --tls-cert ...`), from
grpcio (python3-grpcio, gRPC core underneath), from plain Python sockets
for what grpcio will not do (speak cleartext to a TLS port, offer no h2,
stall the handshake), and from our own client (`shootout bench rpc-seq
--tls`).

The certificates are made at test time with the `openssl` command: a CA, a
server certificate for 127.0.0.1 and localhost (subjectAltName), a client
certificate from the same CA, and a second CA nobody trusts.
"""

import select
import socket
import ssl
import struct
import subprocess
import time

import grpc
import pytest

import h2_raw
import test_bench
from conftest import HOST, SHOOTOUT_BIN
from test_car_grpc import article_message, check_stub, pb, send_stub  # noqa: F401 (pb: fixture)

SEND_PATH = "/com.stevenpg.rvg.MessageService/send"
UNAVAILABLE = grpc.StatusCode.UNAVAILABLE
REFUSED = "TLS connection refused"


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """Paths of ca.pem, server.{pem,key}, client.{pem,key}, other-ca.pem,
    and elsewhere.{pem,key}: from the CA, for another host name only."""
    d = tmp_path_factory.mktemp("certs")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", *ec, "-keyout", ca + ".key", "-out", ca + ".pem", "-days", "2",
                "-subj", "/CN=shootout test " + ca, cwd=d)
    (d / "server.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    (d / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    (d / "elsewhere.ext").write_text("subjectAltName=DNS:elsewhere.example\n")
    for name in ("server", "client", "elsewhere"):
        openssl("req", *ec, "-keyout", name + ".key", "-out", name + ".csr", "-subj",
                "/CN=" + name, cwd=d)
        openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", name + ".pem", "-days", "2", "-extfile", name + ".ext", cwd=d)

    class Certs:
        pass
    c = Certs()
    for name in ("ca", "other-ca", "server", "client", "elsewhere"):
        setattr(c, name.replace("-", "_"), str(d / (name + ".pem")))
    c.server_key, c.client_key = str(d / "server.key"), str(d / "client.key")
    c.elsewhere_key = str(d / "elsewhere.key")
    return c


def read(path):
    with open(path, "rb") as f:
        return f.read()


def tls_args(certs, mutual=False):
    args = ["--tls-cert", certs.server, "--tls-key", certs.server_key]
    if mutual:
        args += ["--tls-ca", certs.ca, "--tls-require-client-cert"]
    return args


def tls_channel(server, certs, client_cert=False):
    creds = grpc.ssl_channel_credentials(
        root_certificates=read(certs.ca),
        private_key=read(certs.client_key) if client_cert else None,
        certificate_chain=read(certs.client) if client_cert else None)
    return grpc.secure_channel("%s:%d" % (HOST, server.grpc_port), creds)


def send_ok(ch, pb):  # noqa: F811
    r = send_stub(ch, pb)(article_message(pb), timeout=10)
    assert r.status == "successful"


def wait_for_log(server, text, timeout=5.0):
    deadline = time.monotonic() + timeout
    while text not in server.stderr_text():
        assert time.monotonic() < deadline, "no %r in the server log:\n%s" % (text, server.stderr_tail())
        time.sleep(0.02)


def closed_by_server(sock, timeout=5.0):
    """True when the server closes (EOF or reset) within timeout, having
    sent nothing we could take for HTTP/2."""
    sock.settimeout(timeout)
    try:
        return sock.recv(4096) == b""
    except (ConnectionResetError, ssl.SSLError):
        return True
    except socket.timeout:
        return False


# ---- grpcio over TLS ----------------------------------------------------------

def test_calls_and_health_over_tls(car_server_factory, certs, pb):  # noqa: F811
    srv = car_server_factory(*tls_args(certs))
    assert "gRPC (h2, TLS) on" in srv.stderr_text()
    with tls_channel(srv, certs) as ch:
        for _ in range(20):
            send_ok(ch, pb)
        health = check_stub(ch, pb)(pb.health.HealthCheckRequest(service=""), timeout=10)
        assert health.status == pb.health.HealthCheckResponse.SERVING
    # REST stays cleartext on its own port.
    with socket.create_connection((HOST, srv.rest_port), timeout=5) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s.recv(12).startswith(b"HTTP/1.1 ")


def test_large_request_spans_many_records(car_server_factory, certs, pb):  # noqa: F811
    """A 3 MiB message arrives as ~200 TLS records."""
    srv = car_server_factory(*tls_args(certs))
    m = article_message(pb)
    m.car.trim = "x" * (3 * 1024 * 1024)
    with tls_channel(srv, certs) as ch:
        assert send_stub(ch, pb)(m, timeout=20).status == "successful"
        send_ok(ch, pb)


def test_client_that_stops_reading(car_server_factory, certs, pb):  # noqa: F811
    """Back-pressure over TLS: a client with a tiny receive buffer sends
    calls without reading until the server stops taking them (its socket is
    full: its writes wait and it stops reading), then reads while sending
    the rest. Every answer must arrive whole and in order: a TLS write
    retried with other bytes, or bytes lost, would break the record stream
    or the HTTP/2 frames."""
    srv = car_server_factory(*tls_args(certs))
    calls = 200000
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.settimeout(10)
    raw.connect((HOST, srv.grpc_port))
    ctx = ssl.create_default_context(cafile=certs.ca)
    ctx.set_alpn_protocols(["h2"])
    sock = ctx.wrap_socket(raw, server_hostname="localhost")
    sock.setblocking(False)
    frame = h2_raw.H2Conn.frame_bytes
    headers = h2_raw.encode_headers([(":method", "POST"), (":scheme", "https"), (":path", SEND_PATH),
                                     (":authority", "localhost"), ("te", "trailers"),
                                     ("content-type", "application/grpc")])
    body = frame(h2_raw.DATA, h2_raw.FLAG_END_STREAM, 0, bytes(5))  # an empty Message
    # Windows wide open, so that only the socket holds the answers back.
    big = 2 ** 31 - 1
    data = bytearray(h2_raw.PREFACE +
                     frame(h2_raw.SETTINGS, 0, 0, struct.pack(">HI", h2_raw.SETTINGS_INITIAL_WINDOW_SIZE, big)) +
                     frame(h2_raw.WINDOW_UPDATE, 0, 0, struct.pack(">I", big - 65535)))
    for i in range(calls):
        data += frame(h2_raw.HEADERS, h2_raw.FLAG_END_HEADERS, 1 + 2 * i, headers)
        data += body[:5] + (1 + 2 * i).to_bytes(4, "big") + body[9:]
    sent = 0

    def pump():
        nonlocal sent
        while sent < len(data):
            try:
                sent += sock.send(data[sent:sent + 16384])
            except (ssl.SSLWantWriteError, ssl.SSLWantReadError):
                return

    stalled_at = -1
    while sent != stalled_at and sent < len(data):
        stalled_at = sent
        time.sleep(0.3)
        pump()
    assert sent < len(data), "the server kept reading: its socket never filled"

    # The flood ignores SETTINGS_MAX_CONCURRENT_STREAMS, so some streams
    # are refused (RST_STREAM REFUSED_STREAM); every one must end.
    decoder, buf, ok, refused = h2_raw.HpackDecoder(), b"", 0, 0
    deadline = time.monotonic() + 40
    while ok + refused < calls:
        assert time.monotonic() < deadline, "%d + %d of %d calls ended" % (ok, refused, calls)
        pump()
        try:
            chunk = sock.recv(65536)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            select.select([sock], [sock] if sent < len(data) else [], [], 1)
            continue
        assert chunk, "closed by the server after %d answers" % ok
        buf += chunk
        while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[:3], "big"):
            n, ftype, flags = int.from_bytes(buf[:3], "big"), buf[3], buf[4]
            payload, buf = buf[9:9 + n], buf[9 + n:]
            if ftype == h2_raw.HEADERS:
                fields = dict(decoder.decode(payload))
                if flags & h2_raw.FLAG_END_STREAM:
                    assert fields.get("grpc-status") == "0", fields
                    ok += 1
            elif ftype == h2_raw.RST_STREAM:
                assert payload == struct.pack(">I", 7), payload  # REFUSED_STREAM
                refused += 1
    assert ok > calls // 2
    sock.close()


def test_mutual_tls(car_server_factory, certs, pb):  # noqa: F811
    srv = car_server_factory(*tls_args(certs, mutual=True))
    assert "gRPC (h2, mutual TLS) on" in srv.stderr_text()
    with tls_channel(srv, certs, client_cert=True) as good:
        send_ok(good, pb)
        with tls_channel(srv, certs) as anonymous:
            e = pytest.raises(grpc.RpcError, send_stub(anonymous, pb), article_message(pb), timeout=10)
            assert e.value.code() == UNAVAILABLE
        wait_for_log(srv, REFUSED)
        send_ok(good, pb)  # the other client is still served, on its connection


def test_cleartext_h2c_client_is_refused(car_server_factory, certs, pb):  # noqa: F811
    srv = car_server_factory(*tls_args(certs))
    with socket.create_connection((HOST, srv.grpc_port), timeout=5) as s:
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes(9))
        assert closed_by_server(s)
    wait_for_log(srv, REFUSED)
    with grpc.insecure_channel("%s:%d" % (HOST, srv.grpc_port)) as ch:
        e = pytest.raises(grpc.RpcError, send_stub(ch, pb), article_message(pb), timeout=10)
        assert e.value.code() == UNAVAILABLE
    with tls_channel(srv, certs) as ch:
        send_ok(ch, pb)


@pytest.mark.parametrize("alpn", [None, ["http/1.1"]], ids=["no-alpn", "http1-only"])
def test_tls_client_without_h2_is_refused(car_server_factory, certs, alpn):
    srv = car_server_factory(*tls_args(certs))
    ctx = ssl.create_default_context(cafile=certs.ca)
    if alpn:
        ctx.set_alpn_protocols(alpn)
    with socket.create_connection((HOST, srv.grpc_port), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            assert s.selected_alpn_protocol() is None  # the handshake itself succeeds
            assert closed_by_server(s)
    wait_for_log(srv, "did not negotiate HTTP/2 (ALPN h2)")


def test_stalled_handshake_times_out(car_server_factory, certs):
    """A connection that never starts TLS is closed after the request
    timeout, not the (longer) idle timeout."""
    srv = car_server_factory(*tls_args(certs), "--request-timeout", "1", "--idle-timeout", "60")
    with socket.create_connection((HOST, srv.grpc_port), timeout=5) as s:
        assert closed_by_server(s, timeout=10)
    wait_for_log(srv, "no handshake within the request timeout")


def test_sigterm_drains_with_tls_connections(car_server_factory, certs, pb):  # noqa: F811
    """Exit 0 on SIGTERM, promptly, with a connection mid-handshake and one
    that has finished a call (the drain timeout is far off)."""
    srv = car_server_factory(*tls_args(certs), "--drain-timeout", "60", "--request-timeout", "60")
    with socket.create_connection((HOST, srv.grpc_port), timeout=5) as stalled, \
            tls_channel(srv, certs) as ch:
        send_ok(ch, pb)
        stalled.sendall(b"\x16\x03\x01")  # the start of a ClientHello, no more
        t0 = time.monotonic()
        assert srv.stop(timeout=10) == 0
        assert time.monotonic() - t0 < 10
    assert "1 gRPC calls (0 errors)" in srv.stderr_text()


# ---- start-up errors -----------------------------------------------------------

def car_server_exit(*args):
    return subprocess.run([SHOOTOUT_BIN, "car-server", "--bind", HOST, "--rest-port", "0",
                           "--grpc-port", "0"] + list(args),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)


def test_bad_certificate_files_fail_at_start(certs, tmp_path):
    missing = str(tmp_path / "missing.pem")
    cases = [
        (["--tls-cert", missing, "--tls-key", certs.server_key], missing),
        (["--tls-cert", certs.server, "--tls-key", missing], missing),
        (["--tls-cert", certs.server, "--tls-key", certs.client_key], certs.client_key),  # not its key
        (["--tls-cert", certs.server, "--tls-key", certs.server_key, "--tls-ca", missing,
          "--tls-require-client-cert"], missing),
    ]
    for args, named in cases:
        p = car_server_exit(*args)
        assert p.returncode == 1, (args, p.stderr)
        assert named in p.stderr, (args, p.stderr)


@pytest.mark.parametrize("args", [["--tls-cert", "x.pem"], ["--tls-key", "x.key"],
                                  ["--tls-ca", "ca.pem"],
                                  ["--tls-cert", "x", "--tls-key", "y", "--tls-require-client-cert"]])
def test_tls_option_misuse_is_a_usage_error(args):
    assert car_server_exit(*args).returncode == 2


# ---- our client: bench rpc-seq --tls ------------------------------------------

def rpc_seq(srv, *args):
    return test_bench.bench("rpc-seq", "--protocol", "grpc", "--target",
                            "%s:%d" % (HOST, srv.grpc_port), *args)


def test_rpc_seq_over_tls(car_server_factory, certs, tmp_path):
    srv = car_server_factory(*tls_args(certs))
    doc, _ = test_bench.bench_json(tmp_path, "rpc-seq", "--protocol", "grpc", "--target",
                                   "%s:%d" % (HOST, srv.grpc_port), "--tls", "--tls-ca", certs.ca,
                                   "--requests", "300", "--concurrency", "8", "--connections", "2")
    row = doc["benchmarks"][0]
    assert row["messages"]["received"] == 300 and row["config"]["tls"] == 1
    # Without --tls-ca the server is not verified, and still spoken to.
    p = rpc_seq(srv, "--tls", "--requests", "50")
    assert p.returncode == 0, p.stderr
    # A CA that did not sign the server's certificate.
    p = rpc_seq(srv, "--tls", "--tls-ca", certs.other_ca, "--requests", "5")
    assert p.returncode == 1 and "certificate verify failed" in p.stderr, p.stderr
    # Cleartext against the TLS port.
    assert rpc_seq(srv, "--requests", "5").returncode == 1


def test_rpc_seq_tls_checks_the_host_name(car_server_factory, certs):
    srv = car_server_factory("--tls-cert", certs.elsewhere, "--tls-key", certs.elsewhere_key)
    p = rpc_seq(srv, "--tls", "--tls-ca", certs.ca, "--requests", "5")
    assert p.returncode == 1 and "certificate verify failed" in p.stderr, p.stderr
    assert rpc_seq(srv, "--tls", "--requests", "5").returncode == 0  # not verified at all


def test_rpc_seq_tls_against_h2c_fails(car_server_factory):
    srv = car_server_factory()
    p = rpc_seq(srv, "--tls", "--requests", "5")
    assert p.returncode == 1 and "TLS" in p.stderr, p.stderr


def test_rpc_seq_tls_usage(certs):
    assert test_bench.bench("rpc-seq", "--protocol", "rest", "--tls").returncode == 2
    assert test_bench.bench("rpc-seq", "--protocol", "grpc", "--tls-ca", certs.ca).returncode == 2
