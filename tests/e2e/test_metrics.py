"""The Prometheus endpoint (--metrics-port): GET /metrics parsed, its
counters growing with traffic, and the responder's refusals."""

import socket
import subprocess
import time

import pytest

import http_hostile
import mqtt_raw as R
from conftest import HOST, SHOOTOUT_BIN, free_port

pytestmark = pytest.mark.shootout_only("Mosquitto has no Prometheus endpoint")


def http(port, request):
    """Sends raw request bytes; returns (status, headers dict, body) of the
    response, read until the server closes."""
    with socket.create_connection((HOST, port), timeout=5) as s:
        s.sendall(request)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(l.split(": ", 1) for l in lines[1:])
    return int(lines[0].split()[1]), headers, body


def scrape(port):
    status, headers, body = http(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert headers["Connection"] == "close"
    assert int(headers["Content-Length"]) == len(body)
    samples, types = {}, {}
    for line in body.decode().splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            types[name] = kind
        elif line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples, types


@pytest.fixture
def mbroker(broker_factory):
    port = free_port()
    b = broker_factory(extra_args=("--metrics-port", str(port)))
    b.metrics_port = port
    return b


def test_counters_grow_with_traffic(mbroker):
    before, types = scrape(mbroker.metrics_port)
    assert types["shootout_broker_messages_received_total"] == "counter"
    assert types["shootout_broker_clients_connected"] == "gauge"
    assert before["shootout_broker_clients_connected"] == 0
    sub = mbroker.raw_connected("m-sub")
    sub.subscribe(1, [("m/#", 1)])
    pub = mbroker.raw_connected("m-pub")
    for i in range(5):
        pub.send(R.publish("m/%d" % i, b"x" * 100, retain=(i == 0)))
    for _ in range(5):
        sub.next_publish()
    after, _ = scrape(mbroker.metrics_port)
    assert after["shootout_broker_clients_connected"] == 2
    assert after["shootout_broker_connections_total"] >= before["shootout_broker_connections_total"] + 2
    assert after["shootout_broker_messages_received_total"] >= before["shootout_broker_messages_received_total"] + 5
    assert after["shootout_broker_messages_sent_total"] >= before["shootout_broker_messages_sent_total"] + 5
    assert after["shootout_broker_bytes_received_total"] > before["shootout_broker_bytes_received_total"] + 500
    assert after["shootout_broker_bytes_sent_total"] > before["shootout_broker_bytes_sent_total"] + 500
    assert after["shootout_broker_subscriptions"] == 1
    assert after["shootout_broker_retained_messages"] >= 1
    assert after["shootout_broker_uptime_seconds"] >= before["shootout_broker_uptime_seconds"]
    for name in ('shootout_broker_messages_dropped_total{reason="queue_full"}',
                 "shootout_broker_publisher_waits_total", "shootout_broker_slow_consumers_total",
                 'shootout_broker_auth_failures_total{reason="bad_password"}',
                 'shootout_broker_acl_denials_total{action="publish"}'):
        assert name in after


def test_auth_failures_and_acl_denials_are_counted(broker_factory, tmp_path):
    pw = tmp_path / "passwd"
    subprocess.run([SHOOTOUT_BIN, "passwd", "-c", "-b", str(pw), "u", "p"], check=True, timeout=30)
    acl = tmp_path / "acl"
    acl.write_text("user u\ntopic read x/#\n")
    port = free_port()
    b = broker_factory(extra_args=("--metrics-port", str(port), "--password-file", str(pw),
                                   "--acl-file", str(acl), "--allow-anonymous", "false"))
    assert b.raw().connect("bad", username="u", password=b"q").rc == 5
    assert b.raw().connect("anon").rc == 5
    c = b.raw()
    c.connect_ok("good", username="u", password=b"p")
    c.send(R.publish("x/1", b"read only"))
    assert c.subscribe(1, [("y/#", 0)]).granted == [0x80]
    m, _ = scrape(port)
    assert m['shootout_broker_auth_failures_total{reason="bad_password"}'] == 1
    assert m['shootout_broker_auth_failures_total{reason="anonymous"}'] == 1
    assert m['shootout_broker_acl_denials_total{action="publish"}'] == 1
    assert m['shootout_broker_acl_denials_total{action="subscribe"}'] == 1


def test_other_requests(mbroker):
    port = mbroker.metrics_port
    assert http(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")[0] == 404
    status, headers, _ = http(port, b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    assert status == 405 and "GET" in headers["Allow"]
    status, headers, body = http(port, b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 200 and body == b""
    assert http(port, b"GET /metrics HTTP/1.1\r\n\r\n")[0] == 400  # no Host
    assert http(port, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 5000 + b"\r\n\r\n")[0] == 431
    # A request in pieces, and a client that never finishes, do not stall MQTT.
    idle = socket.create_connection((HOST, port), timeout=5)
    idle.sendall(b"GET /met")
    mbroker.raw_connected("still-served")
    idle.sendall(b"rics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert idle.recv(12) == b"HTTP/1.1 200"
    idle.close()
    mbroker.assert_alive()


def test_hostile_inputs_get_their_exact_answer_and_a_close(mbroker):
    """The cases of http_hostile, answered by the metrics responder from
    the head alone: its status (a POST /metrics whose head parses is 405),
    a `STATUS\\n` body, `Connection: close`, and the close."""
    def message_of(status, headers, body):
        return None if body == b"%d\n" % status else "body %r" % body

    port = mbroker.metrics_port
    wrong = http_hostile.check_all(port, b"/metrics", b"/metrics", message_of,
                                   lambda: http(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")[0] == 200,
                                   head_only=405)
    assert not wrong, "\n".join(wrong)


def get_of_size(size):
    """A GET /metrics head exactly size bytes long (padded with a field)."""
    base = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX: \r\n\r\n"
    return base.replace(b"X: ", b"X: " + b"a" * (size - len(base)))


def test_head_limit_is_4_kib(mbroker):
    port = mbroker.metrics_port
    assert len(get_of_size(4096)) == 4096
    assert http(port, get_of_size(4096))[0] == 200
    status, headers, body = http(port, get_of_size(4097))
    assert (status, headers["Connection"], body) == (431, "close", b"431\n")


def test_one_request_per_connection(mbroker):
    get = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    status, headers, body = http(mbroker.metrics_port, get + get)
    assert status == 200 and headers["Connection"] == "close"
    assert len(body) == int(headers["Content-Length"]), "a second answer after the first"


def test_at_most_16_connections_each_closed_after_5_seconds(mbroker):
    """16 scrapers that send nothing (or never finish a head) hold every
    slot: the 17th connection is closed at once, unanswered, while MQTT goes
    on. At 5 s the 16 are closed (no answer: they never asked; 408 for the
    unfinished head, as every HTTP server of shootout answers one), and the
    responder serves again."""
    port = mbroker.metrics_port
    held = [socket.create_connection((HOST, port), timeout=5) for _ in range(16)]
    try:
        held[0].sendall(b"GET /metr")  # a head never finished holds a slot the same
        opened = time.monotonic()
        extra = socket.create_connection((HOST, port), timeout=5)
        extra.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        assert http_hostile.closed_unanswered(extra, 5), "a 17th connection was served"
        extra.close()
        mbroker.raw_connected("served-meanwhile")
        assert not http_hostile.closed_unanswered(held[-1], 3.5), "closed before its 5 s"
        held[0].settimeout(15 - (time.monotonic() - opened))
        answer = b""
        while chunk := held[0].recv(4096):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 408 ") and b"\r\nConnection: close\r\n" in answer
        for s in held[1:]:
            assert http_hostile.closed_unanswered(s, 15 - (time.monotonic() - opened)), "not closed at 5 s"
        assert time.monotonic() - opened >= 4.5
    finally:
        for s in held:
            s.close()
    assert scrape(port)[0]["shootout_broker_clients_connected"] == 1


def test_metrics_port_in_use_exits_1(tmp_path):
    with socket.socket() as s:
        s.bind((HOST, 0))
        s.listen(1)
        r = subprocess.run([SHOOTOUT_BIN, "broker", "--port", "0", "--metrics-port",
                            str(s.getsockname()[1])], capture_output=True, timeout=10)
    assert r.returncode == 1
    assert b"metrics endpoint" in r.stderr
