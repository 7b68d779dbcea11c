"""How the broker's two ways of accepting (--accept reuseport|handoff, at
--threads 4) spread few connections over the loops, and what their accept
queues hold while nothing accepts. Not a test: run by hand, results go to
docs/BENCHMARKS.md ("Accept hand-off against SO_REUSEPORT").

    /usr/bin/python3 tests/perf/accept_spread.py balance MODE N ROUNDS [BIN]
    /usr/bin/python3 tests/perf/accept_spread.py stall MODE N [BIN]

balance: one broker; ROUNDS times N clients connect (CONNECT, CONNACK), each
one's loop is read from the broker's connect line (loop=N), then they close.
Prints a JSON line: the clients per loop in each round and how many rounds
left a loop with none.

stall: the broker is stopped (SIGSTOP), N connects are sent, and the
connections waiting in its accept queues (ss) and the system's
TcpExtListenOverflows (nstat: other processes' count too) are printed.

This process raises its soft open-files limit to the hard one; the broker
inherits it.
"""
import json
import os
import re
import resource
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

LOOPS = 4


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(binary, mode, log):
    port = free_port()
    p = subprocess.Popen([binary, "broker", "--port", str(port), "--threads", str(LOOPS),
                          "--accept", mode], stdout=log, stderr=log)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return p, port
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the broker did not start")


def connect(port, client_id):
    c = socket.create_connection(("127.0.0.1", port))
    cid = client_id.encode()
    var = b"\x00\x04MQTT\x04\x02\x00\x3c" + struct.pack(">H", len(cid)) + cid
    c.sendall(bytes([0x10, len(var)]) + var)
    assert c.recv(4)[:2] == b"\x20\x02", "no CONNACK"
    return c


def balance(binary, mode, n, rounds):
    with tempfile.NamedTemporaryFile("w+") as log:
        p, port = start(binary, mode, log)
        per_round, k = [], 0
        for _ in range(rounds):
            ids = ["spread%d" % (k + i) for i in range(n)]
            k += n
            clients = [connect(port, cid) for cid in ids]
            time.sleep(0.05)
            with open(log.name) as f:
                loops = dict(re.findall(r"client=(spread\d+) .*? loop=(\d+)", f.read()))
            per = [0] * LOOPS
            for cid in ids:
                per[int(loops[cid])] += 1
            per_round.append(per)
            for c in clients:
                c.close()
            time.sleep(0.05)
        p.terminate()
        p.wait()
    print(json.dumps({"mode": mode, "clients": n, "rounds": rounds,
                      "rounds_with_an_empty_loop": sum(min(x) == 0 for x in per_round),
                      "per_round": per_round}))


def overflows():
    out = subprocess.run(["nstat", "-asz", "TcpExtListenOverflows"], capture_output=True,
                         text=True).stdout
    return sum(int(line.split()[1]) for line in out.splitlines() if line.startswith("TcpExt"))


def stall(binary, mode, n):
    p, port = start(binary, mode, subprocess.DEVNULL)
    time.sleep(0.3)  # the probe connection accepted
    os.kill(p.pid, signal.SIGSTOP)
    time.sleep(0.3)
    before = overflows()
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        socks.append(s)
    time.sleep(0.5)  # loopback handshakes complete at once
    out = subprocess.run(["ss", "-ltnH", "sport = :%d" % port], capture_output=True,
                         text=True).stdout
    queued = sum(int(line.split()[1]) for line in out.splitlines() if line.strip())
    dropped = overflows() - before
    os.kill(p.pid, signal.SIGCONT)
    for s in socks:
        s.close()
    p.terminate()
    p.wait()
    print(json.dumps({"mode": mode, "connects": n, "queued": queued,
                      "listen_overflows": dropped}))


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    here = os.path.dirname(os.path.abspath(__file__))
    default_bin = os.path.join(here, "..", "..", "build", "release", "shootout")
    args = sys.argv[1:]
    if len(args) >= 4 and args[0] == "balance":
        balance(args[4] if len(args) > 4 else default_bin, args[1], int(args[2]), int(args[3]))
    elif len(args) >= 3 and args[0] == "stall":
        stall(args[3] if len(args) > 3 else default_bin, args[1], int(args[2]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
