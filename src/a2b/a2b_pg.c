/* a2b_pg.c - the a2b schema, COPY load and non-blocking operations on
 * PostgreSQL through libpq, with connections re-made in the background. */
#include "a2b/a2b_pg.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2b/a2b_data.h"
#include "core/ev.h"
#include "core/log.h"
#include "core/mem.h"

/* ---- schema and load ------------------------------------------------------ */

/* The reference's database_definition.sql, with the phone index on phone.
 * Indexes other than primary keys come after the load. */
static const char schema_sql[] =
    "DROP SCHEMA IF EXISTS a2b CASCADE; CREATE SCHEMA a2b;"
    "CREATE TABLE a2b.users(id bigserial PRIMARY KEY, first_name varchar(50) NOT NULL,"
    " last_name varchar(50) NOT NULL, email varchar(50) NOT NULL, phone varchar(50) NOT NULL);"
    "CREATE TABLE a2b.countries(id bigserial PRIMARY KEY, name varchar(50) NOT NULL,"
    " code varchar(10) NOT NULL);"
    "CREATE TABLE a2b.cities(id bigserial PRIMARY KEY,"
    " country_id bigint NOT NULL REFERENCES a2b.countries(id) ON DELETE CASCADE,"
    " name varchar(100) NOT NULL, code varchar(10) NOT NULL);"
    "CREATE TABLE a2b.locations(id bigserial PRIMARY KEY,"
    " city_id bigint NOT NULL REFERENCES a2b.cities(id) ON DELETE CASCADE, location jsonb NOT NULL);"
    "CREATE TABLE a2b.transfers(id bigserial PRIMARY KEY,"
    " origin bigint NOT NULL REFERENCES a2b.locations(id) ON DELETE CASCADE,"
    " destination bigint NOT NULL REFERENCES a2b.locations(id) ON DELETE CASCADE,"
    " capacity smallint NOT NULL, date date NOT NULL, duration tsrange NOT NULL,"
    " price money NOT NULL, description text NOT NULL);"
    "CREATE TABLE a2b.users_transfers("
    " user_id bigint NOT NULL REFERENCES a2b.users(id) ON DELETE CASCADE,"
    " transfer_id bigint NOT NULL REFERENCES a2b.transfers(id) ON DELETE CASCADE,"
    " state varchar(10) NOT NULL, description text NOT NULL, PRIMARY KEY(user_id, transfer_id));";

static const char index_sql[] =
    "CREATE UNIQUE INDEX users_email ON a2b.users(email);"
    "CREATE UNIQUE INDEX users_phone ON a2b.users(phone);"
    "CREATE INDEX cities_country ON a2b.cities(country_id);"
    "CREATE INDEX locations_city ON a2b.locations(city_id);"
    "CREATE INDEX transfers_search ON a2b.transfers(origin, destination, date);"
    /* Rows were copied with their ids: move the sequences past them. */
    "SELECT setval(pg_get_serial_sequence('a2b.' || t, 'id'), n)"
    " FROM (VALUES ('users', " "(SELECT max(id) FROM a2b.users)),"
    " ('countries', (SELECT max(id) FROM a2b.countries)),"
    " ('cities', (SELECT max(id) FROM a2b.cities)),"
    " ('locations', (SELECT max(id) FROM a2b.locations)),"
    " ('transfers', (SELECT max(id) FROM a2b.transfers))) AS s(t, n);";

/* COPY text format, buffered into CopyData messages of up to 64 KB. */
struct copy {
    PGconn *conn;
    bool failed;
    size_t len;
    char buf[65536];
};

static void copy_flush(struct copy *c)
{
    if (c->len && !c->failed && PQputCopyData(c->conn, c->buf, (int)c->len) != 1)
        c->failed = true;
    c->len = 0;
}

/* One field: a tab before every field but a row's first; backslash, tab,
 * newline and carriage return escaped as COPY wants. */
static void copy_field(struct copy *c, bool first, const char *s)
{
    if (c->len + 2 * strlen(s) + 2 > sizeof c->buf)
        copy_flush(c);
    if (!first)
        c->buf[c->len++] = '\t';
    for (; *s; s++) {
        char e = *s == '\\' ? '\\' : *s == '\t' ? 't' : *s == '\n' ? 'n' : *s == '\r' ? 'r' : 0;
        if (e) {
            c->buf[c->len++] = '\\';
            c->buf[c->len++] = e;
        } else {
            c->buf[c->len++] = *s;
        }
    }
}

static void copy_int(struct copy *c, bool first, int64_t v)
{
    char num[24];
    snprintf(num, sizeof num, "%" PRId64, v);
    copy_field(c, first, num);
}

static void copy_row_end(struct copy *c) { c->buf[c->len++] = '\n'; }

