"""Persistence (docs/persistence.md): sessions, subscriptions, retained
messages and QoS 1/2 flows survive a restart, a kill -9 of the broker, and
what a power cut would leave of its log (PowerCut).

Against Mosquitto (SHOOTOUT_TEST_PEER=mosquitto) the tests that need a
crash to keep what was acknowledged are shootout_only: Mosquitto writes its
state only at autosave and at a clean exit, so kill -9 loses it."""
import errno
import os
import queue
import shutil
import signal
import struct
import subprocess
import time

import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

import mqtt_raw as r
from conftest import HOST, SHOOTOUT_BIN, free_port, need
from mqtt_paho import paho5

TOTAL = 3000
KILL_AFTER = 1200   # acknowledged messages before the kill
WINDOW = 100        # PUBLISHes sent before reading their acknowledgements


def restart(broker_factory, old, data, kill, **limits):
    if kill:
        old.kill()
    else:
        assert old.stop() == 0 or old.kind != "shootout"
    return broker_factory(port=old.port, persistence_dir=data, **limits)


def park(b, client_id, v5):
    """A persistent session subscribed to d/1 at QoS 1 and d/2 at QoS 2, offline."""
    c = b.raw()
    if v5:
        c.park_session5(client_id, [("d/1", 1), ("d/2", 2)], session_expiry=3600)
    else:
        c.connect_ok(client_id, clean_session=False)
        c.subscribe(1, [("d/1", 1), ("d/2", 2)])
        c.send(r.disconnect())
        assert c.wait_closed() == []
    return c


def publish_until_killed(b, total, kill_after, qos_of=lambda i: 1 + i % 2):
    """Publishes message i (payload str(i)) at QoS qos_of(i) to d/<QoS>,
    alternately 1 and 2 by default, in windows, and kills the broker with
    SIGKILL once kill_after are acknowledged, in the middle of a window.
    Returns the payloads acknowledged (PUBACK, or PUBREC: the broker then
    owns a QoS 2 message) and how many were sent."""
    pub = b.raw()
    pub.connect_ok("pub")
    acked, killed, i = set(), False, 0
    while i < total and not killed:
        pending = {}
        for _ in range(WINDOW):
            if i == total:
                break
            qos = qos_of(i)
            pid = 1 + i % 60000
            pending[pid] = str(i).encode()
            pub.send(r.publish("d/%d" % qos, pending[pid], qos=qos, packet_id=pid))
            i += 1
        if len(acked) >= kill_after:
            b.kill()
            killed = True
        try:
            for _ in range(3 * WINDOW):
                if not pending:
                    break
                p = pub.recv_packet(5)
                if p.type == r.PUBACK:
                    acked.add(pending.pop(p.packet_id))
                elif p.type == r.PUBREC:
                    acked.add(pending.pop(p.packet_id))
                    pub.send(r.pubrel(p.packet_id))
        except (r.Closed, ConnectionError, OSError):
            assert killed
    pub.close()
    return acked, i


def drain(c, quiet=1.5, limit=60):
    """Receives and acknowledges until the broker is quiet; returns the PUBLISHes."""
    got, deadline = [], time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            p = c.recv_packet(quiet)
        except TimeoutError:
            return got
        if p.type == r.PUBLISH:
            got.append(p)
            if p.qos:
                c.send(r.puback(p.packet_id) if p.qos == 1 else r.pubrec(p.packet_id))
        elif p.type == r.PUBREL:
            c.send(r.pubcomp(p.packet_id))
    raise AssertionError("broker still sending after %ds" % limit)


def reconnect(b, client_id, v5):
    c = b.raw()
    if v5:
        ack = c.connect5_ok(client_id, clean_start=False, properties=[(r.SESSION_EXPIRY, 3600)])
    else:
        ack = c.connect_ok(client_id, clean_session=False)
    assert ack.session_present
    return c


def log_files(data):
    return sorted(f for f in os.listdir(data) if f.startswith("log.") and "." not in f[4:])


