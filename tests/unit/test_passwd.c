/* test_passwd.c - password files: Mosquitto's own output verifies, our
 * hashes round-trip, every malformed line is refused with file:line, and
 * the login cache answers like a full check. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "broker/passwd.h"

/* Written by mosquitto_passwd 2.0.11: dave / "p@ss w0rd" ($7$, 101
 * iterations) and erin / "erin-pw" (-H sha512, the $6$ form). */
static const char mosquitto_file[] =
    "dave:$7$101$DTOXZtuJQutk/GuG$uIfFV//6enA8Y+ww/2QCmL9JN7fqgdJX+fiMEsvXcWgE58WLPIQ2gED3/"
    "fEpWrbgK4LdygbUH+yCj6bnGHoazQ==\n"
    "erin:$6$JCHkAfaZ6mSnLZ9g$pYzaldTzS71FlucBmYhLxKA0eI1YwfoM0WvtE1E9ymfo2ve1l1nX9H2Oe9zrjlSBFGth"
    "FKb0znbXGU8Ym79EuA==\n";

/* From Python's hashlib: a 64-byte salt and 1000 iterations (bob /
 * "hunter2"), with comments, blank lines and CRLF around it. */
static const char python_file[] =
    "# users\r\n"
    "\r\n"
    "  bob : $7$1000$ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoOEhYaHiImKi4yNjo+QkZKTlJWWl5iZmpucnZ6f"
    "oKGiow==$A5FxNVvTfJX5yLQ4mFyHiRsHyJAW0UhkxUefnQx3FtRE8B7WjKE1SNuMXJUcIog6PtaYrY3ulVepkPI8eatA6g"
    "==  \r\n"
    "   # indented comment\n";

static char err[256];

static struct passwd_table *parse_ok(const char *text)
{
    struct passwd_table *t = NULL;
    int rc = passwd_parse(&t, "pw", text, strlen(text), err, sizeof err);
    if (rc != 0)
        fail_msg("parse failed: %s", err);
    return t;
}

static enum passwd_result check(struct passwd_table *t, const char *user, const char *pw)
{
    return passwd_check(t, user, strlen(user), pw, strlen(pw));
}

static void test_mosquitto_written_hashes_verify(void **state)
{
    struct passwd_table *t = parse_ok(mosquitto_file);
    assert_int_equal(passwd_count(t), 2);
    assert_int_equal(check(t, "dave", "p@ss w0rd"), PASSWD_OK);
    assert_int_equal(check(t, "erin", "erin-pw"), PASSWD_OK);
    passwd_free(t);
    t = parse_ok(mosquitto_file);
    assert_int_equal(check(t, "dave", "p@ss w0rd "), PASSWD_WRONG_PASSWORD);
    assert_int_equal(check(t, "erin", "erin-pW"), PASSWD_WRONG_PASSWORD);
    assert_int_equal(check(t, "Dave", "p@ss w0rd"), PASSWD_UNKNOWN_USER);
    assert_int_equal(passwd_check(t, "dave", 3, "p@ss w0rd", 9), PASSWD_UNKNOWN_USER);
    passwd_free(t);
}

static void test_blanks_comments_crlf_and_long_salt(void **state)
{
    struct passwd_table *t = parse_ok(python_file);
    assert_int_equal(passwd_count(t), 1);
    assert_int_equal(check(t, "bob", "hunter2"), PASSWD_OK);
    assert_int_equal(check(t, "bob", "hunter3"), PASSWD_WRONG_PASSWORD);
    passwd_free(t);
    t = parse_ok("");
    assert_int_equal(passwd_count(t), 0);
    assert_int_equal(check(t, "bob", "hunter2"), PASSWD_UNKNOWN_USER);
    passwd_free(t);
}

