"""`shootout bench` over MQTT 5 and 3.1 (--mqtt-version 5, 3.1), and mqtt-load's
persistent sessions (--session persistent) and offline subscribers
(--offline: the broker's durable path), end to end against our broker with
persistence on and against Mosquitto with persistence on, each started by
the test with max_queued_messages raised. Also the client's side of MQTT 5
against a fake broker that refuses, disconnects or limits on purpose. The
counts must add up, the sessions must be gone after a run, and failures must
give the documented exit codes. No timing assertions."""

import json
import os
import re
import struct

import pytest

import mqtt_raw as R
from conftest import HOST, IS_PEER
from test_bench import (EXIT_MISSED, EXIT_RUNTIME, EXIT_USAGE, FakeBroker, bench, bench_json,
                        check_result_model, fake_broker, target)  # noqa: F401 (fake_broker: a fixture)

BROKERS = ["shootout", "mosquitto"]
QUEUE = 100000  # max_queued_messages of the brokers under test: far above any run here


def start(broker_factory, kind, **kw):
    """Our broker or Mosquitto. With SHOOTOUT_TEST_PEER=mosquitto the
    factory would start Mosquitto for both: the mosquitto cases cover it."""
    if IS_PEER and kind == "shootout":
        pytest.skip("the mosquitto case runs this against Mosquitto")
    return broker_factory(kind=kind, **kw)


def durable_broker(broker_factory, tmp_path, kind, max_queued=QUEUE, max_inflight=None):
    """Our broker or Mosquitto, persistence on in tmp_path/data-<kind>,
    queues raised to max_queued. Returns (broker, data directory)."""
    data = str(tmp_path / ("data-" + kind))
    limits = {"max_queued_messages": max_queued}
    if max_inflight is not None:
        limits["max_inflight_messages"] = max_inflight
    # conf_lines makes Mosquitto run as this user (it can then write data);
    # with them it needs allow_anonymous spelled out.
    b = start(broker_factory, kind, persistence_dir=data, conf_lines=("allow_anonymous true",),
              **limits)
    return b, data


def mosquitto_qos2_inflight(kind, version, qos):
    """Mosquitto 2.0.11 stalls QoS 2 messages queued behind a full inflight
    window for an MQTT 3.1 or 3.1.1 client (fixed in 2.0.13; see test_bench.py):
    its subscribers stop at about 40 messages. An MQTT 5 subscriber that
    gives no Receive Maximum never has a queue behind its window; a 3.1.1
    one needs Mosquitto's window unlimited (0). So does a 3.1 one."""
    return 0 if kind == "mosquitto" and version != "5" and qos == 2 else None


def session_prefixes(broker):
    """The client id prefixes (one per run) of the bench's connections,
    from the broker's connection log lines."""
    return sorted(set(re.findall(r"\b(ld[0-9a-f]{8}\.\d+)-0\b", broker.stderr_text())))


def assert_sessions_ended(broker, prefix, subscribers):
    """No subscriber session of the run is left on the broker: a clean
    session 0 connect with its id finds none. Then the control: the broker
    does keep this id's session across connections (else the check proves
    nothing), and the session the check made is removed."""
    for i in range(subscribers):
        cid = "%s-%d" % (prefix, i)
        with broker.raw() as c:
            assert not c.connect_ok(cid, clean_session=False).session_present, \
                "session %s left on the broker" % cid
            c.send(R.disconnect())
            assert c.wait_closed() == []
    cid = "%s-0" % prefix
    with broker.raw() as c:
        assert c.connect_ok(cid, clean_session=False).session_present
        c.send(R.disconnect())
        assert c.wait_closed() == []
    with broker.raw() as c:
        c.connect_ok(cid, clean_session=True)
        c.send(R.disconnect())
        assert c.wait_closed() == []


def log_bytes(data):
    return sum(os.path.getsize(os.path.join(data, f)) for f in os.listdir(data) if f.startswith("log."))


# ---------------------------------------------------------------- MQTT 5, clean sessions

