/* broker_conf.c - broker settings by name, from flags and from files: one
 * option table (core/opt.h) whose entries carry both names. */
#include "broker/broker_conf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cluster/subject.h"
#include "core/mem.h"
#include "core/opt.h"
#include "core/srv.h"

#define CFG(field) OPT_FIELD(struct broker_config, field)

static int conf_set_bind(const struct opt *o, void *base, const char *name, const char *value,
                         char *err, size_t errlen)
{
    struct broker_config *cfg = base;
    if (!value[0] || strlen(value) >= sizeof cfg->bind_storage)
        return opt_fail(err, errlen, "%s wants an address, not '%s'", name, value);
    snprintf(cfg->bind_storage, sizeof cfg->bind_storage, "%s", value);
    cfg->bind = cfg->bind_storage;
    return 0;
}

/* A file name into the char array o names. */
static int conf_set_path(const struct opt *o, void *base, const char *name, const char *value,
                         char *err, size_t errlen)
{
    if (!value[0] || strlen(value) >= o->size)
        return opt_fail(err, errlen, "%s wants a file name shorter than %zu bytes", name,
                          o->size);
    snprintf(opt_field(o, base), o->size, "%s", value);
    return 0;
}

/* A word (no blanks) into the char array o names. */
static int conf_set_word(const struct opt *o, void *base, const char *name, const char *value,
                         char *err, size_t errlen)
{
    if (!value[0] || strlen(value) >= o->size || strpbrk(value, " \t"))
        return opt_fail(err, errlen, "%s wants one word shorter than %zu bytes", name, o->size);
    snprintf(opt_field(o, base), o->size, "%s", value);
    return 0;
}

/* cluster_prefix: literal NATS tokens (cluster/subject.h). */
static int conf_set_prefix(const struct opt *o, void *base, const char *name, const char *value,
                           char *err, size_t errlen)
{
    subject_map m;
    if (subject_map_init(&m, value) < 0)
        return opt_fail(err, errlen,
                        "%s wants NATS tokens of [A-Za-z0-9_-] separated by '.', not '%s'", name,
                        value);
    return conf_set_word(o, base, name, value, err, errlen);
}

static const struct opt_choice conf_accepts[] = {
    {"reuseport", NULL, SRV_ACCEPT_REUSEPORT},
    {"handoff", NULL, SRV_ACCEPT_HANDOFF},
    {NULL, NULL, 0},
};

