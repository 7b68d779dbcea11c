/* subject.c - MQTT topic names and filters as NATS subjects (subject.h has
 * the mapping's rules and why).
 */
#include "cluster/subject.h"

#include <string.h>

#include "mqtt/mqtt_topic.h"

#define ESC '='

static const char HEX[] = "0123456789ABCDEF";

/* The bytes a token may carry as they are: letters, digits, '-', '_'. */
static bool plain(uint8_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1; /* lower case is not canonical */
}

int subject_map_init(subject_map *m, const char *prefix)
{
    size_t n = strlen(prefix);
    if (n == 0 || n > SUBJECT_PREFIX_MAX)
        return -1;
    bool token_start = true;
    for (size_t i = 0; i < n; i++) {
        if (prefix[i] == '.') {
            if (token_start)
                return -1; /* empty token */
            token_start = true;
        } else if (plain((uint8_t)prefix[i])) {
            token_start = false;
        } else {
            return -1;
        }
    }
    if (token_start)
        return -1; /* ends in '.' */
    memcpy(m->prefix, prefix, n + 1);
    m->prefix_len = n;
    return 0;
}

/* An output cursor: appends fail (and stick) once the limit is reached. */
typedef struct out {
    char *p;
    size_t len, lim;
    bool full;
} out;

static void put(out *o, const char *s, size_t n)
{
    if (o->full || n > o->lim - o->len) {
        o->full = true;
        return;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
}

static void put_escaped(out *o, const uint8_t *s, size_t n)
{
    if (n == 0) {
        put(o, "=", 1); /* NATS tokens cannot be empty */
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (plain(s[i])) {
            put(o, (const char *)&s[i], 1);
        } else {
            char e[3] = {ESC, HEX[s[i] >> 4], HEX[s[i] & 15]};
            put(o, e, 3);
        }
    }
}

/* The limit of a cursor over a buffer of cap bytes, which must keep one
 * for the NUL. */
static out out_over(char *buf, size_t cap)
{
    size_t lim = cap > 0 ? cap - 1 : 0;
    return (out){buf, 0, lim < SUBJECT_MAX ? lim : SUBJECT_MAX, cap == 0};
}

static size_t out_end(out *o)
{
    if (o->full)
        return 0;
    o->p[o->len] = '\0';
    return o->len;
}

/* Writes PREFIX.CLASS and then one token per level of s (a topic name or
 * filter), '+' and a final '#' as wildcards when wild. The class is 'd'
 * when the first level starts with '$' (that '$' not written), else 't'. */
static void put_levels(out *o, const subject_map *m, const uint8_t *s, size_t len, bool wild)
{
    bool dollar = len > 0 && s[0] == '$';
    put(o, m->prefix, m->prefix_len);
    put(o, dollar ? ".d" : ".t", 2);
    size_t pos = dollar ? 1 : 0;
    const uint8_t *lv;
    size_t lvn;
    while (mqtt_topic_next_level(s, len, &pos, &lv, &lvn)) {
        put(o, ".", 1);
        if (wild && lvn == 1 && lv[0] == '+')
            put(o, "*", 1);
        else if (wild && lvn == 1 && lv[0] == '#')
            put(o, ">", 1);
        else
            put_escaped(o, lv, lvn);
    }
}

size_t subject_from_topic(const subject_map *m, const uint8_t *topic, size_t len, char *buf,
                          size_t cap)
{
    if (!mqtt_topic_name_valid(topic, len))
        return 0;
    out o = out_over(buf, cap);
    put_levels(&o, m, topic, len, false);
    return out_end(&o);
}

/* Decodes one token into o; false if it is not one put_escaped writes (a
 * topic level's: no '/' from an escape unless slash). */
static bool get_token(out *o, const char *t, size_t n, bool slash)
{
    if (n == 1 && t[0] == ESC)
        return true; /* the empty level */
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)t[i];
        if (c == ESC) {
            if (n - i < 3)
                return false;
            int hi = hexval(t[i + 1]), lo = hexval(t[i + 2]);
            if (hi < 0 || lo < 0)
                return false;
            c = (uint8_t)(hi << 4 | lo);
            if (plain(c) || (c == '/' && !slash))
                return false; /* written as it is, or a level separator */
            i += 2;
        } else if (!plain(c)) {
            return false;
        }
        put(o, (const char *)&c, 1);
    }
    return n > 0;
}

