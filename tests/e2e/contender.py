"""What the tests of `shootout run`'s contenders (peers/<name>/start, the
contract of issue 13) share: calling `start --version`, running `start
--port P --dir D` in a session of its own, finding what it leaves behind
(its process group, anything whose cwd or command line names D), and one
MQTT round with paho-mqtt."""

import os
import signal
import socket
import subprocess
import time

from conftest import HOST, REPO, STOP_TIMEOUT, free_port
from mqtt_paho import PahoClient

# What the caller of `start` allows a JVM or Erlang node to boot.
BOOT_TIMEOUT = 60.0


def start_script(name):
    return os.path.join(REPO, "peers", name, "start")


def version(name):
    """(exit code, stdout) of `start --version`."""
    p = subprocess.run([start_script(name), "--version"], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=10)
    return p.returncode, p.stdout


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
    """The live pids of process group pgid."""
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
    """One `peers/<name>/start --port P --dir D` (D is workdir/dir, its
    stderr workdir/start.stderr) in a session of its own, so that its
    process group can be checked (and cleaned up) afterwards."""

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

    def wait_ready(self, timeout=BOOT_TIMEOUT):
        """Waits until PORT takes a TCP connection; returns self."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "%s exited %d while booting:\n%s" % (
                self.name, self.proc.returncode, self.stderr_text())
            try:
                socket.create_connection((HOST, self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        raise AssertionError("%s not listening on %d within %.0fs:\n%s" % (
            self.name, self.port, timeout, self.stderr_text()))

    def stop(self):
        """SIGTERM to the script; returns its exit code once it exited
        within STOP_TIMEOUT."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError("%s did not exit within %.0fs of SIGTERM" % (self.name, STOP_TIMEOUT))

    def kill_leftovers(self):
        for pid in set(process_group(self.proc.pid)) | set(processes_naming(self.dir)):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if self.proc.poll() is None:
            self.proc.wait(5)


def mqtt_exchange(port, protocol, qos, tag):
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


def version_line(name, fix_prefix, need_peer):
    """The one line `start --version` prints, quickly (under 2 s). Exit 3
    must say how to fix it (a line beginning fix_prefix) and then goes to
    need_peer(name), which skips or fails."""
    t0 = time.monotonic()
    rc, out = version(name)
    assert time.monotonic() - t0 < 2.0
    assert out.endswith("\n") and out.count("\n") == 1, out
    if rc == 3:
        assert out.startswith(fix_prefix), out
        need_peer(name)
    assert rc == 0, (rc, out)
    return out.strip()
