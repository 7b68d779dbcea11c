"""`shootout broker -c FILE`: a mosquitto.conf-style file, overridden by flags."""
import signal
import subprocess
import time

import pytest

from conftest import HOST, SHOOTOUT_BIN, free_port, require_shootout
import mqtt_raw as R

pytestmark = pytest.mark.shootout_only


def start(args, tmp_path):
    require_shootout()
    err = open(tmp_path / "stderr", "wb")
    return subprocess.Popen([SHOOTOUT_BIN, "broker"] + args, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=err), tmp_path / "stderr"


def connect_when_up(port, proc, client_id):
    deadline = time.monotonic() + 10
    while True:
        try:
            c = R.RawClient(HOST, port)
            c.connect_ok(client_id)
            return c
        except (OSError, AssertionError):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def stop(proc, stderr_path):
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    text = open(stderr_path).read()
    assert "AddressSanitizer" not in text and "runtime error:" not in text
    return text


def test_config_file_sets_listener_and_limits(tmp_path):
    port = free_port()
    conf = tmp_path / "broker.conf"
    conf.write_text("# as in mosquitto.conf\nper_listener_settings false\nallow_anonymous true\n"
                    "listener %d %s\nmax_inflight_messages 2\nlog_type all\n" % (port, HOST))
    proc, stderr_path = start(["-c", str(conf)], tmp_path)
    try:
        sub = connect_when_up(port, proc, "conf-sub")
        sub.subscribe(1, [("conf/t", 1)])
        pub = connect_when_up(port, proc, "conf-pub")
        for i in range(5):
            pub.send(R.publish("conf/t", b"%d" % i, qos=1, packet_id=i + 1))
            pub.expect(R.PUBACK)
        # The file's max_inflight_messages 2: two unacknowledged, then nothing.
        assert [sub.next_publish().payload for _ in range(2)] == [b"0", b"1"]
        sub.expect_nothing(0.5)
    finally:
        text = stop(proc, stderr_path)
    assert "listening on %s:%d" % (HOST, port) in text


def test_flags_override_the_file_wherever_they_stand(tmp_path):
    file_port, flag_port = free_port(), free_port()
    conf = tmp_path / "broker.conf"
    conf.write_text("port %d\n" % file_port)
    proc, stderr_path = start(["--port", str(flag_port), "-c", str(conf)], tmp_path)
    try:
        connect_when_up(flag_port, proc, "override").close()
    finally:
        text = stop(proc, stderr_path)
    assert "listening on 127.0.0.1:%d" % flag_port in text


@pytest.mark.parametrize("content,message", [
    ("max_connections many\n", "broker.conf:1: max_connections wants a whole number"),
    ("port 1883\nauth_plugin /etc/passwd\n", "broker.conf:2: unknown setting 'auth_plugin'"),
    ("allow_anonymous maybe\n", "broker.conf:1: allow_anonymous wants true or false, not 'maybe'"),
    # docs/broker.md: only the value that describes the broker is accepted.
    ("port 1883\nper_listener_settings true\n",
     "broker.conf:2: 'per_listener_settings' other than false is not supported yet"),
    ("per_listener_settings\n", "broker.conf:1: 'per_listener_settings' other than false is not supported yet"),
])
def test_bad_config_file_exits_1_naming_the_line(tmp_path, content, message):
    conf = tmp_path / "broker.conf"
    conf.write_text(content)
    r = subprocess.run([SHOOTOUT_BIN, "broker", "-c", str(conf)], capture_output=True, timeout=10)
    assert r.returncode == 1
    assert message in r.stderr.decode()


def test_missing_config_file_exits_1(tmp_path):
    r = subprocess.run([SHOOTOUT_BIN, "broker", "-c", str(tmp_path / "nope.conf")],
                       capture_output=True, timeout=10)
    assert r.returncode == 1
    assert "cannot read" in r.stderr.decode()
