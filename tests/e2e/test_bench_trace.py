"""`--trace FILE` and `--progress` of the load generators, end to end.

Each generator is traced against our own servers (the broker, car-server
REST and gRPC, a2b-server through http-open); the trace is parsed back and
checked against what the run sent: packet and call counts, with and without
sampling, decoded MQTT packet types, client ids and topics, HTTP request and
status lines with their headers and cut bodies, gRPC paths and statuses.
Bad options must be refused with a clear message. The progress line is
checked under a pseudo-terminal (Python's pty: redrawn in place with '\\r'
and an erase, the last one left) and without one (plain lines, no '\\r').
No timing assertions."""

import collections
import os
import pty
import re
import subprocess

import pytest

import test_bench
from conftest import HOST, SANITIZER_MARKERS, SHOOTOUT_BIN, require_shootout

EXIT_RUNTIME = 1
EXIT_USAGE = 2
LINE = re.compile(r"^(\d+\.\d{6}) (\d+) ([<>]) (mqtt|http|hdr|body|grpc) (.*)$")

Line = collections.namedtuple("Line", "t conn dir kind text")


def parse(path):
    """The trace's lines (comments apart); every line must have the format."""
    lines, comments = [], []
    with open(path) as f:
        for raw in f:
            raw = raw.rstrip("\n")
            if raw.startswith("#"):
                comments.append(raw)
                continue
            m = LINE.match(raw)
            assert m, "not a trace line: %r" % raw
            lines.append(Line(float(m.group(1)), int(m.group(2)), m.group(3), m.group(4), m.group(5)))
    return lines, comments


def traced(tmp_path, experiment, *args):
    path = tmp_path / "trace.txt"
    p = test_bench.bench(experiment, "--trace", path, *args)
    assert p.returncode == 0, "exit %d\nstdout:\n%s\nstderr:\n%s" % (p.returncode, p.stdout, p.stderr)
    return parse(path)


def mqtt(lines, conn=None, direction=None, packet=None):
    return [ln for ln in lines if ln.kind == "mqtt" and (conn is None or ln.conn == conn)
            and (direction is None or ln.dir == direction)
            and (packet is None or ln.text.split()[0] == packet)]


def target(server):
    return "%s:%d" % (server.host, server.port)


# ---------------------------------------------------------------- MQTT

def test_mqtt_load_every_packet(broker, tmp_path):
    # 2 subscribers (connections 0, 1) and 2 publishers (2, 3), 10 QoS 1
    # messages each: every packet of every connection, in order.
    lines, comments = traced(tmp_path, "mqtt-load", "--target", target(broker), "--conns", "4",
                             "--messages", "10", "--qos", "1")
    assert comments[0].startswith("# shootout trace 1: ") and "mqtt-load" in comments[0]
    assert any(c.startswith("# mqtt-load/") and c.endswith(" run 1/1") for c in comments)
    times = [ln.t for ln in lines]
    assert times == sorted(times)  # one client thread: stamps in order
    for sub, pub in ((0, 2), (1, 3)):
        seq = [ln.dir + ln.text.split()[0] for ln in mqtt(lines, sub)]
        assert seq[:4] == [">CONNECT", "<CONNACK", ">SUBSCRIBE", "<SUBACK"]
        assert seq[-1] == ">DISCONNECT"
        assert seq[4:-1] == ["<PUBLISH", ">PUBACK"] * 10
        connect = mqtt(lines, sub, ">", "CONNECT")[0].text
        assert re.fullmatch(r"CONNECT v4 id=ld\S+-%d clean=1 keepalive=\d+" % sub, connect)
        assert mqtt(lines, sub, ">", "SUBSCRIBE")[0].text == "SUBSCRIBE pid=1 filter=loadtest/%d:q1" % sub
        assert mqtt(lines, sub, "<", "SUBACK")[0].text == "SUBACK pid=1 codes=0x01"
        got = [ln.text for ln in mqtt(lines, sub, "<", "PUBLISH")]
        assert all(re.fullmatch(r"PUBLISH q1 pid=\d+ topic=loadtest/%d len=16" % sub, t) for t in got)

        seq = [ln.dir + ln.text.split()[0] for ln in mqtt(lines, pub)]
        assert seq[:2] == [">CONNECT", "<CONNACK"] and seq[-1] == ">DISCONNECT"
        sent = [ln.text for ln in mqtt(lines, pub, ">", "PUBLISH")]
        assert sent == ["PUBLISH q1 pid=%d topic=loadtest/%d len=16" % (i, sub) for i in range(1, 11)]
        assert [ln.text for ln in mqtt(lines, pub, "<", "PUBACK")] == [
            "PUBACK pid=%d" % i for i in range(1, 11)]


