/* test_rpc_grpc.c - the gRPC client transport (rpc_grpc.c) driven through
 * rpc_client.h on an event loop, as `shootout bench rpc-seq` drives it:
 *
 *   - against our own car-server (car_server_run in a forked child): one
 *     call, calls made from inside the done callback (the sequential case),
 *     max_in_flight concurrent streams and the refusal beyond it, gzip, an
 *     error status (RESOURCE_EXHAUSTED under a small --max-message-size),
 *     and close() from inside a callback;
 *   - against a scripted peer (a listening socket this test answers by
 *     hand with fixed HTTP/2 frames): a connection closed mid-call, a
 *     GOAWAY that refuses the stream, a reply without a message, a wrong
 *     reply, an HTTP error without grpc-status; and a refused connect.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>

#include <cmocka.h>

#include "car/car_server.h"
#include "core/ev.h"
#include "core/log.h"
#include "core/net.h"
#include "load/rpc/rpc_client.h"

/* ---- A driver ---------------------------------------------------------------- */

struct drv {
    struct ev_loop *loop;
    struct rpc_conn *conn;
    const Com__Stevenpg__Rvg__Message *msg;
    int connected; /* 0 not yet, 1 ok, -1 failed */
    int connect_err;
    unsigned done, ok, in_flight, max_in_flight;
    unsigned to_send; /* calls still to start from the done callback */
    enum rpc_outcome last_outcome;
    int last_code;
    unsigned outcomes[4];
    bool close_in_done;
};

static void drv_connected(void *ctx, struct rpc_conn *c, int err)
{
    struct drv *d = ctx;
    d->connected = err ? -1 : 1;
    d->connect_err = err;
}

static void drv_done(void *ctx, struct rpc_conn *c, void *call_ctx, enum rpc_outcome outcome,
                     int code)
{
    struct drv *d = ctx;
    assert_ptr_equal(call_ctx, d);
    d->done++;
    d->in_flight--;
    d->outcomes[outcome]++;
    d->last_outcome = outcome;
    d->last_code = code;
    if (d->close_in_done) {
        rpc_grpc_protocol.close(c);
        d->conn = NULL;
        return;
    }
    if (d->to_send > 0 && rpc_grpc_protocol.call(c, d->msg, d) == 0) {
        d->to_send--;
        d->in_flight++;
    }
}

static const Com__Stevenpg__Rvg__Message *article_message(void)
{
    static Com__Stevenpg__Rvg__Message__Car car = COM__STEVENPG__RVG__MESSAGE__CAR__INIT;
    static Com__Stevenpg__Rvg__Message__Driver driver = COM__STEVENPG__RVG__MESSAGE__DRIVER__INIT;
    static Com__Stevenpg__Rvg__Message m = COM__STEVENPG__RVG__MESSAGE__INIT;
    car.make = "toyota";
    car.model = "corolla";
    car.trim = "4DR Sedan";
    car.color = "gray";
    car.year = 2012;
    car.mileage = 120000;
    driver.firstname = "John";
    driver.lastname = "Smith";
    driver.driverid = "someId";
    m.car = &car;
    m.driver = &driver;
    return &m;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Runs the loop until *flag reaches want or 5 s pass. */
static void run_until(struct drv *d, const unsigned *counter, unsigned want)
{
    uint64_t end = now_ms() + 5000;
    while (*counter < want && now_ms() < end)
        ev_run_once(d->loop, 20);
    assert_true(*counter >= want);
}

static void drv_open(struct drv *d, int port, unsigned max_in_flight, bool gzip)
{
    memset(d, 0, sizeof *d);
    d->loop = ev_loop_new();
    d->msg = article_message();
    d->max_in_flight = max_in_flight;
    struct rpc_conn_opts opts = {
        .host = "127.0.0.1", .port = port, .max_in_flight = max_in_flight, .gzip = gzip};
    struct rpc_events ev = {.connected = drv_connected, .done = drv_done, .ctx = d};
    int err = 0;
    d->conn = rpc_grpc_protocol.connect(d->loop, &opts, &ev, &err);
    assert_non_null(d->conn);
    uint64_t end = now_ms() + 5000;
    while (d->connected == 0 && now_ms() < end)
        ev_run_once(d->loop, 20);
}

static void drv_call(struct drv *d)
{
    assert_int_equal(rpc_grpc_protocol.call(d->conn, d->msg, d), 0);
    d->in_flight++;
}

static void drv_close(struct drv *d)
{
    if (d->conn)
        rpc_grpc_protocol.close(d->conn);
    ev_loop_free(d->loop);
}

/* ---- Our server in a child process --------------------------------------------- */

struct server {
    pid_t pid;
    int port;
    FILE *log; /* its stderr */
};

static void server_start(struct server *s, size_t max_message)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    s->pid = fork();
    assert_true(s->pid >= 0);
    if (s->pid == 0) {
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        log_set_level(LOG_INFO); /* the port and the "stopped:" line */
        struct car_server_config cfg;
        car_server_config_defaults(&cfg);
        cfg.rest_port = -1;
        cfg.grpc_port = 0;
        cfg.max_message = max_message;
        _exit(car_server_run(&cfg));
    }
    close(p[1]);
    s->log = fdopen(p[0], "r");
    char line[512];
    s->port = 0;
    while (!s->port && fgets(line, sizeof line, s->log)) {
        const char *at = strstr(line, "gRPC (h2c) on 127.0.0.1:");
        if (at)
            s->port = atoi(at + strlen("gRPC (h2c) on 127.0.0.1:"));
    }
    assert_true(s->port > 0);
}

