/* broker_conf.c - broker settings by name, from flags and from files. */
#include "broker/broker_conf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/mem.h"
#include "core/opt.h"

enum conf_kind { CONF_U32, CONF_SIZE, CONF_SECONDS_MS, CONF_BOOL, CONF_PORT, CONF_BIND, CONF_PATH };

struct conf_setting {
    const char *keyword; /* in files */
    const char *flag;    /* long command-line option */
    enum conf_kind kind;
    size_t offset;       /* into struct broker_config */
    uint64_t min, max;   /* CONF_PATH: max is the field's size */
};

#define CFG(field) offsetof(struct broker_config, field)

static const struct conf_setting conf_settings[] = {
    {"port", "port", CONF_PORT, CFG(port), 0, 65535},
    {"bind_address", "bind", CONF_BIND, CFG(bind), 0, 0},
    {"max_connections", "max-connections", CONF_U32, CFG(max_connections), 1, UINT32_MAX},
    {"max_packet_size", "max-packet-size", CONF_U32, CFG(max_packet_size), 64, 268435460},
    {"max_queued_messages", "max-queued-messages", CONF_U32, CFG(max_queued), 0, UINT32_MAX},
    {"max_inflight_messages", "max-inflight-messages", CONF_U32, CFG(max_inflight), 1, 65535},
    {"max_output_bytes", "max-output-bytes", CONF_SIZE, CFG(max_output), 1024, SIZE_MAX},
    {"queue_qos0_messages", "queue-qos0", CONF_BOOL, CFG(queue_qos0), 0, 0},
    {"connect_timeout", "connect-timeout", CONF_SECONDS_MS, CFG(connect_timeout_ms), 1, 3600},
    {"max_keepalive", "max-keepalive", CONF_U32, CFG(max_keepalive), 0, 65535},
    {"sys_interval", "sys-interval", CONF_U32, CFG(sys_interval_s), 0, 86400},
    {"persistence", "persistence", CONF_BOOL, CFG(persistence.on), 0, 0},
    {"persistence_location", "persistence-location", CONF_PATH, CFG(persistence.location), 0,
     sizeof(((struct broker_config *)0)->persistence.location)},
    {"persistence_sync_interval", "persistence-sync-interval", CONF_U32,
     CFG(persistence.sync_interval_ms), 0, 3600000},
    /* auth.c and metrics.c */
    {"password_file", "password-file", CONF_PATH, CFG(auth.password_file), 0,
     sizeof(((struct broker_config *)0)->auth.password_file)},
    {"acl_file", "acl-file", CONF_PATH, CFG(auth.acl_file), 0,
     sizeof(((struct broker_config *)0)->auth.acl_file)},
    {"allow_anonymous", "allow-anonymous", CONF_BOOL, CFG(auth.allow_anonymous), 0, 0},
    {"metrics_port", "metrics-port", CONF_PORT, CFG(obs.metrics_port), 0, 65535},
    {"connection_messages", "connection-messages", CONF_BOOL, CFG(obs.connection_messages), 0, 0},
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

static int conf_error(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int conf_error(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

int broker_conf_set(struct broker_config *cfg, const char *name, const char *value, char *err,
                    size_t errlen)
{
    const struct conf_setting *s = NULL;
    for (size_t i = 0; i < sizeof conf_settings / sizeof conf_settings[0] && !s; i++)
        if (!strcmp(name, conf_settings[i].keyword) || !strcmp(name, conf_settings[i].flag))
            s = &conf_settings[i];
    if (!s)
        return conf_error(err, errlen, "unknown setting '%s'", name);
    char *field = (char *)cfg + s->offset;
    uint64_t v = 0;
    switch (s->kind) {
    case CONF_BIND:
        if (!value[0] || strlen(value) >= sizeof cfg->bind_storage)
            return conf_error(err, errlen, "%s wants an address, not '%s'", name, value);
        snprintf(cfg->bind_storage, sizeof cfg->bind_storage, "%s", value);
        cfg->bind = cfg->bind_storage;
        return 0;
    case CONF_PATH:
        if (!value[0] || strlen(value) >= s->max)
            return conf_error(err, errlen, "%s wants a file name shorter than %llu bytes", name,
                              (unsigned long long)s->max);
        snprintf(field, s->max, "%s", value);
        return 0;
    case CONF_BOOL:
        if (!strcmp(value, "true"))
            *(bool *)field = true;
        else if (!strcmp(value, "false"))
            *(bool *)field = false;
        else
            return conf_error(err, errlen, "%s wants true or false, not '%s'", name, value);
        return 0;
    default:
        break;
    }
    if (opt_parse_uint(value, s->min, s->max, &v) < 0)
        return conf_error(err, errlen, "%s wants a whole number from %llu to %llu, not '%s'", name,
                          (unsigned long long)s->min, (unsigned long long)s->max, value);
    switch (s->kind) {
    case CONF_PORT:
        *(int *)field = (int)v;
        break;
    case CONF_U32:
        *(uint32_t *)field = (uint32_t)v;
        break;
    case CONF_SIZE:
        *(size_t *)field = (size_t)v;
        break;
    case CONF_SECONDS_MS:
        *(uint32_t *)field = (uint32_t)v * 1000u;
        break;
    default:
        break;
    }
    return 0;
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
        return conf_error(err, errlen, "listener wants a port and an optional address");
    if (++*listeners == 1) {
        if (broker_conf_set(cfg, "port", w[1], err, errlen) < 0)
            return -1;
        return n == 3 ? broker_conf_set(cfg, "bind_address", w[2], err, errlen) : 0;
    }
    if (cfg->listeners.n == BROKER_LISTENERS_MAX)
        return conf_error(err, errlen, "at most %d listeners", BROKER_LISTENERS_MAX);
    struct broker_listener *l = &cfg->listeners.v[cfg->listeners.n];
    memset(l, 0, sizeof *l);
    uint64_t port;
    if (opt_parse_uint(w[1], 0, 65535, &port) < 0)
        return conf_error(err, errlen, "listener wants a port from 0 to 65535, not '%s'", w[1]);
    l->port = (int)port;
    if (n == 3 && snprintf(l->bind, sizeof l->bind, "%s", w[2]) >= (int)sizeof l->bind)
        return conf_error(err, errlen, "listener address too long");
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
            return conf_error(err, errlen, "protocol wants mqtt or websockets, not '%s'", value);
        l->websockets = !strcmp(value, "websockets");
        return 0;
    }
    for (size_t i = 0; i < sizeof conf_listener_settings / sizeof conf_listener_settings[0]; i++) {
        if (strcmp(name, conf_listener_settings[i].keyword))
            continue;
        char *field = (char *)l + conf_listener_settings[i].offset;
        if (conf_listener_settings[i].size == 1) {
            if (strcmp(value, "true") && strcmp(value, "false"))
                return conf_error(err, errlen, "%s wants true or false, not '%s'", name, value);
            *(bool *)field = !strcmp(value, "true");
            return 0;
        }
        if (snprintf(field, conf_listener_settings[i].size, "%s", value) >=
            (int)conf_listener_settings[i].size)
            return conf_error(err, errlen, "%s value too long", name);
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
        return conf_error(err, errlen, "'%s' other than %s is not supported yet", w[0],
                          conf_as_is[i].value);
    }
    if (!strcmp(w[0], "listener"))
        return conf_listener(cfg, w, n, listeners, err, errlen);
    if (n == 2 && conf_listener_setting(cfg, w[0], w[1], err, errlen, &handled) < 0)
        return -1;
    if (handled)
        return 0;
    if (n != 2)
        return conf_error(err, errlen, "%s wants exactly one value", w[0]);
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
        return conf_error(err, errlen, "cannot read %s: %s", path, strerror(errno));
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
