/* auth.h - authentication and authorization in the broker: the password
 * file (passwd.h) checked at CONNECT, the ACL file (acl.h) bound to each
 * session and checked on PUBLISH in, SUBSCRIBE and delivery, and both
 * reloaded on SIGHUP. docs/security.md describes the behaviour.
 *
 * Cost with neither file configured: one NULL test of the session's ACL
 * handle per PUBLISH in and one flag test per delivery, nothing else.
 */
#ifndef SHOOTOUT_AUTH_H
#define SHOOTOUT_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/acl.h"

struct broker;
struct mqtt5_connect;
struct passwd_table;
struct session;

/* The broker's settings (struct broker_config.auth). */
struct broker_auth_config {
    char password_file[512]; /* "" = none */
    char acl_file[512];      /* "" = none */
    bool allow_anonymous;    /* clients without a username may connect */
};

/* The loaded files and their counters (struct broker.auth). */
struct broker_auth {
    struct passwd_table *passwd; /* NULL without password_file */
    struct acl *acl;             /* NULL without acl_file */
    uint64_t refused_bad_password, refused_unknown_user, refused_anonymous;
    uint64_t denied_publish, denied_subscribe, denied_deliver, denied_will;
};

/* Loads the configured files into b->auth. Returns 0, or -1 after logging
 * the error (file:line). */
int auth_init(struct broker *b);
/* Frees the files; every session must be gone. */
void auth_free(struct broker *b);
/* SIGHUP: loads both files again; on success swaps them in and rebinds
 * every session, else keeps the old ones and logs why. */
void auth_reload(struct broker *b);

/* CONNECT with the final client id: checks the credentials (no password
 * when identity_proven: a client certificate named the user) and the will
 * topic. Returns 0 with *acl the client's new ACL handle (NULL without an
 * ACL) to give to auth_session_bind, or an MQTT 5 reason code to refuse
 * with (0x86 bad username or password, 0x87 not authorized) and *why the
 * reason's word for the log (metrics_log_connect_refused). */
uint8_t auth_connect(struct broker *b, const struct mqtt5_connect *ci, bool identity_proven,
                     const uint8_t *id, size_t id_len, struct acl_client **acl, const char **why);
/* The client is in: s takes acl (see auth_connect) and the username. */
void auth_session_bind(struct broker *b, struct session *s, struct acl_client *acl,
                       const struct mqtt5_connect *ci);
/* Frees what the session holds. */
void auth_session_free(struct session *s);

/* The slow halves of the checks; callers test s->auth.acl (publish) or
 * s->auth_filtered (delivery) first, so that the fast path stays a load
 * and a branch. */
bool auth_may_publish(struct broker *b, struct session *s, const uint8_t *topic, size_t len);
bool auth_may_deliver(struct broker *b, struct session *s, const uint8_t *topic, size_t len);
/* SUBSCRIBE: the ACL's answer for one filter ($share/<name>/ is checked
 * as its inner filter); marks the session filtered when it must be. */
enum acl_sub_result auth_subscribe(struct broker *b, struct session *s, const uint8_t *filter,
                                   size_t len);

#endif