const struct opt broker_options[] = {
    {"bind", 'b', OPT_CALL, "ADDR", "listen address; :: or 0.0.0.0 for all interfaces",
     "127.0.0.1", .keyword = "bind_address", .set = conf_set_bind},
    {"port", 'p', OPT_UINT, "N", "TCP port; 0 picks a free one", "1883", CFG(port),
     .keyword = "port", .min = 0, .max = 65535},
    {"threads", 0, OPT_UINT, "N",
     "event loops (threads); 0: one per online CPU; connections "
     "spread over them (docs/broker.md, \"Threads\")", "0", CFG(threads), .keyword = "threads",
     .min = 0, .max = BROKER_THREADS_MAX},
    {"accept", 0, OPT_ENUM, "reuseport|handoff",
     "with several loops: a listener per loop (the kernel spreads connections by address "
     "and port), or one on the first loop handing them to the loops in turn", "reuseport",
     CFG(accept), .keyword = "accept", .choices = conf_accepts},
    {"max-connections", 0, OPT_UINT, "N",
     "simultaneous clients; more are answered CONNACK 3 and closed", "100000",
     CFG(max_connections), .keyword = "max_connections", .min = 1, .max = UINT32_MAX},
    {"max-connections-per-address", 0, OPT_UINT, "N",
     "connections from one IP address at once, 0: any; more are closed as soon as accepted",
     "0", CFG(max_per_address), .keyword = "max_connections_per_address", .min = 0,
     .max = UINT32_MAX},
    {"max-packet-size", 0, OPT_UINT, "BYTES",
     "largest packet accepted; a larger one closes its connection (MQTT 5 clients are told it "
     "in CONNACK)", "1048576", CFG(max_packet_size), .keyword = "max_packet_size", .min = 64,
     .max = 268435460},
    {"max-queued-messages", 0, OPT_UINT, "N",
     "QoS 1/2 messages queued per session beyond the inflight window", "1000", CFG(max_queued),
     .keyword = "max_queued_messages", .min = 0, .max = UINT32_MAX},
    {"max-inflight-messages", 0, OPT_UINT, "N",
     "unacknowledged QoS 1/2 messages per client, at most 65535; also the MQTT 5 Receive "
     "Maximum for QoS 2 from clients", "20", CFG(max_inflight),
     .keyword = "max_inflight_messages", .min = 1, .max = 65535},
    {"max-output-bytes", 0, OPT_UINT, "BYTES",
     "pending output per client before QoS 0 messages to it are dropped", "8388608",
     CFG(max_output), .keyword = "max_output_bytes", .min = 1024, .max = SIZE_MAX},
    {"max-retained-messages", 0, OPT_UINT, "N",
     "retained topics, all clients together; a new one over it is not stored (MQTT 5: "
     "PUBACK/PUBREC 0x97), replacing and clearing still work", "100000",
     CFG(max_retained_messages), .keyword = "max_retained_messages", .min = 1, .max = UINT32_MAX},
    {"max-retained-bytes", 0, OPT_UINT, "BYTES",
     "topic and payload bytes of all retained messages; over it as --max-retained-messages",
     "268435456", CFG(max_retained_bytes), .keyword = "max_retained_bytes", .min = 1,
     .max = SIZE_MAX},
    {"max-partial-packet-bytes", 0, OPT_UINT, "BYTES",
     "input memory held for packets not yet complete, all connections together; a connection "
     "that would go over it is closed (MQTT 5: DISCONNECT 0x97)", "268435456",
     CFG(max_partial_bytes), .keyword = "max_partial_packet_bytes", .min = 65536,
     .max = SIZE_MAX},
    {"max-subscriptions", 0, OPT_UINT, "N",
     "subscriptions per client, 0: any; one more is refused (SUBACK 0x97 Quota exceeded, 0x80 "
     "in MQTT 3.1.1)", "10000", CFG(max_subscriptions), .keyword = "max_subscriptions",
     .min = 0, .max = UINT32_MAX},
    {"queue-qos0", 0, OPT_FLAG, NULL, "also queue QoS 0 messages for offline persistent sessions",
     NULL, CFG(queue_qos0), .keyword = "queue_qos0_messages"},
    {"connect-timeout", 0, OPT_UINT, "SECS",
     "time a new connection has to send CONNECT, TLS handshake and WebSocket upgrade included",
     "10", CFG(connect_timeout_ms), .keyword = "connect_timeout", .min = 1, .max = 3600,
     .scale = 1000},
    {"packet-timeout", 0, OPT_UINT, "SECS",
     "time a packet may take from its first byte to its last, however its bytes trickle in; "
     "past it the packet must keep coming at --min-packet-rate; keep alive 0 does not lift it",
     "10", CFG(packet_timeout_ms), .keyword = "packet_timeout", .min = 1, .max = 3600,
     .scale = 1000},
    {"min-packet-rate", 0, OPT_UINT, "BYTES",
     "past --packet-timeout, a packet still arriving must have brought this many bytes for "
     "every second beyond it, or its connection is closed (MQTT 5: DISCONNECT 0x80)", "4096",
     CFG(min_packet_rate), .keyword = "min_packet_rate", .min = 1, .max = UINT32_MAX},
    {"max-keepalive", 0, OPT_UINT, "SECS",
     "longest keep alive a client may use, 0: any; MQTT 5 clients asking for more, or for none, "
     "are told this one, MQTT 3.1.1 clients get CONNACK 2", "0", CFG(max_keepalive),
     .keyword = "max_keepalive", .min = 0, .max = 65535},
    {"sys-interval", 0, OPT_UINT, "SECS", "period of the $SYS/broker/... figures; 0 turns them off",
     "10", CFG(sys_interval_s), .keyword = "sys_interval", .min = 0, .max = 86400},
    {"persistence", 0, OPT_FLAG, NULL,
     "keep sessions, wills, subscriptions, retained and queued messages across restarts and "
     "crashes (docs/persistence.md)", NULL, CFG(persistence.on), .keyword = "persistence"},
    {"persistence-location", 0, OPT_CALL, "DIR", "its data directory", "broker-data",
     CFG(persistence.location), .keyword = "persistence_location", .set = conf_set_path},
    {"persistence-sync-interval", 0, OPT_UINT, "MS",
     "0: fdatasync before every acknowledgement; N: at most every N ms", "0",
     CFG(persistence.sync_interval_ms), .keyword = "persistence_sync_interval", .min = 0,
     .max = 3600000},
    /* cluster/link.c (docs/cluster.md) */
    {"cluster", 0, OPT_CALL, "URLS",
     "join a cluster of brokers over NATS: nats://HOST:PORT[,...] (docs/cluster.md)", "off",
     CFG(cluster.urls), .keyword = "cluster", .set = conf_set_word},
    {"cluster-name", 0, OPT_CALL, "NAME", "the cluster's name, in its NATS connections' names",
     "shootout", CFG(cluster.name), .keyword = "cluster_name", .set = conf_set_word},
    {"cluster-prefix", 0, OPT_CALL, "TOKENS",
     "first tokens of the NATS subjects the cluster's messages go on", "mqtt",
     CFG(cluster.prefix), .keyword = "cluster_prefix", .set = conf_set_prefix},
    {"node-name", 0, OPT_CALL, "NAME",
     "this node's name in the cluster; default: hostname:port, or hostname-RANDOM with port 0",
     NULL, CFG(cluster.node), .keyword = "node_name", .set = conf_set_word},
    {"cluster-replicas", 0, OPT_UINT, "N",
     "replicas of the cluster's retained-message bucket and QoS 1/2 stream when this node "
     "creates them (JetStream)",
     "1", CFG(cluster.replicas), .keyword = "cluster_replicas", .min = 1, .max = 5},
    /* auth.c and metrics.c */
    {"password-file", 0, OPT_CALL, "FILE",
     "check usernames and passwords against a Mosquitto password file (`shootout passwd`)", NULL,
     CFG(auth.password_file), .keyword = "password_file", .set = conf_set_path},
    {"acl-file", 0, OPT_CALL, "FILE", "Mosquitto ACL file for publish, subscribe and delivery",
     NULL, CFG(auth.acl_file), .keyword = "acl_file", .set = conf_set_path},
    {"allow-anonymous", 0, OPT_BOOL, "true|false", "let clients without a username in", "true",
     CFG(auth.allow_anonymous), .keyword = "allow_anonymous"},
    {"metrics-port", 0, OPT_UINT, "N",
     "serve Prometheus GET /metrics on this port of the listen address", "off",
     CFG(obs.metrics_port), .keyword = "metrics_port", .min = 0, .max = 65535},
    {"connection-messages", 0, OPT_BOOL, "true|false",
     "log each connect and disconnect at info level", "true", CFG(obs.connection_messages),
     .keyword = "connection_messages"},
    {.kind = OPT_END},
};

