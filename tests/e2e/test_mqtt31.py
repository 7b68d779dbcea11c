"""MQTT 3.1 (protocol name "MQIsdp", level 3) on every listener: the 3.1
CONNACK and client identifier rules, what a 3.1 client may send that 3.1.1
refuses, and 3.1 clients (paho MQTTv31, mosquitto_pub/_sub -V mqttv31, raw)
together with 3.1.1 and 5.0 ones over TCP, TLS and WebSockets: QoS 0/1/2,
retained messages, wills, persistent sessions (also across a restart with
persistence), ACLs; and `shootout bench --mqtt-version 3.1`.

Every test here also runs against Mosquitto 2.0.11
(SHOOTOUT_TEST_PEER=mosquitto): where 3.1 leaves a choice open, what
Mosquitto does is what the broker does (docs/broker.md)."""

import os
import struct
import subprocess
import time

import paho.mqtt.client as mqtt
import pytest

import mqtt_raw as R
from conftest import HOST, IS_PEER, free_port
from mqtt_paho import PahoClient, PahoClient5
from test_acl import files  # noqa: F401 (a fixture: password and ACL files)
from test_bench import bench_json, check_result_model, target
from test_bench_durable import start
from test_tls import tls_conf
from test_websockets import ws_conf

V31, V311, V5 = mqtt.MQTTv31, mqtt.MQTTv311, mqtt.MQTTv5
VERSIONS = [V31, V311, V5]
NAMES = {V31: "v31", V311: "v311", V5: "v5"}
QUIET = 0.5  # how long "nothing arrives" is watched for
CLI_TIMEOUT = 20


def raw31(b, client_id, clean=True, **kw):
    """A raw connection that has sent a 3.1 CONNECT (nothing read yet)."""
    c = b.raw()
    c.send(R.connect(client_id, clean, protocol_name="MQIsdp", protocol_level=3, **kw))
    return c


def connack_body(c):
    """The next packet, which must be a CONNACK: its flags and body bytes."""
    p = c.expect(R.CONNACK)
    return p.flags, p.body


def paho(b, client_id, version, port=None, transport="tcp", tls=None, **kw):
    """A paho client of the version on b's port (or port), closed at teardown."""
    if version == V5:
        c = PahoClient5(HOST, port or b.port, client_id, transport=transport, tls=tls, **kw)
    else:
        c = PahoClient(HOST, port or b.port, client_id, protocol=version, transport=transport,
                       tls=tls, **kw)
    b.clients.append(c)
    return c


# ---------------------------------------------------------------- CONNECT and CONNACK

def test_connack_accepted_has_no_session_present_byte(broker):
    c = raw31(broker, "a-3.1-client")
    assert connack_body(c) == (0, b"\x00\x00")
    c.send(R.pingreq())
    c.expect(R.PINGRESP)


@pytest.mark.parametrize("clean", [True, False], ids=["clean", "persistent"])
def test_empty_client_id_is_rejected(broker, clean):
    """3.1 requires an id of 1 to 23 bytes: an empty one gets CONNACK 2,
    with a clean session too (3.1.1 would assign one)."""
    c = raw31(broker, "", clean)
    assert connack_body(c) == (0, b"\x00\x02")
    assert c.wait_closed() == []


@pytest.mark.parametrize("length", [23, 24, 100, 65535])
def test_client_id_past_23_bytes_is_let_in(broker, length):
    """3.1 says a server refuses ids past 23 bytes; Mosquitto lets them in,
    and so do we (3.1.1 allowed it, and 3.1 tools send such ids)."""
    cid = ("id-%d-" % length).ljust(length, "x")
    c = raw31(broker, cid)
    assert connack_body(c) == (0, b"\x00\x00")
    # The whole id names the session: a 3.1.1 client finds it.
    c2 = raw31(broker, cid, clean=False)
    assert connack_body(c2) == (0, b"\x00\x00")
    assert c.wait_closed() == []  # taken over
    c2.send(R.disconnect())
    assert c2.wait_closed() == []
    c3 = broker.raw()
    assert c3.connect_ok(cid, clean_session=False).session_present