@pytest.mark.parametrize("kind", BROKERS)
@pytest.mark.parametrize("qos", [0, 1, 2])
def test_v5_load(broker_factory, tmp_path, kind, qos):
    b = start(broker_factory, kind)
    doc, _ = bench_json(tmp_path, "mqtt-load", "--target", target(b), "--conns", 10, "--messages", 200,
                      "--qos", qos, "--mqtt-version", 5)
    check_result_model(doc, "mqtt-load")
    [r] = doc["benchmarks"]
    assert r["name"] == "mqtt-load/%s/mqtt5/10c" % target(b)
    assert r["config"]["protocol_level"] == 5 and r["config"]["qos"] == qos
    assert r["config"]["persistent"] == 0 and r["config"]["offline"] == 0
    assert r["messages"] == {"sent": 5 * 200, "received": 5 * 200, "lost": 0}
    assert "phases" not in r
    # The broker saw MQTT 5 clients.
    log = b.stderr_text()
    assert ("protocol=5" in log) if kind == "shootout" else ("p5, c1" in log)


@pytest.mark.parametrize("kind", BROKERS)
@pytest.mark.parametrize("qos", [0, 1, 2])
def test_v5_ping(broker_factory, tmp_path, kind, qos):
    b = start(broker_factory, kind)
    pairs, wsubs, m = 4, 2, 30
    doc, _ = bench_json(tmp_path, "mqtt-ping", "--target", target(b), "--pairs", pairs, "--wsubs", wsubs,
                      "--messages", m, "--qos", qos, "--mqtt-version", 5)
    check_result_model(doc, "mqtt-ping")
    [r] = doc["benchmarks"]
    assert r["name"] == "mqtt-ping/%s/mqtt5/4p2w" % target(b)
    assert r["config"]["protocol_level"] == 5
    assert r["messages"] == {"sent": 2 * m * pairs, "received": 2 * m * (pairs + wsubs), "lost": 0}
    assert 0 < r["latency"]["min"] <= r["latency"]["max"]


def test_default_version_is_311(broker, tmp_path):
    doc, _ = bench_json(tmp_path, "mqtt-load", "--target", target(broker), "--conns", 2, "--messages", 5,
                      "--mqtt-version", "311")
    [r] = doc["benchmarks"]
    assert r["config"]["protocol_level"] == 4 and r["name"] == "mqtt-load/%s/2c" % target(broker)


# ---------------------------------------------------------------- persistent sessions

@pytest.mark.parametrize("kind", BROKERS)
@pytest.mark.parametrize("version", ["3.1", "3.1.1", "5"])
def test_persistent_online(broker_factory, tmp_path, kind, version):
    b, _ = durable_broker(broker_factory, tmp_path, kind)
    doc, _ = bench_json(tmp_path, "mqtt-load", "--target", target(b), "--conns", 8, "--messages", 300,
                      "--qos", 1, "--mqtt-version", version, "--session", "persistent", "--runs", 2)
    iters = [r for r in doc["benchmarks"] if r["run_type"] == "iteration"]
    assert len(iters) == 2
    for r in iters:
        assert r["config"]["persistent"] == 1 and r["config"]["offline"] == 0
        assert r["messages"] == {"sent": 4 * 300, "received": 4 * 300, "lost": 0}
        assert r["throughput_messaging"]["value"] > 0 and "phases" not in r
    # Each run had ids of its own, and left no session behind.
    prefixes = session_prefixes(b)
    assert len(prefixes) == 2
    for prefix in prefixes:
        assert_sessions_ended(b, prefix, 4)