static int copy_begin(struct copy *c, const char *sql)
{
    PGresult *r = PQexec(c->conn, sql);
    int ok = PQresultStatus(r) == PGRES_COPY_IN;
    PQclear(r);
    c->len = 0;
    c->failed = !ok;
    return ok ? 0 : -1;
}

static int copy_end(struct copy *c)
{
    copy_flush(c);
    if (PQputCopyEnd(c->conn, c->failed ? "load failed" : NULL) != 1)
        return -1;
    PGresult *r = PQgetResult(c->conn);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    while ((r = PQgetResult(c->conn)))
        PQclear(r);
    return ok && !c->failed ? 0 : -1;
}

static int copy_places(struct copy *c, const struct a2b_data *d)
{
    if (copy_begin(c, "COPY a2b.countries(id, name, code) FROM STDIN"))
        return -1;
    for (int64_t id = 1; id <= A2B_DATA_COUNTRIES; id++) {
        struct a2b_country_row r;
        a2b_data_country(d, id, &r);
        copy_int(c, true, r.id);
        copy_field(c, false, r.name);
        copy_field(c, false, r.code);
        copy_row_end(c);
    }
    if (copy_end(c) || copy_begin(c, "COPY a2b.cities(id, country_id, name, code) FROM STDIN"))
        return -1;
    for (int64_t id = 1; id <= A2B_DATA_CITIES; id++) {
        struct a2b_city_row r;
        a2b_data_city(d, id, &r);
        copy_int(c, true, r.id);
        copy_int(c, false, r.country_id);
        copy_field(c, false, r.name);
        copy_field(c, false, r.code);
        copy_row_end(c);
    }
    if (copy_end(c) || copy_begin(c, "COPY a2b.locations(id, city_id, location) FROM STDIN"))
        return -1;
    for (int64_t id = 1; id <= A2B_DATA_LOCATIONS; id++) {
        struct a2b_location_row r;
        a2b_data_location(d, id, &r);
        char json[96];
        snprintf(json, sizeof json, "{\"latitude\": %.6f, \"longitude\": %.6f}", r.latitude,
                 r.longitude);
        copy_int(c, true, r.id);
        copy_int(c, false, r.city_id);
        copy_field(c, false, json);
        copy_row_end(c);
    }
    return copy_end(c);
}

static int copy_transfers(struct copy *c, const struct a2b_data *d)
{
    if (copy_begin(c, "COPY a2b.transfers(id, origin, destination, capacity, date, duration, price,"
                      " description) FROM STDIN"))
        return -1;
    for (int64_t id = 1; id <= d->transfers; id++) {
        struct a2b_transfer_row r;
        a2b_data_transfer(d, id, &r);
        char range[64], price[24];
        snprintf(range, sizeof range, "[\"%s\",\"%s\")", r.start, r.end);
        snprintf(price, sizeof price, "%" PRId64 ".%02" PRId64, r.price_cents / 100, r.price_cents % 100);
        copy_int(c, true, r.id);
        copy_int(c, false, r.origin);
        copy_int(c, false, r.destination);
        copy_int(c, false, r.capacity);
        copy_field(c, false, r.date);
        copy_field(c, false, range);
        copy_field(c, false, price);
        copy_field(c, false, r.description);
        copy_row_end(c);
    }
    return copy_end(c);
}

static int copy_people(struct copy *c, const struct a2b_data *d)
{
    if (copy_begin(c, "COPY a2b.users(id, first_name, last_name, email, phone) FROM STDIN"))
        return -1;
    for (int64_t id = 1; id <= d->users; id++) {
        struct a2b_user_row r;
        a2b_data_user(d, id, &r);
        copy_int(c, true, r.id);
        copy_field(c, false, r.first_name);
        copy_field(c, false, r.last_name);
        copy_field(c, false, r.email);
        copy_field(c, false, r.phone);
        copy_row_end(c);
    }
    if (copy_end(c) ||
        copy_begin(c, "COPY a2b.users_transfers(user_id, transfer_id, state, description) FROM STDIN"))
        return -1;
    for (int64_t id = 1; id <= d->users; id++) {
        struct a2b_booking_row b[A2B_DATA_MAX_USER_BOOKINGS];
        unsigned n = a2b_data_user_bookings(d, id, b);
        for (unsigned i = 0; i < n; i++) {
            copy_int(c, true, b[i].user_id);
            copy_int(c, false, b[i].transfer_id);
            copy_field(c, false, b[i].state);
            copy_field(c, false, b[i].description);
            copy_row_end(c);
        }
    }
    return copy_end(c);
}