class PowerCut:
    """A power cut after a kill -9, as far as the log can tell: strace,
    attached to the broker, records its writes to and fdatasyncs of its log
    files; after the kill, cut() truncates each file to what its last
    fdatasync made durable. (The kernel may have written back more before
    the cut; this is the most a power cut can lose.)"""

    def __init__(self, broker, data):
        need(shutil.which("strace"), "no strace to follow the broker's syncs")
        time.sleep(0.3)  # lazy records written so far: synced by the broker's 250 ms timer
        self.data = os.path.realpath(data)
        self.base = {f: os.path.getsize(os.path.join(data, f)) for f in log_files(data)}
        self.trace = self.data + ".strace"
        self.proc = subprocess.Popen(
            ["strace", "-f", "-y", "-e", "trace=write,fdatasync", "-e", "signal=none", "-o",
             self.trace, "-p", str(broker.proc.pid)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        line = self.proc.stderr.readline()  # "strace: Process N attached", or why not
        if b"attached" not in line:
            self.proc.wait(10)
            need(False, "strace cannot attach to the broker: %r" % line)

    def cut(self):
        """After the broker's kill: returns the bytes cut off."""
        self.proc.wait(30)
        written, synced, unfinished = {}, {}, {}
        for line in open(self.trace, errors="replace"):
            fields = line.split(None, 1)
            if len(fields) < 2:
                continue
            pid, rest = fields
            if rest.startswith("<... "):  # "<... write resumed>) = 17"
                call = unfinished.pop(pid, None)
            elif rest.startswith(("write(", "fdatasync(")) and "<" in rest:
                call = (rest[:rest.index("(")], rest[rest.index("<") + 1:rest.index(">")])
                if rest.rstrip().endswith("<unfinished ...>"):
                    unfinished[pid] = call
                    continue
            else:
                continue
            if call is None or " = " not in rest:
                continue
            what, path = call
            ret = rest.rsplit(" = ", 1)[1].split()[0]  # "?": cut short by the kill
            name = os.path.basename(path)
            if os.path.dirname(path) != self.data or not name.startswith("log.") or \
                    not ret.isdigit():
                continue
            ret = int(ret)
            if what == "write":
                written[name] = written.get(name, 0) + ret
            else:
                synced[name] = written.get(name, 0)
        lost = 0
        for name, n in written.items():
            path = os.path.join(self.data, name)
            keep = self.base.get(name, 0) + synced.get(name, 0)
            lost += os.path.getsize(path) - keep
            os.truncate(path, keep)
        return lost


@pytest.mark.shootout_only  # Mosquitto keeps nothing it had not autosaved at kill -9
@pytest.mark.parametrize("crash", ["kill9", "powercut"])
@pytest.mark.parametrize("v5", [False, True], ids=["mqtt311", "mqtt5"])
def test_acknowledged_messages_survive_a_crash_and_restart(broker_factory, tmp_path, v5, crash):
    data = str(tmp_path / "data")
    b = broker_factory(persistence_dir=data, max_queued_messages=10 * TOTAL)
    park(b, "sub", v5)
    power = PowerCut(b, data) if crash == "powercut" else None
    acked, sent = publish_until_killed(b, TOTAL, KILL_AFTER)
    assert KILL_AFTER <= len(acked) < sent, "the kill must land in the middle"
    if power:
        power.cut()
    b = broker_factory(port=b.port, persistence_dir=data, max_queued_messages=10 * TOTAL)
    b = restart(broker_factory, b, data, kill=False, max_queued_messages=10 * TOTAL)  # and clean
    c = reconnect(b, "sub", v5)
    got = drain(c)
    by_qos = {1: [], 2: []}
    for p in got:
        by_qos[p.qos].append(p.payload)
    received = set(by_qos[1]) | set(by_qos[2])
    missing = sorted(acked - received, key=int)
    assert not missing, "%d acknowledged messages lost, e.g. %r" % (len(missing), missing[:10])
    assert len(by_qos[2]) == len(set(by_qos[2])), "QoS 2 duplicates"
    qos1_dups = len(by_qos[1]) - len(set(by_qos[1]))
    assert qos1_dups <= WINDOW, "%d QoS 1 duplicates" % qos1_dups
    assert all(int(x) % 2 == 0 for x in by_qos[1]) and all(int(x) % 2 == 1 for x in by_qos[2])
    c.close()
    # Delivered and acknowledged: gone for good, also after another restart.
    b = restart(broker_factory, b, data, kill=True)
    c = reconnect(b, "sub", v5)
    assert drain(c, quiet=1.0) == []


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "kill9"])
def test_retained_and_subscriptions_survive(broker_factory, tmp_path, kill):
    if os.environ.get("SHOOTOUT_TEST_PEER") == "mosquitto":
        if kill:
            pytest.skip("shootout_only: Mosquitto loses what it had not autosaved at kill -9")
        if os.geteuid() == 0:
            pytest.skip("Mosquitto started as root runs as user mosquitto, which cannot "
                        "reach pytest's private tmp_path")
    data = str(tmp_path / "data")
    b = broker_factory(persistence_dir=data)
    pub = b.raw()
    pub.connect_ok("pub")
    pub.send(r.publish("keep/a", b"A", qos=1, retain=True, packet_id=1))
    pub.expect(r.PUBACK)
    pub.send(r.publish("keep/b", b"B", qos=1, retain=True, packet_id=2))
    pub.expect(r.PUBACK)
    pub.send(r.publish("keep/b", b"", qos=1, retain=True, packet_id=3))  # cleared
    pub.expect(r.PUBACK)
    park(b, "sub", v5=False)
    b = restart(broker_factory, b, data, kill)
    c = reconnect(b, "sub", v5=False)
    pub = b.raw()
    pub.connect_ok("pub2")
    pub.send(r.publish("d/1", b"after", qos=1, packet_id=1))
    pub.expect(r.PUBACK)
    p = c.expect(r.PUBLISH)
    assert (p.topic, p.payload, p.qos) == ("d/1", b"after", 1)
    c.send(r.puback(p.packet_id))
    assert retained(b) == [("keep/a", b"A", True)]


