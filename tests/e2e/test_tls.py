"""MQTT over TLS: listeners with certfile/keyfile, client certificates,
use_identity_as_username, and plain and TLS listeners side by side.
Certificates are made at test time (conftest.tls_certs)."""

import os
import socket
import ssl
import subprocess
import time

import pytest

from conftest import HOST, IS_PEER, SHOOTOUT_BIN, free_port
from mqtt_paho import PahoClient, PahoClient5


def tls_conf(certs, port, require=False, identity=False, protocol="mqtt"):
    lines = ["listener %d %s" % (port, HOST), "protocol %s" % protocol,
             "certfile %s" % certs["server_cert"], "keyfile %s" % certs["server_key"],
             "cafile %s" % certs["ca"]]
    if require:
        lines.append("require_certificate true")
    if identity:
        lines.append("use_identity_as_username true")
    return "\n".join(lines)


def client_tls(certs, client=True, ca=None):
    kw = dict(ca_certs=ca or certs["ca"])
    if client:
        kw.update(certfile=certs["client_cert"], keyfile=certs["client_key"])
    return kw


def paho(broker, port, cid, certs=None, v5=False, **kw):
    cls = PahoClient5 if v5 else PahoClient
    c = cls(HOST, port, cid, tls=client_tls(certs, **kw) if certs else None)
    broker.clients.append(c)
    return c


@pytest.mark.parametrize("qos", [0, 1, 2])
@pytest.mark.parametrize("v5", [False, True], ids=["v311", "v5"])
def test_pubsub_over_tls(broker_factory, tls_certs, qos, v5):
    port = free_port()
    b = broker_factory(conf=tls_conf(tls_certs, port))
    sub = paho(b, port, "tls-sub", tls_certs, v5)
    sub.connect()
    sub.subscribe("tls/t", qos)
    pub = paho(b, port, "tls-pub", tls_certs, v5)
    pub.connect()
    for i in range(20):
        pub.publish("tls/t", b"m%d" % i + b"x" * (i * 3000), qos)
    got = sub.get_n(20)
    assert [m.payload[:4].rstrip(b"x") for m in got] == [b"m%d" % i for i in range(20)]
    assert all(m.qos == qos for m in got)


def test_plain_and_tls_listeners_cross(broker_factory, tls_certs):
    port = free_port()
    b = broker_factory(conf=tls_conf(tls_certs, port))
    plain = b.paho("plain-sub")
    plain.subscribe("x/#", 1)
    tls = paho(b, port, "tls-sub", tls_certs)
    tls.connect()
    tls.subscribe("x/#", 1)
    tls.publish("x/from-tls", b"1", 1)
    plain_pub = b.paho("plain-pub")
    plain_pub.publish("x/from-plain", b"2", 1)
    for c in (plain, tls):
        got = sorted((m.topic, m.payload) for m in c.get_n(2))
        assert got == [("x/from-plain", b"2"), ("x/from-tls", b"1")]


def test_require_certificate(broker_factory, tls_certs):
    port = free_port()
    b = broker_factory(conf=tls_conf(tls_certs, port, require=True))
    good = paho(b, port, "with-cert", tls_certs)
    good.connect()
    # No client certificate: the handshake fails (TLS 1.3 reports it on
    # the first read), while the other client is still served.
    nocert = paho(b, port, "no-cert", tls_certs, client=False)
    with pytest.raises((ssl.SSLError, ConnectionError, AssertionError, OSError)):
        nocert.connect(timeout=2)
    # A certificate from another CA fails too.
    wrong = PahoClient(HOST, port, "wrong-ca", tls=dict(
        ca_certs=tls_certs["ca"], certfile=tls_certs["wrong_client_cert"],
        keyfile=tls_certs["wrong_client_key"]))
    b.clients.append(wrong)
    with pytest.raises((ssl.SSLError, ConnectionError, AssertionError, OSError)):
        wrong.connect(timeout=2)
    good.subscribe("still/here", 0)
    good.publish("still/here", b"ok", 0)
    assert good.get().payload == b"ok"


CONNECT_TIMEOUT = 1  # --connect-timeout of the stall tests, seconds


def closed_after(sock, limit=CONNECT_TIMEOUT + 3.0):
    """Seconds (from now) until the broker closes sock, reading and
    discarding what it sends; fails after limit."""
    start = time.monotonic()
    sock.settimeout(0.1)
    while time.monotonic() - start < limit:
        try:
            if not sock.recv(4096):
                return time.monotonic() - start
        except socket.timeout:
            continue
        except OSError:  # reset
            return time.monotonic() - start
    raise AssertionError("still open after %.1fs" % limit)


