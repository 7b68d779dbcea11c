/* acl.c - Mosquitto acl_file rules: parsing, binding to a client, checks.
 *
 * Rules are kept as validated topic filters, deny rules apart from grants
 * because a deny is consulted first whatever its place in the file. A
 * pattern's %c and %u levels are filled in once per connection, so every
 * check is plain filter matching (mqtt_topic_match) over a short list.
 */
#include "broker/acl.h"

#include <stdio.h>
#include <string.h>

#include "core/hmap.h"
#include "core/mem.h"
#include "core/textfile.h"
#include "mqtt/mqtt_topic.h"

struct acl_rule {
    char *filter; /* NUL-terminated */
    size_t len;
    unsigned access; /* ACL_READ | ACL_WRITE; never 0 in a grant list */
};

struct rule_list {
    struct acl_rule *v;
    size_t n, cap;
};

struct rule_set {
    struct rule_list deny, grant;
};

struct acl_user {
    char *name;
    struct rule_set rules;
};

struct acl {
    struct rule_set anonymous; /* "topic" lines before the first "user" */
    struct hmap users;         /* username -> struct acl_user */
    struct rule_set patterns;  /* raw, with %c and %u levels */
};

struct acl_client {
    const struct rule_set *own; /* the user's or anonymous rules; NULL if none */
    struct rule_set patterns;   /* substituted copies for this client */
};

static void list_add(struct rule_list *l, const char *filter, size_t len, unsigned access)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4;
        l->v = mem_realloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = (struct acl_rule){.filter = mem_strndup(filter, len), .len = len, .access = access};
}

static void set_add(struct rule_set *s, const char *filter, size_t len, unsigned access)
{
    list_add(access ? &s->grant : &s->deny, filter, len, access);
}

static void list_free(struct rule_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        mem_free(l->v[i].filter);
    mem_free(l->v);
}

static void set_free(struct rule_set *s)
{
    list_free(&s->deny);
    list_free(&s->grant);
}

void acl_free(struct acl *acl)
{
    if (!acl)
        return;
    size_t it = 0;
    struct hmap_slot *s;
    while ((s = hmap_next(&acl->users, &it))) {
        struct acl_user *u = s->val;
        set_free(&u->rules);
        mem_free(u->name);
        mem_free(u);
    }
    hmap_free(&acl->users);
    set_free(&acl->anonymous);
    set_free(&acl->patterns);
    mem_free(acl);
}

/* ---- parsing ---- */

/* Splits the first blank-separated word off *l (which is trimmed). */
static struct textfile_line next_word(struct textfile_line *l)
{
    size_t n = 0;
    while (n < l->len && l->ptr[n] != ' ' && l->ptr[n] != '\t')
        n++;
    struct textfile_line w = {.ptr = l->ptr, .len = n, .lineno = l->lineno};
    *l = textfile_trim((struct textfile_line){.ptr = l->ptr + n, .len = l->len - n,
                                              .lineno = l->lineno});
    return w;
}

static bool word_is(struct textfile_line w, const char *lit)
{
    return w.len == strlen(lit) && !memcmp(w.ptr, lit, w.len);
}

/* Access word -> bits; 0 is deny; -1 unknown. */
static int parse_access(struct textfile_line w)
{
    if (word_is(w, "read"))
        return ACL_READ;
    if (word_is(w, "write"))
        return ACL_WRITE;
    if (word_is(w, "readwrite"))
        return ACL_READ | ACL_WRITE;
    if (word_is(w, "deny"))
        return 0;
    return -1;
}

static struct acl_user *user_get(struct acl *acl, struct textfile_line name)
{
    struct acl_user *u = hmap_get(&acl->users, name.ptr, name.len);
    if (!u) {
        u = mem_calloc(1, sizeof *u);
        u->name = mem_strndup(name.ptr, name.len);
        hmap_put(&acl->users, u->name, name.len, u);
    }
    return u;
}