@pytest.mark.shootout_only
def test_restored_sessions_are_spread_over_the_loops(broker_factory, tmp_path):
    """A client coming back is moved to its session's loop, so the sessions
    a restart restores go round the loops: their clients do not all end on
    one (loop=N of the connect lines; docs/persistence.md)."""
    data = str(tmp_path / "data")
    threads = ("--threads", "4")
    b = broker_factory(persistence_dir=data, extra_args=threads)
    ids = ["spread-%d" % i for i in range(8)]
    for cid in ids:
        park(b, cid, v5=False)
    assert b.stop() == 0
    b = broker_factory(port=b.port, persistence_dir=data, extra_args=threads)
    loops = set()
    for cid in ids:
        reconnect(b, cid, v5=False)
        loops.add(b.loop_of(cid))
    assert loops == {0, 1, 2, 3}, loops


def retained(b):
    """(topic, payload, retain) of what a new subscriber to keep/# gets."""
    fresh = b.raw()
    fresh.connect_ok("fresh")
    fresh.subscribe(1, [("keep/#", 0)])
    return [(x.topic, x.payload, x.retain) for x in fresh.pending + drain(fresh, quiet=0.5)]


def qos2_pair(b):
    """A persistent subscriber to t at QoS 2, and a persistent publisher."""
    sub = b.raw()
    sub.connect_ok("sub", clean_session=False)
    sub.subscribe(1, [("t", 2)])
    pub = b.raw()
    pub.connect_ok("pub", clean_session=False)
    return sub, pub


@pytest.mark.shootout_only
def test_inflight_redelivered_with_dup_and_qos2_pubrel_completes(broker_factory, tmp_path):
    data = str(tmp_path / "data")
    b = broker_factory(persistence_dir=data)
    sub, pub = qos2_pair(b)
    # Inbound QoS 2 left at PUBREC: the message is delivered, PUBREL pending.
    pub.send(r.publish("t", b"q2", qos=2, packet_id=7))
    pub.expect(r.PUBREC)
    p = sub.expect(r.PUBLISH)
    assert (p.payload, p.qos, p.dup) == (b"q2", 2, False)
    # The subscriber never acknowledges it: outbound QoS 2 inflight.
    b = restart(broker_factory, b, data, kill=True)
    sub = reconnect(b, "sub", v5=False)
    p = sub.expect(r.PUBLISH)
    assert (p.payload, p.qos, p.dup) == (b"q2", 2, True)
    sub.send(r.pubrec(p.packet_id))
    rel = sub.expect(r.PUBREL)
    # The publisher resends the PUBLISH (DUP) and its PUBREL: the broker
    # knows the id, so it completes without delivering twice.
    pub = reconnect(b, "pub", v5=False)
    pub.send(r.publish("t", b"q2", qos=2, dup=True, packet_id=7))
    pub.expect(r.PUBREC)
    pub.send(r.pubrel(7))
    pub.expect(r.PUBCOMP)
    # PUBREL sent to the subscriber survives a restart too.
    b = restart(broker_factory, b, data, kill=True)
    sub = reconnect(b, "sub", v5=False)
    again = sub.expect(r.PUBREL)
    assert again.packet_id == rel.packet_id
    sub.send(r.pubcomp(rel.packet_id))
    sub.expect_nothing(1.0)


@pytest.mark.shootout_only
def test_released_qos2_packet_id_is_free_after_a_power_cut(broker_factory, tmp_path):
    """Once a publisher's QoS 2 flow is complete (PUBCOMP sent), its packet
    id is free even after a power cut: were the release lost, the
    publisher's next message under that id would be taken for a
    retransmission of the old one and never delivered."""
    data = str(tmp_path / "data")
    b = broker_factory(persistence_dir=data)
    sub, pub = qos2_pair(b)
    power = PowerCut(b, data)
    pub.send(r.publish("t", b"first", qos=2, packet_id=7))
    pub.expect(r.PUBREC)
    pub.send(r.pubrel(7))
    pub.expect(r.PUBCOMP)
    b.kill()
    power.cut()
    b = broker_factory(port=b.port, persistence_dir=data)
    sub = reconnect(b, "sub", v5=False)
    pub = reconnect(b, "pub", v5=False)
    pub.send(r.publish("t", b"second", qos=2, packet_id=7))
    pub.expect(r.PUBREC)
    pub.send(r.pubrel(7))
    pub.expect(r.PUBCOMP)
    assert sorted(set(p.payload for p in drain(sub))) == [b"first", b"second"]


