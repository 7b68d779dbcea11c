"""`shootout passwd`: creating, updating and deleting users in a
Mosquitto-format password file, its exit codes, and that Mosquitto itself
accepts the file it writes (and that it accepts Mosquitto's)."""

import getpass
import os
import pty
import shutil
import stat
import subprocess
import time

import pytest

import mqtt_raw
from conftest import HOST, MOSQUITTO_BIN, SHOOTOUT_BIN, free_port, need

pytestmark = pytest.mark.shootout_only


def passwd(*args, stdin=None):
    return subprocess.run([SHOOTOUT_BIN, "passwd"] + list(args), input=stdin,
                          capture_output=True, timeout=30)


def users(path):
    with open(path) as f:
        return [line.split(":")[0] for line in f if line.strip() and not line.startswith("#")]


def test_create_update_delete_keeps_other_lines(tmp_path):
    f = str(tmp_path / "pw")
    assert passwd("-c", "-b", f, "alice", "one").returncode == 0
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o600
    with open(f, "a") as fh:
        fh.write("# a comment the tool must keep\n")
    assert passwd("-b", f, "bob", "two").returncode == 0
    first = open(f).read()
    assert users(f) == ["alice", "bob"]
    assert "# a comment the tool must keep\n" in first
    alice_line = first.splitlines()[0]
    assert alice_line.startswith("alice:$7$1000$")
    # Changing bob leaves alice's line and the comment byte for byte.
    assert passwd("-I", "7", "-b", f, "bob", "three").returncode == 0
    second = open(f).read()
    assert second.splitlines()[0] == alice_line
    assert "# a comment the tool must keep\n" in second
    assert [l for l in second.splitlines() if l.startswith("bob:")][0].startswith("bob:$7$7$")
    assert passwd("-D", f, "alice").returncode == 0
    assert users(f) == ["bob"]
    r = passwd("-D", f, "alice")
    assert r.returncode == 1 and b"not in" in r.stderr
    # -c overwrites.
    assert passwd("-c", "-b", f, "carol", "x").returncode == 0
    assert users(f) == ["carol"]
    assert not [p for p in os.listdir(tmp_path) if ".tmp." in p]


def test_password_from_stdin_when_not_a_tty(tmp_path):
    f = str(tmp_path / "pw")
    assert passwd("-c", f, "dave", stdin=b"from stdin\n").returncode == 0
    assert users(f) == ["dave"]
    r = passwd(f, "erin", stdin=b"")
    assert r.returncode == 1 and b"no password" in r.stderr
    r = passwd(f, "erin", stdin=b"\n")
    assert r.returncode == 1 and b"empty password" in r.stderr
    assert users(f) == ["dave"]


def test_prompts_twice_on_a_terminal_without_echo(tmp_path):
    f = str(tmp_path / "pw")

    def run(first, second):
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(SHOOTOUT_BIN, [SHOOTOUT_BIN, "passwd", "-c", f, "tty"])
        out = b""
        for answer in (first, second):
            while b"assword: " not in out.split(b"\n")[-1]:
                out += os.read(fd, 1024)
            os.write(fd, answer + b"\n")
            out += b"\n"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                chunk = os.read(fd, 1024)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        _, status = os.waitpid(pid, 0)
        os.close(fd)
        return os.waitstatus_to_exitcode(status), out

    rc, out = run(b"s3cret", b"s3cret")
    assert rc == 0, out
    assert b"s3cret" not in out  # echo was off
    assert b"Reenter password: " in out
    assert users(f) == ["tty"]
    rc, out = run(b"one", b"two")
    assert rc == 1 and b"do not match" in out


def test_usage_errors_exit_2(tmp_path):
    f = str(tmp_path / "pw")
    assert passwd("--help").returncode == 0
    assert b"usage: shootout passwd" in passwd("--help").stdout
    for args in ([], [f], ["-b", f, "u"], [f, "u", "extra"], ["-c", "-D", f, "u"],
                 ["-D", "-b", f, "u", "p"], ["-I", "0", "-b", f, "u", "p"],
                 ["-I", "x", f, "u"], ["-Z", f, "u"], ["-b", f, "a:b", "p"],
                 ["-b", f, "#a", "p"]):
        r = passwd(*args)
        assert r.returncode == 2, (args, r.stderr)
    assert not os.path.exists(f)


def test_runtime_failures_exit_1_and_leave_the_file(tmp_path):
    f = str(tmp_path / "pw")
    r = passwd("-b", f, "u", "p")
    assert r.returncode == 1 and b"cannot read" in r.stderr
    with open(f, "w") as fh:
        fh.write("ok:$6$x$y\nplain:text\n")
    before = open(f).read()
    r = passwd("-b", f, "u", "p")
    assert r.returncode == 1
    assert (f + ":1:").encode() in r.stderr
    assert open(f).read() == before
    r = passwd("-b", str(tmp_path / "no" / "dir"), "u", "p")
    assert r.returncode == 1


def test_mosquitto_accepts_our_file(tmp_path):
    need(os.path.exists(MOSQUITTO_BIN), "mosquitto not installed")
    f = str(tmp_path / "pw")
    assert passwd("-c", "-b", f, "alice", "wonder land").returncode == 0
    if shutil.which("mosquitto_passwd"):
        # And a line Mosquitto's own tool wrote sits happily beside ours.
        subprocess.run(["mosquitto_passwd", "-b", f, "bob", "builder"], check=True, timeout=30)
        assert passwd("-b", f, "carol", "c").returncode == 0
    port = free_port()
    conf = tmp_path / "m.conf"
    # "user": Mosquitto started as root otherwise drops to user mosquitto,
    # which cannot read a 0600 file of ours.
    conf.write_text("per_listener_settings false\npersistence false\nallow_anonymous false\n"
                    "user %s\npassword_file %s\nlog_dest stderr\nlistener %d %s\n"
                    % (getpass.getuser(), f, port, HOST))
    proc = subprocess.Popen([MOSQUITTO_BIN, "-c", str(conf)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                c = mqtt_raw.RawClient(HOST, port)
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
        cases = [("alice", b"wonder land", 0), ("alice", b"wonderland", 5), ("nobody", b"x", 5)]
        if shutil.which("mosquitto_passwd"):
            cases += [("bob", b"builder", 0), ("carol", b"c", 0)]
        for i, (user, pw, want) in enumerate(cases):
            if i:
                c = mqtt_raw.RawClient(HOST, port)
            ack = c.connect("c%d" % i, username=user, password=pw)
            assert ack.rc == want, (user, pw, ack.rc)
            c.sock.close()
    finally:
        proc.terminate()
        proc.wait(10)
