"""A bounded soak of our three servers: `shootout broker`, `shootout
car-server` and `shootout a2b-server` (SQLite) are started on free loopback
ports and kept under a modest mixed load for --duration (30 minutes by
default), with hostile clients mixed in. Every second it samples each
server's RSS and CPU and the healthy clients' latency (p50/p99/max per
kind) and errors; at the end it prints a report (RSS first vs last minute,
max, "drift": the smaller of the slopes of linear fits of RSS over the
two halves of the run after warm-up, so a one-off step is not a leak;
latency first vs last minute; errors; what the hostile clients saw) and exits non-zero when a
server died, healthy clients saw errors beyond --max-error-rate, or a
server's drift exceeds --max-drift. Not a test (timing on a shared
machine): run by hand, record the report in docs/BENCHMARKS.md.

    /usr/bin/python3 tests/perf/soak.py [--duration 30m] [--json FILE]

Healthy load (the rates are per second and deliberately far from
saturation: a soak, not a stress test):
  mqtt-q0, mqtt-q1  paho publishes to a paho subscriber, QoS 0 and QoS 1;
                    latency is publish to delivery, an error is a message
                    not delivered within 5 s
  rest              POST /v1/create to car-server over one keep-alive
                    connection (http.client)
  grpc              `shootout bench rpc-seq --protocol grpc` runs of 50
                    calls (one connection each run); per run p50/p99/max
  a2b-get, a2b-post GET a user, search transfers, book (POST, 201 or 409),
                    list bookings (http.client, keep-alive)
Hostile clients, cycling all the time:
  trickle           HTTP clients sending a request head at one byte a second
                    (car-server REST and a2b-server)
  silent            TCP connections that never send a byte (all four ports)
  non-reader        MQTT subscribers to the healthy topics that never read
  big-subscribe     a SUBSCRIBE of 20,000 filters, every minute
  malformed         malformed MQTT packets, every 2 s
  partial-publish   a PUBLISH announcing 1,000 bytes and sending 20, then
                    silence (after a proper CONNECT)

SHOOTOUT_BIN names the binary (default build/release/shootout). SIGINT
stops the run early; the report is still written. Every child process is
killed at exit.
"""
import argparse
import http.client
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import paho.mqtt.client as paho

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHOOTOUT = os.environ.get("SHOOTOUT_BIN", os.path.join(REPO, "build", "release", "shootout"))
HOST = "127.0.0.1"
CLK_TCK = os.sysconf("SC_CLK_TCK")
LOSS_AFTER = 5.0  # an MQTT message not delivered within this is counted lost
DRIFT_SPAN = 300  # shorter fits are dominated by warm-up: drift is not judged
SLOW = 0.1  # HTTP requests slower than this (s) are listed in the JSON

CAR_DOC = (b'{"car":{"make":"toyota","model":"corolla","trim":"4DR Sedan","color":"gray",'
           b'"year":2012,"mileage":120000},"driver":{"firstname":"John","lastname":"Smith",'
           b'"driverId":"someId"}}')


def parse_duration(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smh]?)", text.strip())
    if not m:
        raise argparse.ArgumentTypeError("bad duration %r (e.g. 90s, 10m, 1h)" % text)
    value = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    if value < 10:
        raise argparse.ArgumentTypeError("duration must be at least 10 s")
    return value


def percentile(sorted_values, q):
    if not sorted_values:
        return None
    i = min(len(sorted_values) - 1, int(q * len(sorted_values)))
    return sorted_values[i]


# ---- the servers -------------------------------------------------------------