/* Stops it with SIGTERM; it must exit 0. Returns its "stopped:" line. */
static void server_stop(struct server *s, char *stopped, size_t len)
{
    kill(s->pid, SIGTERM);
    int status;
    assert_int_equal(waitpid(s->pid, &status, 0), s->pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    char line[512];
    stopped[0] = 0;
    while (fgets(line, sizeof line, s->log))
        if (strstr(line, "stopped:"))
            snprintf(stopped, len, "%s", line);
    fclose(s->log);
}

static void test_calls_against_our_server(void **state)
{
    struct server srv;
    server_start(&srv, 4 * 1024 * 1024);
    struct drv d;

    /* One call, then 99 more, each started from the previous one's done. */
    drv_open(&d, srv.port, 1, false);
    assert_int_equal(d.connected, 1);
    drv_call(&d);
    /* max_in_flight is 1: a second call is refused. */
    assert_int_equal(rpc_grpc_protocol.call(d.conn, d.msg, &d), -1);
    run_until(&d, &d.done, 1);
    assert_int_equal(d.last_outcome, RPC_OK);
    d.to_send = 99;
    drv_call(&d);
    run_until(&d, &d.done, 101);
    assert_int_equal(d.outcomes[RPC_OK], 101);
    drv_close(&d);

    /* Ten streams at once, 300 calls in all. */
    drv_open(&d, srv.port, 10, false);
    d.to_send = 290;
    for (int i = 0; i < 10; i++)
        drv_call(&d);
    assert_int_equal(rpc_grpc_protocol.call(d.conn, d.msg, &d), -1);
    run_until(&d, &d.done, 300);
    assert_int_equal(d.outcomes[RPC_OK], 300);
    drv_close(&d);

    /* gzip requests. */
    drv_open(&d, srv.port, 2, true);
    d.to_send = 18;
    drv_call(&d);
    drv_call(&d);
    run_until(&d, &d.done, 20);
    assert_int_equal(d.outcomes[RPC_OK], 20);
    drv_close(&d);

    /* close() from inside the done callback. */
    drv_open(&d, srv.port, 1, false);
    d.close_in_done = true;
    drv_call(&d);
    run_until(&d, &d.done, 1);
    assert_null(d.conn);
    drv_close(&d);

    char stopped[512];
    server_stop(&srv, stopped, sizeof stopped);
    assert_non_null(strstr(stopped, "422 gRPC calls (0 errors)"));
}

static void test_error_status_from_our_server(void **state)
{
    struct server srv;
    server_start(&srv, 16); /* the article's message is 66 bytes */
    struct drv d;
    drv_open(&d, srv.port, 1, false);
    drv_call(&d);
    run_until(&d, &d.done, 1);
    assert_int_equal(d.last_outcome, RPC_E_STATUS);
    assert_int_equal(d.last_code, 8); /* RESOURCE_EXHAUSTED */
    /* The connection is still good for the next call. */
    drv_call(&d);
    run_until(&d, &d.done, 2);
    assert_int_equal(d.outcomes[RPC_E_STATUS], 2);
    drv_close(&d);
    char stopped[512];
    server_stop(&srv, stopped, sizeof stopped);
    assert_non_null(strstr(stopped, "2 gRPC calls (2 errors)"));
}

/* ---- A scripted peer ------------------------------------------------------------ */

static int listen_any(int *port)
{
    char err[NET_ERR_LEN];
    int fd = net_listen("127.0.0.1", 0, 8, 0, err, sizeof err);
    assert_true(fd >= 0);
    *port = net_local_port(fd);
    return fd;
}

/* Accepts the client's connection (its connect already completed) and
 * waits until its first request (HEADERS + DATA) has arrived. */
static int peer_accept_request(struct drv *d, int lfd)
{
    int fd = -1;
    uint64_t end = now_ms() + 5000;
    while (fd < 0 && now_ms() < end) {
        ev_run_once(d->loop, 10);
        fd = accept(lfd, NULL, NULL);
    }
    assert_true(fd >= 0);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    /* Preface (24) + SETTINGS + WINDOW_UPDATE + HEADERS + DATA: wait for a
     * DATA frame with END_STREAM by reading until a pause. */
    char buf[4096];
    size_t got = 0;
    end = now_ms() + 5000;
    while (now_ms() < end) {
        ev_run_once(d->loop, 20);
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0)
            got += (size_t)n;
        else if (got > 100)
            break;
    }
    assert_true(got > 100);
    return fd;
}