static void test_new_hash_round_trips_and_is_salted(void **state)
{
    char h1[PASSWD_HASH_MAX + 1], h2[PASSWD_HASH_MAX + 1], line[256];
    /* MQTT passwords are binary: a NUL inside must count. */
    static const char pw[] = {'a', '\0', 'b'};
    assert_int_equal(passwd_hash_new(h1, pw, sizeof pw, 7), 0);
    assert_int_equal(passwd_hash_new(h2, pw, sizeof pw, 7), 0);
    assert_string_not_equal(h1, h2);
    assert_memory_equal(h1, "$7$7$", 5);
    /* 12-byte salt (16 base64 chars) and 64-byte digest (88), as Mosquitto
     * 2.0 writes them. */
    assert_int_equal(strlen(h1), 5 + 16 + 1 + 88);
    snprintf(line, sizeof line, "u:%s\n", h1);
    struct passwd_table *t = parse_ok(line);
    assert_int_equal(passwd_check(t, "u", 1, pw, sizeof pw), PASSWD_OK);
    passwd_free(t);
    t = parse_ok(line);
    assert_int_equal(passwd_check(t, "u", 1, pw, 1), PASSWD_WRONG_PASSWORD);
    passwd_free(t);
    assert_int_equal(passwd_hash_new(h1, pw, sizeof pw, 0), -1);
    assert_int_equal(passwd_hash_new(h1, pw, sizeof pw, PASSWD_MAX_ITERATIONS + 1), -1);
    assert_int_equal(passwd_hash_new(h1, "", 0, PASSWD_MAX_ITERATIONS / 100000), 0);
    assert_true(strlen(h1) <= PASSWD_HASH_MAX);
}

/* The cache must give the same answers as a full check, in any order. */
static void test_remembered_login_answers_like_a_full_check(void **state)
{
    char h[PASSWD_HASH_MAX + 1], line[256];
    /* Many iterations, so the cached path is visibly faster. */
    assert_int_equal(passwd_hash_new(h, "right", 5, 200000), 0);
    snprintf(line, sizeof line, "u:%s\nv:%s\n", h, h);
    struct passwd_table *t = parse_ok(line);
    assert_int_equal(check(t, "u", "wrong"), PASSWD_WRONG_PASSWORD);
    struct timespec a, b, c;
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(check(t, "u", "right"), PASSWD_OK);
    clock_gettime(CLOCK_MONOTONIC, &b);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(check(t, "u", "right"), PASSWD_OK);
        assert_int_equal(check(t, "u", "wrong"), PASSWD_WRONG_PASSWORD);
        assert_int_equal(check(t, "u", ""), PASSWD_WRONG_PASSWORD);
    }
    clock_gettime(CLOCK_MONOTONIC, &c);
    double first = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    double cached = (double)(c.tv_sec - b.tv_sec) + (double)(c.tv_nsec - b.tv_nsec) / 1e9;
    /* 300 remembered checks cost less than one PBKDF2 run. */
    assert_true(cached < first);
    /* Remembering u says nothing about v, which shares the hash. */
    assert_int_equal(check(t, "v", "wrong"), PASSWD_WRONG_PASSWORD);
    assert_int_equal(check(t, "v", "right"), PASSWD_OK);
    passwd_free(t);
}

static void expect_error(const char *text, const char *msg)
{
    struct passwd_table *t = (struct passwd_table *)&t; /* must stay untouched */
    struct passwd_table *before = t;
    err[0] = '\0';
    assert_int_equal(passwd_parse(&t, "f.pw", text, strlen(text), err, sizeof err), -1);
    assert_ptr_equal(t, before);
    if (!strstr(err, msg))
        fail_msg("for %s: wanted '%s' in '%s'", text, msg, err);
}

