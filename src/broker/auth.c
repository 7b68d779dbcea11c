/* auth.c - the password file and the ACL in the broker (auth.h). */
#include "broker/auth.h"

#include <string.h>

#include "broker/acl.h"
#include "broker/router.h"
#include "broker/broker_int.h"
#include "broker/passwd.h"
#include "broker/session.h"
#include "core/log.h"
#include "core/mem.h"
#include "mqtt/mqtt5.h"
#include "mqtt/mqtt_topic.h"

/* Loads whichever files are configured into *pw and *acl (NULL for those
 * that are not). Returns 0, or -1 with nothing loaded and err set. */
static int auth_load(const struct broker_auth_config *cfg, struct passwd_table **pw,
                     struct acl **acl, char *err, size_t errlen)
{
    *pw = NULL;
    *acl = NULL;
    if (cfg->password_file[0] && passwd_load(pw, cfg->password_file, err, errlen) < 0)
        return -1;
    if (cfg->acl_file[0] && acl_load(acl, cfg->acl_file, err, errlen) < 0) {
        passwd_free(*pw);
        *pw = NULL;
        return -1;
    }
    return 0;
}

int auth_init(struct broker *b)
{
    char err[512];
    const struct broker_auth_config *cfg = &b->cfg->auth;
    if (auth_load(cfg, &b->auth.passwd, &b->auth.acl, err, sizeof err) < 0) {
        log_error("%s", err);
        return -1;
    }
    if (b->auth.passwd)
        log_info("password file %s: %zu users", cfg->password_file, passwd_count(b->auth.passwd));
    if (b->auth.acl)
        log_info("acl file %s loaded", cfg->acl_file);
    if (!cfg->allow_anonymous)
        log_info("anonymous clients are refused (allow_anonymous false)");
    return 0;
}

void auth_free(struct broker *b)
{
    passwd_free(b->auth.passwd);
    acl_free(b->auth.acl);
    b->auth.passwd = NULL;
    b->auth.acl = NULL;
}

/* The filter an ACL judges: a shared subscription's inner filter. */
static void auth_inner_filter(const uint8_t **filter, size_t *len)
{
    size_t inner;
    if (mqtt_topic_shared(*filter, *len, &inner) > 0) {
        *filter += inner;
        *len -= inner;
    }
}

/* Gives s a handle on acl for its client id and username, and works out
 * again whether its subscriptions need checks per delivery. */
static void auth_session_rebind(struct session *s, struct acl_client *acl)
{
    acl_client_free(s->auth.acl);
    s->auth.acl = acl;
    s->auth_filtered = false;
    if (!acl)
        return;
    for (uint32_t i = 0; i < s->nsubs && !s->auth_filtered; i++) {
        const uint8_t *f = s->subs[i].filter;
        size_t len = s->subs[i].len;
        auth_inner_filter(&f, &len);
        s->auth_filtered = acl_client_check_subscribe(acl, f, len) != ACL_SUB_GRANTED;
    }
}

static struct acl_client *auth_acl_client(const struct acl *acl, const struct session *s)
{
    return acl_client_new(acl, s->client_id, s->client_id_len, s->auth.username,
                          s->auth_username_len);
}

void auth_reload(struct broker *b)
{
    char err[512];
    struct passwd_table *pw;
    struct acl *acl;
    if (!b->cfg->auth.password_file[0] && !b->cfg->auth.acl_file[0]) {
        log_info("SIGHUP received: no password_file or acl_file to reload");
        return;
    }
    if (auth_load(&b->cfg->auth, &pw, &acl, err, sizeof err) < 0) {
        log_error("SIGHUP: reload failed, the previous password file and ACL stay in force: %s",
                  err);
        return;
    }
    passwd_free(b->auth.passwd);
    b->auth.passwd = pw;
    size_t rebound = 0;
    if (acl) {
        size_t i = 0;
        struct hmap_slot *slot;
        while ((slot = hmap_next(&b->sessions, &i))) {
            struct session *s = slot->val;
            if (s->auth.acl) {
                auth_session_rebind(s, auth_acl_client(acl, s));
                rebound++;
            }
        }
        acl_free(b->auth.acl);
        b->auth.acl = acl;
    }
    log_info("SIGHUP: reloaded%s%s%s%s; %zu sessions rebound", pw ? " password file " : "",
             pw ? b->cfg->auth.password_file : "", acl ? " acl file " : "",
             acl ? b->cfg->auth.acl_file : "", rebound);
}

