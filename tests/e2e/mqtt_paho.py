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
    def __init__(self, host, port, client_id, clean_session=True, keepalive=60, will=None):
        self.host = host
        self.port = port
        self.client_id = client_id
        self.keepalive = keepalive
        self.c = mqtt.Client(client_id=client_id, clean_session=clean_session,
                             protocol=mqtt.MQTTv311, reconnect_on_failure=False)
        if will is not None:
            # will: dict(topic=..., payload=..., qos=..., retain=...)
            self.c.will_set(will["topic"], will.get("payload"), will.get("qos", 0), will.get("retain", False))
        self.messages = queue.Queue()
        self.connected = threading.Event()
        self.disconnected = threading.Event()
        self.connack_rc = None
        self.connack_flags = None
        self.disconnect_rc = None
        self._cond = threading.Condition()
        self._subacks = {}
        self._unsubacks = set()
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
            self._unsubacks.add(mid)
            self._cond.notify_all()

    # -- API
    def connect(self, timeout=DEFAULT_TIMEOUT, expect_rc=0):
        """Connects and waits for the CONNACK. Returns the session-present flag."""
        self.c.connect(self.host, self.port, self.keepalive)
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
        deadline = time.monotonic() + timeout
        with self._cond:
            while mid not in self._subacks:
                left = deadline - time.monotonic()
                assert left > 0, "%s: no SUBACK within %.1fs" % (self.client_id, timeout)
                self._cond.wait(left)
            return self._subacks.pop(mid)

    def unsubscribe(self, topic, timeout=DEFAULT_TIMEOUT):
        rc, mid = self.c.unsubscribe(topic)
        assert rc == mqtt.MQTT_ERR_SUCCESS, "unsubscribe send failed: %r" % rc
        deadline = time.monotonic() + timeout
        with self._cond:
            while mid not in self._unsubacks:
                left = deadline - time.monotonic()
                assert left > 0, "%s: no UNSUBACK within %.1fs" % (self.client_id, timeout)
                self._cond.wait(left)
            self._unsubacks.discard(mid)

    def publish(self, topic, payload, qos=0, retain=False, timeout=DEFAULT_TIMEOUT):
        """Publishes and, for QoS > 0, waits for the flow to complete
        (PUBACK, or PUBCOMP for QoS 2). For QoS 0 waits until it is written."""
        info = self.c.publish(topic, payload, qos, retain)
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
