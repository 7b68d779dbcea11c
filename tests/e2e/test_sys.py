"""The $SYS/broker/... tree: the broker's own figures as retained messages,
under Mosquitto's topic names."""
import time

import pytest

import mqtt_raw as R

pytestmark = pytest.mark.shootout_only  # Mosquitto's figures differ in detail


TOPICS = ["version", "uptime", "clients/connected", "clients/total", "messages/received",
          "messages/sent", "messages/dropped", "bytes/received", "bytes/sent",
          "subscriptions/count", "retained messages/count"]


def sys_values(client, done, timeout=6):
    """Latest value of every $SYS/broker/... topic, read until done(values)."""
    deadline = time.monotonic() + timeout
    values = {}
    while time.monotonic() < deadline:
        p = client.next_publish(timeout=5)
        values[p.topic[len("$SYS/broker/"):]] = p.payload.decode()
        if set(TOPICS) <= set(values) and done(values):
            return values
    raise AssertionError("no complete $SYS round within %ss: %r" % (timeout, values))


def test_sys_tree_figures(broker_factory):
    b = broker_factory(extra_args=("--sys-interval", "1"))
    others = [b.raw_connected("sys-other-%d" % i) for i in range(3)]
    others[0].subscribe(1, [("a/b", 1), ("c/#", 0)])
    others[1].send(R.publish("a/b", b"x", qos=1, packet_id=1))
    others[1].expect(R.PUBACK)
    others[0].next_publish()
    watcher = b.raw_connected("sys-watch")
    watcher.subscribe(1, [("$SYS/#", 0)])
    # Retained on subscribe, then refreshed every second, one topic at a time:
    # read until the figures reflect every client, the watcher included (a
    # wrong figure never gets there, and the wait fails showing the values).
    v = sys_values(watcher, lambda v: v["clients/connected"] == "4" and
                   v["clients/total"] == "4" and v["subscriptions/count"] == "3")
    assert v["version"].startswith("shootout ")
    assert v["uptime"].endswith(" seconds")
    assert int(v["messages/received"]) == 1
    assert int(v["messages/sent"]) >= 1
    assert int(v["bytes/received"]) > 0
    assert int(v["bytes/sent"]) > 0
    assert v["messages/dropped"] == "0"


def test_sys_tree_not_matched_by_hash(broker_factory):
    b = broker_factory(extra_args=("--sys-interval", "1"))
    c = b.raw_connected("sys-hash")
    c.subscribe(1, [("#", 0)])
    c.expect_nothing(1.5)


def test_sys_interval_zero_turns_it_off(broker_factory):
    b = broker_factory(extra_args=("--sys-interval", "0"))
    c = b.raw_connected("sys-off")
    c.subscribe(1, [("$SYS/#", 0)])
    c.expect_nothing(1.5)
