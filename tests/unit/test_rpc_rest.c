/* test_rpc_rest.c - unit tests for the REST client transport (rpc_rest.c)
 * against a server played by the test over a loopback socket: the requests
 * it writes, pipelined calls answered in order, answers that arrive one
 * byte at a time (interim 100, Content-Length, chunked, whitespace in the
 * body, an error status), Connection: close, a server that closes or
 * talks nonsense, and the driver closing the connection from a callback.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "car/car_fake.h"
#include "core/net.h"
#include "http/http1.h"
#include "load/rpc/rpc_client.h"

#define MAX_EVENTS 16
#define LOOP_ROUNDS 200 /* bound on every wait, 5 ms each at most */

static const struct rpc_protocol *proto = &rpc_rest_protocol;

static struct {
    struct ev_loop *loop;
    int listen_fd, port, server_fd;
    struct rpc_conn *conn;
    int connected; /* 0 not yet, 1 ok, -1 failed */
    int connect_err;
    unsigned ndone;
    struct {
        void *call_ctx;
        enum rpc_outcome outcome;
        int code;
    } done[MAX_EVENTS];
    bool close_in_done; /* the driver closes the connection from done() */
    struct car_fake fake;
    struct car_fake_record rec;
} t;

static void on_connected(void *ctx, struct rpc_conn *c, int err)
{
    t.connected = err ? -1 : 1;
    t.connect_err = err;
}

static void on_done(void *ctx, struct rpc_conn *c, void *call_ctx, enum rpc_outcome outcome,
                    int code)
{
    assert_true(t.ndone < MAX_EVENTS);
    t.done[t.ndone].call_ctx = call_ctx;
    t.done[t.ndone].outcome = outcome;
    t.done[t.ndone].code = code;
    t.ndone++;
    if (t.close_in_done) {
        proto->close(c);
        t.conn = NULL;
        t.close_in_done = false;
    }
}

static const struct rpc_events events = {.connected = on_connected, .done = on_done};

/* Runs the loop until *flag reaches want, or fails. */
static void run_until(const int *flag, int want)
{
    for (int i = 0; i < LOOP_ROUNDS && *flag != want; i++)
        ev_run_once(t.loop, 5);
    assert_int_equal(*flag, want);
}

static void run_until_done(unsigned n)
{
    for (int i = 0; i < LOOP_ROUNDS && t.ndone < n; i++)
        ev_run_once(t.loop, 5);
    assert_int_equal(t.ndone, n);
}

static void connect_conn(unsigned max_in_flight)
{
    struct rpc_conn_opts opts = {.host = "127.0.0.1", .port = t.port,
                                 .max_in_flight = max_in_flight};
    int err = 0;
    t.conn = proto->connect(t.loop, &opts, &events, &err);
    assert_non_null(t.conn);
    run_until(&t.connected, 1);
    for (int i = 0; i < LOOP_ROUNDS && t.server_fd < 0; i++) {
        t.server_fd = net_accept(t.listen_fd, NULL);
        if (t.server_fd < 0)
            usleep(1000);
    }
    assert_true(t.server_fd >= 0);
}

static int setup(void **state)
{
    memset(&t, 0, sizeof t);
    t.server_fd = -1;
    t.loop = ev_loop_new();
    char err[NET_ERR_LEN];
    t.listen_fd = net_listen("127.0.0.1", 0, 8, 0, err, sizeof err);
    assert_true(t.listen_fd >= 0);
    t.port = net_local_port(t.listen_fd);
    car_fake_seed(&t.fake, 3);
    return 0;
}

static int teardown(void **state)
{
    if (t.conn)
        proto->close(t.conn);
    if (t.server_fd >= 0)
        close(t.server_fd);
    close(t.listen_fd);
    ev_loop_free(t.loop);
    return 0;
}

static int call(void *call_ctx) { return proto->call(t.conn, car_fake_next(&t.fake, &t.rec), call_ctx); }

/* Reads n whole requests from the server side and checks each. */
static void read_requests(unsigned n)
{
    static char buf[65536];
    size_t len = 0, off = 0;
    for (unsigned got = 0; got < n;) {
        struct http1_header h[16];
        struct http1_request req;
        int rc = http1_parse_request(buf + off, len - off, &req, h, 16, 8192);
        assert_true(rc >= 0);
        if (rc > 0 && len - off - (size_t)rc >= req.content_length) {
            assert_true(http1_str_eq(req.method, "POST") && http1_str_eq(req.path, "/v1/create"));
            char host[32];
            snprintf(host, sizeof host, "127.0.0.1:%d", t.port);
            assert_true(http1_str_eq(http1_find_header(h, req.num_headers, "host")->value, host));
            assert_true(http1_media_type_is(req.content_type, "application/json"));
            assert_true(req.keep_alive && req.body == HTTP1_BODY_LENGTH);
            struct car_record rec;
            char strings[1024];
            assert_int_equal(car_json_parse(buf + off + rc, req.content_length, &rec, strings,
                                            sizeof strings, NULL),
                             CAR_JSON_OK);
            off += (size_t)rc + req.content_length;
            got++;
            continue;
        }
        /* The client writes from the loop: let it run, then read more. */
        ev_run_once(t.loop, 0);
        ssize_t r = read(t.server_fd, buf + len, sizeof buf - len);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            usleep(1000);
            continue;
        }
        assert_true(r > 0);
        len += (size_t)r;
    }
    assert_int_equal(off, len); /* nothing more than the n requests */
}

/* Writes s to the client one byte at a time, running the loop after each. */
static void answer_bytewise(const char *s)
{
    for (size_t i = 0; s[i]; i++) {
        assert_int_equal(write(t.server_fd, s + i, 1), 1);
        ev_run_once(t.loop, 0);
    }
}