static void put_frame(int fd, uint8_t type, uint8_t flags, uint32_t sid, const void *payload,
                      size_t len)
{
    uint8_t h[9] = {
        (uint8_t)(len >> 16), (uint8_t)(len >> 8),  (uint8_t)len,        type,        flags,
        (uint8_t)(sid >> 24), (uint8_t)(sid >> 16), (uint8_t)(sid >> 8), (uint8_t)sid};
    assert_int_equal(write(fd, h, 9), 9);
    if (len)
        assert_int_equal(write(fd, payload, len), (ssize_t)len);
}

/* An HPACK literal without indexing, new name, no Huffman (short strings). */
static size_t hpack_lit(uint8_t *out, const char *name, const char *value)
{
    size_t n = strlen(name), v = strlen(value), o = 0;
    out[o++] = 0;
    out[o++] = (uint8_t)n;
    memcpy(out + o, name, n);
    o += n;
    out[o++] = (uint8_t)v;
    memcpy(out + o, value, v);
    return o + v;
}

enum { F_DATA = 0, F_HEADERS = 1, F_SETTINGS = 4, F_GOAWAY = 7 };
enum { END_STREAM = 1, END_HEADERS = 4 };

static void peer_headers(int fd, const char *status, bool end_stream)
{
    uint8_t block[128];
    size_t n = hpack_lit(block, ":status", status);
    n += hpack_lit(block + n, "content-type", "application/grpc");
    put_frame(fd, F_HEADERS, END_HEADERS | (end_stream ? END_STREAM : 0), 1, block, n);
}

static void peer_trailers(int fd, const char *grpc_status)
{
    uint8_t block[64];
    size_t n = hpack_lit(block, "grpc-status", grpc_status);
    put_frame(fd, F_HEADERS, END_HEADERS | END_STREAM, 1, block, n);
}

/* A reply message Result{status: s}. */
static void peer_result(int fd, const char *s)
{
    uint8_t m[64];
    size_t len = strlen(s);
    m[0] = 0;
    m[1] = m[2] = m[3] = 0;
    m[4] = (uint8_t)(2 + len);
    m[5] = 0x0a;
    m[6] = (uint8_t)len;
    memcpy(m + 7, s, len);
    put_frame(fd, F_DATA, 0, 1, m, 7 + len);
}

enum script { CLOSE, GOAWAY, NO_MESSAGE, WRONG_REPLY, HTTP_503, GOOD };

/* One call against a peer playing `script`; returns the driver's outcome. */
static void scripted_call(enum script script, enum rpc_outcome want, int want_code)
{
    int port, lfd = listen_any(&port);
    struct drv d;
    drv_open(&d, port, 1, false);
    assert_int_equal(d.connected, 1);
    drv_call(&d);
    int fd = peer_accept_request(&d, lfd);
    put_frame(fd, F_SETTINGS, 0, 0, NULL, 0);
    switch (script) {
    case CLOSE:
        break;
    case GOAWAY: {
        const uint8_t body[8] = {0, 0, 0, 0, 0, 0, 0, 0}; /* last stream 0, NO_ERROR */
        put_frame(fd, F_GOAWAY, 0, 0, body, sizeof body);
        break;
    }
    case NO_MESSAGE:
        peer_headers(fd, "200", false);
        peer_trailers(fd, "0");
        break;
    case WRONG_REPLY:
        peer_headers(fd, "200", false);
        peer_result(fd, "failed");
        peer_trailers(fd, "0");
        break;
    case HTTP_503:
        peer_headers(fd, "503", true);
        break;
    case GOOD:
        peer_headers(fd, "200", false);
        peer_result(fd, "successful");
        peer_trailers(fd, "0");
        break;
    }
    if (script == CLOSE || script == GOAWAY)
        close(fd);
    run_until(&d, &d.done, 1);
    assert_int_equal(d.last_outcome, want);
    assert_int_equal(d.last_code, want_code);
    if (script == CLOSE || script == GOAWAY) /* the connection is over */
        assert_int_equal(rpc_grpc_protocol.call(d.conn, d.msg, &d), -1);
    else
        close(fd);
    drv_close(&d);
    close(lfd);
}

static void test_scripted_peer(void **state)
{
    scripted_call(GOOD, RPC_OK, 0); /* the script itself is sound */
    scripted_call(CLOSE, RPC_E_CLOSED, 0);
    scripted_call(GOAWAY, RPC_E_CLOSED, 0);
    scripted_call(NO_MESSAGE, RPC_E_PROTOCOL, 0);
    scripted_call(WRONG_REPLY, RPC_E_PROTOCOL, 0);
    scripted_call(HTTP_503, RPC_E_STATUS, 14); /* UNAVAILABLE, by the HTTP mapping */
}

static void test_connect_refused(void **state)
{
    int port, lfd = listen_any(&port);
    close(lfd); /* nothing listens there now */
    struct drv d;
    drv_open(&d, port, 1, false);
    assert_int_equal(d.connected, -1);
    assert_int_equal(d.connect_err, ECONNREFUSED);
    assert_int_equal(rpc_grpc_protocol.call(d.conn, d.msg, &d), -1);
    drv_close(&d);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    log_set_level(LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_against_our_server),
        cmocka_unit_test(test_error_status_from_our_server),
        cmocka_unit_test(test_scripted_peer),
        cmocka_unit_test(test_connect_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