size_t subject_to_topic(const subject_map *m, const char *subj, size_t len, uint8_t *buf, size_t cap)
{
    /* PREFIX, then ".t." or ".d.", then at least one token */
    if (len < m->prefix_len + 4 || memcmp(subj, m->prefix, m->prefix_len) != 0)
        return 0;
    const char *c = subj + m->prefix_len;
    if (c[0] != '.' || (c[1] != 't' && c[1] != 'd') || c[2] != '.')
        return 0;
    bool dollar = c[1] == 'd';
    out o = {(char *)buf, 0, cap, false};
    if (dollar)
        put(&o, "$", 1);
    size_t start = m->prefix_len + 3;
    for (size_t i = start; i <= len; i++) {
        if (i < len && subj[i] != '.')
            continue;
        if (start > m->prefix_len + 3)
            put(&o, "/", 1);
        if (!get_token(&o, subj + start, i - start, false))
            return 0;
        start = i + 1;
    }
    if (o.full)
        return 0;
    /* An ordinary topic cannot start with '$' ("t.=24x" is "d.x"), and what
     * the escapes spell must be a topic name (UTF-8, no NUL, no '+'/'#'). */
    if (!dollar && o.len > 0 && buf[0] == '$')
        return 0;
    if (!mqtt_topic_name_valid(buf, o.len))
        return 0;
    return o.len;
}

int subject_subs_from_filter(const subject_map *m, const uint8_t *filter, size_t len,
                             subject_subs *subs)
{
    if (!mqtt_topic_filter_valid(filter, len))
        return -1;
    out o = out_over(subs->subj[0], sizeof subs->subj[0]);
    put_levels(&o, m, filter, len, true);
    if ((subs->len[0] = out_end(&o)) == 0)
        return -1;
    subs->n = 1;
    /* "X/#": "X.>" matches only below X; X itself is the second one. */
    if (len >= 2 && filter[len - 1] == '#' && filter[len - 2] == '/') {
        subs->len[1] = subs->len[0] - 2;
        memcpy(subs->subj[1], subs->subj[0], subs->len[1]);
        subs->subj[1][subs->len[1]] = '\0';
        subs->n = 2;
    }
    return 0;
}

/* subj[0..len) starts with m's prefix and then mark. */
static bool under_prefix(const subject_map *m, const char *subj, size_t len, const char *mark)
{
    size_t n = strlen(mark);
    return len > m->prefix_len + n && memcmp(subj, m->prefix, m->prefix_len) == 0 &&
           memcmp(subj + m->prefix_len, mark, n) == 0;
}

size_t subject_to_stream(const subject_map *m, const char *subj, size_t len, char *buf, size_t cap)
{
    if (!under_prefix(m, subj, len, ".") || len + 3 > cap)
        return 0;
    memcpy(buf, subj, m->prefix_len);
    memcpy(buf + m->prefix_len, ".j", 2);
    memcpy(buf + m->prefix_len + 2, subj + m->prefix_len, len - m->prefix_len);
    buf[len + 2] = '\0';
    return len + 2;
}

size_t subject_from_stream(const subject_map *m, const char *subj, size_t len, char *buf,
                           size_t cap)
{
    if (!under_prefix(m, subj, len, ".j.") || len - 2 + 1 > cap)
        return 0;
    memcpy(buf, subj, m->prefix_len);
    memcpy(buf + m->prefix_len, subj + m->prefix_len + 2, len - m->prefix_len - 2);
    buf[len - 2] = '\0';
    return len - 2;
}

size_t subject_queue_group(const uint8_t *name, size_t len, char *buf, size_t cap)
{
    if (len == 0)
        return 0;
    out o = out_over(buf, cap);
    put_escaped(&o, name, len);
    return out_end(&o);
}

size_t subject_token_decode(const char *t, size_t n, uint8_t *buf, size_t cap)
{
    out o = {(char *)buf, 0, cap, false};
    /* "=" alone is the empty level, which subject_queue_group never writes. */
    if (n == 1 && t[0] == ESC)
        return 0;
    return get_token(&o, t, n, true) && !o.full ? o.len : 0;
}
