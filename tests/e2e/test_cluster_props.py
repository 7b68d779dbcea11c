"""What a message carries across the nodes of a broker cluster on NATS
(docs/cluster.md, "A node"; issue 15): the RETAIN flag and the MQTT 5
properties a server forwards (payload format, content type, response
topic, correlation data, user properties, the remaining Message Expiry
Interval) arrive at a subscriber of another node exactly as a subscriber
of the publisher's node gets them; a received message is live (RETAIN 0)
unless the subscription has Retain As Published, and is not retained by
the receiving node; malformed headers from a foreign NATS publisher are
ignored. A topic or filter too long for a NATS subject is refused on a
clustered node (SUBACK 0x8F / 0x80, PUBACK or PUBREC 0x90, DISCONNECT
0x90, CONNACK 0x90, a 3.1.1 connection closed) and works as before
without --cluster."""

import time

from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

import mqtt_raw as R
from mqtt_paho import paho5

QUIET = 0.5  # seconds without a message: nothing more is coming

# Repeated keys, in an order that is not sorted, unicode, the encodings'
# own special bytes (':', '%', '=', spaces at both ends, a newline, CR)
# and empty strings.
USERS = [("k", "v1"), ("ключ", "значение ☃"), ("k", "v2"), ("a:b", "c:d\ne\r\n"),
         ("%41", " =3D% "), ("", ""), ("k", "v1")]

# Each escaped byte triples: a topic or filter of these is past SUBJECT_MAX
# (3072 bytes) as a subject, and far within MQTT's 65535.
LONG = "long/" + "." * 1100


def nodes(broker_factory, urls, n=2):
    return [broker_factory(extra_args=["--cluster", urls, "--node-name", "node%d" % i])
            for i in range(n)]


def publish_props(expiry=None):
    p = Properties(PacketTypes.PUBLISH)
    p.PayloadFormatIndicator = 1
    p.ContentType = "text/plain; charset=utf-8"
    p.ResponseTopic = "reply/ünï/x y:z"
    p.CorrelationData = b"\x00\x01\x00\xff\n\r corr\x00"
    p.UserProperty = USERS
    if expiry is not None:
        p.MessageExpiryInterval = expiry
    return p


def raw5_sub(broker, client_id, filters):
    """A raw MQTT 5 client subscribed to filters ((filter, options) pairs)."""
    c = broker.raw()
    c.connect5_ok(client_id)
    ack = c.subscribe(1, filters)
    assert ack.granted == [o & 3 for _, o in filters]
    return c


def test_properties_identical_on_both_nodes(broker_factory, nats_server):
    a, b = nodes(broker_factory, nats_server.url)
    here = raw5_sub(a, "pi-here", [("pi/t", 0)])  # the publisher's node
    there = raw5_sub(b, "pi-there", [("pi/t", 0)])
    parsed = paho5(b, "pi-paho")
    parsed.subscribe("pi/t", 0)
    pub = paho5(a, "pi-pub")
    pub.publish("pi/t", b"body\x00", qos=1, properties=publish_props(expiry=60))
    # The whole PUBLISH (topic, properties in their order, payload) alike.
    p_here, p_there = here.next_publish(), there.next_publish()
    assert p_there.body == p_here.body
    assert p_there.props[R.MESSAGE_EXPIRY] == 60
    m = parsed.get()
    got = m.properties
    assert m.payload == b"body\x00" and not m.retain
    assert got.PayloadFormatIndicator == 1
    assert got.ContentType == "text/plain; charset=utf-8"
    assert got.ResponseTopic == "reply/ünï/x y:z"
    assert got.CorrelationData == b"\x00\x01\x00\xff\n\r corr\x00"
    assert got.UserProperty == USERS
    assert 59 <= got.MessageExpiryInterval <= 60
    for c in (here, there):
        c.expect_nothing(QUIET)


def test_empty_and_absent_properties(broker_factory, nats_server):
    a, b = nodes(broker_factory, nats_server.url)
    there = raw5_sub(b, "pe-there", [("pe/t", 0)])
    pub = a.raw()
    pub.connect5_ok("pe-pub")
    # Empty strings and data: a NATS header value cannot be empty.
    pub.send(R.publish5("pe/t", b"e", properties=[(R.CONTENT_TYPE, ""), (R.CORRELATION_DATA, b""),
                                                  (R.PAYLOAD_FORMAT, 0)]))
    p = there.next_publish()
    assert p.payload == b"e"
    assert p.props[R.CONTENT_TYPE] == "" and p.props[R.CORRELATION_DATA] == b""
    assert p.props[R.PAYLOAD_FORMAT] == 0
    pub.send(R.publish5("pe/t", b"none"))  # nothing to carry: none invented
    p = there.next_publish()
    assert (p.payload, p.props) == (b"none", {})