static bool exec_ok(PGconn *conn, const char *sql)
{
    PGresult *r = PQexec(conn, sql);
    ExecStatusType st = PQresultStatus(r);
    PQclear(r);
    return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

int a2b_pg_init(const char *conninfo, uint64_t seed, double scale, char *err, size_t errlen)
{
    struct a2b_data d;
    a2b_data_init(&d, seed, scale);
    struct copy *c = mem_calloc(1, sizeof *c);
    c->conn = PQconnectdb(conninfo);
    int rc = -1;
    if (PQstatus(c->conn) != CONNECTION_OK)
        goto out;
    /* The data set is reproducible, so a lost load is simply redone: no
     * need to wait for each commit to reach the disk. */
    if (!exec_ok(c->conn, "SET synchronous_commit = off; SET client_min_messages = warning;"
                          " BEGIN") ||
        !exec_ok(c->conn, schema_sql) || copy_places(c, &d) || copy_transfers(c, &d) ||
        copy_people(c, &d) || !exec_ok(c->conn, index_sql) || !exec_ok(c->conn, "COMMIT") ||
        !exec_ok(c->conn, "ANALYZE"))
        goto out;
    rc = 0;
out:
    if (rc)
        snprintf(err, errlen, "a2b init: %s", PQerrorMessage(c->conn));
    PQfinish(c->conn);
    mem_free(c);
    return rc;
}

/* ---- operations ------------------------------------------------------- */

#define LOCATION_COLUMNS(l, c, k)                                                                   \
    l ".id, (" l ".location->>'latitude')::float8, (" l ".location->>'longitude')::float8, " c     \
      ".id, " c ".name, " c ".code, " k ".id, " k ".name, " k ".code"
#define TRANSFER_COLUMNS                                                                           \
    "t.id, " LOCATION_COLUMNS("lo", "co", "ko") ", " LOCATION_COLUMNS("ld", "cd", "kd")            \
        ", t.capacity, to_char(lower(t.duration), 'YYYY-MM-DD HH24:MI:SS'),"                      \
        " to_char(upper(t.duration), 'YYYY-MM-DD HH24:MI:SS'), (t.price::numeric * 100)::bigint,"  \
        " t.description"
#define TRANSFER_JOINS                                                                             \
    " JOIN a2b.locations lo ON lo.id = t.origin JOIN a2b.cities co ON co.id = lo.city_id"          \
    " JOIN a2b.countries ko ON ko.id = co.country_id"                                              \
    " JOIN a2b.locations ld ON ld.id = t.destination JOIN a2b.cities cd ON cd.id = ld.city_id"     \
    " JOIN a2b.countries kd ON kd.id = cd.country_id"
#define BOOKING_SELECT                                                                             \
    "SELECT u.id, u.first_name, u.last_name, u.email, u.phone, " TRANSFER_COLUMNS                  \
    ", ut.state, ut.description FROM a2b.users_transfers ut JOIN a2b.users u ON u.id = ut.user_id" \
    " JOIN a2b.transfers t ON t.id = ut.transfer_id" TRANSFER_JOINS
/* A list and whether its parent exists, in one statement: column 0 is the
 * parent's existence, the list's columns follow (NULL in the one row of an
 * empty list); ordered by the list's column `by` (1-based). */
#define WITH_PARENT(parent, list, by)                                                              \
    "SELECT p.ok, q.* FROM (SELECT EXISTS (" parent ") AS ok) p LEFT JOIN (" list ") q ON true"    \
    " ORDER BY " by

#define INT8 20
#define TEXT 25

static const struct {
    const char *sql;
    int nparams;
    Oid types[4];
} stmts[A2B_OP_COUNT] = {
    [A2B_COUNTRIES] = {"SELECT id, name, code FROM a2b.countries ORDER BY id", 0, {0}},
    [A2B_CITIES] = {WITH_PARENT("SELECT 1 FROM a2b.countries WHERE id = $1",
                                "SELECT c.id, c.name, c.code, k.id, k.name, k.code FROM a2b.cities c"
                                " JOIN a2b.countries k ON k.id = c.country_id WHERE c.country_id = $1",
                                "2"),
                    1,
                    {INT8}},
    [A2B_LOCATIONS] = {WITH_PARENT("SELECT 1 FROM a2b.cities WHERE id = $2 AND country_id = $1",
                                   "SELECT " LOCATION_COLUMNS("l", "c", "k") " FROM a2b.locations l"
                                   " JOIN a2b.cities c ON c.id = l.city_id"
                                   " JOIN a2b.countries k ON k.id = c.country_id"
                                   " WHERE l.city_id = $2 AND c.country_id = $1",
                                   "2"),
                       2,
                       {INT8, INT8}},
    [A2B_TRANSFERS] = {"SELECT " TRANSFER_COLUMNS " FROM a2b.transfers t" TRANSFER_JOINS
                       " WHERE t.origin = $1 AND t.destination = $2 AND t.date = $3::date"
                       " ORDER BY t.id",
                       3,
                       {INT8, INT8, TEXT}},
    /* Columns: user exists, transfer exists, rows inserted. A concurrent
     * duplicate is a conflict, not an error. */
    [A2B_BOOK] = {"WITH u AS (SELECT EXISTS (SELECT 1 FROM a2b.users WHERE id = $1) AS ok),"
                  " t AS (SELECT EXISTS (SELECT 1 FROM a2b.transfers WHERE id = $2) AS ok),"
                  " ins AS (INSERT INTO a2b.users_transfers(user_id, transfer_id, state, description)"
                  " SELECT $1, $2, 'BOOKED', $3 FROM u, t WHERE u.ok AND t.ok"
                  " ON CONFLICT DO NOTHING RETURNING 1)"
                  " SELECT u.ok, t.ok, (SELECT count(*) FROM ins) FROM u, t",
                  3,
                  {INT8, INT8, TEXT}},
    [A2B_BOOKINGS] = {WITH_PARENT("SELECT 1 FROM a2b.users WHERE id = $1",
                                  BOOKING_SELECT " WHERE ut.user_id = $1", "7"),
                      1,
                      {INT8}},
    [A2B_BOOKING] = {BOOKING_SELECT " WHERE ut.user_id = $1 AND ut.transfer_id = $2", 2, {INT8, INT8}},
    [A2B_UPDATE_BOOKING] = {"UPDATE a2b.users_transfers SET state = $3, description = $4"
                            " WHERE user_id = $1 AND transfer_id = $2",
                            4,
                            {INT8, INT8, TEXT, TEXT}},
    [A2B_USER] = {"SELECT id, first_name, last_name, email, phone FROM a2b.users WHERE id = $1",
                  1,
                  {INT8}},
    [A2B_UPDATE_USER] = {"UPDATE a2b.users SET first_name = $2, last_name = $3 WHERE id = $1",
                         3,
                         {INT8, TEXT, TEXT}},
    [A2B_READY] = {"SELECT 1", 0, {0}},
};

struct pg_req {
    struct a2b_request base;
    char num[2][24]; /* numeric parameters as text */
};

/* A connection's life: open() makes it READY (blocking); a loss closes it
 * (DOWN) and the retry timer starts the way back through CONNECTING and
 * PREPARING, both bounded by that same timer. */
enum conn_state { CONN_DOWN, CONN_CONNECTING, CONN_PREPARING, CONN_READY };

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
/* Connecting and preparing together, on a server that accepts the socket
 * but never answers. */
#define SETUP_TIMEOUT_MS 5000

struct pg_conn {
    struct a2b_pg *pg;
    PGconn *conn; /* NULL while DOWN */
    struct ev_io io;
    struct ev_timer retry;  /* DOWN: next attempt; CONNECTING, PREPARING: deadline */
    enum conn_state state;
    int prepared;           /* PREPARING: statements prepared so far */
    uint64_t backoff_ms;    /* the wait before the next attempt */
    struct pg_req *req;     /* READY: running, or NULL when idle */
    PGresult *result;       /* the running statement's first result, once it came */
};

struct a2b_pg {
    struct ev_loop *loop;
    char *conninfo;
    struct pg_conn *conns;
    unsigned nconns;
    struct a2b_request_list wait; /* waiting for a connection */
    unsigned waiting, queue_max;
    struct a2b_request_list done; /* answered without the database */
    struct ev_timer defer;        /* delivers the done list on the next iteration */
    unsigned pending;
    struct a2b_pg_stats *stats;
    void (*completed)(void *owner);
    void *owner;
};

static void stat_add(atomic_uint_fast64_t *n, int64_t d)
{
    atomic_fetch_add_explicit(n, (uint_fast64_t)d, memory_order_relaxed);
}

static void complete(struct a2b_pg *pg, struct pg_req *r)
{
    pg->pending--;
    r->base.cb(&r->base.res, r->base.ctx);
    a2b_request_free(&r->base);
    if (pg->completed)
        pg->completed(pg->owner);
}

/* Answers r on the next loop iteration: submit never runs a callback
 * itself. */
static void defer(struct a2b_pg *pg, struct pg_req *r)
{
    a2b_request_push(&pg->done, &r->base);
    if (!ev_timer_active(&pg->defer))
        ev_timer_start(pg->loop, &pg->defer, 0, 0);
}

static void defer_unavailable(struct a2b_pg *pg, struct pg_req *r)
{
    a2b_result_error(&r->base.res, 503, "The database connection was lost");
    defer(pg, r);
}

static bool any_ready(const struct a2b_pg *pg)
{
    for (unsigned i = 0; i < pg->nconns; i++)
        if (pg->conns[i].state == CONN_READY)
            return true;
    return false;
}

static const char *row_text(const struct a2b_row *row, int col)
{
    return PQgetvalue(row->cursor, row->index, col);
}

static int64_t row_integer(const struct a2b_row *row, int col)
{
    return strtoll(PQgetvalue(row->cursor, row->index, col), NULL, 10);
}

static double row_real(const struct a2b_row *row, int col)
{
    return strtod(PQgetvalue(row->cursor, row->index, col), NULL);
}

/* Turns the statement's rows into op's result. */
static void result_rows(struct pg_req *r, const PGresult *pr)
{
    int n = PQntuples(pr);
    struct a2b_row row = {.cursor = pr, .text = row_text, .integer = row_integer, .real = row_real};
    bool one = r->base.op == A2B_BOOKING || r->base.op == A2B_USER;
    if (one && n == 0) {
        a2b_result_error(&r->base.res, 404, a2b_op_not_found(r->base.op));
        return;
    }
    bool with_parent = r->base.op == A2B_CITIES || r->base.op == A2B_LOCATIONS || r->base.op == A2B_BOOKINGS;
    if (with_parent) {
        if (strcmp(PQgetvalue(pr, 0, 0), "t") != 0) {
            a2b_result_error(&r->base.res, 404, a2b_op_not_found(r->base.op));
            return;
        }
        row.base = 1;
        if (PQgetisnull(pr, 0, 1))
            n = 0;
    }
    struct json_buf b = {0};
    struct json j;
    json_init_buf(&j, &b);
    if (!one)
        json_array_begin(&j);
    for (row.index = 0; row.index < (one ? 1 : n); row.index++)
        a2b_json_row(&j, r->base.op, &row);
    if (!one)
        json_array_end(&j);
    a2b_result_json(&r->base.res, &b);
}

static void result_from_pg(struct pg_req *r, const PGresult *pr)
{
    ExecStatusType st = PQresultStatus(pr);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        log_warn("a2b %s: %s", a2b_op_name(r->base.op), pr ? PQresultErrorMessage(pr) : "no result");
        if (r->base.op == A2B_READY)
            a2b_result_error(&r->base.res, 503, "The database is not ready");
        else
            a2b_result_error(&r->base.res, 500, "Database error");
        return;
    }
    switch (r->base.op) {
    case A2B_BOOK:
        if (strcmp(PQgetvalue(pr, 0, 0), "t") != 0)
            a2b_result_error(&r->base.res, 404, a2b_op_not_found(A2B_BOOK));
        else if (strcmp(PQgetvalue(pr, 0, 1), "t") != 0)
            a2b_result_error(&r->base.res, 404, A2B_TRANSFER_NOT_FOUND);
        else if (strcmp(PQgetvalue(pr, 0, 2), "1") != 0)
            a2b_result_error(&r->base.res, 409, A2B_ALREADY_BOOKED);
        else
            a2b_result_empty(&r->base.res, 201);
        break;
    case A2B_UPDATE_BOOKING:
    case A2B_UPDATE_USER:
        if (strcmp(PQcmdTuples((PGresult *)pr), "0") == 0)
            a2b_result_error(&r->base.res, 404, a2b_op_not_found(r->base.op));
        else
            a2b_result_empty(&r->base.res, 204);
        break;
    case A2B_READY:
        a2b_result_up(&r->base.res);
        break;
    default:
        result_rows(r, pr);
    }
}