def half_client_hello():
    """The first half of a real TLS ClientHello."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    hello = outgoing.read()
    assert hello[0] == 0x16 and len(hello) > 100  # a handshake record
    return hello[:len(hello) // 2]


def assert_stalled_clients_are_cut(b, port, stalled_openers, working):
    """Opens a connection per opener (each sends its stall, or nothing),
    checks that each is closed within the connect timeout while the working
    client keeps publishing to itself all along."""
    socks = []
    opened = time.monotonic()  # before any connection: a lower bound that load cannot break
    for opener in stalled_openers:
        s = socket.create_connection((HOST, port), timeout=5)
        opener(s)
        socks.append(s)
    working.subscribe("alive/t", 1)
    for i, s in enumerate(socks):
        working.publish("alive/t", b"%d" % i, 1)
        assert working.get().payload == b"%d" % i
        waited = time.monotonic() - opened + closed_after(s)
        assert CONNECT_TIMEOUT - 0.3 < waited < CONNECT_TIMEOUT + 2.5, \
            "a stalled client lasted %.1fs" % waited
        s.close()
    working.publish("alive/t", b"after", 1)
    assert working.get().payload == b"after"
    b.assert_alive()


@pytest.mark.shootout_only  # --connect-timeout is shootout's
def test_stalled_tls_handshakes_are_cut_at_the_connect_timeout(broker_factory, tls_certs):
    """A client that opens a TCP connection to the TLS listener and sends
    nothing, or half a ClientHello, is closed once --connect-timeout
    passes, as one that never sends CONNECT; a TLS client connected at the
    same time is served throughout."""
    port = free_port()
    b = broker_factory(conf=tls_conf(tls_certs, port),
                       extra_args=("--connect-timeout", str(CONNECT_TIMEOUT)))
    working = paho(b, port, "tls-working", tls_certs)
    working.connect()
    hello = half_client_hello()
    assert_stalled_clients_are_cut(b, port, [lambda s: None, lambda s: s.sendall(hello)], working)


def test_client_rejects_wrong_server_ca(broker_factory, tls_certs):
    port = free_port()
    b = broker_factory(conf=tls_conf(tls_certs, port))
    c = paho(b, port, "distrust", tls_certs, ca=tls_certs["wrong_ca"])
    with pytest.raises(ssl.SSLError):
        c.connect(timeout=2)


@pytest.mark.shootout_only  # the log line is shootout's
def test_use_identity_as_username_logs_cn(broker_factory, tls_certs):
    port = free_port()
    b = broker_factory(conf=tls_conf(tls_certs, port, require=True, identity=True))
    c = paho(b, port, "ident", tls_certs)
    c.connect()
    c.disconnect()
    assert "certificate CN 'tls-user' is the username" in b.stderr_text()


@pytest.mark.shootout_only  # our connect log line names the user
def test_identity_is_the_username_for_passwords_and_acl(broker_factory, tls_certs, tmp_path):
    """The certificate's CN is the user: no password is asked even though a
    password file is in force (tls-user is not in it), and the ACL applies
    the rules of user tls-user whatever username CONNECT carries."""
    pw = tmp_path / "passwd"
    subprocess.run([SHOOTOUT_BIN, "passwd", "-c", "-b", str(pw), "someone", "secret"], check=True,
                   capture_output=True, timeout=30)
    acl = tmp_path / "acl"
    acl.write_text("user tls-user\ntopic readwrite mine/#\n")
    port = free_port()
    b = broker_factory(conf_lines=["password_file %s" % pw, "acl_file %s" % acl],
                       conf=tls_conf(tls_certs, port, require=True, identity=True))
    sub = paho(b, port, "ident-sub", tls_certs)
    sub.connect()
    assert sub.subscribe("mine/t", 1) == [1]
    assert sub.subscribe("other/t", 1) == [0x80]  # not tls-user's to read
    pub = paho(b, port, "ident-pub", tls_certs)
    pub.c.username_pw_set("someone", "wrong")  # ignored: the certificate decides
    pub.connect()
    pub.publish("mine/t", b"x", qos=1)
    assert sub.get().payload == b"x"
    assert "username=tls-user" in b.stderr_text()


def test_mosquitto_clients_with_cafile(broker_factory, tls_certs):
    port = free_port()
    b = broker_factory(conf=tls_conf(tls_certs, port))
    common = ["-h", HOST, "-p", str(port), "--cafile", tls_certs["ca"], "-q", "1"]
    sub = subprocess.Popen(["mosquitto_sub", *common, "-t", "cli/t", "-C", "1", "-W", "10"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        watcher = paho(b, port, "watch", tls_certs)
        watcher.connect()
        watcher.subscribe("cli/t", 1)
        # Publish until mosquitto_sub (subscribed at some point) gets one.
        for _ in range(50):
            subprocess.run(["mosquitto_pub", *common, "-t", "cli/t", "-m", "hello"], check=True,
                           timeout=10)
            watcher.get()
            if sub.poll() is not None:
                break
            try:
                sub.wait(0.2)
            except subprocess.TimeoutExpired:
                pass
        out, err = sub.communicate(timeout=10)
        assert sub.returncode == 0, err
        assert out.strip() == b"hello"
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait(5)


@pytest.mark.shootout_only  # exit codes and messages are shootout's
@pytest.mark.parametrize("setting,expect", [
    ("certfile /nonexistent/server.pem", "/nonexistent/server.pem"),
    ("keyfile /nonexistent/server.key", "/nonexistent/server.key"),
    ("keyfile {client_key}", "{client_key}"),
])
def test_bad_certificate_settings_exit_1(tls_certs, tmp_path, setting, expect):
    conf = tmp_path / "b.conf"
    lines = {"certfile": "certfile %s" % tls_certs["server_cert"],
             "keyfile": "keyfile %s" % tls_certs["server_key"]}
    setting = setting.format(**tls_certs)
    lines[setting.split()[0]] = setting
    conf.write_text("listener %d %s\nlistener %d %s\n%s\n%s\n" % (
        free_port(), HOST, free_port(), HOST, lines["certfile"], lines["keyfile"]))
    r = subprocess.run([SHOOTOUT_BIN, "broker", "-c", str(conf)], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=20)
    assert r.returncode == 1, r.stderr
    assert expect.format(**tls_certs).encode() in r.stderr, r.stderr