struct parse_state {
    struct acl *acl;
    struct rule_set *section; /* where "topic" lines go */
};

static int parse_line(void *arg, const char *name, struct textfile_line line, char *err,
                      size_t errlen)
{
    struct parse_state *st = arg;
    struct acl *acl = st->acl;
    struct textfile_line rest = textfile_trim(line);
    if (rest.len == 0 || rest.ptr[0] == '#')
        return 0;
    struct textfile_line keyword = next_word(&rest);
    if (word_is(keyword, "user")) {
        if (rest.len == 0)
            return textfile_error(err, errlen, name, line.lineno, "user wants a username");
        if (!mqtt_utf8_valid((const uint8_t *)rest.ptr, rest.len))
            return textfile_error(err, errlen, name, line.lineno, "username is not valid UTF-8");
        st->section = &user_get(acl, rest)->rules;
        return 0;
    }
    bool pattern = word_is(keyword, "pattern");
    if (!pattern && !word_is(keyword, "topic"))
        return textfile_error(err, errlen, name, line.lineno,
                           "unknown keyword '%.*s' (want topic, pattern or user)",
                           (int)keyword.len, keyword.ptr);
    if (rest.len == 0)
        return textfile_error(err, errlen, name, line.lineno, "%s wants a topic filter",
                           pattern ? "pattern" : "topic");
    /* As in Mosquitto: with one word it is the filter; with more, the first
     * is the access and the rest (spaces and all) the filter. */
    struct textfile_line first = next_word(&rest);
    int access = ACL_READ | ACL_WRITE;
    struct textfile_line filter = first;
    if (rest.len > 0) {
        access = parse_access(first);
        if (access < 0)
            return textfile_error(err, errlen, name, line.lineno,
                               "unknown access '%.*s' (want read, write, readwrite or deny)",
                               (int)first.len, first.ptr);
        filter = rest;
    }
    if (!mqtt_topic_filter_valid((const uint8_t *)filter.ptr, filter.len))
        return textfile_error(err, errlen, name, line.lineno, "invalid topic filter '%.*s'",
                           (int)filter.len, filter.ptr);
    set_add(pattern ? &acl->patterns : st->section, filter.ptr, filter.len, (unsigned)access);
    return 0;
}

/* acl_parse() of buf, or acl_load() of the file name when buf is NULL. */
static int build(struct acl **out, const char *name, const char *buf, size_t len, char *err,
                 size_t errlen)
{
    struct parse_state st = {.acl = mem_calloc(1, sizeof *st.acl)};
    st.section = &st.acl->anonymous;
    if (textfile_parse(name, buf, len, parse_line, &st, err, errlen) < 0) {
        acl_free(st.acl);
        return -1;
    }
    *out = st.acl;
    return 0;
}

int acl_parse(struct acl **out, const char *name, const char *buf, size_t len, char *err,
              size_t errlen)
{
    return build(out, name, buf ? buf : "", len, err, errlen);
}

int acl_load(struct acl **out, const char *path, char *err, size_t errlen)
{
    return build(out, path, NULL, 0, err, errlen);
}

/* ---- binding a client ---- */

static bool level_is(const uint8_t *level, size_t len, const char *lit)
{
    return len == 2 && level[0] == (uint8_t)lit[0] && level[1] == (uint8_t)lit[1];
}

/* Appends pattern r with its %c and %u levels filled in to s; skipped if
 * a value it needs is absent or holds a '/' (which would make one level
 * into several and reach into another client's subtree). */