/* The server ended the session with this statement's error (an
 * administrator's shutdown, a crash: SQLSTATE class 57P; a connection
 * exception: class 08), or libpq saw the connection go. */
static bool result_means_lost(const PGconn *conn, const PGresult *pr)
{
    const char *state = pr ? PQresultErrorField(pr, PG_DIAG_SQLSTATE) : NULL;
    return PQstatus(conn) == CONNECTION_BAD ||
           (state && (strncmp(state, "57P", 3) == 0 || strncmp(state, "08", 2) == 0));
}

static void pg_conn_start(struct pg_conn *c, struct pg_req *r);

/* Starts waiting requests on c while it is idle and ready. */
static void pg_conn_take_next(struct pg_conn *c)
{
    struct a2b_pg *pg = c->pg;
    while (c->state == CONN_READY && !c->req && pg->wait.head) {
        pg->waiting--;
        pg_conn_start(c, (struct pg_req *)a2b_request_pop(&pg->wait));
    }
}

/* The connection's request is over: answer it, then take the next. */
static void pg_conn_finish(struct pg_conn *c)
{
    struct pg_req *r = c->req;
    c->req = NULL;
    stat_add(&c->pg->stats->busy, -1);
    complete(c->pg, r);
    pg_conn_take_next(c);
}

