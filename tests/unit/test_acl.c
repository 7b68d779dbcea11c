/* test_acl.c - acl_file parsing and checks: Mosquitto's rule order (deny
 * first, own rules before patterns), %c/%u levels, and the subscription
 * rule, which is checked against brute force over a small topic space. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "broker/acl.h"
#include "mqtt/mqtt_topic.h"

static char err[256];

static struct acl *parse_ok(const char *text)
{
    struct acl *acl = NULL;
    if (acl_parse(&acl, "acl", text, strlen(text), err, sizeof err) != 0)
        fail_msg("parse failed: %s", err);
    return acl;
}

static struct acl_client *bind(const struct acl *acl, const char *id, const char *user)
{
    return acl_client_new(acl, id, strlen(id), user, user ? strlen(user) : 0);
}

static bool can(const struct acl_client *c, const char *topic, enum acl_access a)
{
    return acl_client_check(c, (const uint8_t *)topic, strlen(topic), a);
}

static enum acl_sub_result sub(const struct acl_client *c, const char *filter)
{
    return acl_client_check_subscribe(c, (const uint8_t *)filter, strlen(filter));
}

static const char example[] =
    "# anonymous clients\n"
    "topic read $SYS/#\n"
    "topic public/#\n"
    "\n"
    "user roger\n"
    "topic foo/bar\n"
    "topic read sensors/+/temp\n"
    "topic deny sensors/secret/temp\n"
    "topic write  cmd/with space \n"
    "\r\n"
    "user admin\n"
    "topic readwrite #\n"
    "topic deny $SYS/broker/private/#\n"
    "\n"
    "# every client\n"
    "pattern write $SYS/broker/connection/%c/state\n"
    "pattern readwrite users/%u/#\n"
    "pattern deny users/%u/locked\n"
    "pattern read devices/%c/%u\n"
    "pattern read strict/%count\n";

static void test_anonymous_user_and_unknown_user_sections(void **state)
{
    struct acl *acl = parse_ok(example);
    struct acl_client *anon = bind(acl, "a1", NULL);
    assert_true(can(anon, "$SYS/broker/uptime", ACL_READ));
    assert_false(can(anon, "$SYS/broker/uptime", ACL_WRITE));
    assert_true(can(anon, "public/x", ACL_WRITE));
    assert_true(can(anon, "public", ACL_READ));
    assert_false(can(anon, "foo/bar", ACL_READ));
    /* %u patterns never apply without a username; %c ones do. */
    assert_false(can(anon, "users//x", ACL_READ));
    assert_true(can(anon, "$SYS/broker/connection/a1/state", ACL_WRITE));
    acl_client_free(anon);

    struct acl_client *roger = bind(acl, "r1", "roger");
    assert_true(can(roger, "foo/bar", ACL_READ));
    assert_true(can(roger, "foo/bar", ACL_WRITE));
    assert_false(can(roger, "foo/baz", ACL_READ));
    assert_false(can(roger, "public/x", ACL_READ)); /* anonymous rules are not his */
    assert_true(can(roger, "sensors/kitchen/temp", ACL_READ));
    assert_false(can(roger, "sensors/kitchen/temp", ACL_WRITE));
    assert_false(can(roger, "sensors/secret/temp", ACL_READ)); /* deny wins though listed last */
    assert_true(can(roger, "cmd/with space", ACL_WRITE));
    assert_true(can(roger, "users/roger/inbox", ACL_READ));
    assert_false(can(roger, "users/roger/locked", ACL_READ));
    assert_false(can(roger, "users/rogerx/inbox", ACL_READ));
    assert_true(can(roger, "devices/r1/roger", ACL_READ));
    assert_false(can(roger, "devices/roger/r1", ACL_READ));
    acl_client_free(roger);

    /* A username without a section gets the patterns only. */
    struct acl_client *eve = bind(acl, "e1", "eve");
    assert_false(can(eve, "public/x", ACL_READ));
    assert_true(can(eve, "users/eve", ACL_WRITE));
    acl_client_free(eve);

    /* The user's own grant is decided before the deny pattern. */
    struct acl_client *admin = bind(acl, "ad", "admin");
    assert_true(can(admin, "users/admin/locked", ACL_READ));
    assert_true(can(admin, "anything/at/all", ACL_WRITE));
    assert_false(can(admin, "$SYS/broker/uptime", ACL_READ)); /* "#" skips $ topics */
    assert_false(can(admin, "$SYS/broker/private/x", ACL_READ));
    acl_client_free(admin);
    acl_free(acl);
}

/* One check by a client bound just for it. */
static bool can_as(const struct acl *acl, const char *id, const char *user, const char *topic,
                   enum acl_access a)
{
    struct acl_client *c = bind(acl, id, user);
    bool ok = can(c, topic, a);
    acl_client_free(c);
    return ok;
}

