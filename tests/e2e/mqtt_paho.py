"""A thin synchronous wrapper around a paho-mqtt 1.6 client for tests.

Every wait has a timeout and fails the test (AssertionError) when it expires.
paho's automatic reconnect is switched off so that a connection closed by the
broker stays closed.
"""

import queue
import socket
import threading
import time

import paho.mqtt.client as mqtt

DEFAULT_TIMEOUT = 5.0


class PahoClient:
    def __init__(self, host, port, client_id, clean_session=True, keepalive=60, will=None,
                 protocol=mqtt.MQTTv311, transport="tcp", tls=None):
        """transport: "tcp" or "websockets"; tls: keyword arguments of
        paho's tls_set (ca_certs, certfile, keyfile), or None for no TLS."""
        self.host = host
        self.port = port
        self.client_id = client_id
        self.keepalive = keepalive
        # MQTT 5 has Clean Start on connect() instead of a clean session.
        session = {} if protocol == mqtt.MQTTv5 else {"clean_session": clean_session}
        self.c = mqtt.Client(client_id=client_id, protocol=protocol, reconnect_on_failure=False,
                             transport=transport, **session)
        if tls is not None:
            self.c.tls_set(**tls)
        if will is not None:
            # will: dict(topic=..., payload=..., qos=..., retain=..., properties=... (MQTT 5))
            self.c.will_set(will["topic"], will.get("payload"), will.get("qos", 0),
                            will.get("retain", False), will.get("properties"))
        self.messages = queue.Queue()
        self.connected = threading.Event()
        self.disconnected = threading.Event()
        self.connack_rc = None
        self.connack_flags = None
        self.disconnect_rc = None
        self._cond = threading.Condition()
        self._subacks = {}
        self._unsubacks = {}
        self._started = False
        self.c.on_connect = self._on_connect
        self.c.on_disconnect = self._on_disconnect
        self.c.on_message = self._on_message
        self.c.on_subscribe = self._on_subscribe
        self.c.on_unsubscribe = self._on_unsubscribe

    # -- callbacks (network thread)
    def _on_connect(self, client, userdata, flags, rc):
        self.connack_rc = rc
        self.connack_flags = dict(flags)
        self.connected.set()

    def _on_disconnect(self, client, userdata, rc):
        self.disconnect_rc = rc
        self.disconnected.set()

    def _on_message(self, client, userdata, msg):
        self.messages.put(msg)

    def _on_subscribe(self, client, userdata, mid, granted_qos):
        with self._cond:
            self._subacks[mid] = list(granted_qos)
            self._cond.notify_all()

    def _on_unsubscribe(self, client, userdata, mid):
        with self._cond:
            self._unsubacks[mid] = []
            self._cond.notify_all()

    def _wait_ack(self, acks, mid, what, timeout):
        """Waits for packet id mid to show up in acks (filled by a callback)
        and returns what was stored for it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while mid not in acks:
                left = deadline - time.monotonic()
                assert left > 0, "%s: no %s within %.1fs" % (self.client_id, what, timeout)
                self._cond.wait(left)
            return acks.pop(mid)

    # -- API
    def connect(self, timeout=DEFAULT_TIMEOUT, expect_rc=0, **mqtt5):
        """Connects and waits for the CONNACK. Returns the session-present
        flag. MQTT 5 takes clean_start and properties too."""
        self.c.connect(self.host, self.port, self.keepalive, **mqtt5)
        self.c.loop_start()
        self._started = True
        assert self.connected.wait(timeout), "%s: no CONNACK within %.1fs" % (self.client_id, timeout)
        assert self.connack_rc == expect_rc, "%s: CONNACK rc %r, expected %r" % (
            self.client_id, self.connack_rc, expect_rc)
        return bool(self.connack_flags.get("session present", 0))

    def subscribe(self, topic, qos=0, timeout=DEFAULT_TIMEOUT):
        """Subscribes (topic may be a list of (filter, qos)) and returns the
        granted QoS list from the SUBACK."""
        if isinstance(topic, list):
            rc, mid = self.c.subscribe(topic)
        else:
            rc, mid = self.c.subscribe(topic, qos)
        assert rc == mqtt.MQTT_ERR_SUCCESS, "subscribe send failed: %r" % rc
        return self._wait_ack(self._subacks, mid, "SUBACK", timeout)

    def unsubscribe(self, topic, timeout=DEFAULT_TIMEOUT):
        """Unsubscribes; returns the UNSUBACK's reason codes (MQTT 5, else [])."""
        rc, mid = self.c.unsubscribe(topic)
        assert rc == mqtt.MQTT_ERR_SUCCESS, "unsubscribe send failed: %r" % rc
        return self._wait_ack(self._unsubacks, mid, "UNSUBACK", timeout)

    def publish(self, topic, payload, qos=0, retain=False, timeout=DEFAULT_TIMEOUT, properties=None):
        """Publishes and, for QoS > 0, waits for the flow to complete
        (PUBACK, or PUBCOMP for QoS 2). For QoS 0 waits until it is written.
        properties: MQTT 5 PUBLISH properties."""
        info = self.c.publish(topic, payload, qos, retain, properties)
        assert info.rc == mqtt.MQTT_ERR_SUCCESS, "publish failed: %r" % info.rc
        info.wait_for_publish(timeout)
        assert info.is_published(), "%s: publish of %r (QoS %d) not completed within %.1fs" % (
            self.client_id, topic, qos, timeout)
        return info

    def get(self, timeout=DEFAULT_TIMEOUT):
        """Returns the next received message (paho MQTTMessage)."""
        try:
            return self.messages.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("%s: no message within %.1fs" % (self.client_id, timeout))

    def get_n(self, n, timeout=DEFAULT_TIMEOUT):
        """Returns n messages; the timeout covers all of them."""
        deadline = time.monotonic() + timeout
        out = []
        for i in range(n):
            left = deadline - time.monotonic()
            try:
                out.append(self.messages.get(timeout=max(0.0, left)))
            except queue.Empty:
                raise AssertionError("%s: got %d of %d messages within %.1fs: %r" % (
                    self.client_id, i, n, timeout, [(m.topic, m.payload) for m in out]))
        return out

    def until(self, topic, payload=None, timeout=DEFAULT_TIMEOUT):
        """Collects messages up to and including the first one on `topic`
        (and with `payload`, if given). Returns the messages before it and it."""
        deadline = time.monotonic() + timeout
        before = []
        while True:
            left = deadline - time.monotonic()
            try:
                m = self.messages.get(timeout=max(0.0, left))
            except queue.Empty:
                raise AssertionError("%s: no message on %r within %.1fs (got %r)" % (
                    self.client_id, topic, timeout, [(x.topic, x.payload) for x in before]))
            if m.topic == topic and (payload is None or m.payload == payload):
                return before, m
            before.append(m)

    def drain(self, quiet):
        """Every message until none came for `quiet` seconds."""
        out = []
        while True:
            try:
                out.append(self.messages.get(timeout=quiet))
            except queue.Empty:
                return out

    def expect_none(self, timeout):
        """Asserts that no message arrives for `timeout` seconds."""
        try:
            m = self.messages.get(timeout=timeout)
        except queue.Empty:
            return
        raise AssertionError("%s: unexpected message on %r: %r (qos %d, retain %d)" % (
            self.client_id, m.topic, m.payload, m.qos, m.retain))

    def wait_disconnected(self, timeout=DEFAULT_TIMEOUT):
        return self.disconnected.wait(timeout)

    def disconnect(self):
        """Clean MQTT DISCONNECT, then stops the network thread."""
        if self._started:
            if not self.disconnected.is_set():
                self.c.disconnect()
                self.disconnected.wait(DEFAULT_TIMEOUT)
            self.c.loop_stop()
            self._started = False

    def drop(self):
        """Closes the TCP connection without DISCONNECT (the will is kept)."""
        sock = self.c.socket()
        # Over WebSockets paho hands out its wrapper; the socket is inside.
        sock = getattr(sock, "_socket", sock)
        if sock is not None:
            try:
                # shutdown() wakes paho's select() so its thread ends at once
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._started:
            self.c.loop_stop()
            self._started = False
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def close(self):
        """Teardown: best effort, never raises."""
        try:
            self.disconnect()
        except Exception:
            try:
                self.drop()
            except Exception:
                pass



