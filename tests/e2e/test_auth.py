"""password_file and allow_anonymous: CONNECT with right and wrong
passwords, unknown users and no username, in MQTT 3.1.1 (raw and paho) and
5.0; files written by `shootout passwd` and by mosquitto_passwd; SIGHUP
adding a user without dropping anyone; the connect log lines."""

import shutil
import subprocess
import urllib.request

import pytest

import mqtt_raw
from conftest import SHOOTOUT_BIN, free_port
from mqtt_paho import PahoClient

HAVE_MOSQUITTO_PASSWD = shutil.which("mosquitto_passwd") is not None


def passwd(*args):
    subprocess.run([SHOOTOUT_BIN, "passwd"] + list(args), check=True, timeout=30,
                   capture_output=True)


@pytest.fixture
def pwfile(tmp_path):
    f = str(tmp_path / "passwd")
    passwd("-c", "-b", f, "alice", "wonder land")
    if HAVE_MOSQUITTO_PASSWD:
        subprocess.run(["mosquitto_passwd", "-b", f, "bob", "builder"], check=True, timeout=30)
    return f


def auth_broker(broker_factory, pwfile, anonymous=True):
    return broker_factory(conf_lines=["password_file " + pwfile,
                                      "allow_anonymous " + ("true" if anonymous else "false")])


def connack(broker, v5=False, **kw):
    c = broker.raw()
    ack = c.connect5(**kw) if v5 else c.connect(**kw)
    rc = ack.rc
    c.close()
    return rc


@pytest.mark.parametrize("anonymous", [True, False])
def test_passwords_v311(broker_factory, pwfile, anonymous):
    b = auth_broker(broker_factory, pwfile, anonymous)
    assert connack(b, client_id="a1", username="alice", password=b"wonder land") == 0
    assert connack(b, client_id="a2", username="alice", password=b"wonderland") == 5
    assert connack(b, client_id="a3", username="alice") == 5
    assert connack(b, client_id="n1", username="nobody", password=b"x") == 5
    assert connack(b, client_id="anon") == (0 if anonymous else 5)
    if HAVE_MOSQUITTO_PASSWD:
        assert connack(b, client_id="b1", username="bob", password=b"builder") == 0
        assert connack(b, client_id="b2", username="bob", password=b"wonder land") == 5
    b.assert_alive()


@pytest.mark.shootout_only("Mosquitto 2.0.11 answers 0x87 for a wrong password too")
def test_passwords_v5_reason_codes(broker_factory, pwfile):
    b = auth_broker(broker_factory, pwfile, anonymous=False)
    assert connack(b, v5=True, client_id="a1", username="alice", password=b"wonder land") == 0
    assert connack(b, v5=True, client_id="a2", username="alice", password=b"nope") == 0x86
    assert connack(b, v5=True, client_id="n1", username="nobody", password=b"x") == 0x86
    assert connack(b, v5=True, client_id="anon") == 0x87
    # A password without a username is an anonymous client.
    assert connack(b, v5=True, client_id="anon2", password=b"wonder land") == 0x87


def test_paho_with_username(broker_factory, pwfile):
    b = auth_broker(broker_factory, pwfile, anonymous=False)
    ok = PahoClient(b.host, b.port, "paho-ok")
    b.clients.append(ok)
    ok.c.username_pw_set("alice", "wonder land")
    ok.connect()
    ok.subscribe("t/#", 1)
    ok.publish("t/1", b"hello", qos=1)
    assert ok.get().payload == b"hello"
    bad = PahoClient(b.host, b.port, "paho-bad")
    b.clients.append(bad)
    bad.c.username_pw_set("alice", "Wonder land")
    bad.connect(expect_rc=5)


def test_sighup_adds_a_user_and_keeps_connections(broker_factory, pwfile):
    b = auth_broker(broker_factory, pwfile, anonymous=False)
    sub = b.raw()
    sub.connect_ok("stay", username="alice", password=b"wonder land")
    sub.subscribe(1, [("hup/#", 0)])
    assert connack(b, client_id="c1", username="carol", password=b"c4rol") == 5
    passwd("-b", pwfile, "carol", "c4rol")
    b.reload()
    pub = b.raw()
    pub.connect_ok("c2", username="carol", password=b"c4rol")
    pub.send(mqtt_raw.publish("hup/1", b"after reload"))
    assert sub.next_publish().payload == b"after reload"
    assert connack(b, client_id="a9", username="alice", password=b"wonder land") == 0