@pytest.mark.shootout_only  # Mosquitto keeps nothing it had not autosaved at kill -9
@pytest.mark.parametrize("crash", ["kill9", "powercut"])
def test_queued_qos0_messages_survive_kill9_and_go_once(broker_factory, tmp_path, crash):
    """--queue-qos0: QoS 0 messages queued for an offline persistent session
    are kept like QoS 1 ones (through a kill -9: a power cut may lose them,
    at most once), and sent once, even if the broker is killed, or the
    power cut, right after it sent them. QoS 1 messages queued ahead of
    them hold them back until PUBACKs make room in the inflight window, so
    that they go in a loop iteration of their own."""
    data = str(tmp_path / "data")
    q0 = ("--queue-qos0",)
    b = broker_factory(persistence_dir=data, extra_args=q0, max_inflight_messages=5)
    sub = b.raw()
    sub.connect_ok("sub0", clean_session=False)
    sub.subscribe(1, [("z/#", 1)])
    sub.send(r.disconnect())
    assert sub.wait_closed() == []
    pub = b.raw()
    pub.connect_ok("pub0")
    want = []
    for i in range(30):
        qos = 1 if i < 10 else 0
        pub.send(r.publish("z/%d" % i, b"%d" % i, qos=qos, packet_id=i + 1 if qos else None))
        want.append(("z/%d" % i, b"%d" % i, qos))
        if qos:
            pub.expect(r.PUBACK)
    # Its PUBACK leaves after the commit of everything before it.
    pub.send(r.publish("z/last", b"last", qos=1, packet_id=99))
    pub.expect(r.PUBACK)
    want.append(("z/last", b"last", 1))
    b.kill()
    b = broker_factory(port=b.port, persistence_dir=data, extra_args=q0, max_inflight_messages=5)
    power = PowerCut(b, data) if crash == "powercut" else None
    sub = reconnect(b, "sub0", v5=False)
    got = []
    for _ in want:
        p = sub.expect(r.PUBLISH)
        got.append((p.topic, p.payload, p.qos))
        if p.qos:
            sub.send(r.puback(p.packet_id))
    b.kill()  # at once, before the broker's timer would sync anything
    if power:
        power.cut()
    assert got == want
    sub.close()
    b = broker_factory(port=b.port, persistence_dir=data, extra_args=q0)
    sub = reconnect(b, "sub0", v5=False)
    again = drain(sub, quiet=1.0)
    assert [p.payload for p in again if p.qos == 0] == [], "QoS 0 sent twice"
    if crash == "kill9":  # only QoS 1 messages whose PUBACK the kill overtook
        assert all(p.dup for p in again)


# ---- a crash while subscribers drain their queues -------------------------
#
# Records that nothing sent depends on surviving a power cut are written
# every loop iteration but synced later (docs/persistence.md, "What waits
# for the sync"): deleting an acknowledged copy, marking a QoS 1 copy sent.
# A kill -9 loses none of them; a power cut can lose those written since the
# last sync, which PowerCut simulates.

BLOCK = 250
DRAIN_TOTAL = 8 * BLOCK