@pytest.mark.parametrize("kind", BROKERS)
@pytest.mark.parametrize("version", ["3.1", "3.1.1", "5"])
@pytest.mark.parametrize("qos", [1, 2])
def test_offline(broker_factory, tmp_path, kind, version, qos):
    b, data = durable_broker(broker_factory, tmp_path, kind,
                             max_inflight=mosquitto_qos2_inflight(kind, version, qos))
    subs, m = 3, 400
    doc, p = bench_json(tmp_path, "mqtt-load", "--target", target(b), "--conns", 2 * subs, "--messages", m,
                      "--qos", qos, "--mqtt-version", version, "--session", "persistent", "--offline",
                      "--server-pid", b.proc.pid)
    check_result_model(doc, "mqtt-load")
    [r] = doc["benchmarks"]
    variant = {"5": "mqtt5-offline", "3.1": "mqtt31-offline"}.get(version, "offline")
    assert r["name"] == "mqtt-load/%s/%s/%dc" % (kind, variant, 2 * subs)
    assert r["config"]["offline"] == 1 and r["config"]["persistent"] == 1
    assert r["messages"] == {"sent": subs * m, "received": subs * m, "lost": 0}
    pub, drain = r["phases"]["publish"], r["phases"]["drain"]
    assert pub["duration_s"] > 0 and drain["duration_s"] > 0
    assert pub["throughput"]["value"] == pytest.approx(subs * m / pub["duration_s"])
    assert drain["throughput"]["value"] == pytest.approx(subs * m / drain["duration_s"])
    assert "acknowledged" in pub["throughput"]["definition"]
    assert "reconnect" in drain["throughput"]["definition"]
    assert r["duration_s"] == pytest.approx(pub["duration_s"] + drain["duration_s"])
    assert r["throughput"]["value"] == pytest.approx(subs * m / r["duration_s"])
    assert "throughput_messaging" not in r
    assert r["server"]["cpu_s"] > 0
    assert "publish k msg/s" in p.stdout and "drain k msg/s" in p.stdout
    [prefix] = session_prefixes(b)
    assert_sessions_ended(b, prefix, subs)
    if kind == "shootout":
        # Every message went through the log (Mosquitto writes its file at
        # shutdown only).
        assert log_bytes(data) > subs * m * 16


@pytest.mark.parametrize("kind", BROKERS)
def test_offline_over_the_queue_cap_fails(broker_factory, tmp_path, kind):
    b, _ = durable_broker(broker_factory, tmp_path, kind, max_queued=50)
    out = tmp_path / "failed.json"
    p = bench("mqtt-load", "--target", target(b), "--conns", 4, "--messages", 200, "--qos", 1,
              "--session", "persistent", "--offline", "--timeout", 2, "--json", out)
    assert p.returncode == EXIT_MISSED, p.stderr
    assert "2 of 2 subscribers are missing messages" in p.stderr
    assert "max_queued_messages" in p.stderr
    with open(out) as f:
        [r] = json.load(f)["benchmarks"]
    assert r["messages"]["sent"] == 400 and 0 < r["messages"]["lost"] < 400
    assert r["messages"]["received"] + r["messages"]["lost"] == 400
    assert r["phases"]["publish"]["throughput"]["value"] > 0  # the broker took them all
    assert r["errors"]["timeout"] == 1
    [prefix] = session_prefixes(b)
    assert_sessions_ended(b, prefix, 2)  # ended after the failure too


# ---------------------------------------------------------------- usage

@pytest.mark.parametrize("args, complaint", [
    (["mqtt-load", "--offline", "--qos", "1"], "--offline needs --session persistent"),
    (["mqtt-load", "--session", "persistent", "--offline"], "--offline needs --qos 1 or 2"),
    (["mqtt-load", "--session", "durable"], "--session wants clean or persistent, not 'durable'"),
    (["mqtt-load", "--mqtt-version", "4"],
     "--mqtt-version wants 3.1 (or 31), 3.1.1 (or 311) or 5, not '4'"),
    (["mqtt-ping", "--mqtt-version", "5.0"],
     "--mqtt-version wants 3.1 (or 31), 3.1.1 (or 311) or 5, not '5.0'"),
    (["mqtt-ping", "--session", "persistent"], "unrecognized option"),
])
def test_usage_errors(args, complaint):
    p = bench(*args)
    assert p.returncode == EXIT_USAGE
    assert complaint in p.stderr


def test_help_documents_the_options():
    load = bench("mqtt-load", "--help").stdout
    for text in ("--mqtt-version", "--session", "--offline", "max_queued_messages"):
        assert text in load
    assert "--mqtt-version" in bench("mqtt-ping", "--help").stdout


# ---------------------------------------------------------------- MQTT 5 against a fake broker