@pytest.mark.parametrize("name, level", [("MQIsdp", 4), ("MQIsdp", 5), ("MQIsdp", 0), ("MQTT", 3)])
def test_mismatched_name_and_level_get_connack_1(broker, name, level):
    """Each protocol name with a level that is not its own: CONNACK 1 in the
    3.1/3.1.1 form (also for level 5), then the close."""
    c = broker.raw()
    c.send(R.connect("mismatch", protocol_name=name, protocol_level=level))
    assert connack_body(c) == (0, b"\x00\x01")
    assert c.wait_closed() == []


def test_login_return_codes_match_311(broker_factory, files):  # noqa: F811
    pw, acl = files
    b = broker_factory(conf_lines=["password_file " + pw, "acl_file %s" % acl,
                                   "allow_anonymous false"])
    codes = {}
    for name, level in (("MQIsdp", 3), ("MQTT", 4)):
        for what, login in (("anonymous", {}), ("wrong", dict(username="alice", password=b"no")),
                            ("right", dict(username="alice", password=b"alice-pw"))):
            c = b.raw()
            c.send(R.connect("login-%d" % level, protocol_name=name, protocol_level=level, **login))
            flags, body = connack_body(c)
            assert flags == 0 and body[0] == 0
            codes[level, what] = body[1]
    assert codes[3, "right"] == 0
    assert codes[3, "anonymous"] == 5  # not authorized
    assert codes[3, "wrong"] in (4, 5)
    assert all(codes[3, w] == codes[4, w] for w in ("anonymous", "wrong", "right"))


def test_connect_flags_31_never_required(broker):
    """The reserved Connect Flags bit, and Will QoS and Retain without a
    will, are errors in 3.1.1 but not in 3.1 (where they mean nothing)."""
    for cid, flags in (("reserved", 0x02 | 0x01), ("will-qos", 0x02 | 0x08), ("will-retain", 0x02 | 0x20)):
        c = raw31(broker, cid, flags_override=flags)
        assert connack_body(c) == (0, b"\x00\x00"), cid
        c.send(R.pingreq())
        c.expect(R.PINGRESP)
        c311 = broker.raw()
        c311.send(R.connect(cid + "-311", flags_override=flags))
        assert c311.wait_closed() == [], cid
    # No will was meant, so none is published when the connection drops.
    watcher = broker.raw_connected("watcher")
    watcher.subscribe(1, [("#", 0)])
    c = raw31(broker, "no-will", flags_override=0x02 | 0x10 | 0x20)
    connack_body(c)
    c.abort()
    watcher.expect_nothing(QUIET)


def test_fixed_header_flags_only_checked_on_publish(broker):
    """3.1 has DUP, QoS and RETAIN in every fixed header: a retried
    SUBSCRIBE, UNSUBSCRIBE or PUBREL may carry DUP, and the bits mean
    nothing elsewhere. 3.1.1 refuses them."""
    c = raw31(broker, "flags")
    connack_body(c)
    c.send(R.subscribe(1, [("f/x", 1)], flags=0x0A))
    assert c.expect(R.SUBACK).granted == [1]
    c.send(R.unsubscribe(2, ["f/x"], flags=0x0A))
    c.expect(R.UNSUBACK)
    c.send(R.publish("f/q2", b"x", qos=2, packet_id=3))
    c.expect(R.PUBREC)
    c.send(R.pubrel(3, flags=0x0A))
    assert c.expect(R.PUBCOMP).packet_id == 3
    c.send(R.packet(R.PINGREQ, 0x02))
    c.expect(R.PINGRESP)
    c.send(R.packet(R.PUBLISH, 0x06, R.mqtt_str("f/x") + b"\x00\x01"))  # QoS 3
    assert c.wait_closed() == []

    c311 = broker.raw_connected("flags-311")
    c311.send(R.subscribe(1, [("f/x", 1)], flags=0x0A))
    assert c311.wait_closed() == []


# ---------------------------------------------------------------- with 3.1.1 and 5 clients

