"""End-to-end tests of the JVM and Erlang MQTT contenders of `shootout run`,
peers/rabbitmq/start and peers/activemq/start, against the contract every
contender keeps (CONTENDERS.md, issue 13): `start --version`; `start --port P
--dir D` serves MQTT 3.1.1 and 3.1 on 127.0.0.1:P (one paho-mqtt exchange
at QoS 0 and 1 in each); SIGTERM stops it within 10 s and leaves no process
behind (RabbitMQ's epmd, beam, a JVM: nothing whose cwd or command line
names D, nothing left in the script's process group) and nothing written
outside D (the system services' /var/lib, /var/log and /etc directories,
~/.erlang.cookie, /tmp/hsperfdata_*).

need()s each broker's Debian packages (`start --version` exit 3): skipped
without them, failed under CI=true.
"""

import getpass
import glob
import os
import signal
import socket
import subprocess
import time

import paho.mqtt.client as mqtt
import pytest

from conftest import HOST, REPO, STOP_TIMEOUT, free_port, need
from mqtt_paho import PahoClient

PEERS = ["rabbitmq", "activemq"]
VERSION_LINE = {"rabbitmq": "RabbitMQ %s (MQTT plugin)", "activemq": "ActiveMQ %s (MQTT transport)"}
# What the caller of `start` allows a JVM or Erlang node to boot.
BOOT_TIMEOUT = 60.0
# Where the Debian packages' own services keep their state, and where a JVM
# or an Erlang node writes when nobody tells it otherwise.
SYSTEM_PATHS = ["/var/lib/rabbitmq", "/var/log/rabbitmq", "/etc/rabbitmq",
                "/var/lib/activemq", "/var/log/activemq", "/etc/activemq", "/run/activemq.pid",
                os.path.join(os.path.expanduser("~"), ".erlang.cookie"),
                "/tmp/hsperfdata_%s" % getpass.getuser()]


def start_script(name):
    return os.path.join(REPO, "peers", name, "start")


def version(name):
    p = subprocess.run([start_script(name), "--version"], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=10)
    return p.returncode, p.stdout


def need_peer(name):
    rc, out = version(name)
    assert rc in (0, 3), "%s --version exit %d: %r" % (name, rc, out)
    need(rc == 0, "%s: %s" % (name, out.strip()))


def snapshot():
    """Every file and directory under SYSTEM_PATHS with its mtime and size."""
    seen = {}
    for top in SYSTEM_PATHS:
        for path in [top] + glob.glob(os.path.join(glob.escape(top), "**"), recursive=True):
            try:
                st = os.lstat(path)
            except OSError:
                continue
            seen[path] = (st.st_mtime_ns, st.st_size)
    return seen


def processes_naming(d):
    """pid -> command line of every process whose cwd or command line names d."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            cwd = os.readlink("/proc/%s/cwd" % entry)
        except OSError:
            continue
        if d in cmdline or cwd == d or cwd.startswith(d + "/"):
            found[int(entry)] = cmdline
    return found


def process_group(pgid):
    """The pids still in process group pgid."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