/* Closes c's libpq connection (its request, if any, is the caller's), and
 * schedules the next attempt after the backoff, which doubles for the one
 * after. */
static void pg_conn_close(struct pg_conn *c)
{
    struct a2b_pg *pg = c->pg;
    if (c->state == CONN_READY)
        stat_add(&pg->stats->connected, -1);
    if (c->io.events)
        ev_io_stop(pg->loop, &c->io);
    ev_timer_stop(pg->loop, &c->retry);
    PQclear(c->result);
    c->result = NULL;
    PQfinish(c->conn);
    c->conn = NULL;
    c->state = CONN_DOWN;
}

static void pg_conn_retry_later(struct pg_conn *c)
{
    pg_conn_close(c);
    ev_timer_start(c->pg->loop, &c->retry, c->backoff_ms, 0);
    c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
}

/* A serving connection failed: its request is answered 503 (later,
 * through defer), and so are the waiting ones if no connection is left
 * ready: requests fail fast rather than wait for a reconnection. */
static void pg_conn_lost(struct pg_conn *c)
{
    struct a2b_pg *pg = c->pg;
    log_error("a2b: PostgreSQL connection lost: %s", PQerrorMessage(c->conn));
    stat_add(&pg->stats->lost, 1);
    if (c->req) {
        stat_add(&pg->stats->busy, -1);
        defer_unavailable(pg, c->req);
        c->req = NULL;
    }
    c->backoff_ms = BACKOFF_MIN_MS;
    pg_conn_retry_later(c);
    struct a2b_request *r;
    while (!any_ready(pg) && (r = a2b_request_pop(&pg->wait))) {
        pg->waiting--;
        defer_unavailable(pg, (struct pg_req *)r);
    }
}