static void bind_pattern(struct rule_set *s, const struct acl_rule *r, const char *id,
                         size_t idlen, const char *user, size_t ulen)
{
    size_t cap = r->len, n = 0, pos = 0, llen;
    const uint8_t *level;
    const uint8_t *f = (const uint8_t *)r->filter;
    while (mqtt_topic_next_level(f, r->len, &pos, &level, &llen))
        cap += level_is(level, llen, "%c") ? idlen : level_is(level, llen, "%u") ? ulen : 0;
    char *buf = mem_alloc(cap + 1);
    pos = 0;
    bool usable = true;
    while (usable && mqtt_topic_next_level(f, r->len, &pos, &level, &llen)) {
        const char *v = (const char *)level;
        size_t vlen = llen;
        if (level_is(level, llen, "%c")) {
            v = id;
            vlen = idlen;
        } else if (level_is(level, llen, "%u")) {
            v = user;
            vlen = ulen;
            usable = user != NULL;
        }
        usable = usable && (vlen == 0 || !memchr(v, '/', vlen));
        if (n > 0)
            buf[n++] = '/';
        if (usable && vlen)
            memcpy(buf + n, v, vlen);
        n += vlen;
    }
    if (usable)
        set_add(s, buf, n, r->access);
    mem_free(buf);
}

static bool has_wildcard(const char *s, size_t len)
{
    return s && (memchr(s, '+', len) || memchr(s, '#', len));
}

struct acl_client *acl_client_new(const struct acl *acl, const char *client_id, size_t idlen,
                                  const char *username, size_t ulen)
{
    struct acl_client *c = mem_calloc(1, sizeof *c);
    if (username) {
        const struct acl_user *u = hmap_get(&acl->users, username, ulen);
        c->own = u ? &u->rules : NULL;
    } else {
        c->own = &acl->anonymous;
    }
    /* A client id or username with a wildcard could widen a pattern to
     * other clients' topics; such a client gets no pattern rules at all,
     * as in Mosquitto. */
    if (has_wildcard(client_id, idlen) || has_wildcard(username, ulen))
        return c;
    const struct rule_list *lists[] = {&acl->patterns.deny, &acl->patterns.grant};
    for (size_t l = 0; l < 2; l++)
        for (size_t i = 0; i < lists[l]->n; i++)
            bind_pattern(&c->patterns, &lists[l]->v[i], client_id, idlen, username, ulen);
    return c;
}

void acl_client_free(struct acl_client *c)
{
    if (!c)
        return;
    set_free(&c->patterns);
    mem_free(c);
}

/* ---- checks ---- */

static bool rule_matches(const struct acl_rule *r, const uint8_t *topic, size_t len)
{
    return mqtt_topic_match((const uint8_t *)r->filter, r->len, topic, len);
}

/* -1 denied, 1 allowed, 0 this set says nothing about topic. */
static int set_decides(const struct rule_set *s, const uint8_t *topic, size_t len,
                       enum acl_access access)
{
    for (size_t i = 0; i < s->deny.n; i++)
        if (rule_matches(&s->deny.v[i], topic, len))
            return -1;
    for (size_t i = 0; i < s->grant.n; i++)
        if ((s->grant.v[i].access & access) && rule_matches(&s->grant.v[i], topic, len))
            return 1;
    return 0;
}

bool acl_client_check(const struct acl_client *c, const uint8_t *topic, size_t len,
                      enum acl_access access)
{
    int d = c->own ? set_decides(c->own, topic, len, access) : 0;
    if (d == 0)
        d = set_decides(&c->patterns, topic, len, access);
    return d > 0;
}

static bool is_level(const uint8_t *level, size_t len, char c)
{
    return len == 1 && level[0] == (uint8_t)c;
}

static bool is_dollar_literal(const uint8_t *level, size_t len)
{
    return len > 0 && level[0] == '$';
}

/* Does filter r match every topic that filter f matches? Level by level:
 * "#" in r takes the rest; "+" in r takes any one level of f but "#"; a
 * literal in r needs the same literal in f. A wildcard opening r cannot
 * take a "$" first level of f (those topics are never matched by it). */