static void test_malformed_lines_refused_with_file_and_line(void **state)
{
    const char *ok = "$7$101$DTOXZtuJQutk/GuG$uIfFV//6enA8Y+ww/2QCmL9JN7fqgdJX+fiMEsvXcWgE58WLPIQ2gED3/"
                     "fEpWrbgK4LdygbUH+yCj6bnGHoazQ==";
    char buf[512];
    expect_error("# c\nalice:secret\n", "f.pw:2: password is not hashed");
    expect_error("alice\n", "f.pw:1: expected user:hash");
    expect_error(":$6$x$y\n", "f.pw:1: invalid username");
    expect_error("alice:$argon2id$v=19$m=47104,t=1,p=1$abc$def\n", "argon2id");
    expect_error("alice:$5$abc$def\n", "unknown hash type");
    expect_error("alice:$7$0$AQIDBAUGBwgJCgsM$AAAA\n", "iteration count");
    expect_error("alice:$7$10000001$AQIDBAUGBwgJCgsM$AAAA\n", "iteration count");
    expect_error("alice:$7$1x$AQIDBAUGBwgJCgsM$AAAA\n", "iteration count");
    expect_error("alice:$7$101$$AAAA\n", "salt is not base64");
    expect_error("alice:$7$101$AQID BAUG$AAAA\n", "salt is not base64");
    expect_error("alice:$7$101$AQIDBAUGBwgJCgsM$AAAA\n", "hash is not base64 of 64 bytes");
    expect_error("alice:$7$101$AQIDBAUGBwgJCgsM\n", "hash is not base64 of 64 bytes");
    snprintf(buf, sizeof buf, "a:%s$extra\n", ok);
    expect_error(buf, "hash is not base64 of 64 bytes");
    snprintf(buf, sizeof buf, "a:%s\n\na:%s\n", ok, ok);
    expect_error(buf, "f.pw:3: user 'a' already defined on line 1");
    snprintf(buf, sizeof buf, "a:%s\nb:%.*s\n", ok, (int)strlen(ok) - 2, ok);
    expect_error(buf, "f.pw:2: hash is not base64");
    expect_error("a\0b:$6$x$y\n", "f.pw:1:"); /* strlen stops at the NUL */
    static const char nul[] = "ok:$6$x$y\0\n";
    struct passwd_table *t;
    assert_int_equal(passwd_parse(&t, "f.pw", nul, sizeof nul - 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "f.pw:1: NUL byte"));
}

static void test_load_reads_files_and_names_them_in_errors(void **state)
{
    char path[] = "/tmp/test_passwd_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, mosquitto_file, sizeof mosquitto_file - 1),
                     (ssize_t)sizeof mosquitto_file - 1);
    close(fd);
    struct passwd_table *t = NULL;
    assert_int_equal(passwd_load(&t, path, err, sizeof err), 0);
    assert_int_equal(passwd_count(t), 2);
    passwd_free(t);
    FILE *f = fopen(path, "a");
    fputs("oops\n", f);
    fclose(f);
    assert_int_equal(passwd_load(&t, path, err, sizeof err), -1);
    char want[64];
    snprintf(want, sizeof want, "%s:3: expected user:hash", path);
    assert_string_equal(err, want);
    unlink(path);
    assert_int_equal(passwd_load(&t, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot read"));
    assert_int_equal(passwd_load(&t, "/tmp", err, sizeof err), -1);
    assert_non_null(strstr(err, "not a regular file"));
}

static void test_username_rules(void **state)
{
    assert_true(passwd_username_valid("alice", 5));
    assert_true(passwd_username_valid("a b", 3));
    assert_true(passwd_username_valid("\xc3\xa9t\xc3\xa9", 5));
    assert_false(passwd_username_valid("", 0));
    assert_false(passwd_username_valid("a:b", 3));
    assert_false(passwd_username_valid("#a", 2));
    assert_false(passwd_username_valid(" a", 2));
    assert_false(passwd_username_valid("a\t", 2));
    assert_false(passwd_username_valid("a\nb", 3));
    assert_false(passwd_username_valid("\xc3", 1));
    const char *u;
    size_t n;
    assert_true(passwd_line_user("  bob : x", 9, &u, &n));
    assert_int_equal(n, 3);
    assert_memory_equal(u, "bob", 3);
    assert_false(passwd_line_user(" # c", 4, &u, &n));
    assert_false(passwd_line_user(" \t", 2, &u, &n));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mosquitto_written_hashes_verify),
        cmocka_unit_test(test_blanks_comments_crlf_and_long_salt),
        cmocka_unit_test(test_new_hash_round_trips_and_is_salted),
        cmocka_unit_test(test_remembered_login_answers_like_a_full_check),
        cmocka_unit_test(test_malformed_lines_refused_with_file_and_line),
        cmocka_unit_test(test_load_reads_files_and_names_them_in_errors),
        cmocka_unit_test(test_username_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
