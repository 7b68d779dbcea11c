/* fuzz_broker.c - libFuzzer target for the broker's packet handling: the
 * input is a script of byte chunks sent by three clients over socket pairs
 * into a real broker (connections, sessions, subscription tree, retained
 * store, QoS flows, wills), with small limits so that every bound is hit
 * and a SUBSCRIBE of more than three filters is handled in slices.
 * The first byte picks, two bits per client, what each connection sends
 * before its script, on every (re)connection: 0 nothing (the script brings
 * its own CONNECT), 1 an MQTT 3.1.1 CONNECT, 2 an MQTT 5 CONNECT with small
 * limits for what the broker sends (Receive Maximum 2, Topic Alias Maximum
 * 2, Maximum Packet Size 96, no reason strings), 3 an MQTT 5 CONNECT that
 * resumes a session (expiry 60 s) with a will (delay 0, message expiry 0).
 * Then each chunk is preceded by one control byte:
 *   low 2 bits 0..2: the client that sends the chunk; 3: that client
 *   (next byte % 3) hangs up and a new connection takes its place, and
 *   with the next byte's top bit set the broker's periodic sweep runs;
 *   the next byte: the chunk's length.
 * ASan, UBSan and LeakSanitizer do the checking; at the end every client
 * hangs up and the broker shuts down, so everything must be freed.
 */
#include <signal.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/broker_int.h"
#include "core/log.h"
#include "fuzz_broker_harness.h"
#include "mqtt/mqtt5.h"
#include "mqtt/mqtt_codec.h"

#define FUZZ_CLIENTS 3

/* Writes client i's CONNECT of the given kind (see above) into out;
 * returns its length. */
static size_t fuzz_prelude(unsigned kind, int i, uint8_t *out)
{
    static const char *ids[FUZZ_CLIENTS] = {"c0", "c1", "c2"};
    struct mqtt_bytes id = {(const uint8_t *)ids[i], 2};
    if (kind == 1) {
        struct mqtt_connect c = {.protocol_level = 4, .keepalive = 60, .client_id = id};
        return mqtt_encode_connect(out, &c);
    }
    struct mqtt5_connect c = {.protocol_level = 5, .keepalive = 60, .client_id = id};
    struct mqtt_props *p = &c.props;
    if (kind == 2) {
        c.clean_start = true;
        p->present = MQTT_PROP_BIT(MQTT_PROP_RECEIVE_MAX) | MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS_MAX) |
                     MQTT_PROP_BIT(MQTT_PROP_MAX_PACKET_SIZE) |
                     MQTT_PROP_BIT(MQTT_PROP_REQUEST_PROBLEM_INFO);
        p->receive_max = 2;
        p->topic_alias_max = 2;
        p->max_packet_size = 96;
        p->request_problem_info = 0;
    } else {
        p->present = MQTT_PROP_BIT(MQTT_PROP_SESSION_EXPIRY);
        p->session_expiry = 60;
        c.has_will = true;
        c.will_qos = 1;
        c.will_topic = (struct mqtt_bytes){(const uint8_t *)"w", 1};
        c.will_props.present = MQTT_PROP_BIT(MQTT_PROP_WILL_DELAY) | MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY);
    }
    return mqtt5_encode_connect(out, &c);
}

static int fuzz_connect(struct broker *b, unsigned kind, int i)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
        abort();
    conn_accept(b->home, sv[0]);
    if (kind) {
        uint8_t buf[128];
        size_t n = fuzz_prelude(kind, i, buf);
        if (write(sv[1], buf, n) != (ssize_t)n)
            abort();
    }
    return sv[1];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_broker_once();
    struct ev_loop *loop = ev_loop_new();
    struct broker_config cfg;
    broker_config_defaults(&cfg);
    cfg.max_packet_size = 2048;
    cfg.max_inflight = 3;
    cfg.max_queued = 5;
    cfg.max_output = 4096;
    /* Bounds low enough for the inputs to reach them. */
    cfg.max_retained_messages = 4;
    cfg.max_retained_bytes = 1024;
    cfg.max_partial_bytes = 65536;
    cfg.queue_qos0 = size & 1;
    cfg.max_subscriptions = 6;
    struct broker b;
    fuzz_broker_start(&b, &cfg, loop);
    b.sub_slice = 3; /* a SUBSCRIBE of four filters takes two iterations */

    unsigned kinds[FUZZ_CLIENTS];
    int peers[FUZZ_CLIENTS];
    for (int i = 0; i < FUZZ_CLIENTS; i++) {
        kinds[i] = size ? (data[0] >> (2 * i)) & 3 : 0;
        peers[i] = fuzz_connect(&b, kinds[i], i);
    }

    size_t pos = size ? 1 : 0;
    while (pos + 2 <= size) {
        uint8_t ctl = data[pos], arg = data[pos + 1];
        pos += 2;
        if ((ctl & 3) == 3) {
            int who = arg % FUZZ_CLIENTS;
            close(peers[who]);
            peers[who] = fuzz_connect(&b, kinds[who], who);
            if (arg & 0x80)
                conn_sweep(b.home);
        } else {
            size_t len = arg;
            if (len > size - pos)
                len = size - pos;
            if (write(peers[ctl & 3], data + pos, len) < 0) {
                /* The broker closed this client (a protocol error): it
                 * reconnects, as a real client would. */
                close(peers[ctl & 3]);
                peers[ctl & 3] = fuzz_connect(&b, kinds[ctl & 3], ctl & 3);
            }
            pos += len;
        }
        fuzz_broker_step(loop, peers, FUZZ_CLIENTS);
    }
    for (int i = 0; i < FUZZ_CLIENTS; i++) {
        close(peers[i]);
        peers[i] = -1;
    }
    fuzz_broker_step(loop, peers, FUZZ_CLIENTS);
    fuzz_broker_stop(&b);
    ev_loop_free(loop);
    return 0;
}