@pytest.mark.shootout_only("Mosquitto gives up the old password file on a failed reload")
def test_broken_password_file_on_reload_keeps_the_old_one(broker_factory, pwfile):
    b = auth_broker(broker_factory, pwfile, anonymous=False)
    with open(pwfile, "a") as f:
        f.write("mallory:plaintext\n")
    text = b.reload()
    assert "reload failed" in text and pwfile + ":" in text
    assert connack(b, client_id="a1", username="alice", password=b"wonder land") == 0
    assert connack(b, client_id="m1", username="mallory", password=b"plaintext") == 5


def test_broken_password_file_at_start_exits_1(tmp_path):
    f = tmp_path / "passwd"
    f.write_text("alice:$7$1000$bad\n")
    r = subprocess.run([SHOOTOUT_BIN, "broker", "--port", "0", "--password-file", str(f)],
                       capture_output=True, timeout=10)
    assert r.returncode == 1
    assert (str(f) + ":1:").encode() in r.stderr


def log_worthy_clients(b, good, bad, kicked, keepalive=60):
    """Alice connects as `good` and disconnects; `bad` is refused her
    password; `kicked` connects and sends a protocol error."""
    c = b.raw()
    c.connect_ok(good, username="alice", password=b"wonder land", keepalive=keepalive)
    c.send(mqtt_raw.disconnect())
    c.wait_closed()
    assert connack(b, client_id=bad, username="alice", password=b"x") == 5
    k = b.raw()
    k.connect_ok(kicked)
    k.send(b"\xf0\x00")  # reserved packet type: a protocol error
    k.wait_closed()


@pytest.mark.parametrize("how", [
    pytest.param("flag", marks=pytest.mark.shootout_only("a shootout flag")), "file"])
def test_connection_messages_false_logs_no_connect_or_disconnect(broker_factory, pwfile, how):
    """Like Mosquitto's connection_messages false: no line for a connect, a
    disconnect or a refused password, nor a disconnect line for a protocol
    error's close (whose diagnostic docs/broker.md keeps at info level)."""
    lines = ["password_file " + pwfile, "allow_anonymous true"]
    metrics = free_port()
    if how == "flag":
        b = broker_factory(conf_lines=lines, extra_args=("--connection-messages", "false",
                                                         "--metrics-port", str(metrics)))
    else:
        b = broker_factory(conf_lines=lines + ["connection_messages false"])
    log_worthy_clients(b, "quiet-ok", "quiet-bad", "quiet-kicked")
    # A client after them all, so that their lines would be out by now.
    last = b.raw()
    last.connect_ok("quiet-last")
    last.send(mqtt_raw.pingreq())
    last.expect(mqtt_raw.PINGRESP)
    text = b.stderr_text()
    for cid in ("quiet-ok", "quiet-bad", "quiet-last"):
        assert cid not in text, text
    if b.kind == "shootout":
        assert "event=" not in text, text
    if how == "flag":
        scrape = urllib.request.urlopen("http://%s:%d/metrics" % (b.host, metrics), timeout=5).read()
        assert b'shootout_broker_auth_failures_total{reason="bad_password"} 1\n' in scrape


@pytest.mark.shootout_only("our log format")
def test_connect_and_disconnect_log_lines(broker_factory, pwfile):
    b = auth_broker(broker_factory, pwfile, anonymous=True)
    log_worthy_clients(b, "logged in", "bad-pw", "kicked", keepalive=33)
    text = b.stderr_text()
    assert ('event=connect client="logged in" addr=127.0.0.1:' in text)
    assert "protocol=3.1.1 username=alice clean=1 keepalive=33 session_present=0" in text
    assert 'event=disconnect client="logged in" reason=client_disconnect' in text
    assert "event=connect_refused client=bad-pw addr=127.0.0.1:" in text
    assert "username=alice reason=bad_password" in text
    assert "event=disconnect client=kicked reason=protocol_error detail=" in text