/* An attempt to re-make c failed (why is in PQerrorMessage or why). */
static void pg_conn_failed(struct pg_conn *c, const char *why)
{
    log_warn("a2b: PostgreSQL reconnection failed (next attempt in %" PRIu64 " ms): %s",
             c->backoff_ms, why ? why : c->conn ? PQerrorMessage(c->conn) : "out of memory");
    stat_add(&c->pg->stats->failures, 1);
    pg_conn_retry_later(c);
}

/* A connection in trouble: lost if it was serving, else a failed attempt. */
static void pg_conn_broke(struct pg_conn *c)
{
    if (c->state == CONN_READY)
        pg_conn_lost(c);
    else
        pg_conn_failed(c, NULL);
}

/* Watches c's socket for events. While the connection is being set up,
 * libpq may replace its socket, so the registration is made afresh. */
static bool pg_conn_watch(struct pg_conn *c, uint32_t events)
{
    if (c->io.events)
        ev_io_stop(c->pg->loop, &c->io);
    c->io.fd = PQsocket(c->conn);
    return ev_io_start(c->pg->loop, &c->io, events) == 0;
}

static bool pg_conn_flush(struct pg_conn *c)
{
    int rc = PQflush(c->conn);
    if (rc < 0) {
        pg_conn_broke(c);
        return false;
    }
    ev_io_modify(c->pg->loop, &c->io, rc ? EV_READ | EV_WRITE : EV_READ);
    return true;
}

/* Sends r on c; if c breaks, r is answered 503 later. */
static void pg_conn_start(struct pg_conn *c, struct pg_req *r)
{
    c->req = r;
    stat_add(&c->pg->stats->busy, 1);
    const char *values[4] = {0};
    const struct a2b_args *a = &r->base.args;
    /* Parameters in the order of stmts[op]; numbers as text. */
    switch (r->base.op) {
    case A2B_CITIES:
        snprintf(r->num[0], sizeof r->num[0], "%" PRId64, a->country_id);
        break;
    case A2B_LOCATIONS:
        snprintf(r->num[0], sizeof r->num[0], "%" PRId64, a->country_id);
        snprintf(r->num[1], sizeof r->num[1], "%" PRId64, a->city_id);
        break;
    case A2B_TRANSFERS:
        snprintf(r->num[0], sizeof r->num[0], "%" PRId64, a->origin_id);
        snprintf(r->num[1], sizeof r->num[1], "%" PRId64, a->destination_id);
        values[2] = a->date;
        break;
    default:
        snprintf(r->num[0], sizeof r->num[0], "%" PRId64, a->user_id);
        snprintf(r->num[1], sizeof r->num[1], "%" PRId64, a->transfer_id);
        if (r->base.op == A2B_BOOK)
            values[2] = a->description;
        if (r->base.op == A2B_UPDATE_BOOKING) {
            values[2] = a->state;
            values[3] = a->description;
        }
        if (r->base.op == A2B_UPDATE_USER) {
            values[1] = a->first_name;
            values[2] = a->last_name;
        }
    }
    for (int i = 0; i < 2; i++)
        if (!values[i])
            values[i] = r->num[i];
    if (!PQsendQueryPrepared(c->conn, a2b_op_name(r->base.op), stmts[r->base.op].nparams, values, NULL, NULL, 0))
        pg_conn_lost(c);
    else
        pg_conn_flush(c);
}