def drain_qos(i):
    """Message i's QoS: blocks of BLOCK messages, QoS 1 then QoS 2."""
    return 1 + (i // BLOCK) % 2


class PahoReceiver:
    """A persistent paho subscriber to d/1 (QoS 1) and d/2 (QoS 2). paho
    delivers a QoS 2 message at its PUBREL and keeps those waiting for one
    across reconnects."""

    def __init__(self, b, client_id):
        self.got = []
        self.paho = b.paho(client_id, clean_session=False)
        assert self.paho.subscribe([("d/1", 1), ("d/2", 2)]) == [1, 2]
        self.paho.disconnect()

    def back(self, b):
        """Connects again (its broker may have gone away); session present."""
        self.paho.c.loop_stop()
        self.paho.connected.clear()
        self.paho.disconnected.clear()
        return self.paho.connect()

    def receive(self, until=None, quiet=2.0):
        """Takes messages until `until` are delivered in all, or none comes
        for quiet seconds."""
        deadline = time.monotonic() + 120
        while until is None or len(self.got) < until:
            assert time.monotonic() < deadline, "broker still sending after 120 s"
            try:
                self.got.append(self.paho.messages.get(timeout=quiet))
            except queue.Empty:
                return

    def stall(self):
        """paho acknowledges by itself: nothing to hold back."""


class EarlyReceiver:
    """A persistent MQTT 3.1.1 subscriber like PahoReceiver, raw, that
    delivers a QoS 2 message when its PUBLISH comes and holds the packet id
    until the PUBREL, as MQTT allows: a QoS 2 message sent to it again
    under a new packet id is delivered twice, where paho would not tell.
    The ids held outlive its connections."""

    def __init__(self, b, client_id):
        self.client_id, self.held, self.got = client_id, set(), []
        self.c = b.raw()
        self.c.connect_ok(client_id, clean_session=False)
        self.c.subscribe(1, [("d/1", 1), ("d/2", 2)])
        self.c.send(r.disconnect())
        assert self.c.wait_closed() == []

    def back(self, b):
        self.c = b.raw()
        return self.c.connect_ok(self.client_id, clean_session=False).session_present

    def receive(self, until=None, quiet=2.0, ack=True):
        """Takes packets until `until` messages are delivered in all, none
        comes for quiet seconds, or the connection closes; without ack,
        PUBLISHes get no PUBACK or PUBREC."""
        deadline = time.monotonic() + 120
        try:
            while until is None or len(self.got) < until:
                assert time.monotonic() < deadline, "broker still sending after 120 s"
                p = self.c.recv_packet(quiet)
                if p.type == r.PUBLISH and p.qos == 1:
                    self.got.append(p)
                    if ack:
                        self.c.send(r.puback(p.packet_id))
                elif p.type == r.PUBLISH:
                    if p.packet_id not in self.held:
                        self.got.append(p)
                        self.held.add(p.packet_id)
                    if ack:
                        self.c.send(r.pubrec(p.packet_id))
                elif p.type == r.PUBREL:
                    self.held.discard(p.packet_id)
                    self.c.send(r.pubcomp(p.packet_id))
        except (TimeoutError, r.Closed, ConnectionError, OSError):
            pass

    def stall(self):
        """Stops acknowledging PUBLISHes, still answering PUBRELs, until
        nothing comes for 50 ms, as a client falling behind: the QoS 2
        messages the broker sends for the PUBCOMPs come with no PUBREC, and
        so no sync, after them."""
        self.receive(quiet=0.05, ack=False)


@pytest.mark.shootout_only  # Mosquitto keeps nothing it had not autosaved at kill -9
@pytest.mark.parametrize("receiver", [PahoReceiver, EarlyReceiver], ids=["paho", "early"])
@pytest.mark.parametrize("crash,at", [("kill9", 1), ("powercut", 1), ("powercut", 2)],
                         ids=["kill9", "powercut-in-qos1", "powercut-in-qos2"])
def test_crash_during_the_drain(broker_factory, tmp_path, receiver, crash, at):
    """A persistent subscriber drains 2000 acknowledged QoS 1 and QoS 2
    messages (blocks of 250 each), and the broker is killed with SIGKILL
    once it is halfway through a block of QoS `at` messages; with a power
    cut, its log also loses what was written after the last fdatasync.
    After the restart the subscriber has every message, each QoS 2 one
    exactly once, QoS 1 ones at least once: after a kill -9 a duplicate
    has DUP set; after a power cut a QoS 1 message marked sent only lazily
    may go again as a first attempt."""
    data = str(tmp_path / "data")
    limits = {"max_queued_messages": 10 * DRAIN_TOTAL}
    b = broker_factory(persistence_dir=data, **limits)
    rx = receiver(b, "drainer")
    acked, _ = publish_until_killed(b, DRAIN_TOTAL, DRAIN_TOTAL + 1, qos_of=drain_qos)
    assert len(acked) == DRAIN_TOTAL
    power = PowerCut(b, data) if crash == "powercut" else None
    assert rx.back(b) is True
    rx.receive(until=(at + 1) * BLOCK + BLOCK // 2, quiet=30)
    rx.stall()
    b.kill()
    rx.receive(quiet=0.5)  # what was on its way
    assert len(rx.got) < DRAIN_TOTAL, "the kill must land in the middle of the drain"
    lost = power.cut() if power else 0
    b = broker_factory(port=b.port, persistence_dir=data, **limits)
    assert rx.back(b) is True
    rx.receive()

    by_payload = {}
    for m in rx.got:
        by_payload.setdefault(m.payload, []).append(m)
    missing = sorted(acked - set(by_payload), key=int)
    assert not missing, "%d acknowledged messages lost, e.g. %r (%d bytes of log cut)" % (
        len(missing), missing[:10], lost)
    for payload, ms in sorted(by_payload.items(), key=lambda x: int(x[0])):
        qos = drain_qos(int(payload))
        assert [m.qos for m in ms] == [qos] * len(ms)
        if qos == 2:
            assert len(ms) == 1, "QoS 2 message %s delivered %d times (%d bytes of log cut)" % (
                payload, len(ms), lost)
        elif crash == "kill9":
            assert all(m.dup for m in ms[1:]), "QoS 1 message %s again without DUP" % payload
    # Delivered and acknowledged: gone for good, also after another kill.
    b = restart(broker_factory, b, data, kill=True, **limits)
    delivered = len(rx.got)
    assert rx.back(b) is True
    rx.receive(quiet=1.0)
    assert len(rx.got) == delivered


# ---- wills (docs/persistence.md, "What the broker guarantees") -------------
#
# A will outlives the broker: one owed by a session that was connected when
# the broker stopped (kill -9 or SIGTERM) is published at the next start, its
# Will Delay Interval counted from then (MQTT 5 3.1.2.5 lets a server defer
# wills to its restart); a delayed will owed by an offline session keeps its
# due time across the restart, counted from the original disconnect.

WILL_PROPS = [(r.CONTENT_TYPE, "text/plain"), (r.USER_PROPERTY, ("who", "dev")),
              (r.MESSAGE_EXPIRY, 3600)]


def will_watchers(b):
    """Persistent paho subscribers to will/#, one per protocol version,
    offline (so that a will published at the start is queued for them)."""
    props = Properties(PacketTypes.CONNECT)
    props.SessionExpiryInterval = 3600
    w3 = b.paho("watch3", clean_session=False)
    assert w3.subscribe("will/#", 1) == [1]
    w5 = paho5(b, "watch5", clean_start=False, properties=props)
    assert w5.subscribe("will/#", 1) == [1]
    w3.disconnect()
    w5.disconnect()


def watchers_back(b):
    props = Properties(PacketTypes.CONNECT)
    props.SessionExpiryInterval = 3600
    w3 = b.paho("watch3", clean_session=False, connect=False)
    assert w3.connect() is True
    w5 = paho5(b, "watch5", connect=False)
    assert w5.connect(clean_start=False, properties=props) is True
    return w3, w5


def will_client(b, cid, v5, delay=0, session_expiry=3600):
    """A persistent session with a QoS 1 will on will/<cid>."""
    c = b.raw()
    if v5:
        c.connect5_ok(cid, clean_start=False, properties=[(r.SESSION_EXPIRY, session_expiry)],
                      will_topic="will/" + cid, will_message=b"gone " + cid.encode(), will_qos=1,
                      will_properties=[(r.WILL_DELAY, delay)] + WILL_PROPS)
    else:
        c.connect_ok(cid, clean_session=False, will_topic="will/" + cid,
                     will_message=b"gone " + cid.encode(), will_qos=1)
    return c


@pytest.mark.shootout_only  # Mosquitto keeps no will across a restart
@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "kill9"])
@pytest.mark.parametrize("v5", [False, True], ids=["mqtt311", "mqtt5"])
def test_will_of_a_connected_session_is_published_after_a_restart(broker_factory, tmp_path, v5,
                                                                    kill):
    data = str(tmp_path / "data")
    b = broker_factory(persistence_dir=data)
    will_watchers(b)
    will_client(b, "dev", v5)
    # Connected but for a clean DISCONNECT: its will is not owed.
    polite = will_client(b, "polite", v5)
    polite.send(r.disconnect5() if v5 else r.disconnect())
    assert polite.wait_closed() == []
    b = restart(broker_factory, b, data, kill)
    w3, w5 = watchers_back(b)
    for w in (w3, w5):
        m = w.get()
        assert (m.topic, m.payload, m.qos) == ("will/dev", b"gone dev", 1)
        w.expect_none(0.5)
    if v5:  # its properties came through the log, and its expiry runs from the publication
        assert m.properties.ContentType == "text/plain"
        assert m.properties.UserProperty == [("who", "dev")]
        assert 3590 <= m.properties.MessageExpiryInterval <= 3600
    # Published once: not again at the next start.
    w3.disconnect()
    w5.disconnect()
    b = restart(broker_factory, b, data, kill=True)
    w3, w5 = watchers_back(b)
    w3.expect_none(1.0)
    w5.expect_none(0.2)