def test_mqtt_load_sampled_by_packet_id(broker, tmp_path):
    # --trace-sample 5: the QoS 1 flows of packet ids 5, 10, 15, 20 (PUBLISH
    # and PUBACK together), and the other packets of connection 0 only.
    lines, comments = traced(tmp_path, "mqtt-load", "--target", target(broker), "--conns", "4",
                             "--messages", "20", "--qos", "1", "--trace-sample", "5")
    assert "sample 1/5" in comments[1]
    for pub in (2, 3):
        assert [ln.text.split()[1:3] for ln in mqtt(lines, pub, ">", "PUBLISH")] == [
            ["q1", "pid=%d" % i] for i in (5, 10, 15, 20)]
        assert [ln.text for ln in mqtt(lines, pub, "<", "PUBACK")] == [
            "PUBACK pid=%d" % i for i in (5, 10, 15, 20)]
        assert not mqtt(lines, pub, packet="CONNECT")
    for sub in (0, 1):
        pids = [ln.text.split()[2] for ln in mqtt(lines, sub, "<", "PUBLISH")]
        assert len(pids) == 4 and all(int(p[4:]) % 5 == 0 for p in pids)
        assert [ln.text.split()[1] for ln in mqtt(lines, sub, ">", "PUBACK")] == pids
    assert [ln.text.split()[0] for ln in mqtt(lines, 0) if "PUB" not in ln.text] == [
        "CONNECT", "CONNACK", "SUBSCRIBE", "SUBACK", "DISCONNECT"]
    assert not mqtt(lines, 1, packet="CONNECT")


def test_mqtt_load_qos0_sampled_by_count(broker, tmp_path):
    lines, _ = traced(tmp_path, "mqtt-load", "--target", target(broker), "--conns", "4",
                      "--messages", "21", "--qos", "0", "--trace-sample", "10")
    # Of 21 QoS 0 publishes on a connection: its 0th, 10th and 20th.
    for conn, d in ((0, "<"), (1, "<"), (2, ">"), (3, ">")):
        assert len(mqtt(lines, conn, d, "PUBLISH")) == 3, conn


def test_mqtt_ping_v5_decoded(broker, tmp_path):
    lines, _ = traced(tmp_path, "mqtt-ping", "--target", target(broker), "--pairs", "1",
                      "--wsubs", "1", "--messages", "3", "--qos", "1", "--mqtt-version", "5")
    assert mqtt(lines, packet="CONNECT") and all(
        ln.text.startswith("CONNECT v5 ") for ln in mqtt(lines, packet="CONNECT"))
    assert all(ln.text == "CONNACK sp=0 rc=0" for ln in mqtt(lines, packet="CONNACK"))
    # Requester 0 and responder 1 send 3 requests and 3 replies at QoS 1; the
    # wildcard subscriber 2 receives all 6 too; each PUBLISH is acked with a
    # reason code.
    assert len(mqtt(lines, direction=">", packet="PUBLISH")) == 6
    assert [len(mqtt(lines, c, "<", "PUBLISH")) for c in (0, 1, 2)] == [3, 3, 6]
    assert all(re.fullmatch(r"PUBLISH q1 pid=\d+ topic=pingtest/0/\S+ len=\d+", ln.text)
               for ln in mqtt(lines, packet="PUBLISH"))
    acks = mqtt(lines, packet="PUBACK")
    assert len(acks) == 18 and all(re.fullmatch(r"PUBACK pid=\d+ rc=0x00", ln.text) for ln in acks)


# ---------------------------------------------------------------- REST, gRPC

def exchanges(lines):
    """HTTP lines grouped by connection and direction into messages: each
    starts at an http line, with its hdr and body lines."""
    out = collections.defaultdict(list)
    for ln in lines:
        if ln.kind == "http":
            out[(ln.conn, ln.dir)].append({"start": ln.text, "hdrs": [], "body": None})
        elif ln.kind == "hdr":
            out[(ln.conn, ln.dir)][-1]["hdrs"].append(ln.text)
        elif ln.kind == "body":
            length, _, text = ln.text.partition(" ")
            out[(ln.conn, ln.dir)][-1]["body"] = (int(length), text)
    return out


def test_rest_requests_and_responses(car_server, tmp_path):
    lines, _ = traced(tmp_path, "rpc-seq", "--target", "%s:%d" % (HOST, car_server.rest_port),
                      "--requests", "6", "--warmup", "2", "--trace-sample", "2", "--trace-body", "30")
    ex = exchanges(lines)
    assert set(ex) == {(0, ">"), (0, "<")}
    reqs, resps = ex[(0, ">")], ex[(0, "<")]
    assert len(reqs) == len(resps) == 4  # calls 0, 2, 4, 6 of the 8
    for rq in reqs:
        assert rq["start"] == "POST /v1/create HTTP/1.1"
        assert "Content-Type: application/json" in rq["hdrs"]
        length = int(next(h for h in rq["hdrs"] if h.startswith("Content-Length: ")).split()[1])
        assert rq["body"][0] == length > 30
        assert len(rq["body"][1]) == 30 and rq["body"][1].startswith('{"car":{')
    for rs in resps:
        assert rs["start"] == "HTTP/1.1 201 Created"
        assert "Content-Length: 20" in rs["hdrs"]
        assert rs["body"] == (20, '{"status":"created"}')  # shorter than the cut