/* Mosquitto keywords whose value shootout already behaves as: accepted
 * when they say so, refused otherwise, rather than silently ignored. */
static const struct {
    const char *keyword, *value;
} conf_as_is[] = {
    {"per_listener_settings", "false"},
};

/* Mosquitto keywords about logging and process management: they change
 * nothing about what clients see, so a migrated file may keep them. */
static const char *const conf_ignored[] = {
    "log_dest", "log_type", "log_timestamp", "log_timestamp_format", "user", "pid_file",
    /* Mosquitto's snapshot settings: the log is always current. */
    "persistence_file", "autosave_interval", "autosave_on_changes",
};

int broker_conf_set(struct broker_config *cfg, const char *name, const char *value, char *err,
                    size_t errlen)
{
    const struct opt *o = opt_find(broker_options, name);
    if (!o)
        return opt_fail(err, errlen, "unknown setting '%s'", name);
    return opt_set(o, cfg, name, value, err, errlen);
}

/* One line split into at most three words; returns the count. */
static int conf_words(char *line, char *words[3])
{
    int n = 0;
    for (char *p = strtok(line, " \t\r"); p; p = strtok(NULL, " \t\r")) {
        if (n == 3)
            return 4;
        words[n++] = p;
    }
    return n;
}

/* Per-listener settings: they apply to the listener of the last
 * `listener` line (the default listener before any). */
#define LST(field) offsetof(struct broker_listener, field), sizeof ((struct broker_listener *)0)->field
static const struct {
    const char *keyword;
    size_t offset, size; /* a string field, or a bool when size is 1 */
} conf_listener_settings[] = {
    {"certfile", LST(certfile)},
    {"keyfile", LST(keyfile)},
    {"cafile", LST(cafile)},
    {"capath", LST(capath)},
    {"tls_version", LST(tls_version)},
    {"require_certificate", LST(require_certificate)},
    {"use_identity_as_username", LST(use_identity_as_username)},
};

/* listener PORT [ADDRESS]: the first sets the default listener's port and
 * address, as `port` and `bind_address` do; each further one adds a
 * listener. */