static void answer(const char *s)
{
    assert_int_equal(write(t.server_fd, s, strlen(s)), (ssize_t)strlen(s));
}

static void check_done(unsigned i, uintptr_t call_ctx, enum rpc_outcome outcome, int code)
{
    assert_int_equal((uintptr_t)t.done[i].call_ctx, call_ctx);
    assert_int_equal(t.done[i].outcome, outcome);
    if (outcome != RPC_E_PROTOCOL)
        assert_int_equal(t.done[i].code, code);
}

#define CREATED_201 "HTTP/1.1 201 Created\r\nContent-Length: 20\r\n\r\n{\"status\":\"created\"}"

static void test_pipelined_answers_in_pieces(void **state)
{
    connect_conn(5);
    for (uintptr_t k = 1; k <= 5; k++)
        assert_int_equal(call((void *)k), 0);
    assert_int_equal(call((void *)6), -1); /* at max_in_flight */
    read_requests(5);
    answer_bytewise("HTTP/1.1 100 Continue\r\n\r\n" CREATED_201 CREATED_201
                    "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "7\r\n{\"statu\r\nd\r\ns\":\"created\"}\r\n0\r\n\r\n"
                    "HTTP/1.1 201 Created\r\nContent-Length: 26\r\n\r\n"
                    "{ \"status\" : \"created\" }\r\n"
                    "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\n\r\n{}");
    run_until_done(5);
    for (unsigned i = 0; i < 4; i++)
        check_done(i, i + 1, RPC_OK, 201);
    check_done(4, 5, RPC_E_STATUS, 500);
    /* Still usable: one call at a time now. */
    assert_int_equal(call((void *)7), 0);
    read_requests(1);
    answer(CREATED_201);
    run_until_done(6);
    check_done(5, 7, RPC_OK, 201);
}

static void test_other_bodies_are_protocol_errors(void **state)
{
    connect_conn(3);
    for (uintptr_t k = 1; k <= 3; k++)
        assert_int_equal(call((void *)k), 0);
    read_requests(3);
    answer("HTTP/1.1 201 Created\r\nContent-Length: 20\r\n\r\n{\"status\":\"CREATED\"}"
           "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"
           "HTTP/1.1 201 Created\r\nContent-Length: 25\r\n\r\n{\"status\":\"created\",\"x\"} ");
    run_until_done(3);
    for (unsigned i = 0; i < 3; i++)
        check_done(i, i + 1, RPC_E_PROTOCOL, 0);
}

static void test_connection_close_after_answer(void **state)
{
    connect_conn(1);
    assert_int_equal(call((void *)1), 0);
    read_requests(1);
    answer("HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: 20\r\n\r\n"
           "{\"status\":\"created\"}");
    run_until_done(1);
    check_done(0, 1, RPC_OK, 201);
    assert_int_equal(call((void *)2), -1); /* the connection is gone */
}

static void test_body_until_close(void **state)
{
    connect_conn(1);
    assert_int_equal(call((void *)1), 0);
    read_requests(1);
    answer("HTTP/1.1 201 Created\r\n\r\n{\"status\":\"created\"}");
    ev_run_once(t.loop, 5);
    assert_int_equal(t.ndone, 0); /* the body is not over until the close */
    close(t.server_fd);
    t.server_fd = -1;
    run_until_done(1);
    check_done(0, 1, RPC_OK, 201);
}

static void test_server_closes_with_calls_in_flight(void **state)
{
    connect_conn(2);
    assert_int_equal(call((void *)1), 0);
    assert_int_equal(call((void *)2), 0);
    read_requests(2);
    close(t.server_fd);
    t.server_fd = -1;
    run_until_done(2);
    check_done(0, 1, RPC_E_CLOSED, 0);
    check_done(1, 2, RPC_E_CLOSED, 0);
    assert_int_equal(call((void *)3), -1);
}

static void test_garbage_answer(void **state)
{
    connect_conn(2);
    assert_int_equal(call((void *)1), 0);
    assert_int_equal(call((void *)2), 0);
    read_requests(2);
    answer("SSH-2.0-OpenSSH\r\n");
    run_until_done(2);
    check_done(0, 1, RPC_E_PROTOCOL, 0);
    check_done(1, 2, RPC_E_CLOSED, 0);
}

/* The driver may close the connection from inside done(), with more
 * answers already read in the same buffer. */
static void test_close_inside_callback(void **state)
{
    connect_conn(2);
    assert_int_equal(call((void *)1), 0);
    assert_int_equal(call((void *)2), 0);
    read_requests(2);
    t.close_in_done = true;
    answer(CREATED_201 CREATED_201);
    run_until_done(1);
    for (int i = 0; i < 5; i++)
        ev_run_once(t.loop, 1);
    assert_int_equal(t.ndone, 1); /* closed: the second is not reported */
    assert_null(t.conn);
}

static void test_connect_refused(void **state)
{
    close(t.listen_fd);
    t.listen_fd = -1;
    struct rpc_conn_opts opts = {.host = "127.0.0.1", .port = t.port, .max_in_flight = 1};
    int err = 0;
    t.conn = proto->connect(t.loop, &opts, &events, &err);
    if (t.conn) {
        run_until(&t.connected, -1);
        assert_int_equal(t.connect_err, ECONNREFUSED);
        assert_int_equal(call((void *)1), -1);
    } else {
        assert_int_equal(err, ECONNREFUSED);
    }
    t.listen_fd = dup(0); /* for teardown */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pipelined_answers_in_pieces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_bodies_are_protocol_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_close_after_answer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_until_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_closes_with_calls_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_answer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_inside_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