def live_watchers(b):
    """Connected paho subscribers to will/#, MQTT 5 and MQTT 3.1.1."""
    w5, w3 = paho5(b, "live5"), b.paho("live3")
    for w in (w5, w3):
        assert w.subscribe("will/#", 1) == [1]
    return w5, w3


@pytest.mark.shootout_only
def test_delayed_will_of_a_connected_session_counts_from_the_restart(broker_factory, tmp_path):
    data = str(tmp_path / "data")
    b = broker_factory(persistence_dir=data)
    will_client(b, "late", v5=True, delay=3)
    will_client(b, "back", v5=True, delay=3)
    started = time.monotonic()  # before the broker's start, however slow that is
    b = restart(broker_factory, b, data, kill=True)
    w, w3 = live_watchers(b)
    reconnect(b, "back", v5=True)  # within the delay: its will is never sent
    for x in (w, w3):
        m = x.get(timeout=10)
        assert (m.topic, m.payload) == ("will/late", b"gone late")
    assert time.monotonic() - started >= 2.5, "the delay counts from the start"
    w.expect_none(1.5)
    w3.expect_none(0.2)


@pytest.mark.shootout_only
def test_delayed_will_owed_by_an_offline_session_survives_a_restart(broker_factory, tmp_path):
    """Two sessions whose connections dropped: one's will is due after its
    6 s delay, the other's when its session expires after 6 s (its delay
    is longer). The broker is killed 3 s into that and restarted: both wills
    still come 6 s after the drop, not 6 s after the restart."""
    data = str(tmp_path / "data")
    b = broker_factory(persistence_dir=data)
    delayed = will_client(b, "delayed", v5=True, delay=6)
    expiring = will_client(b, "expiring", v5=True, delay=600, session_expiry=6)
    reconnecting = will_client(b, "reconnecting", v5=True, delay=6)
    dropped = time.monotonic()
    for c in (delayed, expiring, reconnecting):
        c.close()
    time.sleep(3)
    b = restart(broker_factory, b, data, kill=True)
    restarted = time.monotonic()
    w, w3 = live_watchers(b)
    reconnect(b, "reconnecting", v5=True)
    for x in (w, w3):
        got = sorted((m.topic, m.payload) for m in x.get_n(2, timeout=10))
        assert got == [("will/delayed", b"gone delayed"), ("will/expiring", b"gone expiring")]
    arrived = time.monotonic()
    assert arrived - dropped >= 5.5, "published before its time"
    assert arrived - restarted < 5.5, "the delay must count from the drop, not the restart"
    w.expect_none(1.0)
    # The expired session is gone; the delayed one is there, its will spent.
    gone = b.raw()
    assert not gone.connect5_ok("expiring", clean_start=False,
                                properties=[(r.SESSION_EXPIRY, 60)]).session_present
    kept = b.raw()
    assert kept.connect5_ok("delayed", clean_start=False,
                            properties=[(r.SESSION_EXPIRY, 60)]).session_present
    kept.close()
    w.expect_none(1.0)


# ---- subscriptions and retained messages through a power cut ---------------
#
# SUB, SUB_DEL, RETAIN and RETAIN_CLEAR gate their output (docs/persistence.md,
# "What waits for the sync"): the SUBACK, UNSUBACK or PUBACK, and a retained
# message handed to a new subscriber, leave only once the record is synced.
# Each test below kills the broker right after that output, before its 250 ms
# timer would sync a lazy record, and cuts the log back to its last sync.