class FakeBroker5(FakeBroker):
    """An MQTT 5 broker that misbehaves as told:
    'puback-quota'  acknowledges every QoS 1 PUBLISH with PUBACK 0x97
                    (Quota exceeded);
    'refuse'        answers CONNECT with CONNACK 0x87 (Not authorized);
    'busy'          answers SUBSCRIBE with DISCONNECT 0x89 (Server busy);
    'forgetful'     accepts and acknowledges everything but never keeps a
                    session (CONNACK session present 0 every time);
    'recvmax'       gives Receive Maximum 3 and acknowledges nothing, so a
                    client never has more than 3 publishes unacknowledged.
    published counts the PUBLISHes received."""

    def _on_packet(self, s, ptype, body):
        try:
            self._answer(s, ptype, body)
        except OSError:  # the bench failed the run and closed first
            pass

    def _answer(self, s, ptype, body):
        if ptype == R.CONNECT:
            reason = 0x87 if self.mode == "refuse" else 0
            props = [(R.RECEIVE_MAX, 3)] if self.mode == "recvmax" else []
            s.sendall(R.packet(R.CONNACK, 0, bytes([0, reason]) + R.props(props)))
        elif ptype == R.SUBSCRIBE:
            if self.mode == "busy":
                s.sendall(R.disconnect5(0x89, [(R.REASON_STRING, "try later")]))
                return
            packet_id = struct.unpack("!H", body[:2])[0]
            s.sendall(R.packet(R.SUBACK, 0, struct.pack("!H", packet_id) + R.props() + body[-1:]))
        elif ptype == R.PUBLISH:
            self.published += 1
            if self.mode == "recvmax":
                return
            topic_len = struct.unpack("!H", body[:2])[0]
            packet_id = struct.unpack("!H", body[2 + topic_len:4 + topic_len])[0]
            reason = 0x97 if self.mode == "puback-quota" else 0
            s.sendall(R.ack5(R.PUBACK, packet_id, reason))


def fake_target(fb):
    return "%s:%d" % (HOST, fb.port)


@pytest.mark.parametrize("mode, args, complaint", [
    ("puback-quota", ["mqtt-load", "--conns", 2, "--qos", 1],
     "the broker answered with PUBACK 0x97 (Quota exceeded)"),
    ("refuse", ["mqtt-ping", "--pairs", 1, "--wsubs", 0],
     "refused by the broker: CONNACK 0x87 (Not authorized)"),
    ("busy", ["mqtt-load", "--conns", 2],
     'disconnected by the broker: reason 0x89 (Server busy): "try later"'),
])
def test_v5_reason_codes_fail_the_run(fake_broker, mode, args, complaint):
    fb = fake_broker(mode, FakeBroker5)
    p = bench(*args, "--target", fake_target(fb), "--messages", 10, "--mqtt-version", 5,
              "--timeout", 5)
    assert p.returncode == EXIT_RUNTIME, p.stderr
    assert complaint in p.stderr


def test_v5_session_not_kept_is_messages_missing(fake_broker):
    fb = fake_broker("forgetful", FakeBroker5)
    p = bench("mqtt-load", "--target", fake_target(fb), "--conns", 2, "--messages", 5, "--qos", 1,
              "--mqtt-version", 5, "--session", "persistent", "--offline", "--timeout", 5)
    assert p.returncode == EXIT_MISSED, p.stderr
    assert "the broker kept no session for client ld" in p.stderr
    assert fb.published == 5  # the publish phase went through


def test_v5_receive_maximum_bounds_the_window(fake_broker):
    fb = fake_broker("recvmax", FakeBroker5)
    p = bench("mqtt-load", "--target", fake_target(fb), "--conns", 4, "--messages", 50, "--qos", 1,
              "--mqtt-version", 5, "--timeout", 1)
    assert p.returncode == EXIT_MISSED, p.stderr  # nothing acknowledged, nothing delivered
    assert fb.published == 2 * 3  # each publisher stopped at the broker's Receive Maximum


def test_offline_publish_phase_without_acknowledgements(fake_broker):
    fb = fake_broker("recvmax", FakeBroker5)
    p = bench("mqtt-load", "--target", fake_target(fb), "--conns", 4, "--messages", 50, "--qos", 1,
              "--mqtt-version", 5, "--session", "persistent", "--offline", "--timeout", 1)
    assert p.returncode == EXIT_MISSED, p.stderr
    assert ("2 of 2 publishers are missing acknowledgements: 100 of 100 messages not acknowledged "
            "after no progress for 1 s (publisher 0 got 0 of 50)") in p.stderr
