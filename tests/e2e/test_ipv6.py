"""The broker on an IPv6 loopback listener, with paho-mqtt and mosquitto_pub."""
import queue
import signal
import subprocess
import time

import paho.mqtt.client as mqtt
import pytest

from conftest import SHOOTOUT_BIN, ipv6_loopback_port, require_shootout

pytestmark = pytest.mark.shootout_only


def test_ipv6_listener_serves_paho_and_mosquitto_pub(tmp_path):
    require_shootout()
    port = ipv6_loopback_port()
    err = open(tmp_path / "stderr", "wb")
    proc = subprocess.Popen([SHOOTOUT_BIN, "broker", "--bind", "::1", "--port", str(port)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    try:
        got = queue.Queue()
        connected = queue.Queue()
        sub = mqtt.Client(client_id="v6-sub", protocol=mqtt.MQTTv311)
        sub.on_connect = lambda c, u, f, rc: connected.put(rc)
        sub.on_subscribe = lambda c, u, mid, q: connected.put("suback")
        sub.on_message = lambda c, u, m: got.put((m.topic, m.payload))
        for _ in range(100):
            try:
                sub.connect("::1", port)
                break
            except OSError:
                if proc.poll() is not None:
                    raise AssertionError("broker exited: %s" % open(tmp_path / "stderr").read())
                time.sleep(0.05)
        sub.loop_start()
        assert connected.get(timeout=5) == 0
        sub.subscribe("v6/#", 1)
        assert connected.get(timeout=5) == "suback"
        subprocess.run(["mosquitto_pub", "-h", "::1", "-p", str(port), "-t", "v6/x", "-m", "over ipv6",
                        "-q", "1"], check=True, timeout=10)
        assert got.get(timeout=5) == ("v6/x", b"over ipv6")
        sub.disconnect()
        sub.loop_stop()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        err.close()
    text = open(tmp_path / "stderr").read()
    assert "listening on [::1]:%d" % port in text
    assert "AddressSanitizer" not in text and "runtime error:" not in text