/* The connection is set up: it serves from now on. */
static void pg_conn_ready(struct pg_conn *c)
{
    struct a2b_pg *pg = c->pg;
    ev_timer_stop(pg->loop, &c->retry);
    c->state = CONN_READY;
    c->backoff_ms = BACKOFF_MIN_MS;
    stat_add(&pg->stats->connected, 1);
    log_info("a2b: PostgreSQL connection re-made");
    stat_add(&pg->stats->reconnects, 1);
    pg_conn_take_next(c);
}

/* Sends the next statement to prepare, or puts c to work once all are. */
static void pg_conn_prepare_next(struct pg_conn *c)
{
    int op = c->prepared;
    if (op == A2B_OP_COUNT)
        pg_conn_ready(c);
    else if (!PQsendPrepare(c->conn, a2b_op_name(op), stmts[op].sql, stmts[op].nparams, stmts[op].types))
        pg_conn_failed(c, NULL);
    else
        pg_conn_flush(c);
}

/* One step of PQconnectPoll, then wait for what it asked for. */
static void pg_conn_connect_poll(struct pg_conn *c)
{
    switch (PQconnectPoll(c->conn)) {
    case PGRES_POLLING_READING:
        if (!pg_conn_watch(c, EV_READ))
            pg_conn_failed(c, "cannot watch the socket");
        break;
    case PGRES_POLLING_WRITING:
        if (!pg_conn_watch(c, EV_WRITE))
            pg_conn_failed(c, "cannot watch the socket");
        break;
    case PGRES_POLLING_OK:
        c->state = CONN_PREPARING;
        c->prepared = 0;
        if (PQsetnonblocking(c->conn, 1) != 0 || !pg_conn_watch(c, EV_READ))
            pg_conn_failed(c, NULL);
        else
            pg_conn_prepare_next(c);
        break;
    default:
        pg_conn_failed(c, NULL);
    }
}

/* The retry timer: a DOWN connection's next attempt, or a set-up that
 * took too long. */
static void pg_conn_on_retry(struct ev_loop *loop, struct ev_timer *t)
{
    struct pg_conn *c = t->data;
    if (c->state != CONN_DOWN) {
        pg_conn_failed(c, "timed out");
        return;
    }
    /* libpq resolves a host name here, blocking; an address does not. */
    c->conn = PQconnectStart(c->pg->conninfo);
    if (!c->conn || PQstatus(c->conn) == CONNECTION_BAD) {
        pg_conn_failed(c, NULL);
        return;
    }
    c->state = CONN_CONNECTING;
    ev_timer_start(loop, &c->retry, SETUP_TIMEOUT_MS, 0);
    /* libpq: start as if PQconnectPoll had asked to wait for writing. */
    if (!pg_conn_watch(c, EV_WRITE))
        pg_conn_failed(c, "cannot watch the socket");
}

/* Collects the running statement's results; true once it is over (its
 * first result in c->result). */
static bool pg_conn_statement_over(struct pg_conn *c)
{
    while (!PQisBusy(c->conn)) {
        PGresult *pr = PQgetResult(c->conn);
        if (!pr)
            return true;
        if (!c->result)
            c->result = pr;
        else
            PQclear(pr);
    }
    return false;
}

static void pg_conn_on_io(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct pg_conn *c = io->data;
    if (c->state == CONN_CONNECTING) {
        pg_conn_connect_poll(c);
        return;
    }
    if ((events & EV_WRITE) && !pg_conn_flush(c))
        return;
    if (!(events & EV_READ))
        return;
    if (!PQconsumeInput(c->conn) || PQstatus(c->conn) == CONNECTION_BAD) {
        pg_conn_broke(c);
        return;
    }
    /* Anything that is not our statement's (a notice) has been consumed. */
    bool running = c->state == CONN_PREPARING || c->req;
    if (!running || !pg_conn_statement_over(c))
        return;
    PGresult *pr = c->result;
    c->result = NULL;
    if (c->state == CONN_PREPARING) {
        bool ok = PQresultStatus(pr) == PGRES_COMMAND_OK;
        PQclear(pr);
        if (!ok) {
            pg_conn_failed(c, NULL);
            return;
        }
        c->prepared++;
        pg_conn_prepare_next(c);
        return;
    }
    if (PQresultStatus(pr) != PGRES_TUPLES_OK && PQresultStatus(pr) != PGRES_COMMAND_OK &&
        result_means_lost(c->conn, pr)) {
        log_warn("a2b %s: %s", a2b_op_name(c->req->base.op), PQresultErrorMessage(pr));
        PQclear(pr);
        pg_conn_lost(c);
        return;
    }
    result_from_pg(c->req, pr);
    PQclear(pr);
    pg_conn_finish(c);
}