def test_grpc_calls(car_server, tmp_path):
    lines, _ = traced(tmp_path, "rpc-seq", "--protocol", "grpc", "--target",
                      "%s:%d" % (HOST, car_server.grpc_port), "--requests", "5", "--warmup", "0",
                      "--concurrency", "2")
    sent = [ln for ln in lines if ln.dir == ">"]
    got = [ln for ln in lines if ln.dir == "<"]
    assert all(ln.kind == "grpc" for ln in lines)
    assert len(sent) == len(got) == 5
    path = "/com.stevenpg.rvg.MessageService/send"
    streams = []
    for ln in sent:
        m = re.fullmatch(r"stream=(\d+) POST (\S+) len=(\d+)", ln.text)
        assert m and m.group(2) == path and int(m.group(3)) > 50, ln.text
        streams.append(int(m.group(1)))
    answered = []
    for ln in got:
        m = re.fullmatch(r"stream=(\d+) (\S+) http=200 grpc-status=0 msgs=1 len=(\d+): ok", ln.text)
        assert m and m.group(2) == path and int(m.group(3)) > 0, ln.text
        answered.append(int(m.group(1)))
    assert sorted(answered) == sorted(streams) and len(set(streams)) == 5


# ---------------------------------------------------------------- http-open

def test_http_open_against_a2b(a2b_server_factory, tmp_path):
    srv = a2b_server_factory()
    scn = tmp_path / "s.scn"
    scn.write_text("request GET /api/v1/countries countries\n")
    lines, _ = traced(tmp_path, "http-open", "--target", "http://%s:%d" % (HOST, srv.port),
                      "--scenario", scn, "--inject", "at-once 3", "--trace-body", "0")
    ex = exchanges(lines)
    reqs = [m for (c, d), ms in ex.items() if d == ">" for m in ms]
    resps = [m for (c, d), ms in ex.items() if d == "<" for m in ms]
    assert len(reqs) == len(resps) == 3
    assert len({c for (c, d) in ex}) == 3  # a connection per user
    assert all(m["start"] == "GET /api/v1/countries HTTP/1.1" and m["body"] is None for m in reqs)
    for m in resps:
        assert m["start"] == "HTTP/1.1 200 OK"
        length = next(int(h.split()[1]) for h in m["hdrs"] if h.lower().startswith("content-length: "))
        assert m["body"] == (length, "")  # --trace-body 0: the length alone


# ---------------------------------------------------------------- options

@pytest.mark.parametrize("args, message", [
    (["--trace-sample", "10"], "--trace-sample needs --trace FILE"),
    (["--trace-body", "10"], "--trace-body needs --trace FILE"),
    (["--trace", "T", "--trace-sample", "0"], "--trace-sample"),
    (["--trace", "T", "--trace-sample", "65536"], "--trace-sample"),
    (["--trace", "T", "--trace-body", "65537"], "--trace-body"),
    (["--trace", "", ], "--trace wants a file name"),
    (["--trace", "-", "--json", "-"], "--trace - and --json - cannot share stdout"),
    (["--progress", "sometimes"], "--progress"),
])
def test_bad_options(tmp_path, args, message):
    args = [str(tmp_path / a) if a == "T" else a for a in args]
    for experiment in ("mqtt-load", "rpc-seq"):
        p = test_bench.bench(experiment, "--target", "%s:1" % HOST, *args)
        assert p.returncode == EXIT_USAGE, (experiment, p.stderr)
        assert message in p.stderr, p.stderr


def test_trace_file_not_writable(tmp_path):
    p = test_bench.bench("rpc-seq", "--target", "%s:1" % HOST, "--trace", tmp_path / "no" / "t.txt")
    assert p.returncode == EXIT_RUNTIME
    assert "cannot create %s" % (tmp_path / "no" / "t.txt") in p.stderr


# ---------------------------------------------------------------- progress