class Server:
    """One of our servers, started with port 0; its start-up log line names
    the ports it got."""

    def __init__(self, name, argv, pattern, workdir):
        self.name = name
        self.log_path = os.path.join(workdir, name + ".log")
        self._log = open(self.log_path, "wb")
        # Its own session: a terminal's ^C must reach this script only, which
        # then stops the servers itself.
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=self._log, cwd=workdir, start_new_session=True)
        self.ports = self._wait(re.compile(pattern))
        self.pid = self.proc.pid
        self.died = None
        self._cpu_last = None

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def _wait(self, pattern, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = pattern.search(self.log_text())
            if m:
                return [int(g.rsplit(":", 1)[1]) for g in m.groups()]
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %d at start:\n%s"
                                   % (self.name, self.proc.returncode, self.log_text()[-2000:]))
            time.sleep(0.05)
        raise RuntimeError("%s did not start within %d s:\n%s"
                           % (self.name, timeout, self.log_text()[-2000:]))

    def sample(self, now):
        """(RSS KB, CPU % of one core since the last sample), or None once dead."""
        if self.proc.poll() is not None:
            if self.died is None:
                self.died = "exited with %d" % self.proc.returncode
            return None
        try:
            with open("/proc/%d/status" % self.pid) as f:
                rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS"))
            with open("/proc/%d/stat" % self.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks = int(fields[11]) + int(fields[12])
        except (OSError, StopIteration):
            return None
        cpu = None
        if self._cpu_last:
            t0, k0 = self._cpu_last
            cpu = 100.0 * (ticks - k0) / CLK_TCK / max(now - t0, 1e-3)
        self._cpu_last = (now, ticks)
        return rss, cpu

    def stop(self):
        """SIGTERM, then SIGKILL after 10 s; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode

    def last_log_line(self, word):
        lines = [l for l in self.log_text().splitlines() if word in l]
        return lines[-1].split("  ", 1)[-1] if lines else ""


def start_servers(workdir, a2b_scale):
    servers = {}
    servers["broker"] = Server("broker", [
        SHOOTOUT, "broker", "--bind", HOST, "--port", "0", "--threads", "1", "--sys-interval", "10",
        "--connection-messages", "false"], r"listening on (\S+) ", workdir)
    servers["car-server"] = Server("car-server", [
        SHOOTOUT, "car-server", "--bind", HOST, "--rest-port", "0", "--grpc-port", "0"],
        r"REST \(HTTP/1\.1\) on (\S+), gRPC \(h2c\) on (\S+),", workdir)
    servers["a2b-server"] = Server("a2b-server", [
        SHOOTOUT, "a2b-server", "--bind", HOST, "--port", "0", "--scale", str(a2b_scale),
        "--db", os.path.join(workdir, "a2b.db")], r"HTTP/1\.1 on (\S+),", workdir)
    return servers


# ---- statistics ----------------------------------------------------------------

class Stats:
    """Latencies and errors of the healthy clients, per kind, in one-second
    buckets the sampler swaps out; plus counters of the hostile clients."""

    def __init__(self):
        self.lock = threading.Lock()
        self.lat = {}
        self.err = {}
        self.preagg = {}  # kind -> [(count, p50, p99, max)] (rpc-seq runs)
        self.hostile = {}
        self.err_detail = {}
        self.slow = []
        self.t0 = time.monotonic()

    def ok(self, kind, seconds):
        with self.lock:
            self.lat.setdefault(kind, []).append(seconds * 1000.0)

    def maybe_slow(self, kind, t0, what):
        """Keeps the first 1000 healthy requests slower than SLOW, to tell
        later which ones stalled."""
        took = time.monotonic() - t0
        if took > SLOW and len(self.slow) < 1000:
            with self.lock:
                self.slow.append({"at": round(t0 - self.t0, 1), "kind": kind,
                                  "ms": round(took * 1000, 1), "request": what})

    def fail(self, kind, why):
        with self.lock:
            self.err[kind] = self.err.get(kind, 0) + 1
            d = self.err_detail.setdefault(kind, {})
            d[why] = d.get(why, 0) + 1

    def run(self, kind, count, p50, p99, mx):
        with self.lock:
            self.preagg.setdefault(kind, []).append((count, p50, p99, mx))

    def event(self, pattern, what, value=None):
        with self.lock:
            h = self.hostile.setdefault(pattern, {})
            e = h.setdefault(what, {"count": 0, "values": []})
            e["count"] += 1
            if value is not None:
                e["values"].append(value)

    def swap(self):
        with self.lock:
            out = (self.lat, self.err, self.preagg)
            self.lat, self.err, self.preagg = {}, {}, {}
            return out


class Pacer:
    """Paces a loop at `rate` iterations a second without bursting after a
    stall (a soak keeps its load steady, it does not catch up)."""

    def __init__(self, rate, stop):
        self.period = 1.0 / rate
        self.stop = stop
        self.next = time.monotonic()

    def wait(self):
        self.next += self.period
        delay = self.next - time.monotonic()
        if delay < -1.0:
            self.next = time.monotonic()
        elif delay > 0:
            self.stop.wait(delay)
        return not self.stop.is_set()


# ---- healthy clients -----------------------------------------------------------

class MqttRoundTrip:
    """A paho publisher and a paho subscriber on one topic; every message
    carries its sequence number, its send time is kept until it arrives."""

    def __init__(self, stats, stop, port, qos, rate):
        self.stats, self.stop, self.port, self.qos, self.rate = stats, stop, port, qos, rate
        self.kind = "mqtt-q%d" % qos
        self.topic = "soak/q%d/rt" % qos
        self.pending = {}
        self.lock = threading.Lock()
        self.sub = self._client("soak-sub-q%d" % qos)
        self.sub.on_message = self._on_message
        subscribed = threading.Event()
        self.sub.on_subscribe = lambda *a: subscribed.set()
        self.sub.on_connect = lambda c, u, f, rc: c.subscribe(self.topic, qos)
        self.sub.connect(HOST, port, 30)
        self.sub.loop_start()
        if not subscribed.wait(10):
            raise RuntimeError("%s: no SUBACK" % self.kind)
        self.pub = self._client("soak-pub-q%d" % qos)
        self.pub.connect(HOST, port, 30)
        self.pub.loop_start()

    @staticmethod
    def _client(cid):
        c = paho.Client(client_id=cid, clean_session=True)
        c.max_inflight_messages_set(100)
        c.max_queued_messages_set(10000)
        return c

    def _on_message(self, client, userdata, msg):
        now = time.monotonic()
        seq = int(msg.payload.split(b" ", 1)[0])
        with self.lock:
            sent = self.pending.pop(seq, None)
        if sent is not None:
            self.stats.ok(self.kind, now - sent)

    def expire(self, now):
        """Counts messages older than LOSS_AFTER as lost."""
        with self.lock:
            old = [s for s, t in self.pending.items() if now - t > LOSS_AFTER]
            for s in old:
                del self.pending[s]
        for _ in old:
            self.stats.fail(self.kind, "not delivered in %.0f s" % LOSS_AFTER)

    def run(self):
        pacer, seq = Pacer(self.rate, self.stop), 0
        pad = b"x" * 40
        while pacer.wait():
            seq += 1
            with self.lock:
                self.pending[seq] = time.monotonic()
            info = self.pub.publish(self.topic, b"%d %s" % (seq, pad), self.qos)
            if info.rc != paho.MQTT_ERR_SUCCESS:
                with self.lock:
                    self.pending.pop(seq, None)
                self.stats.fail(self.kind, "publish rc %d" % info.rc)

    def close(self):
        for c in (self.pub, self.sub):
            c.disconnect()
            c.loop_stop()


def http_loop(stats, stop, kind, port, rate, requests, by_method=False):
    """Sends requests() (method, path, body, accepted statuses) over one
    keep-alive http.client connection, reconnecting after an error; with
    by_method the kind is suffixed with the method (reads and writes apart)."""
    pacer, conn, base = Pacer(rate, stop), None, kind
    while pacer.wait():
        method, path, body, accepted = requests()
        if by_method:
            kind = "%s-%s" % (base, method.lower())
        t0 = time.monotonic()
        try:
            if conn is None:
                conn = http.client.HTTPConnection(HOST, port, timeout=5)
            headers = {"Content-Type": "application/json"} if body is not None else {}
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
            r.read()
            if r.status in accepted:
                stats.ok(kind, time.monotonic() - t0)
                stats.maybe_slow(kind, t0, "%s %s" % (method, path))
            else:
                stats.fail(kind, "status %d on %s" % (r.status, method))
        except (OSError, http.client.HTTPException) as e:
            stats.fail(kind, type(e).__name__)
            if conn is not None:
                conn.close()
            conn = None
    if conn is not None:
        conn.close()


def rest_requests():
    return "POST", "/v1/create", CAR_DOC, (201,)


def a2b_requests_for(scale):
    users = max(1, int(200000 * scale))
    transfers = max(1, int(12000 * scale))
    rnd = random.Random(7)
    step = [0]

    def next_request():
        step[0] += 1
        u = rnd.randint(1, users)
        k = step[0] % 4
        if k == 0:
            return "GET", "/api/v1/users/%d" % u, None, (200,)
        if k == 1:
            o = rnd.randint(1, 120)
            return ("GET", "/api/v1/transfers?originId=%d&destinationId=%d&date=2025-01-%02d"
                    % (o, 121 - o, rnd.randint(1, 30)), None, (200,))
        if k == 2:
            return ("POST", "/api/v1/users/%d/transfers/%d" % (u, rnd.randint(1, transfers)),
                    b'{"description":"soak"}', (201, 409))
        return "GET", "/api/v1/users/%d/transfers" % u, None, (200,)
    return next_request


def grpc_loop(stats, stop, port, rate, children):
    """`shootout bench rpc-seq --protocol grpc` runs of 50 calls, paced to
    `rate` calls a second."""
    calls = 50
    pacer = Pacer(rate / calls, stop)
    while pacer.wait():
        argv = [SHOOTOUT, "bench", "rpc-seq", "--protocol", "grpc", "--target",
                "%s:%d" % (HOST, port), "--requests", str(calls), "--timeout", "5",
                "--json", "-"]
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        children.add(p)
        try:
            out, _ = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        children.discard(p)
        try:
            b = json.loads(out)["benchmarks"][0]
            lat, msgs = b["latency"], b["messages"]
            stats.run("grpc", msgs["received"], lat["p50"] / 1000, lat["p99"] / 1000,
                      lat["max"] / 1000)
            failed = calls - msgs["received"]
        except (ValueError, KeyError, IndexError):
            failed = calls
        if p.returncode != 0 or failed:
            for _ in range(max(failed, 1)):
                stats.fail("grpc", "rpc-seq exit %d" % p.returncode)


# ---- hostile clients -------------------------------------------------------------

def mqtt_str(s):
    b = s.encode()
    return struct.pack("!H", len(b)) + b


def mqtt_packet(first, body):
    n, rl = len(body), b""
    while True:
        byte, n = n % 128, n // 128
        rl += bytes([byte | (0x80 if n else 0)])
        if not n:
            break
    return bytes([first]) + rl + body


def mqtt_connect(cid, keepalive=0):
    return mqtt_packet(0x10, mqtt_str("MQTT") + b"\x04\x02" + struct.pack("!H", keepalive)
                       + mqtt_str(cid))


def mqtt_subscribe(filters, qos=0):
    return mqtt_packet(0x82, b"\x00\x01" + b"".join(mqtt_str(f) + bytes([qos]) for f in filters))


def recv_exact(sock, n, timeout):
    sock.settimeout(timeout)
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return buf


def recv_packet(sock, timeout):
    first = recv_exact(sock, 1, timeout)[0]
    n, mult = 0, 1
    while True:
        b = recv_exact(sock, 1, timeout)[0]
        n += (b & 0x7F) * mult
        mult *= 128
        if not b & 0x80:
            break
    return first, recv_exact(sock, n, timeout)


def mqtt_session(port, cid, rcvbuf=None):
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect((HOST, port))
    s.sendall(mqtt_connect(cid))
    first, body = recv_packet(s, 10)
    if first != 0x20 or body[1] != 0:
        s.close()
        raise ConnectionError("CONNACK %r" % body)
    return s


def closed_by_peer(sock):
    """None while the connection is open; once the peer closed (or reset)
    it, what it answered first: an HTTP status line's code, or "".
    """
    got = b""
    try:
        r, _, _ = select.select([sock], [], [], 0)
        if not r:
            return None
        sock.setblocking(False)
        while True:
            data = sock.recv(65536)
            if not data:
                break
            got += data[:64 - len(got)] if len(got) < 64 else b""
    except BlockingIOError:
        return None
    except OSError:
        pass
    m = re.match(rb"HTTP/1\.[01] (\d+)", got)
    return m.group(1).decode() if m else ("%d bytes" % len(got) if got else "")


class Held:
    """Connections opened by a hostile pattern, held until the server closes
    them or they reach max_age; each closure is recorded with its age."""

    def __init__(self, stats, pattern, max_age):
        self.stats, self.pattern, self.max_age = stats, pattern, max_age
        self.conns = []  # (socket, opened, label)

    def add(self, sock, label):
        self.conns.append((sock, time.monotonic(), label))

    def reap(self):
        now, keep = time.monotonic(), []
        for sock, t0, label in self.conns:
            answer = closed_by_peer(sock)
            if answer is not None:
                self.stats.event(self.pattern, "%s: closed by the server%s (s)" % (
                    label, ", answer " + answer if answer else ""), now - t0)
                sock.close()
            elif now - t0 > self.max_age:
                self.stats.event(self.pattern, "%s: still open at %.0f s, dropped by us"
                                 % (label, self.max_age))
                sock.close()
            else:
                keep.append((sock, t0, label))
        self.conns = keep

    def fill(self, ports, labels, n):
        """Opens connections until each label's server holds n of them."""
        for label in labels:
            while sum(1 for c in self.conns if c[2] == label) < n:
                try:
                    self.add(socket.create_connection((HOST, ports[label]), timeout=5), label)
                except OSError as e:
                    self.stats.event(self.pattern, "%s: connect failed (%s)" % (label, e))
                    break

    def close(self):
        for sock, _, _ in self.conns:
            sock.close()
        self.conns = []


def hostile_connections(stats, stop, ports):
    """trickle, silent and partial-publish: connections held open, topped up
    every second."""
    trickle = Held(stats, "trickle", 300)
    silent = Held(stats, "silent", 300)
    partial = Held(stats, "partial-publish", 120)
    head = b"GET /api/v1/countries HTTP/1.1\r\nHost: x\r\nX-Soak: " + b"a" * 100000
    sent = {}
    last_partial = 0.0
    while not stop.wait(1.0):
        for held in (trickle, silent, partial):
            held.reap()
        trickle.fill(ports, ("car-server rest", "a2b-server"), 4)
        for sock, _, _ in trickle.conns:
            i = sent.get(sock, 0)
            try:
                sock.setblocking(True)
                sock.settimeout(1)
                sock.send(head[i:i + 1])
                sent[sock] = i + 1
            except OSError:
                pass  # reaped on the next round
        silent.fill(ports, ("broker", "car-server rest", "car-server grpc", "a2b-server"), 5)
        if time.monotonic() - last_partial >= 10 and len(partial.conns) < 5:
            last_partial = time.monotonic()
            try:
                s = mqtt_session(ports["broker"], "soak-partial-%d" % int(last_partial))
                s.sendall(b"\x30" + b"\xe8\x07" + mqtt_str("soak/partial") + b"y" * 6)
                partial.add(s, "broker")
            except OSError as e:
                stats.event("partial-publish", "connect failed (%s)" % e)
        live = {c[0] for c in trickle.conns}
        sent = {s: i for s, i in sent.items() if s in live}
    for held in (trickle, silent, partial):
        held.close()


def hostile_non_readers(stats, stop, port):
    """Three subscribers to the healthy topics with a small receive buffer
    that never read; each lives two minutes, staggered."""
    held = Held(stats, "non-reader", 120)
    n = 0
    while not stop.wait(1.0):
        held.reap()
        if len(held.conns) < 3 and (not held.conns or
                                    time.monotonic() - held.conns[-1][1] > 40):
            n += 1
            try:
                s = mqtt_session(port, "soak-nonreader-%d" % n, rcvbuf=4096)
                s.sendall(mqtt_subscribe(["soak/#"]))
                if recv_packet(s, 10)[0] != 0x90:
                    raise ConnectionError("no SUBACK")
                held.add(s, "broker")
            except OSError as e:
                stats.event("non-reader", "connect failed (%s)" % e)
    held.close()


def hostile_big_subscribe(stats, stop, port, filters):
    """A SUBSCRIBE of `filters` filters every minute: the time to its SUBACK
    and how many were granted."""
    packet = mqtt_subscribe(["soak/big/%06d/+" % i for i in range(filters)])
    n = 0
    while not stop.wait(60 if n else 15):
        n += 1
        t0 = time.monotonic()
        try:
            s = mqtt_session(port, "soak-big-%d" % n)
            s.sendall(packet)
            first, body = recv_packet(s, 30)
            if first != 0x90:
                raise ConnectionError("packet 0x%02x instead of SUBACK" % first)
            granted = sum(1 for c in body[2:] if c < 0x80)
            stats.event("big-subscribe", "SUBACK (seconds)", time.monotonic() - t0)
            stats.event("big-subscribe", "granted of %d" % filters, granted)
            s.sendall(b"\xe0\x00")
            s.close()
        except OSError as e:
            stats.event("big-subscribe", "failed (%s)" % e)


MALFORMED = [
    ("reserved packet type 0", b"\x00\x00"),
    ("PUBLISH before CONNECT", b"\x30\x05\x00\x01ahi"),
    ("CONNECT bad protocol name", mqtt_packet(0x10, mqtt_str("MQTX") + b"\x04\x02\x00\x3c"
                                             + mqtt_str("x"))),
    ("CONNECT level 9", mqtt_packet(0x10, mqtt_str("MQTT") + b"\x09\x02\x00\x3c" + mqtt_str("x"))),
    ("remaining length of 5 bytes", b"\x10\xff\xff\xff\xff\x7f"),
    ("CONNECT with reserved flag", mqtt_packet(0x10, mqtt_str("MQTT") + b"\x04\x03\x00\x3c"
                                              + mqtt_str("x"))),
    ("string longer than the packet", mqtt_packet(0x10, b"\x00\x40MQTT")),
    ("second CONNECT", None),
]


def hostile_malformed(stats, stop, port):
    """A malformed packet every 2 s; records whether the broker closed the
    connection within 5 s."""
    i = 0
    while not stop.wait(2.0):
        name, data = MALFORMED[i % len(MALFORMED)]
        i += 1
        t0, s = time.monotonic(), None
        try:
            if data is None:
                s = mqtt_session(port, "soak-malformed-%d" % i)
                data = mqtt_connect("soak-malformed-%d" % i)
            else:
                s = socket.create_connection((HOST, port), timeout=5)
            s.sendall(data)
            s.settimeout(5)
            while s.recv(4096):
                pass
            stats.event("malformed", "closed by the broker (seconds)", time.monotonic() - t0)
        except socket.timeout:
            stats.event("malformed", "NOT closed within 5 s: %s" % name)
        except OSError:
            stats.event("malformed", "closed by the broker (seconds)", time.monotonic() - t0)
        finally:
            if s is not None:
                s.close()


# ---- the run ----------------------------------------------------------------------

def second_row(t, servers, stats, mqtt):
    row = {"t": round(t, 1), "servers": {}, "kinds": {}}
    now = time.monotonic()
    for m in mqtt:
        m.expire(now)
    for name, srv in servers.items():
        s = srv.sample(now)
        row["servers"][name] = None if s is None else {
            "rss_kb": s[0], "cpu_pct": None if s[1] is None else round(s[1], 1)}
    lat, err, pre = stats.swap()
    for kind in set(lat) | set(err) | set(pre):
        v = sorted(lat.get(kind, []))
        k = {"n": len(v), "errors": err.get(kind, 0)}
        if v:
            k.update(p50=round(percentile(v, 0.5), 3), p99=round(percentile(v, 0.99), 3),
                     max=round(v[-1], 3))
            k["_all"] = v
        for count, p50, p99, mx in pre.get(kind, []):
            k["n"] += count
            k.setdefault("_runs", []).append((p50, p99, mx))
        if "_runs" in k and not v:
            runs = k["_runs"]
            k.update(p50=round(max(r[0] for r in runs), 3), p99=round(max(r[1] for r in runs), 3),
                     max=round(max(r[2] for r in runs), 3))
        row["kinds"][kind] = k
    return row


def slope_per_min(points):
    """Least-squares slope of (seconds, value) points, per minute."""
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    if sxx == 0:
        return None
    return 60.0 * sum((p[0] - mx) * (p[1] - my) for p in points) / sxx


def sustained_drift(points):
    """RSS growth that keeps on, per minute: the smaller of the least-squares
    slopes of the two halves of the points. A leak grows in both halves; a
    one-off step (a cache reaching its size, an allocator arena growing
    once) lies in one half, whose slope it raises, while the other stays
    flat, so a step is not taken for drift however large it is."""
    half = len(points) // 2
    a, b = slope_per_min(points[:half]), slope_per_min(points[half:])
    return None if a is None or b is None else min(a, b)


def latency_window(rows, kind):
    """p50/p99/max over a list of rows: from every latency when there are
    some, else from the rpc-seq runs (median of p50s, max of p99s)."""
    all_v, runs, n, errors = [], [], 0, 0
    for r in rows:
        k = r["kinds"].get(kind)
        if k:
            all_v += k.get("_all", [])
            runs += k.get("_runs", [])
            n += k["n"]
            errors += k["errors"]
    if all_v:
        all_v.sort()
        return n, errors, percentile(all_v, 0.5), percentile(all_v, 0.99), all_v[-1]
    if runs:
        p50s = sorted(r[0] for r in runs)
        return n, errors, p50s[len(p50s) // 2], max(r[1] for r in runs), max(r[2] for r in runs)
    return n, errors, None, None, None


def fmt(v, spec="%.2f"):
    return "-" if v is None else spec % v


def report(args, rows, servers, stats, exit_codes, kinds):
    """Prints the report; returns (text, summary dict, failures)."""
    out, failures, summary = [], [], {"servers": {}, "kinds": {}}
    elapsed = rows[-1]["t"] if rows else 0
    window = min(60.0, max(elapsed / 3, 1))
    warm = min(60.0, elapsed / 4)
    first = [r for r in rows if r["t"] <= window]
    last = [r for r in rows if r["t"] > elapsed - window]
    out.append("soak: %.0f s (%s requested); first/last windows of %.0f s; drift fitted "
               "after %.0f s of warm-up%s" % (elapsed, args.duration_text, window, warm,
                                              "" if elapsed - warm >= DRIFT_SPAN else
                                              " (too short a fit: drift not judged)"))
    out.append("")
    out.append("| server | RSS first min (KB) | RSS last min (KB) | RSS max (KB) | drift (KB/min) "
               "| CPU mean (%) | exit |")
    out.append("|---|---:|---:|---:|---:|---:|---|")
    for name, srv in servers.items():
        def rss_of(rs):
            v = [r["servers"][name]["rss_kb"] for r in rs if r["servers"].get(name)]
            return sum(v) / len(v) if v else None
        pts = [(r["t"], r["servers"][name]["rss_kb"]) for r in rows
               if r["servers"].get(name) and r["t"] > warm]
        allrss = [r["servers"][name]["rss_kb"] for r in rows if r["servers"].get(name)]
        cpus = [r["servers"][name]["cpu_pct"] for r in rows
                if r["servers"].get(name) and r["servers"][name]["cpu_pct"] is not None]
        drift = sustained_drift(pts)
        status = srv.died or ("exit %s" % exit_codes.get(name))
        out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            name, fmt(rss_of(first), "%.0f"), fmt(rss_of(last), "%.0f"),
            fmt(max(allrss) if allrss else None, "%d"), fmt(drift, "%+.1f"),
            fmt(sum(cpus) / len(cpus) if cpus else None, "%.1f"), status))
        summary["servers"][name] = {"rss_first_kb": rss_of(first), "rss_last_kb": rss_of(last),
                                    "rss_max_kb": max(allrss) if allrss else None,
                                    "drift_kb_per_min": drift, "died": srv.died,
                                    "exit_code": exit_codes.get(name)}
        if srv.died:
            failures.append("%s died: %s" % (name, srv.died))
        if drift is not None and drift > args.max_drift and elapsed - warm >= DRIFT_SPAN:
            failures.append("%s RSS drift %.1f KB/min > %.1f" % (name, drift, args.max_drift))
    out.append("")
    out.append("| kind | ops | errors | first min p50 / p99 / max (ms) "
               "| last min p50 / p99 / max (ms) | whole run p99 / max (ms) |")
    out.append("|---|---:|---:|---|---|---|")
    for kind in kinds:
        n, errors, _, p99, mx = latency_window(rows, kind)
        f = latency_window(first, kind)
        l = latency_window(last, kind)
        out.append("| %s | %d | %d | %s / %s / %s | %s / %s / %s | %s / %s |" % (
            kind, n, errors, fmt(f[2]), fmt(f[3]), fmt(f[4]), fmt(l[2]), fmt(l[3]), fmt(l[4]),
            fmt(p99), fmt(mx)))
        summary["kinds"][kind] = {"ops": n, "errors": errors, "first": f[2:], "last": l[2:],
                                  "p99": p99, "max": mx}
        if n == 0:
            failures.append("%s: no successful operation" % kind)
        elif errors > args.max_error_rate * (n + errors):
            failures.append("%s: %d errors in %d operations (over %.2f %%)"
                            % (kind, errors, n + errors, 100 * args.max_error_rate))
    with stats.lock:
        details = {k: dict(v) for k, v in stats.err_detail.items()}
        hostile = {p: {w: dict(e) for w, e in h.items()} for p, h in stats.hostile.items()}
    if details:
        out.append("")
        out.append("healthy-client errors: " + "; ".join(
            "%s: %s" % (k, ", ".join("%s x%d" % (w, c) for w, c in sorted(v.items())))
            for k, v in sorted(details.items())))
    out.append("")
    out.append("hostile clients (count; for timings min / median / max):")
    for pattern in sorted(hostile):
        for what, e in sorted(hostile[pattern].items()):
            v = sorted(e["values"])
            extra = ""
            if v:
                extra = " (%s / %s / %s)" % (fmt(v[0], "%.3g"), fmt(v[len(v) // 2], "%.3g"),
                                             fmt(v[-1], "%.3g"))
            out.append("  %-16s %-50s %5d%s" % (pattern, what, e["count"], extra))
    t = os.times()
    out.append("")
    out.append("this script (all its clients): %.1f %% of one core; rpc-seq children %.1f %%"
               % (100 * (t.user + t.system) / max(elapsed, 1),
                  100 * (t.children_user + t.children_system) / max(elapsed, 1)))
    for name, srv in servers.items():
        line = srv.last_log_line("stopped:")
        if line:
            out.append("%s %s" % (name, line))
    summary["hostile"] = {p: {w: {"count": e["count"]} for w, e in h.items()}
                          for p, h in hostile.items()}
    summary["error_details"] = details
    with stats.lock:
        summary["slow_requests"] = list(stats.slow)
    if stats.slow:
        by_kind = {}
        for e in stats.slow:
            by_kind[e["kind"]] = by_kind.get(e["kind"], 0) + 1
        out.append("HTTP requests slower than %.0f ms: %s (listed in the JSON)" % (
            SLOW * 1000, ", ".join("%s %d" % kv for kv in sorted(by_kind.items()))))
    out.append("")
    out.append("result: " + ("FAIL: " + "; ".join(failures) if failures else "ok"))
    return "\n".join(out), summary, failures


def main():
    ap = argparse.ArgumentParser(
        description="Bounded soak of broker, car-server and a2b-server under mixed load with "
                    "hostile clients; samples RSS, CPU and latency every second.",
        epilog="Exit status: 0 ok, 1 a server died, errors over --max-error-rate or drift over "
               "--max-drift, 2 usage or start-up error.")
    ap.add_argument("--duration", default="30m", help="run length: 90s, 10m, 1h (default 30m)")
    ap.add_argument("--json", metavar="FILE", help="write the per-second samples and the "
                    "summary as JSON to FILE")
    ap.add_argument("--mqtt-rate", type=float, default=100,
                    help="MQTT messages per second for each of QoS 0 and QoS 1 (default 100)")
    ap.add_argument("--rest-rate", type=float, default=50, help="REST calls/s (default 50)")
    ap.add_argument("--grpc-rate", type=float, default=50, help="gRPC calls/s (default 50)")
    ap.add_argument("--a2b-rate", type=float, default=50, help="a2b requests/s (default 50)")
    ap.add_argument("--a2b-scale", type=float, default=0.1,
                    help="a2b data set scale (default 0.1: 20,000 users)")
    ap.add_argument("--big-subscribe", type=int, default=20000,
                    help="filters in the large SUBSCRIBE (default 20000)")
    ap.add_argument("--max-drift", type=float, default=256,
                    help="largest RSS drift (KB/min) accepted per server (default 256)")
    ap.add_argument("--max-error-rate", type=float, default=0.001,
                    help="fraction of failed healthy operations accepted per kind "
                         "(default 0.001)")
    ap.add_argument("--no-hostile", action="store_true",
                    help="healthy load only (to compare with a run with hostile clients)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the work directory (server logs, a2b.db)")
    args = ap.parse_args()
    try:
        args.duration_s = parse_duration(args.duration)
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    args.duration_text = args.duration
    for name in ("mqtt_rate", "rest_rate", "grpc_rate", "a2b_rate", "a2b_scale"):
        if getattr(args, name) <= 0:
            ap.error("--%s must be positive" % name.replace("_", "-"))
    if not os.access(SHOOTOUT, os.X_OK):
        print("soak: %s is not an executable (build it, or set SHOOTOUT_BIN)" % SHOOTOUT,
              file=sys.stderr)
        return 2

    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    workdir = tempfile.mkdtemp(prefix="soak-")
    servers, children, threads, mqtt = {}, set(), [], []
    stats = Stats()
    rows = []
    exit_codes = {}
    try:
        try:
            servers = start_servers(workdir, args.a2b_scale)
        except RuntimeError as e:
            print("soak: %s" % e, file=sys.stderr)
            return 2
        broker_port = servers["broker"].ports[0]
        rest_port, grpc_port = servers["car-server"].ports
        a2b_port = servers["a2b-server"].ports[0]
        ports = {"broker": broker_port, "car-server rest": rest_port,
                 "car-server grpc": grpc_port, "a2b-server": a2b_port}
        print("soak: %s for %.0f s; broker :%d, car-server REST :%d gRPC :%d, a2b-server :%d; "
              "logs in %s" % (SHOOTOUT, args.duration_s, broker_port, rest_port, grpc_port,
                              a2b_port, workdir), file=sys.stderr)
        mqtt = [MqttRoundTrip(stats, stop, broker_port, q, args.mqtt_rate) for q in (0, 1)]
        jobs = [m.run for m in mqtt] + [
            lambda: http_loop(stats, stop, "rest", rest_port, args.rest_rate, rest_requests),
            lambda: http_loop(stats, stop, "a2b", a2b_port, args.a2b_rate,
                              a2b_requests_for(args.a2b_scale), by_method=True),
            lambda: grpc_loop(stats, stop, grpc_port, args.grpc_rate, children)]
        hostile = [
            lambda: hostile_connections(stats, stop, ports),
            lambda: hostile_non_readers(stats, stop, broker_port),
            lambda: hostile_big_subscribe(stats, stop, broker_port, args.big_subscribe),
            lambda: hostile_malformed(stats, stop, broker_port),
        ]
        for job in jobs + ([] if args.no_hostile else hostile):
            t = threading.Thread(target=job, daemon=True)
            t.start()
            threads.append(t)
        t0 = time.monotonic()
        next_tick = t0 + 1
        while not stop.is_set():
            stop.wait(max(0, next_tick - time.monotonic()))
            now = time.monotonic()
            rows.append(second_row(now - t0, servers, stats, mqtt))
            next_tick += 1
            if int(now - t0) % 60 == 0:
                r = rows[-1]
                print("soak: %4.0f s  RSS %s" % (now - t0, "  ".join(
                    "%s %s KB" % (n, s["rss_kb"] if s else "dead")
                    for n, s in r["servers"].items())), file=sys.stderr)
            if now - t0 >= args.duration_s or any(s.died for s in servers.values()):
                break
        stop.set()
        for t in threads:
            t.join(timeout=15)
        for m in mqtt:
            m.close()
    finally:
        stop.set()
        for p in list(children):
            if p.poll() is None:
                p.kill()
                p.wait()
        for name, srv in servers.items():
            exit_codes[name] = srv.stop()
    kinds = ["mqtt-q0", "mqtt-q1", "rest", "grpc", "a2b-get", "a2b-post"]
    text, summary, failures = report(args, rows, servers, stats, exit_codes, kinds)
    print(text)
    if args.json:
        for r in rows:
            for k in r["kinds"].values():
                k.pop("_all", None)
                k.pop("_runs", None)
        with open(args.json, "w") as f:
            json.dump({"command": sys.argv, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                   time.gmtime()),
                       "duration_s": args.duration_s, "summary": summary, "samples": rows},
                      f, indent=1)
    if args.keep:
        print("soak: work directory kept: %s" % workdir, file=sys.stderr)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