static int conf_listener(struct broker_config *cfg, char **w, int n, int *listeners, char *err,
                         size_t errlen)
{
    if (n < 2 || n > 3)
        return opt_fail(err, errlen, "listener wants a port and an optional address");
    if (++*listeners == 1) {
        if (broker_conf_set(cfg, "port", w[1], err, errlen) < 0)
            return -1;
        return n == 3 ? broker_conf_set(cfg, "bind_address", w[2], err, errlen) : 0;
    }
    if (cfg->listeners.n == BROKER_LISTENERS_MAX)
        return opt_fail(err, errlen, "at most %d listeners", BROKER_LISTENERS_MAX);
    struct broker_listener *l = &cfg->listeners.v[cfg->listeners.n];
    memset(l, 0, sizeof *l);
    uint64_t port;
    if (opt_parse_uint(w[1], 0, 65535, &port) < 0)
        return opt_fail(err, errlen, "listener wants a port from 0 to 65535, not '%s'", w[1]);
    l->port = (int)port;
    if (n == 3 && snprintf(l->bind, sizeof l->bind, "%s", w[2]) >= (int)sizeof l->bind)
        return opt_fail(err, errlen, "listener address too long");
    cfg->listeners.n++;
    return 0;
}

/* Sets *handled if name is a per-listener setting; returns -1 on a bad
 * value. */
static int conf_listener_setting(struct broker_config *cfg, const char *name, const char *value,
                                 char *err, size_t errlen, bool *handled)
{
    struct broker_listener *l = &cfg->listeners.v[cfg->listeners.n - 1];
    *handled = true;
    if (!strcmp(name, "protocol")) {
        if (strcmp(value, "mqtt") && strcmp(value, "websockets"))
            return opt_fail(err, errlen, "protocol wants mqtt or websockets, not '%s'", value);
        l->websockets = !strcmp(value, "websockets");
        return 0;
    }
    for (size_t i = 0; i < sizeof conf_listener_settings / sizeof conf_listener_settings[0]; i++) {
        if (strcmp(name, conf_listener_settings[i].keyword))
            continue;
        char *field = (char *)l + conf_listener_settings[i].offset;
        if (conf_listener_settings[i].size == 1) {
            if (strcmp(value, "true") && strcmp(value, "false"))
                return opt_fail(err, errlen, "%s wants true or false, not '%s'", name, value);
            *(bool *)field = !strcmp(value, "true");
            return 0;
        }
        if (snprintf(field, conf_listener_settings[i].size, "%s", value) >=
            (int)conf_listener_settings[i].size)
            return opt_fail(err, errlen, "%s value too long", name);
        return 0;
    }
    *handled = false;
    return 0;
}

static int conf_line(struct broker_config *cfg, char *line, int *listeners, char *err, size_t errlen)
{
    char *w[3];
    bool handled = false;
    int n = conf_words(line, w);
    if (n == 0 || w[0][0] == '#')
        return 0;
    for (size_t i = 0; i < sizeof conf_ignored / sizeof conf_ignored[0]; i++)
        if (!strcmp(w[0], conf_ignored[i]))
            return 0;
    for (size_t i = 0; i < sizeof conf_as_is / sizeof conf_as_is[0]; i++) {
        if (strcmp(w[0], conf_as_is[i].keyword))
            continue;
        if (n == 2 && !strcmp(w[1], conf_as_is[i].value))
            return 0;
        return opt_fail(err, errlen, "'%s' other than %s is not supported yet", w[0],
                          conf_as_is[i].value);
    }
    if (!strcmp(w[0], "listener"))
        return conf_listener(cfg, w, n, listeners, err, errlen);
    if (n == 2 && conf_listener_setting(cfg, w[0], w[1], err, errlen, &handled) < 0)
        return -1;
    if (handled)
        return 0;
    if (n != 2)
        return opt_fail(err, errlen, "%s wants exactly one value", w[0]);
    return broker_conf_set(cfg, w[0], w[1], err, errlen);
}

int broker_conf_parse(struct broker_config *cfg, const char *text, const char *origin, char *err,
                      size_t errlen)
{
    char *copy = mem_strdup(text);
    char *rest = copy;
    int lineno = 0, rc = 0, listeners = 0;
    while (rest && rc == 0) {
        char *line = rest;
        rest = strchr(rest, '\n');
        if (rest)
            *rest++ = '\0';
        lineno++;
        rc = conf_line(cfg, line, &listeners, err, errlen);
    }
    mem_free(copy);
    if (rc < 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", err);
        snprintf(err, errlen, "%s:%d: %s", origin, lineno, msg);
    }
    return rc;
}

int broker_conf_load(struct broker_config *cfg, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return opt_fail(err, errlen, "cannot read %s: %s", path, strerror(errno));
    char *text = NULL;
    size_t len = 0, cap = 0;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            text = mem_realloc(text, cap);
        }
        memcpy(text + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (!text)
        return 0;
    text[len] = '\0';
    int rc = broker_conf_parse(cfg, text, path, err, errlen);
    mem_free(text);
    return rc;
}