class PahoClient5(PahoClient):
    """The same wrapper speaking MQTT 5: connect() takes clean_start and
    CONNECT properties and keeps the CONNACK's (connack_props); subscribe()
    takes SubscribeOptions and properties and returns reason codes.
    Received messages keep paho's .properties; disconnect_rc is the server's
    DISCONNECT reason code (an int) when it sent one."""

    def __init__(self, host, port, client_id, keepalive=60, will=None, transport="tcp", tls=None):
        super().__init__(host, port, client_id, keepalive=keepalive, will=will,
                         protocol=mqtt.MQTTv5, transport=transport, tls=tls)
        self.connack_props = None
        self.disconnect_props = None
        self.c.on_connect = self._on_connect5
        self.c.on_disconnect = self._on_disconnect5
        self.c.on_subscribe = self._on_subscribe5
        self.c.on_unsubscribe = self._on_unsubscribe5

    def _on_connect5(self, client, userdata, flags, rc, properties=None):
        self.connack_props = properties
        self._on_connect(client, userdata, flags, rc.value)

    def _on_disconnect5(self, client, userdata, rc, properties=None):
        self.disconnect_props = properties
        self._on_disconnect(client, userdata, rc.value if hasattr(rc, "value") else rc)

    def _on_subscribe5(self, client, userdata, mid, reason_codes, properties=None):
        self._on_subscribe(client, userdata, mid, [r.value for r in reason_codes])

    def _on_unsubscribe5(self, client, userdata, mid, properties, reason_codes):
        if not isinstance(reason_codes, list):
            reason_codes = [reason_codes]
        with self._cond:
            self._unsubacks[mid] = [r.value for r in reason_codes]
            self._cond.notify_all()

    def subscribe(self, topic, qos=0, options=None, properties=None, timeout=DEFAULT_TIMEOUT):
        """Subscribes and returns the SUBACK's reason codes."""
        if options is not None:
            rc, mid = self.c.subscribe(topic, options=options, properties=properties)
        else:
            rc, mid = self.c.subscribe(topic, qos, properties=properties)
        assert rc == mqtt.MQTT_ERR_SUCCESS, "subscribe send failed: %r" % rc
        return self._wait_ack(self._subacks, mid, "SUBACK", timeout)


def paho5(broker, client_id, connect=True, **kw):
    """An MQTT 5 paho client of a conftest Broker, closed at teardown;
    connect kwargs (clean_start, properties, expect_rc) go to connect()."""
    connect_kw = {k: kw.pop(k) for k in ("clean_start", "properties", "expect_rc") if k in kw}
    c = PahoClient5(broker.host, broker.port, client_id, **kw)
    broker.clients.append(c)
    if connect:
        c.connect(**connect_kw)
    return c
