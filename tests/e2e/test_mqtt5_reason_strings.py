"""MQTT 5.0 Reason Strings (docs/broker.md, "Reason codes"): a DISCONNECT
from the broker always carries one, other packets only while the client's
Request Problem Information is 1 [MQTT-3.1.2-29], and none is sent where
it would take the packet over the client's Maximum Packet Size
[MQTT-3.1.2-24, MQTT-3.14.2-3]. Normative references are to the OASIS
MQTT 5.0 standard.

Mosquitto 2.0.11 completes an unknown PUBREL with 0x00 and no Reason
String, and its DISCONNECTs carry none, so these are shootout_only."""

import pytest

import mqtt_raw as R

pytestmark = pytest.mark.shootout_only

UNKNOWN_ID = "no QoS 2 message with this packet identifier"


def packet_size(p):
    """The whole packet's size, fixed header included, as Maximum Packet
    Size counts it (3.1.2.11.4)."""
    return 1 + len(R.varint(len(p.body))) + len(p.body)


def client(broker, cid, props=()):
    c = broker.raw()
    c.connect5_ok(cid, properties=list(props))
    return c


def unknown_pubrel(c):
    """A PUBREL for a packet id the broker does not know: PUBCOMP 0x92."""
    c.send(R.ack5(R.PUBREL, 99))
    p = c.expect(R.PUBCOMP)
    assert (p.packet_id, p.reason) == (99, 0x92)
    return p


def alias_zero(c):
    """Topic Alias 0 (3.3.2.3.4): DISCONNECT 0x94, then the close."""
    c.send(R.publish5("rs/t", b"x", properties=[(R.TOPIC_ALIAS, 0)]))
    return c.expect_disconnect(0x94)


def test_reason_string_on_an_ack_follows_request_problem_information(broker):
    assert unknown_pubrel(client(broker, "rs-default")).props == {R.REASON_STRING: UNKNOWN_ID}
    asked = client(broker, "rs-asked", [(R.REQUEST_PROBLEM_INFO, 1)])
    assert unknown_pubrel(asked).props == {R.REASON_STRING: UNKNOWN_ID}
    # [MQTT-3.1.2-29]: no Reason String nor User Property on anything but
    # PUBLISH, CONNACK and DISCONNECT.
    quiet = client(broker, "rs-quiet", [(R.REQUEST_PROBLEM_INFO, 0)])
    p = unknown_pubrel(quiet)
    assert p.props == {} and len(p.body) == 3, p.body
    # Nor on the other acknowledgements with a reason code to explain.
    quiet.send(R.publish5("rs/nobody", b"x", qos=1, packet_id=1))
    p = quiet.expect(R.PUBACK)
    assert (p.reason, p.props) == (0x10, {})
    quiet.send(R.publish5("rs/nobody", b"x", qos=2, packet_id=2))
    p = quiet.expect(R.PUBREC)
    assert (p.reason, p.props) == (0x10, {})
    quiet.send(R.ack5(R.PUBREL, 2))
    assert quiet.expect(R.PUBCOMP).props == {}
    p = quiet.subscribe(3, [("$share/g", 1)])  # no filter after the name
    assert (p.granted, p.props) == ([0x8F], {})
    quiet.send(R.unsubscribe5(4, ["rs/never"]))
    p = quiet.expect(R.UNSUBACK)
    assert (p.granted, p.props) == ([0x11], {})
    # DISCONNECT may still say why (3.1.2.11.7), and does.
    assert alias_zero(quiet).props[R.REASON_STRING]


def test_reason_string_left_out_past_the_clients_maximum_packet_size(broker):
    """The same PUBCOMP and DISCONNECT with and without room for their
    Reason Strings: at exactly their size they carry them, one byte less
    and they go without, with their reason codes."""
    with_text = unknown_pubrel(client(broker, "rs-big", [(R.MAX_PACKET_SIZE, 1000)]))
    assert with_text.props == {R.REASON_STRING: UNKNOWN_ID}
    size = packet_size(with_text)
    fits = unknown_pubrel(client(broker, "rs-fits", [(R.MAX_PACKET_SIZE, size)]))
    assert fits.props == {R.REASON_STRING: UNKNOWN_ID}
    short = unknown_pubrel(client(broker, "rs-short", [(R.MAX_PACKET_SIZE, size - 1)]))
    assert short.props == {} and packet_size(short) <= size - 1

    why = alias_zero(client(broker, "rs-dbig", [(R.MAX_PACKET_SIZE, 1000)]))
    assert why.props[R.REASON_STRING]
    size = packet_size(why)
    assert alias_zero(client(broker, "rs-dfits", [(R.MAX_PACKET_SIZE, size)])).props == why.props
    short = alias_zero(client(broker, "rs-dshort", [(R.MAX_PACKET_SIZE, size - 1)]))
    assert short.props == {} and short.reason == 0x94