@pytest.fixture
def listeners(broker_factory, tls_certs):
    """A broker with a plain, a TLS and a WebSocket listener: returns it and
    a function giving a paho client of a version on a transport."""
    tls_port, ws_port = free_port(), free_port()
    b = broker_factory(conf=tls_conf(tls_certs, tls_port) + "\n" + ws_conf(ws_port))

    def client(client_id, version, transport, **kw):
        if transport == "tls":
            return paho(b, client_id, version, tls_port, tls=dict(ca_certs=tls_certs["ca"]), **kw)
        if transport == "ws":
            return paho(b, client_id, version, ws_port, transport="websockets", **kw)
        return paho(b, client_id, version, **kw)
    b.client = client
    return b


@pytest.mark.parametrize("transport", ["tcp", "tls", "ws"])
def test_qos_0_1_2_both_ways(listeners, transport):
    """A 3.1, a 3.1.1 and an MQTT 5 client each subscribe and publish at
    every QoS: each gets every message at the QoS it was sent with."""
    clients = {}
    for v in VERSIONS:
        # The 3.1 client on the transport under test, the others across.
        c = listeners.client("%s-%s" % (NAMES[v], transport), v, transport if v == V31 else "tcp")
        c.connect()
        assert c.subscribe("x/#", 2) == [2]
        clients[v] = c
    sent = []
    for v, c in clients.items():
        for qos in (0, 1, 2):
            topic, payload = "x/%s/%d" % (NAMES[v], qos), b"%s q%d" % (NAMES[v].encode(), qos)
            c.publish(topic, payload + b"." * (3000 * qos), qos)
            sent.append((topic, payload, qos))
    for v, c in clients.items():
        got = sorted((m.topic, m.payload.rstrip(b"."), m.qos) for m in c.get_n(len(sent)))
        assert got == sorted(sent), NAMES[v]
        c.expect_none(QUIET)


def test_retained_messages_both_ways(listeners):
    keepers = {}
    for v in VERSIONS:
        keepers[v] = listeners.client("keeper-%s" % NAMES[v], v, "tcp")
        keepers[v].connect()
        keepers[v].publish("r/%s" % NAMES[v], NAMES[v].encode(), 1, retain=True)
    for v in VERSIONS:
        c = listeners.client("late-%s" % NAMES[v], v, "ws" if v == V31 else "tls")
        c.connect()
        c.subscribe("r/#", 2)
        got = sorted((m.topic, m.payload, m.retain) for m in c.get_n(3))
        assert got == sorted(("r/%s" % NAMES[w], NAMES[w].encode(), True) for w in VERSIONS), NAMES[v]
    # A 3.1 client clears a retained message of an MQTT 5 one.
    keepers[V31].publish("r/v5", b"", 1, retain=True)
    c = listeners.client("later", V5, "tcp")
    c.connect()
    c.subscribe("r/#", 1)
    assert sorted(m.topic for m in c.get_n(2)) == ["r/v31", "r/v311"]
    c.expect_none(QUIET)


def test_wills_both_ways(listeners):
    watchers = []
    for v in VERSIONS:
        w = listeners.client("watch-%s" % NAMES[v], v, "tcp")
        w.connect()
        w.subscribe("will/#", 2)
        watchers.append(w)
    for v, transport in ((V31, "tls"), (V311, "ws"), (V5, "tcp")):
        dying = listeners.client("dying-%s" % NAMES[v], v, transport,
                                 will=dict(topic="will/%s" % NAMES[v], payload=b"gone", qos=2))
        dying.connect()
        dying.drop()
        for w in watchers:
            m = w.get()
            assert (m.topic, m.payload, m.qos) == ("will/%s" % NAMES[v], b"gone", 2)
    # A 3.1 DISCONNECT leaves no will.
    polite = listeners.client("polite", V31, "tcp", will=dict(topic="will/polite", payload=b"x"))
    polite.connect()
    polite.disconnect()
    for w in watchers:
        w.expect_none(QUIET)


def drain(c, n):
    """n PUBLISHes for a raw client, acknowledged (QoS 2 to the end)."""
    seen = []
    before, last = c.collect_until(lambda p: seen.append(p) or len(seen) == n)
    return before + [last]


