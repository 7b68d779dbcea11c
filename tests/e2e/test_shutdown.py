"""Graceful shutdown of the shootout broker on SIGTERM / SIGINT: exit 0
promptly, connections closed. (Process exit codes are shootout's contract;
Mosquitto is not checked here.)"""

import signal
import socket
import time

import pytest

import mqtt_raw as R

pytestmark = pytest.mark.shootout_only

PROMPT = 5.0


def stop_and_time(broker, sig):
    t0 = time.monotonic()
    rc = broker.stop(sig, timeout=10)
    elapsed = time.monotonic() - t0
    assert rc == 0, "exit code %r after signal %d:\n%s" % (rc, sig, broker.stderr_tail())
    assert elapsed < PROMPT, "took %.1fs to exit after signal %d" % (elapsed, sig)
    return elapsed


def assert_port_closed(broker):
    with pytest.raises(OSError):
        socket.create_connection((broker.host, broker.port), timeout=2).close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_with_connected_clients(broker, sig):
    raws = [broker.raw_connected("sd-raw-%d" % i) for i in range(3)]
    sub = raws[0]
    sub.subscribe(1, [("sd/t", 1)])
    raws[1].send(R.publish("sd/t", b"unacked", qos=1, packet_id=1))
    raws[1].expect(R.PUBACK)
    assert sub.next_publish().payload == b"unacked"  # left unacknowledged
    persistent = broker.raw_connected("sd-persistent", clean_session=False)
    persistent.subscribe(1, [("sd/#", 2)])
    pahos = [broker.paho("sd-paho-%d" % i) for i in range(2)]
    pahos[0].subscribe("sd/#", 1)
    not_connected = broker.raw()  # TCP only, no CONNECT yet

    stop_and_time(broker, sig)

    for c in raws + [persistent, not_connected]:
        c.wait_closed(PROMPT)
    for p in pahos:
        assert p.wait_disconnected(PROMPT), "paho client not disconnected"
    assert_port_closed(broker)


def test_sigterm_idle(broker):
    stop_and_time(broker, signal.SIGTERM)
    assert_port_closed(broker)


def test_sigterm_with_half_sent_packet(broker):
    c = broker.raw_connected("sd-half")
    whole = R.publish("sd/half", b"h" * 1000, qos=1, packet_id=1)
    c.send(whole[:300])
    stop_and_time(broker, signal.SIGTERM)
    c.wait_closed(PROMPT)


def test_sigterm_with_a_subscriber_that_never_reads(broker):
    # The broker must not block its shutdown trying to flush to a client
    # whose socket buffers are full.
    stuck = broker.raw()
    stuck.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.connect_ok("sd-stuck")
    stuck.subscribe(1, [("sd/flood", 0)])
    pub = broker.raw_connected("sd-flooder")
    chunk = b"".join(R.publish("sd/flood", b"f" * 8000) for _ in range(64))
    pub.sock.settimeout(0.5)
    sent = 0
    deadline = time.monotonic() + 3
    while sent < 8 * 1024 * 1024 and time.monotonic() < deadline:
        try:
            pub.send(chunk)
        except OSError:  # includes the send timeout: the broker pushes back
            break
        sent += len(chunk)
    stop_and_time(broker, signal.SIGTERM)
    stuck.abort()


def test_sigterm_during_publish_flood(broker):
    sub = broker.paho("sd-flood-sub")
    sub.subscribe("sd/storm", 0)
    pub = broker.raw_connected("sd-storm-pub")
    batch = b"".join(R.publish("sd/storm", b"%05d" % i) for i in range(500))
    for _ in range(10):
        pub.send(batch)
    stop_and_time(broker, signal.SIGTERM)
    assert sub.wait_disconnected(PROMPT)
    pub.wait_closed(PROMPT)


def test_sighup_does_not_stop_the_broker(broker):
    """SIGHUP reloads the password and ACL files (test_auth.py, test_acl.py);
    without them it has nothing to reload, and it must not take the broker
    down."""
    sub = broker.raw_connected("hup-sub")
    sub.subscribe(1, [("hup/t", 0)])
    broker.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 5
    while "SIGHUP received" not in broker.stderr_text():
        assert time.monotonic() < deadline, "SIGHUP not logged:\n" + broker.stderr_tail()
        time.sleep(0.05)
    broker.assert_alive()
    pub = broker.raw_connected("hup-pub")
    pub.send(R.publish("hup/t", b"after hup"))
    assert sub.next_publish().payload == b"after hup"
    stop_and_time(broker, signal.SIGTERM)
