"""`shootout bench mqtt-load` and `mqtt-ping` end to end: against the real
broker with small counts (the counts must add up and the JSON must carry the
result model), and against a fake broker that misbehaves on purpose (the run
must fail with the right exit code and say why). No timing assertions."""

import json
import selectors
import socket
import struct
import subprocess
import threading
import time

import pytest

import mqtt_raw as R
from conftest import HOST, SANITIZER_MARKERS, SHOOTOUT_BIN, free_port, require_shootout

EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_MISSED = 3
RUN_TIMEOUT = 50  # seconds; far above what these small runs need


def bench(*args, timeout=RUN_TIMEOUT):
    require_shootout()
    p = subprocess.run([SHOOTOUT_BIN, "bench"] + [str(a) for a in args],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    for marker in SANITIZER_MARKERS:
        assert marker not in p.stderr, "sanitizer report from the bench:\n" + p.stderr
    return p


def bench_json(tmp_path, *args):
    out = tmp_path / "result.json"
    p = bench(*args, "--json", out)
    assert p.returncode == 0, "exit %d\nstdout:\n%s\nstderr:\n%s" % (p.returncode, p.stdout, p.stderr)
    with open(out) as f:
        return json.load(f), p


def target(broker):
    return "%s:%d" % (broker.host, broker.port)


def iterations(doc):
    return [b for b in doc["benchmarks"] if b["run_type"] == "iteration"]


def check_result_model(doc, experiment):
    assert doc["schema_version"] == 1
    assert doc["tool"]["name"] == "shootout" and doc["tool"]["version"]
    ctx = doc["context"]
    for key in ("date", "host_name", "num_cpus", "command_line", "build_type"):
        assert key in ctx, key
    assert "bench " + experiment in ctx["command_line"]
    for b in doc["benchmarks"]:
        assert b["experiment"] == experiment
        assert b["name"].startswith(experiment + "/")
        for key in ("target", "repetitions", "config", "duration_s", "setup_s", "messages",
                    "throughput", "latency", "server", "client", "errors"):
            assert key in b, key
        assert b["throughput"]["unit"] == "msg/s" and b["throughput"]["definition"]
        assert set(b["messages"]) == {"sent", "received", "lost"}
        assert {"cpu_s", "cpu_us_per_op", "op"} <= set(b["client"])
        assert {"connect", "timeout", "protocol"} <= set(b["errors"])


# ---------------------------------------------------------------- mqtt-load

# Mosquitto 2.0.11 (Debian 12) stalls QoS 2 deliveries queued behind a full
# inflight window: its subscribers stop at 20 messages (mosquitto_sub loses
# messages the same way), one of the inflight-quota bugs fixed in 2.0.13.
@pytest.mark.parametrize("qos", [0, 1, pytest.param(2, marks=pytest.mark.shootout_only)])
def test_load_counts_add_up(broker, tmp_path, qos):
    doc, p = bench_json(tmp_path, "mqtt-load", "--target", target(broker), "--conns", 10,
                        "--messages", 200, "--qos", qos)
    check_result_model(doc, "mqtt-load")
    [b] = doc["benchmarks"]
    assert b["run_type"] == "iteration" and b["repetition_index"] == 0
    assert b["config"]["conns"] == 10 and b["config"]["qos"] == qos
    assert b["config"]["subscribers"] == 5 and b["config"]["publishers"] == 5
    assert b["messages"] == {"sent": 5 * 200, "received": 5 * 200, "lost": 0}
    assert b["throughput"]["value"] > 0
    assert b["throughput_messaging"]["value"] >= b["throughput"]["value"]
    assert b["duration_s"] > 0 and b["setup_s"] >= 0
    assert b["latency"] is None and b["server"] is None
    assert b["errors"]["connect"] == 0 and b["errors"]["timeout"] == 0
    assert "msg-phase" in p.stdout and "first connect" in p.stdout


def test_load_runs_give_aggregates_and_server_figures(broker, tmp_path):
    doc, p = bench_json(tmp_path, "mqtt-load", "--target", target(broker), "--conns", 8,
                        "--messages", 300, "--runs", 2, "--threads", 2,
                        "--server-pid", broker.proc.pid)
    check_result_model(doc, "mqtt-load")
    iters = iterations(doc)
    assert [b["repetition_index"] for b in iters] == [0, 1]
    aggs = {b["aggregate_name"]: b for b in doc["benchmarks"] if b["run_type"] == "aggregate"}
    assert set(aggs) == {"mean", "median", "stddev"}
    assert aggs["mean"]["messages"]["received"] == 4 * 300
    assert aggs["stddev"]["messages"]["received"] == 0
    for b in iters + [aggs["mean"]]:
        assert b["repetitions"] == 2
        assert b["server"]["pid"] == broker.proc.pid
        assert b["server"]["rss_max_kb"] > 0 and b["server"]["threads_max"] >= 1
    # Named after the server process, and the summary is the article's form.
    assert iters[0]["target"] in ("shootout", "mosquitto")
    assert "+/-" in p.stdout


def test_several_server_processes_are_summed(broker, tmp_path):
    # A cluster's nodes and its NATS server are sampled as one server: here
    # the broker and a Python process beside it, whose memory and thread
    # are in the sums (its CPU over a run of milliseconds need not be: it
    # may not get a core in that window).
    other = subprocess.Popen(["/usr/bin/python3", "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.3)  # its interpreter loaded
        doc, _ = bench_json(tmp_path, "mqtt-load", "--target", target(broker), "--conns", 8,
                            "--messages", 300, "--server-pid", "%d,%d" % (broker.proc.pid, other.pid))
        alone, _ = bench_json(tmp_path, "mqtt-load", "--target", target(broker), "--conns", 8,
                              "--messages", 300, "--server-pid", broker.proc.pid)
    finally:
        other.kill()
        other.wait()
    both, one = iterations(doc)[0]["server"], iterations(alone)[0]["server"]
    assert both["pid"] == broker.proc.pid and both["processes"] == 2
    assert "processes" not in one  # one process: the fields it always had
    assert both["threads_max"] == one["threads_max"] + 1
    assert both["rss_max_kb"] > one["rss_max_kb"] + 4000  # an interpreter's few MB
    assert both["cpu_s"] >= 0
    assert iterations(doc)[0]["target"] in ("shootout", "mosquitto")  # named after the first


def test_html_report(broker, tmp_path):
    html = tmp_path / "r.html"
    p = subprocess.run([SHOOTOUT_BIN, "bench", "mqtt-load", "--target", target(broker), "--conns", "4",
                        "--messages", "50", "--runs", "2", "--html", str(html)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    text = html.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert "<h2>mqtt-load</h2>" in text
    throughput = text.split("<figcaption>Throughput")[1].split("</figure>")[0]
    assert throughput.count('class="bar"') == 1  # one grid point, one target
    assert "mean over the runs" in text
    bad = subprocess.run([SHOOTOUT_BIN, "bench", "mqtt-load", "--target", target(broker), "--conns", "2",
                          "--messages", "5", "--html", str(tmp_path / "no" / "r.html")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "cannot write" in bad.stderr


def test_load_many_threads_and_larger_payload(broker, tmp_path):
    doc, _ = bench_json(tmp_path, "mqtt-load", "--target", target(broker), "--conns", 30,
                        "--messages", 100, "--threads", 4, "--payload-size", 3000)
    [b] = doc["benchmarks"]
    assert b["messages"]["received"] == 15 * 100
    assert b["config"]["threads"] == 4 and b["config"]["payload_size"] == 3000


def test_load_json_on_stdout(broker):
    p = bench("mqtt-load", "--target", target(broker), "--conns", 4, "--messages", 50,
              "--json", "-", "--label", "ours")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)  # nothing but JSON on stdout
    assert doc["benchmarks"][0]["name"] == "mqtt-load/ours/4c"
    assert "k msg/s" in p.stderr  # the table moved to stderr


# ---------------------------------------------------------------- mqtt-ping

@pytest.mark.parametrize("qos", [0, 1, 2])
def test_ping_counts_add_up(broker, tmp_path, qos):
    pairs, wsubs, m = 5, 3, 40
    doc, _ = bench_json(tmp_path, "mqtt-ping", "--target", target(broker), "--pairs", pairs,
                        "--wsubs", wsubs, "--messages", m, "--qos", qos)
    check_result_model(doc, "mqtt-ping")
    [b] = doc["benchmarks"]
    assert b["config"]["pairs"] == pairs and b["config"]["wsubs"] == wsubs
    assert b["config"]["conns"] == 2 * pairs + wsubs
    # Requests and replies of every pair, plus pair 0's both ways to each
    # wildcard subscriber.
    assert b["messages"] == {"sent": 2 * m * pairs, "received": 2 * m * (pairs + wsubs),
                             "lost": 0}
    assert "2 x messages x pairs" in b["throughput"]["definition"]
    assert b["throughput"]["value"] > 0
    lat = b["latency"]
    assert lat["unit"] == "us"
    assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99_9"] <= lat["max"]
    assert lat["min"] <= lat["mean"] <= lat["max"] and lat["stddev"] >= 0


def test_ping_runs_give_aggregates(broker, tmp_path):
    doc, _ = bench_json(tmp_path, "mqtt-ping", "--target", target(broker), "--pairs", 4,
                        "--wsubs", 0, "--messages", 30, "--runs", 2, "--threads", 2)
    assert len(iterations(doc)) == 2
    names = [b["aggregate_name"] for b in doc["benchmarks"] if b["run_type"] == "aggregate"]
    assert names == ["mean", "median", "stddev"]
    for b in doc["benchmarks"]:
        if b.get("aggregate_name") != "stddev":
            assert b["messages"]["received"] == 2 * 30 * 4
            assert b["latency"]["p99"] > 0


# ---------------------------------------------------------------- usage and connection errors

@pytest.mark.parametrize("args, complaint", [
    (["mqtt-load", "--qos", "3"], "--qos wants a whole number from 0 to 2"),
    (["mqtt-load", "--conns", "7"], "--conns must be even"),
    (["mqtt-load", "--messages", "0"], "--messages wants a whole number"),
    (["mqtt-load", "--target", "127.0.0.1:99999"], "port wants a whole number"),
    (["mqtt-load", "--no-such-option"], "unrecognized option"),
    (["mqtt-load", "stray"], "unexpected argument 'stray'"),
    (["mqtt-ping", "--payload-size", "4"], "--payload-size must be at least 8"),
    (["mqtt-ping", "--pairs", "0"], "--pairs wants a whole number"),
    (["mqtt-ping", "--server-pid", "2147483647"], "no process"),
    (["mqtt-ping", "--server-pid", "1,2147483647"], "no process"),
    (["mqtt-ping", "--server-pid", "1,"], "--server-pid wants process ids"),
    (["mqtt-ping", "--server-pid", "0"], "--server-pid wants process ids"),
    (["mqtt-ping", "--server-pid", "1,1,1,1,1,1,1,1,1"], "--server-pid: at most 8 processes"),
    (["no-such-experiment"], "unknown experiment"),
])
def test_usage_errors(args, complaint):
    p = bench(*args)
    assert p.returncode == EXIT_USAGE
    assert complaint in p.stderr


@pytest.mark.parametrize("experiment", ["mqtt-load", "mqtt-ping"])
def test_help(experiment):
    p = bench(experiment, "--help")
    assert p.returncode == 0
    assert p.stdout.startswith("usage: shootout bench " + experiment)
    assert "--server-pid" in p.stdout and "Exit codes" in p.stdout


def test_connection_refused():
    port = free_port()  # nothing listens there
    p = bench("mqtt-load", "--target", "%s:%d" % (HOST, port), "--conns", 4, "--messages", 10)
    assert p.returncode == EXIT_RUNTIME
    assert "cannot connect to %s:%d" % (HOST, port) in p.stderr


@pytest.mark.shootout_only
def test_broker_refusing_connections(broker_factory):
    b = broker_factory(max_connections=4)
    p = bench("mqtt-load", "--target", target(b), "--conns", 10, "--messages", 10)
    assert p.returncode == EXIT_RUNTIME
    assert "CONNACK 3 (server unavailable)" in p.stderr


# ---------------------------------------------------------------- a misbehaving broker

class FakeBroker:
    """A broker that accepts MQTT connections and misbehaves as told:
    'drop'    CONNACK and SUBACK, then swallow every PUBLISH;
    'refuse'  answer CONNECT with CONNACK 5 (not authorized);
    'mute'    accept TCP but never answer anything;
    'stray'   like 'drop', but follow each SUBACK with a PUBLISH on a topic
              nobody subscribed to."""

    def __init__(self, mode):
        self.mode = mode
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((HOST, 0))
        self.listener.listen(1024)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.published = 0
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.listener, selectors.EVENT_READ)
        self.wake_r, self.wake_w = socket.socketpair()
        self.sel.register(self.wake_r, selectors.EVENT_READ)
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def close(self):
        self.wake_w.send(b"x")
        self.thread.join(10)
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()
        self.wake_w.close()

    def _loop(self):
        buffers = {}
        while True:
            for key, _ in self.sel.select():
                s = key.fileobj
                if s is self.wake_r:
                    return
                if s is self.listener:
                    try:
                        conn, _ = s.accept()
                    except BlockingIOError:
                        continue
                    conn.setblocking(True)
                    buffers[conn] = b""
                    self.sel.register(conn, selectors.EVENT_READ)
                    continue
                try:
                    data = s.recv(65536)
                except OSError:  # reset: the bench closed with our output unread
                    data = b""
                if not data:
                    self.sel.unregister(s)
                    s.close()
                    continue
                buffers[s] = self._handle(s, buffers[s] + data)

    def _handle(self, s, buf):
        """Handles every whole packet in buf; returns the rest."""
        while len(buf) >= 2:
            length, shift, pos = 0, 0, 1
            while pos < len(buf):
                byte = buf[pos]
                length |= (byte & 0x7F) << shift
                shift += 7
                pos += 1
                if not byte & 0x80:
                    break
            else:
                return buf
            if len(buf) < pos + length:
                return buf
            ptype, body, buf = buf[0] >> 4, buf[pos:pos + length], buf[pos + length:]
            self._on_packet(s, ptype, body)
        return buf

    def _on_packet(self, s, ptype, body):
        """Answers one packet as the mode says (subclasses add modes)."""
        if self.mode == "mute":
            return
        if ptype == R.CONNECT:
            s.sendall(R.packet(R.CONNACK, 0, bytes([0, 5 if self.mode == "refuse" else 0])))
        elif ptype == R.SUBSCRIBE:
            packet_id = struct.unpack("!H", body[:2])[0]
            s.sendall(R.packet(R.SUBACK, 0, struct.pack("!HB", packet_id, body[-1])))
            if self.mode == "stray":
                s.sendall(R.publish("stray/topic", b"surprise"))
        elif ptype == R.PUBLISH:
            self.published += 1


@pytest.fixture
def fake_broker():
    """fake_broker(mode, cls=FakeBroker) starts one; closed at teardown."""
    made = []

    def make(mode, cls=FakeBroker):
        fb = cls(mode)
        made.append(fb)
        return fb

    yield make
    for fb in made:
        fb.close()


def test_load_fails_when_the_broker_drops_messages(fake_broker, tmp_path):
    fb = fake_broker("drop")
    out = tmp_path / "failed.json"
    p = bench("mqtt-load", "--target", "%s:%d" % (HOST, fb.port), "--conns", 6,
              "--messages", 50, "--timeout", 1, "--json", out)
    assert p.returncode == EXIT_MISSED, p.stderr
    assert "3 of 3 subscribers are missing messages: 150 of 150 messages not delivered" in p.stderr
    assert fb.published == 150  # the publishers did their part
    # The failed run still goes into the JSON, with what was lost.
    with open(out) as f:
        doc = json.load(f)
    [b] = doc["benchmarks"]
    assert b["messages"]["lost"] == 150 and b["messages"]["received"] == 0
    assert b["errors"]["timeout"] == 1
    assert "missing messages" in b["errors"]["message"]


def test_ping_fails_when_the_broker_drops_messages(fake_broker):
    fb = fake_broker("drop")
    p = bench("mqtt-ping", "--target", "%s:%d" % (HOST, fb.port), "--pairs", 3, "--wsubs", 2,
              "--messages", 10, "--timeout", 1)
    assert p.returncode == EXIT_MISSED, p.stderr
    assert "3 of 3 pairs are missing replies" in p.stderr
    assert "2 of 2 wildcard subscribers are missing messages" in p.stderr


def test_message_on_an_unexpected_topic_fails(fake_broker):
    fb = fake_broker("stray")
    p = bench("mqtt-load", "--target", "%s:%d" % (HOST, fb.port), "--conns", 4,
              "--messages", 10, "--timeout", 5)
    assert p.returncode == EXIT_MISSED, p.stderr
    assert "received a message on stray/topic instead of loadtest/" in p.stderr


def test_refused_connect_is_a_runtime_failure(fake_broker):
    fb = fake_broker("refuse")
    p = bench("mqtt-ping", "--target", "%s:%d" % (HOST, fb.port), "--pairs", 2, "--wsubs", 1,
              "--messages", 5, "--timeout", 5)
    assert p.returncode == EXIT_RUNTIME
    assert "refused by the broker: CONNACK 5 (not authorized)" in p.stderr


def test_silent_broker_times_out_during_setup(fake_broker):
    fb = fake_broker("mute")
    p = bench("mqtt-load", "--target", "%s:%d" % (HOST, fb.port), "--conns", 4,
              "--messages", 5, "--timeout", 1)
    assert p.returncode == EXIT_RUNTIME
    assert "no progress for 1 s while connecting and subscribing: 0 of 4 connections ready" in p.stderr