@pytest.mark.shootout_only  # Mosquitto keeps nothing it had not autosaved at kill -9
@pytest.mark.parametrize("change", ["subscribe", "unsubscribe"])
def test_subscription_change_survives_a_power_cut(broker_factory, tmp_path, change):
    """A persistent session subscribed to sentinel and old/t (synced
    before the cut is followed) subscribes to new/t or unsubscribes from
    old/t, gets the SUBACK or UNSUBACK, and the power goes. After the
    restart its session has the subscriptions it was last told it has."""
    data = str(tmp_path / "data")
    b = broker_factory(persistence_dir=data)
    c = b.raw()
    c.connect_ok("subber", clean_session=False)
    c.subscribe(1, [("sentinel", 1), ("old/t", 1)])
    power = PowerCut(b, data)
    if change == "subscribe":
        assert c.subscribe(2, [("new/t", 1)]).granted == [1]
    else:
        c.send(r.unsubscribe(2, ["old/t"]))
        assert c.expect(r.UNSUBACK).packet_id == 2
    b.kill()
    power.cut()
    b = broker_factory(port=b.port, persistence_dir=data)
    c = reconnect(b, "subber", v5=False)
    pub = b.raw()
    pub.connect_ok("pub")
    for pid, topic in enumerate(("old/t", "new/t", "sentinel"), 1):
        pub.send(r.publish(topic, topic.encode(), qos=1, packet_id=pid))
        pub.expect(r.PUBACK)
    before, _ = c.collect_until(lambda p: p.topic == "sentinel")
    want = ["old/t", "new/t"] if change == "subscribe" else []
    assert [p.topic for p in before] == want


@pytest.mark.shootout_only  # Mosquitto keeps nothing it had not autosaved at kill -9
@pytest.mark.parametrize("change", ["set-puback", "set-seen", "clear-puback"])
def test_retained_change_survives_a_power_cut(broker_factory, tmp_path, change):
    """keep/r holds a retained "old" (synced before the cut is followed);
    then it is replaced by "new" at QoS 1 (the PUBACK is the output),
    replaced at QoS 0 and handed to a new subscriber (that delivery is),
    or cleared at QoS 1; and the power goes. After the restart a new
    subscriber gets what the broker last said keep/r holds."""
    data = str(tmp_path / "data")
    b = broker_factory(persistence_dir=data)
    pub = b.raw()
    pub.connect_ok("pub")
    pub.send(r.publish("keep/r", b"old", qos=1, retain=True, packet_id=1))
    pub.expect(r.PUBACK)
    power = PowerCut(b, data)
    if change == "set-seen":
        pub.send(r.publish("keep/r", b"new", qos=0, retain=True))
        seen = b.raw()
        seen.connect_ok("seen")
        # Nothing orders pub's QoS 0 publish before seen's SUBSCRIBE when
        # they are on two loops (a loaded machine ran seen's first): seen
        # asks again until "new" is what it is told, the output that must
        # not come before "new" is durable: as the retained message, or
        # live if the publish came while seen was subscribed (the record
        # is appended before the message is routed). A PINGREQ on pub
        # instead would make its PINGRESP that output.
        for k in range(1, 51):
            seen.subscribe(k, [("keep/r", 0)])
            p = seen.next_publish()
            assert p.payload == b"new" or (p.payload, p.retain) == (b"old", True)
            if p.payload == b"new":
                break
            seen.send(r.unsubscribe(k, ["keep/r"]))
            seen.expect(r.UNSUBACK)
            time.sleep(0.02)
        assert p.payload == b"new"
    else:
        payload = b"new" if change == "set-puback" else b""
        pub.send(r.publish("keep/r", payload, qos=1, retain=True, packet_id=2))
        pub.expect(r.PUBACK)
    b.kill()
    power.cut()
    b = broker_factory(port=b.port, persistence_dir=data)
    assert retained(b) == ([] if change == "clear-puback" else [("keep/r", b"new", True)])


# ---- a full disk (docs/persistence.md, "Commit and durability") ------------


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs (mounting one needs root, as the tests run here and
    in CI), unmounted lazily at the end, whatever still holds it open."""
    need(os.geteuid() == 0, "mounting a tmpfs needs root")
    path = str(tmp_path / "disk")
    os.mkdir(path)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", path], check=True, timeout=30)
    yield path
    subprocess.run(["umount", "-l", path], check=True, timeout=30)


def cpu_seconds(pid):
    """User and system CPU time the process has used so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fill(path):
    """Writes a file until the file system is full; returns its name."""
    name = os.path.join(path, "filler")
    fd = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (65536, 4096, 1):
            try:
                while True:
                    os.write(fd, b"f" * size)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)
    return name