def test_v3_subscriber_gets_no_properties(broker_factory, nats_server):
    a, b = nodes(broker_factory, nats_server.url)
    v3 = b.raw_connected("p3-v3")
    v3.subscribe(1, [("p3/t", 0)])
    pub = paho5(a, "p3-pub")
    pub.publish("p3/t", b"plain", qos=1, properties=publish_props(expiry=60))
    p = v3.next_publish()
    assert p.payload == b"plain"
    assert p.body == b"\x00\x04p3/tplain"  # topic and payload, nothing else


def test_expiry_counts_on_the_receiving_node(broker_factory, nats_server):
    a, b = nodes(broker_factory, nats_server.url)
    b.raw().park_session5("px-sub", [("px/t", 1)], session_expiry=60)
    pub = a.raw()
    pub.connect5_ok("px-pub")
    for i, (payload, props) in enumerate([(b"short", [(R.MESSAGE_EXPIRY, 1)]),
                                          (b"long", [(R.MESSAGE_EXPIRY, 60)]), (b"keeps", [])]):
        pub.send(R.publish5("px/t", payload, qos=1, packet_id=i + 1, properties=props))
        assert pub.expect(R.PUBACK).reason == 0
    time.sleep(2.2)
    sub = b.raw()
    sub.connect5_ok("px-sub", clean_start=False, properties=[(R.SESSION_EXPIRY, 60)])
    p = sub.next_publish()
    assert p.payload == b"long"  # b"short" expired on node1, waiting for its session
    assert 1 <= p.props[R.MESSAGE_EXPIRY] <= 58
    sub.send(R.ack5(R.PUBACK, p.packet_id))
    p = sub.next_publish()
    assert p.payload == b"keeps" and R.MESSAGE_EXPIRY not in p.props
    sub.send(R.ack5(R.PUBACK, p.packet_id))
    sub.expect_nothing(QUIET)


def test_retain_as_published_across_nodes(broker_factory, nats_server):
    a, b = nodes(broker_factory, nats_server.url)
    rap = raw5_sub(b, "pr-rap", [("pr/t", 0x08)])  # QoS 0, Retain As Published
    live = raw5_sub(b, "pr-live", [("pr/t", 0)])
    v3 = b.raw_connected("pr-v3")
    v3.subscribe(1, [("pr/t", 0)])
    pub = a.raw()
    pub.connect5_ok("pr-pub")
    pub.send(R.publish5("pr/t", b"kept", retain=True))
    pub.send(R.publish5("pr/t", b"plain"))
    assert [(p.payload, p.retain) for p in (rap.next_publish(), rap.next_publish())] == [
        (b"kept", True), (b"plain", False)]
    for c in (live, v3):
        assert [(p.payload, p.retain) for p in (c.next_publish(), c.next_publish())] == [
            (b"kept", False), (b"plain", False)]
    # Retained once for the cluster (its KV bucket, test_cluster_retain.py):
    # a later subscriber of either node gets it once, RETAIN 1; B kept no
    # copy of its own from the live message, or it would come twice.
    for n, cid in ((a, "pr-late-a"), (b, "pr-late-b")):
        late = n.raw()
        late.connect5_ok(cid)
        late.subscribe(1, [("pr/t", 0)])
        p = late.next_publish()
        assert (p.payload, p.retain) == (b"kept", True)
        late.expect_nothing(QUIET)
    pub.send(R.publish5("pr/t", b"", retain=True))  # the bucket outlives the test


def test_retain_as_published_for_a_shared_member(broker_factory, nats_server):
    # A shared subscription's member gets its message through its own
    # queue subscription: Retain As Published holds there too.
    a, b = nodes(broker_factory, nats_server.url)
    rap = raw5_sub(b, "ps-rap", [("$share/g/ps/t", 0x08)])
    live = raw5_sub(b, "ps-live", [("$share/h/ps/t", 0)])
    pub = a.raw()
    pub.connect5_ok("ps-pub")
    pub.send(R.publish5("ps/t", b"kept", retain=True))
    assert (rap.next_publish().retain, live.next_publish().retain) == (True, False)