uint8_t auth_connect(struct broker *b, const struct mqtt5_connect *ci, bool identity_proven,
                     const uint8_t *id, size_t id_len, struct acl_client **acl, const char **why)
{
    const char *user = (const char *)ci->username.ptr;
    size_t ulen = ci->username.len;
    uint8_t reason = 0;
    *acl = NULL;
    *why = NULL;
    if (!ci->has_username) {
        if (!b->cfg->auth.allow_anonymous) {
            __atomic_fetch_add(&b->auth.refused_anonymous, 1, __ATOMIC_RELAXED);
            *why = "anonymous";
            reason = MQTT5_RC_NOT_AUTHORIZED;
        }
    } else if (b->auth.passwd && !identity_proven) {
        switch (passwd_check(b->auth.passwd, user, ulen, ci->password.ptr,
                             ci->has_password ? ci->password.len : 0)) {
        case PASSWD_OK:
            break;
        case PASSWD_WRONG_PASSWORD:
            __atomic_fetch_add(&b->auth.refused_bad_password, 1, __ATOMIC_RELAXED);
            *why = "bad_password";
            reason = MQTT5_RC_BAD_USERNAME_OR_PASSWORD;
            break;
        case PASSWD_UNKNOWN_USER:
            __atomic_fetch_add(&b->auth.refused_unknown_user, 1, __ATOMIC_RELAXED);
            *why = "unknown_user";
            reason = MQTT5_RC_BAD_USERNAME_OR_PASSWORD;
            break;
        }
    }
    if (!reason && b->auth.acl) {
        *acl = acl_client_new(b->auth.acl, (const char *)id, id_len,
                              ci->has_username ? user : NULL, ulen);
        if (ci->has_will &&
            !acl_client_check(*acl, ci->will_topic.ptr, ci->will_topic.len, ACL_WRITE)) {
            __atomic_fetch_add(&b->auth.denied_will, 1, __ATOMIC_RELAXED);
            acl_client_free(*acl);
            *acl = NULL;
            *why = "will_denied";
            reason = MQTT5_RC_NOT_AUTHORIZED;
        }
    }
    return reason;
}

void auth_session_bind(struct broker *b, struct session *s, struct acl_client *acl,
                       const struct mqtt5_connect *ci)
{
    if (!acl && !s->auth.acl)
        return;
    mem_free(s->auth.username);
    s->auth.username = NULL;
    s->auth_username_len = (uint16_t)ci->username.len;
    if (ci->has_username)
        s->auth.username = mem_strndup(ci->username.ptr, ci->username.len);
    auth_session_rebind(s, acl);
}

void auth_session_free(struct session *s)
{
    acl_client_free(s->auth.acl);
    mem_free(s->auth.username);
    s->auth = (struct session_auth){0};
}

bool auth_may_publish(struct broker *b, struct session *s, const uint8_t *topic, size_t len)
{
    if (acl_client_check(s->auth.acl, topic, len, ACL_WRITE))
        return true;
    __atomic_fetch_add(&b->auth.denied_publish, 1, __ATOMIC_RELAXED);
    log_debug("client %s: PUBLISH to %.*s denied by the ACL", s->client_id, (int)len,
              (const char *)topic);
    return false;
}

bool auth_may_deliver(struct broker *b, struct session *s, const uint8_t *topic, size_t len)
{
    if (acl_client_check(s->auth.acl, topic, len, ACL_READ))
        return true;
    __atomic_fetch_add(&b->auth.denied_deliver, 1, __ATOMIC_RELAXED);
    return false;
}

enum acl_sub_result auth_subscribe(struct broker *b, struct session *s, const uint8_t *filter,
                                   size_t len)
{
    if (!s->auth.acl)
        return ACL_SUB_GRANTED;
    auth_inner_filter(&filter, &len);
    enum acl_sub_result r = acl_client_check_subscribe(s->auth.acl, filter, len);
    if (r == ACL_SUB_DENIED) {
        __atomic_fetch_add(&b->auth.denied_subscribe, 1, __ATOMIC_RELAXED);
        log_debug("client %s: SUBSCRIBE to %.*s denied by the ACL", s->client_id, (int)len,
                  (const char *)filter);
    } else if (r == ACL_SUB_FILTERED && !s->auth_filtered) {
        router_write_lock(b); /* other loops read it (share.c) */
        s->auth_filtered = true;
        router_unlock(b);
    }
    return r;
}
