"""acl_file: topic read/write/readwrite/deny, %c and %u patterns, the
anonymous section, denied publishes (dropped, or 0x87 in MQTT 5), denied
subscriptions (SUBACK 0x80 / 0x87), filtered subscriptions and retained
messages, and SIGHUP changing the rules under live connections."""

import subprocess

import pytest

import mqtt_raw as R
from conftest import SHOOTOUT_BIN

ACL = """\
# anonymous clients
topic read public/#

user alice
topic readwrite a/#
topic read r/#
topic write w/#
topic deny a/secret

user bob
topic read a/#

user spy
topic read #

user admin
topic write #

pattern readwrite users/%u/#
pattern write clients/%c/state
"""
USERS = ("alice", "bob", "spy", "admin")
QUIET = 0.3  # how long "nothing arrives" is watched for


@pytest.fixture
def files(tmp_path):
    pw = str(tmp_path / "passwd")
    for i, user in enumerate(USERS):
        subprocess.run([SHOOTOUT_BIN, "passwd", "-b"] + (["-c"] if i == 0 else []) +
                       [pw, user, user + "-pw"], check=True, timeout=30)
    acl = tmp_path / "acl"
    acl.write_text(ACL)
    return pw, acl


@pytest.fixture
def acl_broker(broker_factory, files):
    pw, acl = files
    b = broker_factory(conf_lines=["password_file " + pw, "acl_file %s" % acl,
                                   "allow_anonymous true"])
    b.acl_path = acl
    return b


def login(b, user, client_id=None, v5=False):
    c = b.raw()
    kw = {} if user is None else {"username": user, "password": (user + "-pw").encode()}
    if v5:
        c.connect5_ok(client_id or user or "anon", **kw)
    else:
        c.connect_ok(client_id or user or "anon", **kw)
    return c


def received(c, n_expected):
    """The topics of the next n_expected PUBLISHes, then checks that no
    other arrives."""
    topics = [c.next_publish().topic for _ in range(n_expected)]
    c.expect_nothing(QUIET)
    return topics


def test_publish_rules_and_patterns(acl_broker):
    spy = login(acl_broker, "spy")
    assert spy.subscribe(1, [("#", 0)]).granted == [0]
    alice = login(acl_broker, "alice", "alice-c")
    for topic in ("a/1", "r/1", "w/1", "a/secret", "users/alice/x", "users/bob/x",
                  "clients/alice-c/state", "clients/other/state", "public/x"):
        alice.send(R.publish(topic, b"m"))
    assert received(spy, 4) == ["a/1", "w/1", "users/alice/x", "clients/alice-c/state"]


def test_anonymous_section(acl_broker):
    admin = login(acl_broker, "admin")
    anon = login(acl_broker, None)
    anon.subscribe(1, [("public/#", 0)])
    anon.send(R.publish("public/self", b"denied: read only"))
    admin.send(R.publish("public/news", b"hello"))
    assert received(anon, 1) == ["public/news"]


def test_denied_publish_v311_is_acked_but_not_routed(acl_broker):
    spy = login(acl_broker, "spy")
    spy.subscribe(1, [("#", 0)])
    alice = login(acl_broker, "alice")
    alice.send(R.publish("r/1", b"x", qos=1, packet_id=7))
    assert alice.expect(R.PUBACK).packet_id == 7
    alice.send(R.publish("r/2", b"x", qos=2, packet_id=8))
    assert alice.expect(R.PUBREC).packet_id == 8
    alice.send(R.pubrel(8))
    assert alice.expect(R.PUBCOMP).packet_id == 8
    alice.send(R.publish("a/ok", b"x", qos=1, packet_id=9))
    assert alice.expect(R.PUBACK).packet_id == 9
    assert received(spy, 1) == ["a/ok"]


def test_denied_publish_v5_answers_not_authorized(acl_broker):
    spy = login(acl_broker, "spy")
    spy.subscribe(1, [("#", 0)])
    alice = login(acl_broker, "alice", v5=True)
    alice.send(R.publish5("r/1", b"x", qos=1, packet_id=7))
    ack = alice.expect(R.PUBACK)
    assert (ack.packet_id, ack.reason) == (7, 0x87)
    alice.send(R.publish5("r/2", b"x", qos=2, packet_id=8))
    ack = alice.expect(R.PUBREC)
    assert (ack.packet_id, ack.reason) == (8, 0x87)
    alice.send(R.publish5("a/2", b"x", qos=2, packet_id=9))
    ack = alice.expect(R.PUBREC)
    assert (ack.packet_id, ack.reason) == (9, 0)
    alice.send(R.ack5(R.PUBREL, 9))  # Mosquitto routes QoS 2 on PUBREL
    alice.expect(R.PUBCOMP)
    assert received(spy, 1) == ["a/2"]


@pytest.mark.shootout_only("Mosquitto 2.0.11 keeps a refused QoS 2 id")
def test_refused_qos2_id_is_free_again(acl_broker):
    """After PUBREC 0x87 no PUBREL follows (4.3.3), so the id must not stay
    taken: the next QoS 2 message with it is a new message."""
    spy = login(acl_broker, "spy")
    spy.subscribe(1, [("#", 0)])
    alice = login(acl_broker, "alice", v5=True)
    alice.send(R.publish5("r/2", b"x", qos=2, packet_id=8))
    assert alice.expect(R.PUBREC).reason == 0x87
    alice.send(R.publish5("a/2", b"x", qos=2, packet_id=8))
    ack = alice.expect(R.PUBREC)
    assert (ack.packet_id, ack.reason) == (8, 0)
    assert received(spy, 1) == ["a/2"]