def park31(b, client_id):
    """A persistent 3.1 session on d/1 (QoS 1) and d/2 (QoS 2), offline."""
    c = raw31(b, client_id, clean=False)
    assert connack_body(c) == (0, b"\x00\x00")
    assert c.subscribe(1, [("d/1", 1), ("d/2", 2)]).granted == [1, 2]
    c.send(R.disconnect())
    assert c.wait_closed() == []


def publish_queued(b, n=4):
    """Publishes n messages to d/1 and d/2 (QoS 1 and 2) from a 3.1.1 and
    an MQTT 5 client; returns their payloads."""
    payloads = []
    for v in (V311, V5):
        p = paho(b, "pub-%s" % NAMES[v], v)
        p.connect()
        for i in range(n):
            qos = 1 + i % 2
            payloads.append(b"%s-%d" % (NAMES[v].encode(), i))
            p.publish("d/%d" % qos, payloads[-1], qos)
        p.disconnect()
    return payloads


def test_persistent_session_without_session_present(broker):
    """A 3.1 session keeps its subscriptions and queued messages, but the
    CONNACK never says so; a 3.1.1 client resuming it is told."""
    park31(broker, "keeper")
    payloads = publish_queued(broker)
    c = raw31(broker, "keeper", clean=False)
    assert connack_body(c) == (0, b"\x00\x00")
    assert sorted(p.payload for p in drain(c, len(payloads))) == sorted(payloads)
    c.expect_nothing(QUIET)
    c.send(R.disconnect())
    assert c.wait_closed() == []
    # The same session, resumed over 3.1.1, then MQTT 5, then 3.1 again.
    c311 = broker.raw()
    assert c311.connect_ok("keeper", clean_session=False).session_present
    c311.send(R.disconnect())
    assert c311.wait_closed() == []
    c5 = broker.raw()
    assert c5.connect5_ok("keeper", clean_start=False,
                          properties=[(R.SESSION_EXPIRY, 0xFFFFFFFF)]).session_present
    c5.send(R.disconnect5())
    assert c5.wait_closed() == []
    # A clean 3.1 CONNECT ends it.
    c = raw31(broker, "keeper", clean=True)
    assert connack_body(c) == (0, b"\x00\x00")
    c.send(R.disconnect())
    assert c.wait_closed() == []
    c311 = broker.raw()
    assert not c311.connect_ok("keeper", clean_session=False).session_present


def session_protocols(data, client_id):
    """The protocol byte of the last SESSION record for client_id in the
    broker's log files (docs/persistence.md, format 2: little-endian; a
    32-byte file header, then records of marker u32, header check u32,
    check u32, length u32, type u8, body; a SESSION body is client_id str,
    expiry u32, expires_at u64, protocol u8, ...)."""
    found = []
    names = sorted(f for f in os.listdir(data) if f.startswith("log.") and "." not in f[4:])
    for name in names:
        with open(os.path.join(data, name), "rb") as f:
            buf = f.read()
        assert struct.unpack_from("<I", buf, 8)[0] == 2, "not a format-2 log"
        pos = 32
        while pos + 17 <= len(buf):
            assert buf[pos:pos + 4] == b"\xfe\x6c\x9a\x3d", f"no record marker at {pos}"
            length, rtype = struct.unpack_from("<IB", buf, pos + 12)
            body = buf[pos + 17:pos + 17 + length]
            if rtype == 1:
                n = struct.unpack_from("<H", body)[0]
                if body[2:2 + n] == client_id.encode():
                    found.append(body[2 + n + 12])
            pos += 17 + length
    return found


@pytest.mark.parametrize("kill", [False, pytest.param(True, marks=pytest.mark.shootout_only)],
                         ids=["sigterm", "kill9"])