def test_foreign_headers_never_break_delivery(broker_factory, nats_server):
    # A NATS client that is no node of ours publishes on the prefix: its
    # bad headers are ignored one by one, what is good is kept, and the
    # message is delivered; one whose expiry is over is not.
    (b,) = nodes(broker_factory, nats_server.url, n=1)
    sub = raw5_sub(b, "pf-sub", [("pf/#", 0x08)])
    nc = nats_server.client(headers=True)
    bad = [("Mqtt-Retain", "yes"), ("Mqtt-Expiry", "-1"), ("Mqtt-Format", "2"),
           ("Mqtt-Content-Type", "%zz"), ("Mqtt-Response-Topic", "a/#"),
           ("Mqtt-Correlation", "not base64!"), ("Mqtt-User", "no colon"),
           ("Mqtt-User", "%C0%80:overlong"), ("Mqtt-User", "k:%00"), ("Mqtt-User", "%61:lower%2a"),
           ("Mqtt-Expiry", "99999999999"), ("Mqtt-Format", "1"), ("Mqtt-Format", "0"),
           ("Mqtt-User", "good:one"), ("Mqtt-Qos", "7"), ("Other", "x")]
    nc.hpub("mqtt.t.pf.bad", bad, b"still")
    nc.hpub("mqtt.t.pf.gone", [("Mqtt-Expiry", "0")], b"expired in transit")
    nc.hpub("mqtt.t.pf.ok", [("Mqtt-Retain", "1"), ("Mqtt-Expiry", "30")], b"fine")
    nc.pub("mqtt.t.pf.plain", b"no headers")
    nc.flush()
    p = sub.next_publish()
    assert (p.topic, p.payload, p.retain) == ("pf/bad", b"still", False)
    # The first of a repeated single header counts; a second is ignored.
    assert p.props == {R.PAYLOAD_FORMAT: 1, R.USER_PROPERTY: [("good", "one")]}
    p = sub.next_publish()
    assert (p.topic, p.payload, p.retain) == ("pf/ok", b"fine", True)
    assert 29 <= p.props[R.MESSAGE_EXPIRY] <= 30
    p = sub.next_publish()
    assert (p.topic, p.payload, p.props) == ("pf/plain", b"no headers", {})
    sub.expect_nothing(QUIET)
    nc.close()


def test_too_long_filter_refused(broker_factory, nats_server):
    a, b = nodes(broker_factory, nats_server.url)
    v5 = a.raw()
    v5.connect5_ok("pl-v5")
    ack = v5.subscribe(1, [("ok/t", 1), (LONG, 1), ("$share/" + "." * 1100 + "/x", 1),
                           ("$share/g/" + LONG, 0)])
    assert ack.granted == [1, 0x8F, 0x8F, 0x8F]
    v3 = a.raw_connected("pl-v3")
    assert v3.subscribe(1, [(LONG, 1), ("ok/t", 0)]).granted == [0x80, 0]
    # Both still work, and so does the node.
    pub = b.raw()
    pub.connect5_ok("pl-pub")
    pub.send(R.publish5("ok/t", b"works"))
    assert v5.next_publish().payload == b"works"
    assert v3.next_publish().payload == b"works"


def test_too_long_topic_refused(broker_factory, nats_server):
    a, b = nodes(broker_factory, nats_server.url)
    # Subscribers of everything on both nodes: nothing may reach them (no
    # retained messages either, Retain Handling 2: the module's earlier
    # tests leave theirs in the cluster's bucket).
    watch = [raw5_sub(n, "pt-watch-%d" % i, [("#", 0x20)]) for i, n in enumerate((a, b))]
    pub = a.raw()
    pub.connect5_ok("pt-pub")
    pub.send(R.publish5(LONG, b"x", qos=1, packet_id=1))
    assert pub.expect(R.PUBACK).reason == 0x90
    pub.send(R.publish5(LONG, b"x", qos=2, packet_id=2))
    assert pub.expect(R.PUBREC).reason == 0x90  # nothing follows: no PUBREL
    pub.send(R.publish5("pt/ok", b"after", qos=1, packet_id=3))
    assert pub.expect(R.PUBACK).reason == 0
    for w in watch:
        assert w.next_publish().payload == b"after"
    pub.send(R.publish5(LONG, b"x"))  # QoS 0 has no acknowledgement to say it in
    pub.expect_disconnect(0x90)
    v3 = a.raw_connected("pt-v3")
    v3.send(R.publish(LONG, b"x", qos=1, packet_id=1))
    assert v3.wait_closed() == []  # not even a PUBACK
    for w in watch:
        w.expect_nothing(QUIET)
    # The others keep working.
    other = b.raw()
    other.connect5_ok("pt-other")
    other.send(R.publish5("pt/ok", b"still", qos=1, packet_id=1))
    assert other.expect(R.PUBACK).reason == 0
    for w in watch:
        assert w.next_publish().payload == b"still"


def test_too_long_will_topic_refused(broker_factory, nats_server):
    (a,) = nodes(broker_factory, nats_server.url, n=1)
    v5 = a.raw()
    assert v5.connect5("pw-v5", will_topic=LONG, will_message=b"w").rc == 0x90
    assert v5.wait_closed() == []
    v3 = a.raw()
    v3.send(R.connect("pw-v3", will_topic=LONG, will_message=b"w"))
    assert v3.wait_closed() == []  # 3.1.1 has no CONNACK code for it
    a.raw_connected("pw-after")  # the node still takes clients


def test_without_cluster_long_topics_unchanged(broker_factory):
    solo = broker_factory()
    sub = solo.raw()
    sub.connect5_ok("pu-sub")
    assert sub.subscribe(1, [(LONG, 1)]).granted == [1]
    pub = solo.raw()
    pub.connect5_ok("pu-pub", will_topic=LONG)
    pub.send(R.publish5(LONG, b"local", qos=1, packet_id=1))
    assert pub.expect(R.PUBACK).reason == 0
    assert sub.next_publish().payload == b"local"
