"""A node's stop with its cluster inbox full (docs/cluster.md, "A node"):
SIGTERM while thousands of messages from NATS wait in the link's inbox, and
more are still arriving, must end with exit code 0 and no sanitizer report
(the broker_factory teardown checks both): every message the link holds, or
libnats still delivers to it, is destroyed once, while libnats is alive."""

import threading
import time


def held_node(broker_factory, nats_server, tmp_path, name):
    """A node whose home loop soon holds the inbox: its other loop's 30
    subscribers of stop/# overlap 500 deny rules, so that loop asks the ACL
    per delivery and falls behind (as test_cluster.py's inbox mark test).
    Not more: the SIGTERM's drain delivers what that loop was given, which
    at 2000 rules took TSan past the stop's 10 s."""
    acl = tmp_path / "acl"
    acl.write_text("topic read stop/#\n" +
                   "".join("topic deny stop/x%d\n" % i for i in range(500)))
    node = broker_factory(verbose=True, conf_lines=["acl_file %s" % acl],
                          extra_args=["--cluster", nats_server.url, "--node-name", name,
                                      "--threads", "2"])
    subs = []
    for i in range(30):
        c, _ = node.raw_connected_apart("%s-%03d" % (name, i), {0})
        assert c.subscribe(1, [("stop/#", 0)]).granted == [0]
        subs.append(c)
    return node, subs


def flood(nats_server, n, stop, state):
    """Up to n messages on stop/t (subject mqtt.t.stop.t) from a plain NATS
    client, in bursts of 500, until stop is set; state["sent"] counts them
    and state["error"] keeps what ended it early, for wait_held to tell."""
    state["sent"] = 0
    try:
        nc = nats_server.client()
        try:
            for k in range(0, n, 500):
                if stop.is_set():
                    break
                for i in range(k, k + 500):
                    nc.pub("mqtt.t.stop.t", b"m%07d" % i)
                nc.flush()
                state["sent"] = k + 500
        finally:
            nc.close()
    except Exception as e:  # noqa: BLE001 - reported by wait_held
        state["error"] = repr(e)


def wait_held(node, state, timeout=30):
    deadline = time.time() + timeout
    while "cluster inbox held" not in node.stderr_text():
        assert time.time() < deadline, "the inbox was never held (flood: %r):\n%s" % (
            state, node.stderr_tail())
        time.sleep(0.05)


def test_sigterm_with_the_inbox_full(broker_factory, nats_server, tmp_path):
    node, _ = held_node(broker_factory, nats_server, tmp_path, "stop0")
    stop = threading.Event()
    state = {}
    t = threading.Thread(target=flood, args=(nats_server, 1000000, stop, state), daemon=True)
    t.start()
    try:
        wait_held(node, state)
        time.sleep(0.3)  # more pile up in the inbox, and libnats keeps delivering
        rc = node.stop()
    finally:
        stop.set()
        t.join(30)
    text = node.stderr_text()
    assert rc == 0, "exit code %r on SIGTERM:\n%s" % (rc, node.stderr_tail())
    line = [l for l in text.splitlines() if "received from them" in l]
    assert line, node.stderr_tail()
    print(line[-1])
    left = [l for l in text.splitlines() if "left in the inbox" in l]
    assert left, node.stderr_tail()
    print(left[-1])
    # The stop found messages waiting: the case that crashed.
    assert int(left[-1].split("cluster: ")[1].split()[0]) > 0