static void test_patterns_substitute_whole_levels_only_and_safely(void **state)
{
    struct acl *acl = parse_ok(example);
    assert_false(can_as(acl, "count", "u", "strict/count", ACL_READ));
    assert_true(can_as(acl, "count", "u", "strict/%count", ACL_READ));
    /* A '/' in the username must not reach another user's subtree. */
    assert_false(can_as(acl, "x", "bob/inbox", "users/bob/inbox/mail", ACL_READ));
    /* Wildcards in id or username: no pattern applies at all... */
    assert_false(can_as(acl, "a+b", "u", "users/u/x", ACL_READ));
    assert_false(can_as(acl, "id", "#", "users/#/x", ACL_READ));
    /* ... but a user's own rules still do. */
    assert_true(can_as(acl, "r+", "roger", "foo/bar", ACL_READ));
    /* Empty username is a username. */
    assert_true(can_as(acl, "id", "", "users//x", ACL_READ));
    acl_free(acl);
}

static void test_subscriptions_need_a_covering_read_rule(void **state)
{
    struct acl *acl = parse_ok(example);
    struct acl_client *roger = bind(acl, "r1", "roger");
    assert_int_equal(sub(roger, "foo/bar"), ACL_SUB_GRANTED);
    assert_int_equal(sub(roger, "foo/+"), ACL_SUB_DENIED);
    assert_int_equal(sub(roger, "sensors/hall/temp"), ACL_SUB_GRANTED);
    assert_int_equal(sub(roger, "sensors/+/temp"), ACL_SUB_FILTERED); /* secret overlaps */
    assert_int_equal(sub(roger, "sensors/secret/temp"), ACL_SUB_DENIED);
    assert_int_equal(sub(roger, "sensors/#"), ACL_SUB_DENIED);
    assert_int_equal(sub(roger, "cmd/with space"), ACL_SUB_DENIED); /* write only */
    assert_int_equal(sub(roger, "users/roger/#"), ACL_SUB_FILTERED); /* locked overlaps */
    assert_int_equal(sub(roger, "users/roger/+/x"), ACL_SUB_GRANTED);
    assert_int_equal(sub(roger, "users/roger/locked"), ACL_SUB_DENIED);
    assert_int_equal(sub(roger, "users/+/inbox"), ACL_SUB_DENIED);
    acl_client_free(roger);
    struct acl_client *admin = bind(acl, "ad", "admin");
    assert_int_equal(sub(admin, "#"), ACL_SUB_GRANTED); /* the $ deny cannot meet "#" */
    assert_int_equal(sub(admin, "$SYS/#"), ACL_SUB_DENIED);
    acl_client_free(admin);
    struct acl_client *anon = bind(acl, "a", NULL);
    assert_int_equal(sub(anon, "$SYS/broker/+"), ACL_SUB_GRANTED);
    assert_int_equal(sub(anon, "+/broker/+"), ACL_SUB_DENIED);
    acl_client_free(anon);
    acl_free(acl);
}

/* ---- the subscription rule against brute force ---- */

#define MAX_FILTERS 64
static char filters[MAX_FILTERS][16];
static size_t nfilters;
static char topics[400][16];
static size_t ntopics;

static void gen(char *buf, size_t len, int depth, const char *const *levels, size_t nlevels,
                bool filter)
{
    if (depth == 0)
        return;
    for (size_t i = 0; i < nlevels + (filter ? 1 : 0); i++) {
        const char *lv = i < nlevels ? levels[i] : "#";
        char next[16];
        snprintf(next, sizeof next, "%s%s%s", buf, len ? "/" : "", lv);
        if (filter && nfilters < MAX_FILTERS)
            strcpy(filters[nfilters++], next);
        if (!filter)
            strcpy(topics[ntopics++], next);
        if (i < nlevels)
            gen(next, strlen(next), depth - 1, levels, nlevels, filter);
    }
}

static bool match(const char *f, const char *t)
{
    return mqtt_topic_match((const uint8_t *)f, strlen(f), (const uint8_t *)t, strlen(t));
}