def under_pty(*args):
    """Runs `shootout bench ARGS` with stderr on a pseudo-terminal; returns
    (exit code, what it wrote there)."""
    require_shootout()
    master, slave = pty.openpty()
    p = subprocess.Popen([SHOOTOUT_BIN, "bench"] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    out = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed its side
            break
        if not data:
            break
        out += data
    os.close(master)
    rc = p.wait(timeout=120)
    text = out.decode()
    for marker in SANITIZER_MARKERS:
        assert marker not in text
    return rc, text


DRAW = re.compile(r"\r([^\r\n]*?)\x1b\[K")


def test_progress_redraws_on_a_terminal(broker):
    rc, text = under_pty("mqtt-load", "--target", target(broker), "--conns", "4", "--messages",
                         "20000", "--runs", "2")
    assert rc == 0, text
    for run in (1, 2):
        draws = [d for d in DRAW.findall(text) if " run %d/2: " % run in d]
        assert draws, text
        last = draws[-1]
        m = re.search(r": (\d+)/(\d+) msg 100%, .* msg/s, elapsed (\d+\.\d)s, ETA 0\.0s$", last)
        assert m and m.group(1) == m.group(2) == "40000", last
        # At most ten a second: draws are 100 ms apart, plus the last one.
        assert len(draws) <= float(m.group(3)) * 10 + 2
        for d in draws[:-1]:
            assert re.search(r"(setting up|\d+/40000 msg)", d), d
    # The last line of each run stays: a newline follows its erase.
    assert len(re.findall(r"100%[^\r\n]*\x1b\[K\r?\n", text)) == 2


def raw_bench(*args):
    """Runs `shootout bench ARGS` with stderr on a pipe; returns (exit code,
    stderr as bytes, where text mode would hide a '\\r')."""
    require_shootout()
    p = subprocess.run([SHOOTOUT_BIN, "bench"] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    for marker in SANITIZER_MARKERS:
        assert marker.encode() not in p.stderr
    return p.returncode, p.stderr


def test_progress_plain_without_a_terminal(broker, car_server):
    rc, err = raw_bench("mqtt-load", "--target", target(broker), "--conns", "4", "--messages", "100")
    assert rc == 0 and b"\r" not in err and b"\x1b" not in err
    rest = "%s:%d" % (HOST, car_server.rest_port)
    rc, err = raw_bench("rpc-seq", "--target", rest, "--requests", "50")
    assert rc == 0 and b"\r" not in err and b"\x1b" not in err
    # always: drawn anyway, for a logger that renders it.
    rc, err = raw_bench("rpc-seq", "--target", rest, "--requests", "50", "--progress", "always")
    assert rc == 0
    assert re.search(rb"\rrpc-seq/\S+ run 1/1: 50/50 call 100%.*\x1b\[K\n", err), err


def test_progress_of_http_open_on_a_terminal(a2b_server_factory, tmp_path):
    # Planned by time: requests answered against the profile's duration,
    # ending with the requests answered of all.
    srv = a2b_server_factory()
    scn = tmp_path / "s.scn"
    scn.write_text("request GET /api/v1/countries countries\n")
    rc, text = under_pty("http-open", "--target", "http://%s:%d" % (HOST, srv.port), "--scenario", scn,
                         "--inject", "constant-users-per-sec 40 1s")
    assert rc == 0, text
    draws = [d for d in DRAW.findall(text) if d.startswith("http-open/")]
    assert len(draws) >= 3, text  # arrivals spread over 1 s, lines 100 ms apart
    assert re.search(r" run 1/1: (\d+)/\1 req 100%, .* req/s, elapsed \d+\.\ds, ETA 0\.0s$", draws[-1]), draws
    for d in draws[:-1]:
        assert re.search(r": \d+ req, \S+ (k )?req/s, elapsed \d+\.\ds( of 1\.0s +\d+%, ETA|, planned 1\.0s)", d), d


def test_progress_never_on_a_terminal(car_server):
    rc, text = under_pty("rpc-seq", "--target", "%s:%d" % (HOST, car_server.rest_port), "--requests",
                         "50", "--progress", "never")
    assert rc == 0 and "\r" not in text.replace("\r\n", "\n")


def test_progress_of_shootout_run_on_a_terminal(tmp_path):
    # `shootout run` drives the same loaders: a live line per cell's run,
    # then its brief line under it.
    from test_run import TINY
    require_shootout()
    master, slave = pty.openpty()
    p = subprocess.Popen([SHOOTOUT_BIN, "run"] + list(TINY) + ["--no-peer", "--html", "none"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave,
                         cwd=tmp_path)
    os.close(slave)
    out = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
    os.close(master)
    assert p.wait(timeout=300) == 0, out.decode(errors="replace")
    text = out.decode()
    finals = re.findall(r"\r((mqtt-load|mqtt-ping)/shootout/\S+ run 1/1): [^\r\n]*100%[^\r\n]*\x1b\[K\r\n"
                        r"  \1: ", text)
    kinds = {k for _, k in finals}
    assert kinds == {"mqtt-load", "mqtt-ping"}, text