def test_session_and_retained_survive_a_restart(broker_factory, tmp_path, kill):
    """With persistence: a 3.1 session, its subscriptions and queued
    messages, and a 3.1 client's retained message survive a restart (and,
    for ours, a kill -9), and the session record says 3.1."""
    data = str(tmp_path / "data")
    b = broker_factory(persistence_dir=data, conf_lines=("allow_anonymous true",))
    park31(b, "survivor")
    keeper = raw31(b, "retainer")
    connack_body(keeper)
    keeper.send(R.publish("r/31", b"kept", qos=1, retain=True, packet_id=1))
    keeper.expect(R.PUBACK)
    keeper.send(R.disconnect())
    payloads = publish_queued(b)
    if b.kind == "shootout":
        assert session_protocols(data, "survivor")[-1] == 3
    if kill:
        b.kill()
    else:
        b.stop()
    b = broker_factory(port=b.port, persistence_dir=data, conf_lines=("allow_anonymous true",))
    if b.kind == "shootout":
        assert set(session_protocols(data, "survivor")) == {3}
    c = raw31(b, "survivor", clean=False)
    assert connack_body(c) == (0, b"\x00\x00")
    assert sorted(p.payload for p in drain(c, len(payloads))) == sorted(payloads)
    c.expect_nothing(QUIET)
    late = paho(b, "late", V5)
    late.connect()
    late.subscribe("r/#", 1)
    m = late.get()
    assert (m.topic, m.payload, m.retain) == ("r/31", b"kept", True)


def test_acl_applies_to_31_clients(broker_factory, files):  # noqa: F811
    """3.1 has no SUBACK failure code: a denied subscription is answered
    with the QoS asked for (Mosquitto does the same) and delivers nothing;
    a denied publish is acknowledged and dropped, as in 3.1.1."""
    pw, acl = files
    b = broker_factory(conf_lines=["password_file " + pw, "acl_file %s" % acl,
                                   "allow_anonymous true"])
    alice = raw31(b, "alice", username="alice", password=b"alice-pw")
    connack_body(alice)
    assert alice.subscribe(1, [("w/#", 1), ("r/#", 2), ("a/#", 0)]).granted == [1, 2, 0]
    admin = paho(b, "admin", V5)
    admin.c.username_pw_set("admin", "admin-pw")
    admin.connect()
    for topic in ("w/1", "r/1", "a/secret", "a/1"):
        admin.publish(topic, topic.encode(), 1)
    got = [alice.next_publish() for _ in range(2)]
    assert [(p.topic, p.qos) for p in got] == [("r/1", 1), ("a/1", 0)]
    alice.send(R.puback(got[0].packet_id))
    alice.expect_nothing(QUIET)
    spy = paho(b, "spy", V311)
    spy.c.username_pw_set("spy", "spy-pw")
    spy.connect()
    spy.subscribe("#", 1)
    alice.send(R.publish("r/2", b"not allowed", qos=1, packet_id=5))
    assert alice.expect(R.PUBACK).packet_id == 5
    alice.send(R.publish("w/2", b"allowed", qos=1, packet_id=6))
    assert alice.expect(R.PUBACK).packet_id == 6
    m = spy.get()
    assert (m.topic, m.payload) == ("w/2", b"allowed")
    spy.expect_none(QUIET)


# ---------------------------------------------------------------- mosquitto_pub / _sub -V mqttv31

def cli(tool, b, *args, port=None):
    return [tool, "-V", "mqttv31", "-h", HOST, "-p", str(port or b.port)] + [str(a) for a in args]


class Cli(subprocess.Popen):
    def close(self):
        """Teardown (as a broker client): a run that did not end is killed."""
        if self.poll() is None:
            self.kill()
            self.wait(5)