static bool covers(const struct acl_rule *r, const uint8_t *f, size_t flen)
{
    const uint8_t *rf = (const uint8_t *)r->filter, *lr = NULL, *lf = NULL;
    size_t rpos = 0, fpos = 0, rl = 0, fl = 0;
    for (bool first = true;; first = false) {
        bool has_r = mqtt_topic_next_level(rf, r->len, &rpos, &lr, &rl);
        bool has_f = mqtt_topic_next_level(f, flen, &fpos, &lf, &fl);
        if (!has_r)
            return !has_f;
        if (has_f && first && is_dollar_literal(lf, fl) && (is_level(lr, rl, '#') || is_level(lr, rl, '+')))
            return false;
        if (is_level(lr, rl, '#'))
            return true;
        /* A "#" in f matches the parent level too, which only a "#" in r
         * also matches; but a first level has no parent, so there "+/#"
         * is as wide as "#". */
        if (first && is_level(lf, fl, '#') && is_level(lr, rl, '+')) {
            has_r = mqtt_topic_next_level(rf, r->len, &rpos, &lr, &rl);
            return has_r && is_level(lr, rl, '#');
        }
        if (!has_f || is_level(lf, fl, '#'))
            return false;
        if (is_level(lr, rl, '+'))
            continue;
        if (is_level(lf, fl, '+') || rl != fl || memcmp(lr, lf, rl) != 0)
            return false;
    }
}

/* Is there a topic that both filter r and filter f match? */
static bool intersects(const struct acl_rule *r, const uint8_t *f, size_t flen)
{
    const uint8_t *rf = (const uint8_t *)r->filter, *lr = NULL, *lf = NULL;
    size_t rpos = 0, fpos = 0, rl = 0, fl = 0;
    for (bool first = true;; first = false) {
        bool has_r = mqtt_topic_next_level(rf, r->len, &rpos, &lr, &rl);
        bool has_f = mqtt_topic_next_level(f, flen, &fpos, &lf, &fl);
        if (!has_r && !has_f)
            return true;
        bool wild_r = has_r && (is_level(lr, rl, '#') || is_level(lr, rl, '+'));
        bool wild_f = has_f && (is_level(lf, fl, '#') || is_level(lf, fl, '+'));
        if (first && ((wild_r && is_dollar_literal(lf, fl)) || (wild_f && is_dollar_literal(lr, rl))))
            return false;
        /* "#" also matches the parent level, so a side that has ended
         * still meets a "#" on the other. */
        if ((has_r && is_level(lr, rl, '#')) || (has_f && is_level(lf, fl, '#')))
            return true;
        if (!has_r || !has_f)
            return false;
        if (!wild_r && !wild_f && (rl != fl || memcmp(lr, lf, rl) != 0))
            return false;
    }
}

enum acl_sub_result acl_client_check_subscribe(const struct acl_client *c, const uint8_t *filter,
                                               size_t len)
{
    /* Mirrors acl_client_check(): the client's own rules, then patterns,
     * each with denies first. A deny that only overlaps the filter cannot
     * refuse it (some topics stay readable) but makes deliveries need a
     * check; one that covers it refuses it. */
    const struct rule_set *sets[] = {c->own, &c->patterns};
    bool deny_overlaps = false;
    for (size_t s = 0; s < 2; s++) {
        if (!sets[s])
            continue;
        const struct rule_list *deny = &sets[s]->deny, *grant = &sets[s]->grant;
        for (size_t i = 0; i < deny->n; i++) {
            if (covers(&deny->v[i], filter, len))
                return ACL_SUB_DENIED;
            deny_overlaps = deny_overlaps || intersects(&deny->v[i], filter, len);
        }
        for (size_t i = 0; i < grant->n; i++)
            if ((grant->v[i].access & ACL_READ) && covers(&grant->v[i], filter, len))
                return deny_overlaps ? ACL_SUB_FILTERED : ACL_SUB_GRANTED;
    }
    return ACL_SUB_DENIED;
}