@pytest.mark.shootout_only("Mosquitto 2.0 grants every SUBSCRIBE and filters per message")
@pytest.mark.parametrize("v5", [False, True])
def test_denied_subscribe_reason_codes(acl_broker, v5):
    # MQTT 3.1.1: 0x80 Failure for a denied filter (3.9.3); MQTT 5: 0x87.
    alice = login(acl_broker, "alice", v5=v5)
    no = 0x87 if v5 else 0x80
    ack = alice.subscribe(1, [("w/#", 1), ("r/#", 1), ("a/#", 0), ("#", 0), ("users/alice/+", 2),
                              ("$share/g/r/x", 1), ("$share/g/w/x", 1)])
    assert ack.granted == [no, 1, 0, no, 2, 1, no]


def test_filtered_subscription_gets_only_allowed_messages(acl_broker):
    alice = login(acl_broker, "alice")
    alice.subscribe(1, [("a/#", 0)])
    admin = login(acl_broker, "admin")
    for topic in ("a/1", "a/secret", "a/2"):
        admin.send(R.publish(topic, b"m"))
    assert received(alice, 2) == ["a/1", "a/2"]


@pytest.mark.shootout_only("Mosquitto 2.0 drops a message its ACL withholds from the chosen member")
def test_shared_group_offers_a_withheld_message_to_a_member_that_may_read_it(acl_broker):
    """alice may not read a/secret, bob may: in their group every a/secret
    goes to bob, whoever's turn it was, and nothing is lost; in a group of
    alice's alone, a/secret reaches no one."""
    alice = login(acl_broker, "alice", "alice-g", v5=True)
    bob = login(acl_broker, "bob", "bob-g", v5=True)
    alone = login(acl_broker, "alice", "alice-h")
    for c, group in ((alice, "g"), (bob, "g"), (alone, "h")):
        assert c.subscribe(1, [("$share/%s/a/#" % group, 0)]).granted == [0]
    admin = login(acl_broker, "admin")
    sent = []
    for i in range(6):
        sent += ["a/secret", "a/%d" % i]
    for topic in sent:
        admin.send(R.publish(topic, topic.encode()))
    admin.send(R.publish("a/end", b"end", qos=1, packet_id=1))
    admin.expect(R.PUBACK)
    got = {}
    for name, c in (("alice", alice), ("bob", bob), ("alone", alone)):
        got[name] = []
        for _ in range(len(sent) + 1):
            try:
                got[name].append(c.recv_packet(QUIET).topic)
            except TimeoutError:
                break
    assert "a/secret" not in got["alice"] + got["alone"]
    assert got["bob"].count("a/secret") == 6
    assert sorted(got["alice"] + got["bob"]) == sorted(sent + ["a/end"])
    assert got["alice"], "alice gets her turns at the messages she may read"
    assert got["alone"] == ["a/%d" % i for i in range(6)] + ["a/end"]


def test_retained_messages_are_filtered(acl_broker):
    admin = login(acl_broker, "admin")
    admin.send(R.publish("a/secret", b"s", retain=True))
    admin.send(R.publish("a/open", b"o", qos=1, retain=True, packet_id=1))
    admin.expect(R.PUBACK)
    alice = login(acl_broker, "alice")
    alice.subscribe(1, [("a/#", 0)])
    topics = [p.topic for p in alice.pending]
    while len(topics) < 1:
        topics.append(alice.next_publish().topic)
    alice.expect_nothing(QUIET)
    assert topics == ["a/open"]


@pytest.mark.shootout_only("Mosquitto 2.0.11 checks a will only when it publishes it")
def test_will_topic_is_checked(acl_broker):
    alice = acl_broker.raw()
    ack = alice.connect("alice-w", username="alice", password=b"alice-pw", will_topic="r/will")
    assert ack.rc == 5
    ok = acl_broker.raw()
    assert ok.connect("alice-w2", username="alice", password=b"alice-pw",
                      will_topic="a/will").rc == 0


def test_sighup_changes_rules_without_dropping_connections(acl_broker):
    bob = login(acl_broker, "bob")
    bob.subscribe(1, [("a/#", 0)])
    alice = login(acl_broker, "alice")
    acl_broker.acl_path.write_text(ACL.replace("user bob\ntopic read a/#\n",
                                               "user bob\ntopic read a/#\ntopic deny a/hidden\n")
                                   .replace("topic read r/#\n", "topic read r/#\ntopic write q/#\n"))
    acl_broker.reload()
    # bob's subscription, granted before, is filtered now.
    admin = login(acl_broker, "admin")
    for topic in ("a/seen", "a/hidden", "a/too"):
        admin.send(R.publish(topic, b"m"))
    assert received(bob, 2) == ["a/seen", "a/too"]
    # alice, still on her old connection, may now write to q/#.
    alice.send(R.publish("q/1", b"new right"))
    alice.send(R.publish("a/1", b"old right"))
    assert received(bob, 1) == ["a/1"]
    spy = login(acl_broker, "spy")
    spy.subscribe(1, [("q/#", 0)])
    alice.send(R.publish("q/2", b"new right"))
    assert received(spy, 1) == ["q/2"]


@pytest.mark.shootout_only("Mosquitto drops every rule when a reloaded ACL is broken")
def test_broken_acl_on_reload_keeps_the_old_rules(acl_broker):
    alice = login(acl_broker, "alice")
    alice.subscribe(1, [("a/#", 0)])
    acl_broker.acl_path.write_text("topic bogus a/#\n")
    text = acl_broker.reload()
    assert "reload failed" in text and str(acl_broker.acl_path) + ":1:" in text
    admin = login(acl_broker, "admin")
    admin.send(R.publish("a/secret", b"m"))
    admin.send(R.publish("a/1", b"m"))
    assert received(alice, 1) == ["a/1"]
