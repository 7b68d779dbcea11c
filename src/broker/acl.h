/* acl.h - the broker's access control list: Mosquitto's acl_file format,
 * compiled once, then checked per PUBLISH and per SUBSCRIBE.
 *
 *   # comment
 *   topic [read|write|readwrite|deny] <filter>     lines before any "user"
 *                                                  apply to clients without
 *                                                  a username
 *   user <username>                                the "topic" lines that
 *   topic [read|write|readwrite|deny] <filter>     follow apply to that user
 *   pattern [read|write|readwrite|deny] <filter>   applies to every client,
 *                                                  wherever it stands; a
 *                                                  level that is exactly %c
 *                                                  or %u is the client id or
 *                                                  username
 *
 * Access is omitted = readwrite. A topic is allowed when no deny rule
 * matches it and a rule granting that access does, checking the client's
 * own "topic" rules before the patterns (so a user's grant beats a deny
 * pattern), as Mosquitto does. docs/security.md has the details and the
 * subscription rule.
 *
 * Usage: acl_load() builds a struct acl; at CONNECT the broker binds it to
 * the client with acl_client_new() (one hash lookup and the pattern
 * substitutions, done once), then calls acl_client_check() and
 * acl_client_check_subscribe() with no allocation. A reload builds a new
 * struct acl and rebinds every client before the old one is freed.
 */
#ifndef SHOOTOUT_ACL_H
#define SHOOTOUT_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum acl_access {
    ACL_READ = 1,  /* receive: a message is delivered to the client */
    ACL_WRITE = 2, /* publish: the client sends a message */
};

enum acl_sub_result {
    ACL_SUB_DENIED,   /* refuse the subscription (SUBACK 0x80 / 0x87) */
    ACL_SUB_GRANTED,  /* every topic the filter matches may be read */
    ACL_SUB_FILTERED, /* accept, but a deny rule overlaps the filter: check
                       * acl_client_check(ACL_READ) on each delivery */
};

struct acl;
struct acl_client;

/* Parses an ACL file held in buf[0..len); name is used in error messages
 * ("name:line: ..."). Returns 0 with a new *out (free with acl_free), or
 * -1 with the first error in err and *out untouched. */
int acl_parse(struct acl **out, const char *name, const char *buf, size_t len, char *err,
              size_t errlen);

/* acl_parse() of the file at path. */
int acl_load(struct acl **out, const char *path, char *err, size_t errlen);

/* Frees an ACL; every acl_client bound to it must be freed first. NULL is
 * a no-op. */
void acl_free(struct acl *acl);

/* The rules that apply to one connection: client_id[0..idlen) and
 * username[0..ulen), username NULL for a client that sent none. Copies what
 * it needs from both; acl must outlive the result. Never NULL. */
struct acl_client *acl_client_new(const struct acl *acl, const char *client_id, size_t idlen,
                                  const char *username, size_t ulen);
void acl_client_free(struct acl_client *c);

/* May this client write (publish to) or read (be sent) a message on topic,
 * a valid topic name? */
bool acl_client_check(const struct acl_client *c, const uint8_t *topic, size_t len,
                      enum acl_access access);

/* May this client subscribe to filter, a valid topic filter? Granted only
 * when a single rule granting read covers the whole filter: every topic the
 * filter can match, the rule matches too ("a/#" covers "a/+/b" and "a";
 * "a/+" does not cover "a/#"). */
enum acl_sub_result acl_client_check_subscribe(const struct acl_client *c, const uint8_t *filter,
                                               size_t len);

#endif