def start_sub(b, argv):
    """mosquitto_sub -d running; returns it once its SUBACK arrived."""
    # Line-buffered, so that its SUBACK line shows while it runs.
    p = Cli(["stdbuf", "-oL"] + argv + ["-d"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
    b.clients.append(p)
    deadline = time.monotonic() + CLI_TIMEOUT
    for line in p.stdout:
        if "received SUBACK" in line:
            return p
        assert time.monotonic() < deadline, "mosquitto_sub: no SUBACK"
    raise AssertionError("mosquitto_sub ended before its SUBACK: rc %r" % p.wait())


def finish_sub(p):
    """The topic/payload lines mosquitto_sub -v -d printed until it exited."""
    out, _ = p.communicate(timeout=CLI_TIMEOUT)
    assert p.returncode == 0, out
    return sorted(l for l in out.splitlines() if l.startswith("t/"))


@pytest.mark.parametrize("transport", ["tcp", "tls"])
def test_mosquitto_clients_v31(broker_factory, tls_certs, transport):
    """mosquitto_sub -V mqttv31 gets messages of a 3.1, a 3.1.1 and an
    MQTT 5 publisher; a 3.1.1 and a 5 subscriber get mosquitto_pub -V
    mqttv31's, retained ones included."""
    tls_port = free_port()
    b = broker_factory(conf=tls_conf(tls_certs, tls_port))
    port, extra = (tls_port, ["--cafile", tls_certs["ca"]]) if transport == "tls" else (None, [])
    sub = start_sub(b, cli("mosquitto_sub", b, "-t", "t/#", "-q", 2, "-v", "-C", 4, "-i", "cli-sub",
                        *extra, port=port))
    others = []
    for v in (V311, V5):
        c = paho(b, "other-%s" % NAMES[v], v)
        c.connect()
        c.subscribe("t/#", 2)
        others.append(c)
    for qos in (1, 2):
        subprocess.run(cli("mosquitto_pub", b, "-t", "t/cli%d" % qos, "-m", "cli %d" % qos, "-q", qos,
                           "-i", "cli-pub", *extra, port=port), check=True, timeout=CLI_TIMEOUT)
    for v in (V311, V5):
        others[v == V5].publish("t/%s" % NAMES[v], NAMES[v].encode(), 2)
    assert finish_sub(sub) == ["t/cli1 cli 1", "t/cli2 cli 2", "t/v311 v311", "t/v5 v5"]
    for c in others:
        got = sorted((m.topic, m.payload) for m in c.get_n(4))
        assert got[:2] == [("t/cli1", b"cli 1"), ("t/cli2", b"cli 2")]
    subprocess.run(cli("mosquitto_pub", b, "-t", "t/kept", "-m", "kept", "-q", 1, "-r", *extra, port=port),
                   check=True, timeout=CLI_TIMEOUT)
    late = paho(b, "late", V5)
    late.connect()
    late.subscribe("t/kept", 0)
    m = late.get()
    assert (m.payload, m.retain) == (b"kept", True)
    # And a mosquitto_sub -V mqttv31 that comes later gets it.
    out = subprocess.run(cli("mosquitto_sub", b, "-t", "t/kept", "-C", 1, "-v", *extra, port=port),
                         capture_output=True, text=True, timeout=CLI_TIMEOUT)
    assert out.stdout.strip() == "t/kept kept"


# ---------------------------------------------------------------- bench --mqtt-version 3.1

@pytest.mark.parametrize("kind", ["shootout", "mosquitto"])
def test_bench_load_and_ping_v31(broker_factory, tmp_path, kind):
    b = start(broker_factory, kind)
    doc, _ = bench_json(tmp_path, "mqtt-load", "--target", target(b), "--conns", 10, "--messages", 200,
                        "--qos", 1, "--mqtt-version", "3.1")
    check_result_model(doc, "mqtt-load")
    [r] = doc["benchmarks"]
    assert r["name"] == "mqtt-load/%s/mqtt31/10c" % target(b)
    assert r["config"]["protocol_level"] == 3
    assert r["messages"] == {"sent": 5 * 200, "received": 5 * 200, "lost": 0}
    doc, _ = bench_json(tmp_path, "mqtt-ping", "--target", target(b), "--pairs", 3, "--wsubs", 1,
                        "--messages", 20, "--qos", 2, "--mqtt-version", "31")
    [r] = doc["benchmarks"]
    assert r["name"] == "mqtt-ping/%s/mqtt31/3p1w" % target(b)
    assert r["config"]["protocol_level"] == 3
    assert r["messages"] == {"sent": 2 * 20 * 3, "received": 2 * 20 * 4, "lost": 0}
    # The broker saw 3.1 clients (Mosquitto logs protocol 3.1 as p1).
    log = b.stderr_text()
    assert ("protocol=3.1 " in log) if kind == "shootout" else ("p1, c1" in log)