static void test_subscribe_rule_agrees_with_brute_force(void **state)
{
    static const char *const flevels[] = {"a", "$s", "+"};
    static const char *const tlevels[] = {"a", "c", "$s", ""};
    nfilters = ntopics = 0;
    gen("", 0, 3, flevels, 3, true);
    gen("", 0, 4, tlevels, 4, false);
    assert_true(nfilters > 40 && ntopics > 300);
    char text[128];
    size_t checked = 0;
    for (size_t d = 0; d < nfilters; d++) {
        for (size_t f = 0; f < nfilters; f++) {
            /* Rule d denies; the filter itself is granted, so the answer
             * is decided by how d and f relate. */
            snprintf(text, sizeof text, "topic deny %s\ntopic read %s\n", filters[d], filters[f]);
            struct acl *acl = parse_ok(text);
            struct acl_client *c = bind(acl, "id", NULL);
            bool all = true, any = false;
            for (size_t t = 0; t < ntopics; t++) {
                if (!match(filters[f], topics[t]))
                    continue;
                bool denied = match(filters[d], topics[t]);
                all = all && denied;
                any = any || denied;
            }
            enum acl_sub_result want = all ? ACL_SUB_DENIED : any ? ACL_SUB_FILTERED : ACL_SUB_GRANTED;
            if (sub(c, filters[f]) != want)
                fail_msg("deny %s, subscribe %s: got %d want %d", filters[d], filters[f],
                         sub(c, filters[f]), want);
            acl_client_free(c);
            acl_free(acl);
            /* Coverage by a grant alone. */
            snprintf(text, sizeof text, "topic read %s\n", filters[d]);
            acl = parse_ok(text);
            c = bind(acl, "id", NULL);
            bool covered = true;
            for (size_t t = 0; t < ntopics; t++)
                if (match(filters[f], topics[t]) && !match(filters[d], topics[t]))
                    covered = false;
            if ((sub(c, filters[f]) == ACL_SUB_GRANTED) != covered)
                fail_msg("read %s, subscribe %s: got %d, covered %d", filters[d], filters[f],
                         sub(c, filters[f]), covered);
            acl_client_free(c);
            acl_free(acl);
            checked++;
        }
    }
    assert_true(checked > 1600);
}

static void expect_error(const char *text, const char *msg)
{
    struct acl *acl = (struct acl *)&acl, *before = acl;
    assert_int_equal(acl_parse(&acl, "f.acl", text, strlen(text), err, sizeof err), -1);
    assert_ptr_equal(acl, before);
    if (!strstr(err, msg))
        fail_msg("for %s: wanted '%s' in '%s'", text, msg, err);
}

static void test_errors_name_file_and_line(void **state)
{
    expect_error("topic a\nuser\n", "f.acl:2: user wants a username");
    expect_error("topic\n", "f.acl:1: topic wants a topic filter");
    expect_error("# x\n\npattern   \n", "f.acl:3: pattern wants a topic filter");
    expect_error("topic rw a/b\n", "f.acl:1: unknown access 'rw'");
    expect_error("topic read a/#/b\n", "f.acl:1: invalid topic filter 'a/#/b'");
    expect_error("topic read a+\n", "invalid topic filter");
    expect_error("topics a\n", "f.acl:1: unknown keyword 'topics'");
    expect_error("user \xff\n", "not valid UTF-8");
    static const char nul[] = "topic a\0\n";
    struct acl *acl;
    assert_int_equal(acl_parse(&acl, "f.acl", nul, sizeof nul - 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "f.acl:1: NUL byte"));
}

static void test_one_word_is_the_filter_and_sections_merge(void **state)
{
    /* "topic read" alone is the topic "read" with readwrite access. */
    struct acl *acl = parse_ok("topic read\nuser u\ntopic a\nuser v\ntopic b\nuser u\ntopic c\n");
    struct acl_client *c = bind(acl, "i", NULL);
    assert_true(can(c, "read", ACL_WRITE));
    acl_client_free(c);
    c = bind(acl, "i", "u");
    assert_true(can(c, "a", ACL_READ) && can(c, "c", ACL_READ));
    assert_false(can(c, "b", ACL_READ));
    acl_client_free(c);
    acl_free(acl);
    /* An empty file denies everything. */
    acl = parse_ok("");
    c = bind(acl, "i", NULL);
    assert_false(can(c, "a", ACL_READ));
    assert_int_equal(sub(c, "#"), ACL_SUB_DENIED);
    acl_client_free(c);
    acl_free(acl);
}

static void test_load_from_file(void **state)
{
    char path[] = "/tmp/test_acl_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, example, sizeof example - 1), (ssize_t)sizeof example - 1);
    close(fd);
    struct acl *acl;
    assert_int_equal(acl_load(&acl, path, err, sizeof err), 0);
    acl_free(acl);
    unlink(path);
    assert_int_equal(acl_load(&acl, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot read"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_anonymous_user_and_unknown_user_sections),
        cmocka_unit_test(test_patterns_substitute_whole_levels_only_and_safely),
        cmocka_unit_test(test_subscriptions_need_a_covering_read_rule),
        cmocka_unit_test(test_subscribe_rule_agrees_with_brute_force),
        cmocka_unit_test(test_errors_name_file_and_line),
        cmocka_unit_test(test_one_word_is_the_filter_and_sections_merge),
        cmocka_unit_test(test_load_from_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
