"""Measures a broker's resident memory per idle MQTT connection: starts our
broker and Mosquitto side by side on loopback, opens N connections to each
(CONNECT, wait for CONNACK, then silence), and reports the RSS growth per
connection. Not a test: run by hand, results go to docs/BENCHMARKS.md.

    /usr/bin/python3 tests/perf/idle_rss.py [N] [path/to/shootout]

N defaults to 10000 (this process and the broker each need N descriptors; the
hard open-files limit must allow it).
"""
import os
import resource
import socket
import struct
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS for pid %d" % pid)


def connect_packet(client_id):
    cid = client_id.encode()
    body = b"\x00\x04MQTT\x04\x02\x00\x3c" + struct.pack("!H", len(cid)) + cid
    return bytes([0x10, len(body)]) + body


def wait_listening(port, proc):
    for _ in range(200):
        if proc.poll() is not None:
            raise RuntimeError("broker exited with %d" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("broker on port %d never listened" % port)


def measure(argv, port, n):
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, proc)
        time.sleep(0.3)
        base = rss_kb(proc.pid)
        socks = []
        for i in range(n):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(connect_packet("idle-%d" % i))
            socks.append(s)
        for s in socks:
            s.settimeout(10)
            if s.recv(4)[:2] != b"\x20\x02":
                raise RuntimeError("no CONNACK")
        time.sleep(1)
        full = rss_kb(proc.pid)
        for s in socks:
            s.close()
        return base, full
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    shootout = sys.argv[2] if len(sys.argv) > 2 else "build/release/shootout"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < n + 100:
        sys.exit("open-files hard limit %d is too low for %d connections" % (hard, n))
    p1, p2 = free_port(), free_port()
    conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
    conf.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest none\n"
               "max_connections -1\n" % p2)
    conf.close()
    try:
        rows = [("shootout", [shootout, "broker", "--port", str(p1)], p1),
                ("mosquitto", ["mosquitto", "-c", conf.name], p2)]
        for name, argv, port in rows:
            base, full = measure(argv, port, n)
            print("%-10s RSS %6d KB idle, %6d KB with %d connections: %4.0f bytes per connection"
                  % (name, base, full, n, (full - base) * 1024.0 / n))
    finally:
        os.unlink(conf.name)


if __name__ == "__main__":
    main()