class Contender:
    """One `peers/<name>/start --port P --dir D`, in a session of its own so
    that its process group can be checked (and cleaned up) afterwards."""

    def __init__(self, name, workdir):
        self.name = name
        self.dir = os.path.join(workdir, "dir")
        os.mkdir(self.dir)
        self.port = free_port()
        self.stderr_path = os.path.join(workdir, "start.stderr")
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen([start_script(name), "--port", str(self.port), "--dir", self.dir],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                         start_new_session=True)

    def stderr_text(self):
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_ready(self):
        deadline = time.monotonic() + BOOT_TIMEOUT
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "%s exited %d while booting:\n%s" % (
                self.name, self.proc.returncode, self.stderr_text())
            try:
                socket.create_connection((HOST, self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        raise AssertionError("%s not listening on %d within %.0fs:\n%s" % (
            self.name, self.port, BOOT_TIMEOUT, self.stderr_text()))

    def stop(self):
        """SIGTERM to the script; returns the seconds it took to exit."""
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError("%s did not exit within %.0fs of SIGTERM" % (self.name, STOP_TIMEOUT))
        return time.monotonic() - t0

    def kill_leftovers(self):
        for pid in set(process_group(self.proc.pid)) | set(processes_naming(self.dir)):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if self.proc.poll() is None:
            self.proc.wait(5)


@pytest.fixture(params=PEERS)
def contender(request, tmp_path):
    need_peer(request.param)
    before = snapshot()
    c = Contender(request.param, str(tmp_path))
    c.system_before = before
    try:
        yield c.wait_ready()
    finally:
        c.kill_leftovers()


def exchange(port, protocol, qos, tag):
    """One subscribe, publish, receive round on a fresh pair of clients."""
    topic = "shootout/%s/%d" % (tag, qos)
    sub = PahoClient(HOST, port, "sub-%s-%d" % (tag, qos), protocol=protocol)
    pub = PahoClient(HOST, port, "pub-%s-%d" % (tag, qos), protocol=protocol)
    try:
        sub.connect(timeout=10)
        assert sub.subscribe(topic, qos, timeout=10) == [qos]
        pub.connect(timeout=10)
        pub.publish(topic, b"sixteen byte msg", qos, timeout=10)
        m = sub.get(timeout=10)
        assert (m.topic, m.payload, m.qos) == (topic, b"sixteen byte msg", qos)
    finally:
        pub.disconnect()
        sub.disconnect()


@pytest.mark.parametrize("name", PEERS)
def test_version_is_quick_and_one_line(name):
    t0 = time.monotonic()
    rc, out = version(name)
    assert time.monotonic() - t0 < 2.0
    assert out.endswith("\n") and out.count("\n") == 1, out
    if rc == 3:
        assert out.startswith("not installed: apt-get install "), out
        need(False, "%s: %s" % (name, out.strip()))
    assert rc == 0
    prefix, suffix = VERSION_LINE[name].split("%s")
    v = out.strip()[len(prefix):-len(suffix)]
    assert out.strip() == VERSION_LINE[name] % v and v[:1].isdigit(), out


@pytest.mark.parametrize("name", PEERS)
@pytest.mark.parametrize("args", [[], ["--port", "0", "--dir", "/"], ["--port", "1883"],
                                  ["--port", "1883", "--dir", "/nonexistent"], ["--nope"]])
def test_bad_arguments_exit_2(name, args):
    p = subprocess.run([start_script(name)] + args, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=10)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.strip()


def test_exchange_then_sigterm_leaves_nothing(contender):
    """MQTT 3.1.1 and 3.1, QoS 0 and 1; then SIGTERM: gone within 10 s with
    every process it started, and nothing written outside its --dir."""
    c = contender
    for protocol, tag in ((mqtt.MQTTv311, "v311"), (mqtt.MQTTv31, "v31")):
        for qos in (0, 1):
            exchange(c.port, protocol, qos, tag)
    assert processes_naming(c.dir), "nothing of %s runs in or names %s" % (c.name, c.dir)
    c.stop()
    # A daemon child can outlive the script by its own shutdown time.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (process_group(c.proc.pid) or processes_naming(c.dir)):
        time.sleep(0.1)
    assert process_group(c.proc.pid) == [], "left in %s's process group" % c.name
    assert processes_naming(c.dir) == {}, "%s left processes naming %s" % (c.name, c.dir)
    with pytest.raises(OSError):
        socket.create_connection((HOST, c.port), timeout=1).close()
    after = snapshot()
    changed = sorted(p for p in set(after) | set(c.system_before) if after.get(p) != c.system_before.get(p))
    assert changed == [], "%s wrote outside its --dir: %r" % (c.name, changed)
    assert os.listdir(c.dir), "%s wrote nothing in its --dir" % c.name