@pytest.mark.shootout_only
def test_a_full_disk_holds_acknowledgements_back_and_loses_nothing(broker_factory, small_disk):
    """The disk fills while a persistent session's messages are logged: the
    PUBACK of the message whose records do not fit is held back (nothing
    of its batch is committed), the failure is logged without flooding the
    log, and once space is freed the batch is written again at the point
    it was cut back to and the PUBACK goes out. After a kill -9 and a
    restart every acknowledged message is delivered, from an undamaged log.
    At several loops the publisher is on another loop than the session."""
    data = os.path.join(small_disk, "data")
    b = broker_factory(persistence_dir=data)
    park(b, "full-sub", v5=False)
    # With several loops, on another loop than the session: its PUBACK
    # waits for the copy that loop would hold.
    pub, _ = b.raw_connected_apart("full-pub", {b.loop_of("full-sub")})
    filler = fill(small_disk)
    acked, stuck = [], None
    for i in range(1, 200):
        payload = b"%d:" % i + b"p" * 300
        pub.send(r.publish("d/1", payload, qos=1, packet_id=i))
        try:
            assert pub.recv_packet(1.0).packet_id == i
            acked.append(payload)
        except TimeoutError:
            stuck = payload
            break
    assert stuck, "the log never hit the full disk"
    cpu = cpu_seconds(b.proc.pid)
    time.sleep(1.0)  # the broker retries the write meanwhile, at its wake-ups
    cpu = cpu_seconds(b.proc.pid) - cpu
    assert cpu < 0.5, "%.2f s of CPU in a second of a full disk: a busy loop" % cpu
    failures = b.stderr_text().count("persistence: write to log.")
    assert failures == 1, "%d failure lines in a second of a full disk" % failures
    os.unlink(filler)
    assert pub.expect(r.PUBACK, timeout=10).packet_id == len(acked) + 1
    acked.append(stuck)
    assert "persistence: log.0000000001 committed again after " in b.stderr_text()
    for i in range(len(acked) + 1, len(acked) + 21):
        payload = b"%d:" % i + b"p" * 300
        pub.send(r.publish("d/1", payload, qos=1, packet_id=i))
        assert pub.expect(r.PUBACK).packet_id == i
        acked.append(payload)
    b.kill()
    b = broker_factory(port=b.port, persistence_dir=data)
    text = b.stderr_text()
    assert "checksum" not in text and "corrupt" not in text, text
    sub = reconnect(b, "full-sub", v5=False)
    assert [p.payload for p in drain(sub)] == acked
    sub.close()
    assert b.stop() == 0


MARK = b"\xfe\x6c\x9a\x3d"  # starts every record of a format-2 log file (docs/persistence.md)


def records(raw):
    """[(offset, size, type)] of the records of an intact format-2 log file."""
    out, off = [], 32
    while off < len(raw):
        assert raw[off:off + 4] == MARK, "no record at byte %d" % off
        size = 17 + struct.unpack_from("<I", raw, off + 12)[0]
        out.append((off, size, raw[off + 16]))
        off += size
    assert off == len(raw)
    return out


@pytest.mark.shootout_only  # the format and the recovery past damage are ours
def test_damage_in_the_middle_of_the_log_loses_only_the_damaged_records(broker_factory, tmp_path):
    """QoS 1 messages published with paho to an offline persistent session;
    the broker stopped; one byte flipped in the record of message 100 (its
    MSG) and one in that of message 150's copy for the session (its ENTRY).
    After a restart, each damaged record is reported on one line with its
    file, byte range and aside file, which holds exactly those bytes, and
    every other message, before and after the damage, is delivered, once and
    in order. The log is clean at the next start."""
    data = str(tmp_path / "data")
    b = broker_factory(persistence_dir=data)
    sub = b.paho("dmg-sub", clean_session=False)
    assert sub.subscribe("d/1", 1) == [1]
    sub.disconnect()
    pub = b.paho("dmg-pub")
    payloads = [b"%04d:" % i + b"m" * 100 for i in range(200)]
    for p in payloads:
        pub.publish("d/1", p, qos=1)
    pub.disconnect()
    assert b.stop() == 0

    path = os.path.join(data, "log.0000000001")
    raw = bytearray(open(path, "rb").read())
    recs = records(bytes(raw))
    damaged = []
    for i, entry in ((100, False), (150, True)):
        at = raw.find(payloads[i])
        [k] = [k for k, (off, size, _) in enumerate(recs) if off <= at < off + size]
        assert recs[k][2] == 5 and recs[k + 1][2] == 8  # MSG, then its ENTRY
        off, size, _ = recs[k + entry]
        raw[off + size - 3] ^= 0x20
        damaged.append((off, size))
    original = bytes(raw)
    with open(path, "wb") as f:
        f.write(original)

    b = broker_factory(port=b.port, persistence_dir=data)
    text = b.stderr_text()
    asides = sorted(f for f in os.listdir(data) if ".corrupt-" in f)
    assert len(asides) == 2, (asides, text)
    for off, size in damaged:
        line = [x for x in text.splitlines() if "bytes %d..%d damaged" % (off, off + size - 1) in x]
        assert len(line) == 1, text
        assert "log.0000000001 bytes %d..%d damaged (checksum mismatch): %d bytes skipped, " \
               "saved as log.0000000001.corrupt-" % (off, off + size - 1, size) in line[0]
        name = line[0].split("saved as ")[1].split(";")[0]
        assert open(os.path.join(data, name), "rb").read() == original[off:off + size]
    assert "skipped 2 damaged ranges (%d bytes" % sum(s for _, s in damaged) in text, text

    sub = b.paho("dmg-sub", clean_session=False)
    want = [p for i, p in enumerate(payloads) if i not in (100, 150)]
    got = [m.payload for m in sub.get_n(len(want), timeout=20)]
    assert got == want
    sub.expect_none(1.0)
    sub.disconnect()
    assert b.stop() == 0
    b = broker_factory(port=b.port, persistence_dir=data)
    assert "damaged" not in b.stderr_text(), b.stderr_text()
    assert b.stop() == 0
