"""What the tests of `shootout run`'s contenders (peers/<name>/start, the
contract of issue 13) share: calling `start --version`, running `start
--port P --dir D` in a session of its own, finding what it leaves behind
(its process group, anything whose cwd or command line names D, files its
processes have open outside D while it runs), and one MQTT round with
paho-mqtt."""

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


def files_outside(pid, directory, log):
    """Files process pid has open or mapped outside directory, other than
    the system's, the repository's scripts and builds (read-only) and the
    log the test gave it: what it writes elsewhere, such as a JVM's
    /tmp/hsperfdata_USER/PID (mapped while the JVM runs, deleted at its
    exit, so only to be seen while it runs)."""
    paths = set()
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            fields = line.split(None, 5)
            if len(fields) == 6 and fields[5].startswith("/"):
                paths.add(fields[5].strip().removesuffix(" (deleted)"))
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            paths.add(os.readlink("/proc/%d/fd/%s" % (pid, fd)).removesuffix(" (deleted)"))
        except OSError:
            continue
    # /memfd:NAME is anonymous memory (the Erlang VM's), no file.
    allowed = ("/usr/", "/etc/", "/dev/", "/proc/", "/memfd:", directory + "/",
               os.path.join(REPO, "build", "peers") + "/", os.path.join(REPO, "peers") + "/")
    return sorted(p for p in paths if p.startswith("/") and not p.startswith(allowed) and p != log)


class Contender:
    """One `peers/<name>/start --port P --dir D` (D is workdir/dir, its
    stdout and stderr workdir/start.stderr) in a session of its own, so that
    its process group can be checked (and cleaned up) afterwards."""

    def __init__(self, name, workdir, extra=(), listening=None):
        """extra: more options for start (--threads, an a2b contender's
        --db and --pool); listening: what start prints on stderr before
        HOST:PORT once it serves, waited for instead of a TCP connection."""
        self.name = name
        self.listening = listening
        self.dir = os.path.join(workdir, "dir")
        os.mkdir(self.dir)
        self.port = free_port()
        self.stderr_path = os.path.join(workdir, "start.stderr")
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen([start_script(name), "--port", str(self.port), "--dir", self.dir,
                                          *extra], stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                         start_new_session=True)

    def stderr_text(self):
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def serving(self):
        if self.listening is not None:
            return "%s%s:%d" % (self.listening, HOST, self.port) in self.stderr_text()
        try:
            socket.create_connection((HOST, self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def wait_ready(self, timeout=BOOT_TIMEOUT):
        """Waits until PORT takes a TCP connection (or start said it
        listens); returns self."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "%s exited %d while booting:\n%s" % (
                self.name, self.proc.returncode, self.stderr_text()[-3000:])
            if self.serving():
                return self
            time.sleep(0.1)
        raise AssertionError("%s not listening on %d within %.0fs:\n%s" % (
            self.name, self.port, timeout, self.stderr_text()[-3000:]))

    def pids(self):
        """Its live processes: its process group and whatever names D."""
        return set(process_group(self.proc.pid)) | set(processes_naming(self.dir))

    def files_outside(self):
        """pid -> files_outside() of each of its processes that has any."""
        found = {}
        for pid in self.pids():
            try:
                paths = files_outside(pid, self.dir, self.stderr_path)
            except OSError:  # it exited meanwhile
                continue
            if paths:
                found[pid] = paths
        return found

    def stop(self):
        """SIGTERM to the script; returns its exit code once it exited
        within STOP_TIMEOUT."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError("%s did not exit within %.0fs of SIGTERM" % (self.name, STOP_TIMEOUT))

    def assert_gone(self, timeout=5.0):
        """After stop(): within timeout (a daemon child can outlive the
        script by its own shutdown time) nothing is left in its process
        group or names D, and PORT refuses connections."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.pids():
            time.sleep(0.1)
        assert process_group(self.proc.pid) == [], "left in %s's process group" % self.name
        assert processes_naming(self.dir) == {}, "%s left processes naming %s" % (self.name, self.dir)
        with socket.socket() as s:
            s.settimeout(1)
            assert s.connect_ex((HOST, self.port)) != 0, "%s's port still open" % self.name

    def kill_leftovers(self):
        for pid in self.pids():
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
