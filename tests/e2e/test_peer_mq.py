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
import socket
import subprocess
import time

import paho.mqtt.client as mqtt
import pytest

from conftest import HOST, need
from contender import (Contender, mqtt_exchange, process_group, processes_naming, start_script, version,
                       version_line)

PEERS = ["rabbitmq", "activemq"]
VERSION_LINE = {"rabbitmq": "RabbitMQ %s (MQTT plugin)", "activemq": "ActiveMQ %s (MQTT transport)"}
# Where the Debian packages' own services keep their state, and where a JVM
# or an Erlang node writes when nobody tells it otherwise.
SYSTEM_PATHS = ["/var/lib/rabbitmq", "/var/log/rabbitmq", "/etc/rabbitmq",
                "/var/lib/activemq", "/var/log/activemq", "/etc/activemq", "/run/activemq.pid",
                os.path.join(os.path.expanduser("~"), ".erlang.cookie"),
                "/tmp/hsperfdata_%s" % getpass.getuser()]


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


@pytest.mark.parametrize("name", PEERS)
def test_version_is_quick_and_one_line(name):
    line = version_line(name, "not installed: apt-get install ", need_peer)
    prefix, suffix = VERSION_LINE[name].split("%s")
    v = line[len(prefix):-len(suffix)]
    assert line == VERSION_LINE[name] % v and v[:1].isdigit(), line


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
            mqtt_exchange(c.port, protocol, qos, tag)
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