static void on_defer(struct ev_loop *loop, struct ev_timer *t)
{
    struct a2b_pg *pg = t->data;
    struct a2b_request_list done = pg->done;
    pg->done = (struct a2b_request_list){0};
    struct a2b_request *r;
    while ((r = a2b_request_pop(&done)))
        complete(pg, (struct pg_req *)r);
}

struct a2b_pg *a2b_pg_open(struct ev_loop *loop, const struct a2b_pg_config *cfg, char *err,
                           size_t errlen)
{
    struct a2b_pg *pg = mem_calloc(1, sizeof *pg);
    pg->loop = loop;
    pg->conninfo = mem_strdup(cfg->conninfo);
    pg->nconns = cfg->conns ? cfg->conns : 4;
    pg->queue_max = cfg->queue_max ? cfg->queue_max : 1024;
    pg->stats = cfg->stats;
    pg->completed = cfg->completed;
    pg->owner = cfg->owner;
    ev_timer_init(&pg->defer, on_defer, pg);
    stat_add(&pg->stats->conns, pg->nconns);
    pg->conns = mem_calloc(pg->nconns, sizeof *pg->conns);
    for (unsigned i = 0; i < pg->nconns; i++) {
        struct pg_conn *c = &pg->conns[i];
        c->pg = pg;
        c->io = (struct ev_io){.fd = -1, .cb = pg_conn_on_io, .data = c};
        ev_timer_init(&c->retry, pg_conn_on_retry, c);
        c->backoff_ms = BACKOFF_MIN_MS;
    }
    for (unsigned i = 0; i < pg->nconns; i++) {
        struct pg_conn *c = &pg->conns[i];
        c->conn = PQconnectdb(cfg->conninfo);
        if (PQstatus(c->conn) != CONNECTION_OK)
            goto fail;
        for (int op = 0; op < A2B_OP_COUNT; op++) {
            PGresult *r = PQprepare(c->conn, a2b_op_name(op), stmts[op].sql, stmts[op].nparams,
                                    stmts[op].types);
            bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
            PQclear(r);
            if (!ok)
                goto fail;
        }
        if (PQsetnonblocking(c->conn, 1) != 0 || !pg_conn_watch(c, EV_READ))
            goto fail;
        c->state = CONN_READY;
        stat_add(&pg->stats->connected, 1);
        continue;
    fail:
        snprintf(err, errlen, "a2b: %s", PQerrorMessage(c->conn));
        a2b_pg_close(pg);
        return NULL;
    }
    return pg;
}

void a2b_pg_close(struct a2b_pg *pg)
{
    if (!pg)
        return;
    ev_timer_stop(pg->loop, &pg->defer);
    for (unsigned i = 0; i < pg->nconns; i++) {
        struct pg_conn *c = &pg->conns[i];
        if (c->req) {
            stat_add(&pg->stats->busy, -1);
            a2b_request_free(&c->req->base);
        }
        pg_conn_close(c);
    }
    stat_add(&pg->stats->conns, -(int64_t)pg->nconns);
    a2b_request_list_free(&pg->wait);
    a2b_request_list_free(&pg->done);
    mem_free(pg->conns);
    mem_free(pg->conninfo);
    mem_free(pg);
}

unsigned a2b_pg_pending(const struct a2b_pg *pg) { return pg->pending; }

int a2b_pg_submit(struct a2b_pg *pg, enum a2b_op op, const struct a2b_args *args, a2b_done_fn cb,
                  void *ctx)
{
    struct pg_conn *idle = NULL;
    for (unsigned i = 0; i < pg->nconns && !idle; i++)
        if (pg->conns[i].state == CONN_READY && !pg->conns[i].req)
            idle = &pg->conns[i];
    bool valid = (unsigned)op < A2B_OP_COUNT;
    if (valid && !idle && pg->waiting >= pg->queue_max)
        return -1;
    struct pg_req *r = (struct pg_req *)a2b_request_new(sizeof *r, op, args, cb, ctx);
    pg->pending++;
    if (!valid) {
        a2b_result_error(&r->base.res, 500, "Unknown operation");
        defer(pg, r);
    } else if (!a2b_args_check(op, &r->base.args, &r->base.res)) {
        defer(pg, r);
    } else if (!any_ready(pg)) {
        defer_unavailable(pg, r);
    } else if (idle) {
        pg_conn_start(idle, r);
    } else {
        a2b_request_push(&pg->wait, &r->base);
        pg->waiting++;
    }
    return 0;
}
