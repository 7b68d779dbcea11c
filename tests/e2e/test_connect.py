"""CONNECT / CONNACK handling (MQTT 3.1.1 sections 3.1, 3.2) and the CLI."""

import socket
import subprocess
import time

import pytest

import mqtt_raw as R
from conftest import HOST, SHOOTOUT_BIN, free_port, require_shootout


def test_connack_accepted_exact_bytes(broker):
    c = broker.raw()
    c.send(R.connect("conn-ok", clean_session=True, keepalive=30))
    # CONNACK is exactly 0x20 0x02 <ack flags 0> <rc 0> [MQTT-3.2.2-1]
    p = c.expect(R.CONNACK)
    assert (p.flags, p.body) == (0, b"\x00\x00"), "CONNACK bytes: flags %d body %r" % (p.flags, p.body)
    # and the connection is usable
    c.send(R.pingreq())
    assert c.expect(R.PINGRESP).body == b""


def test_paho_connects(broker):
    c = broker.paho("paho-conn", clean_session=True)
    assert c.connack_rc == 0


def test_username_password_accepted(broker):
    c = broker.raw()
    ack = c.connect("conn-user", username="alice", password=b"secret\x00\xff")
    assert ack.rc == 0


@pytest.mark.parametrize("name,level", [("MQTT", 6), ("MQTT", 3), ("MQTT", 0), ("MQTT", 255)])
def test_unsupported_protocol_level_gets_connack_1_then_close(broker, name, level):
    # [MQTT-3.1.2-2]: CONNACK return code 0x01 then disconnect.
    c = broker.raw()
    c.send(R.connect("conn-level", protocol_name=name, protocol_level=level))
    ack = c.expect(R.CONNACK)
    assert ack.rc == 1
    assert ack.session_present is False  # [MQTT-3.2.2-4]
    rest = c.wait_closed(5)
    assert rest == [], "packets after a refusing CONNACK: %r" % rest


# MQTT 3.1 ("MQIsdp" 3) is accepted, and "MQIsdp" with another level gets
# CONNACK 1 too: test_mqtt31.py.


def test_wrong_protocol_name_closed_without_acceptance(broker):
    # [MQTT-3.1.2-1]: the server MAY disconnect without CONNACK; it must not accept.
    c = broker.raw()
    c.send(R.connect("conn-name", protocol_name="MQTX", protocol_level=4))
    got = c.wait_closed(5)
    assert all(p.type == R.CONNACK and p.rc != 0 for p in got), got


def test_empty_client_id_with_clean_session_accepted(broker):
    # [MQTT-3.1.3-6]/[MQTT-3.1.3-7]: the server assigns a unique id. Two such
    # clients must therefore not take each other over.
    a = broker.raw()
    assert a.connect("", clean_session=True).rc == 0
    b = broker.raw()
    assert b.connect("", clean_session=True).rc == 0
    for c in (a, b):
        c.send(R.pingreq())
        c.expect(R.PINGRESP)
    # both can subscribe and receive
    assert a.subscribe(1, [("anon/t", 1)]).granted == [1]
    assert b.subscribe(1, [("anon/t", 1)]).granted == [1]
    a.send(R.publish("anon/t", b"hi", qos=1, packet_id=5))
    got_ack = False
    got_pub = False
    for _ in range(2):
        p = a.expect_any(5)
        if p.type == R.PUBACK:
            assert p.packet_id == 5
            got_ack = True
        else:
            assert p.type == R.PUBLISH and p.payload == b"hi"
            a.send(R.puback(p.packet_id))
            got_pub = True
    assert got_ack and got_pub
    p = b.next_publish()
    assert p.payload == b"hi"


def test_empty_client_id_without_clean_session_rejected(broker):
    # [MQTT-3.1.3-8]: CONNACK 0x02 (identifier rejected) then close.
    c = broker.raw()
    ack = c.connect("", clean_session=False)
    assert ack.rc == 2
    assert ack.session_present is False
    assert c.wait_closed(5) == []


def test_session_present_is_0_for_a_new_persistent_session(broker):
    c = broker.raw()
    ack = c.connect("conn-new-persistent", clean_session=False)
    assert ack.rc == 0 and ack.session_present is False


def test_session_takeover_closes_the_first_connection(broker):
    # [MQTT-3.1.4-2]: a second CONNECT with the same client id makes the
    # server disconnect the existing client.
    first = broker.raw()
    first.connect_ok("takeover-id")
    second = broker.raw()
    ack = second.connect("takeover-id")
    assert ack.rc == 0
    first.wait_closed(5)
    second.send(R.pingreq())
    second.expect(R.PINGRESP)
    # and a third one takes over from the second
    third = broker.raw()
    third.connect_ok("takeover-id")
    second.wait_closed(5)
    third.send(R.pingreq())
    third.expect(R.PINGRESP)


def test_long_and_unicode_client_ids_accepted(broker):
    # The server MAY accept ids longer than 23 bytes and any UTF-8 [MQTT-3.1.3-5].
    for cid in ("x" * 200, "clé-ünïcödé-€-\U0001F600"):
        c = broker.raw()
        assert c.connect(cid).rc == 0, cid
        c.send(R.disconnect())
        c.wait_closed(5)


# ---------------------------------------------------------------- CLI

def _run(args, timeout=10):
    return subprocess.run([SHOOTOUT_BIN] + args, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=timeout)


@pytest.fixture
def binary():
    require_shootout()
    return SHOOTOUT_BIN


@pytest.mark.shootout_only
def test_cli_help_exits_0_with_usage_on_stdout(binary):
    r = _run(["broker", "--help"])
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode("utf-8", "replace")
    assert "--port" in out and "--bind" in out, out
    for flag in ("--max-connections", "--max-packet-size", "--max-queued-messages", "--max-inflight-messages"):
        assert flag in out, "usage does not mention %s:\n%s" % (flag, out)


@pytest.mark.shootout_only
@pytest.mark.parametrize("args", [
    ["broker", "--no-such-flag"],
    ["broker", "--port"],
    ["broker", "--port", "notanumber"],
    ["broker", "--port", "70000"],
    ["broker", "--bind", "127.0.0.1", "--port", str(free_port()), "--max-connections", "-5"],
], ids=["unknown-flag", "missing-value", "bad-port", "port-out-of-range", "negative-limit"])
def test_cli_usage_errors_exit_2(binary, args):
    r = _run(args)
    assert r.returncode == 2, "exit %r for %r; stderr: %r" % (r.returncode, args, r.stderr)
    assert r.stderr.strip(), "a usage error should explain itself on stderr"


@pytest.mark.shootout_only
def test_port_in_use_exits_1_with_message(binary):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        s.listen(1)
        port = s.getsockname()[1]
        r = _run(["broker", "--bind", HOST, "--port", str(port)])
    assert r.returncode == 1, "exit %r; stderr: %r" % (r.returncode, r.stderr)
    err = r.stderr.decode("utf-8", "replace")
    assert "in use" in err.lower() or str(port) in err, "unclear message: %r" % err
    for marker in ("AddressSanitizer", "runtime error:", "LeakSanitizer"):
        assert marker not in err


@pytest.mark.shootout_only
def test_verbose_flag_accepted_and_logs(broker_factory):
    b = broker_factory(verbose=True)
    c = b.raw()
    c.connect_ok("verbose-client")
    c.send(R.disconnect())
    c.wait_closed(5)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not b.stderr_text().strip():
        time.sleep(0.05)
    assert b.stderr_text().strip(), "-v broker logged nothing to stderr"
