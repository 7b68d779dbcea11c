/* a2b_sqlite.c - the a2b schema, bulk load and operations on SQLite. */
#include "a2b/a2b_sqlite.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "a2b/a2b_data.h"
#include "core/log.h"
#include "core/mem.h"

/* Tables only; the indexes come after the load, which is faster than
 * maintaining them row by row. users_transfers is clustered on its primary
 * key, so a user's bookings are one range of the table and need no index
 * of their own. */
static const char schema_sql[] =
    "CREATE TABLE countries(id INTEGER PRIMARY KEY, name TEXT NOT NULL, code TEXT NOT NULL);"
    "CREATE TABLE cities(id INTEGER PRIMARY KEY,"
    " country_id INTEGER NOT NULL REFERENCES countries(id) ON DELETE CASCADE,"
    " name TEXT NOT NULL, code TEXT NOT NULL);"
    "CREATE TABLE locations(id INTEGER PRIMARY KEY,"
    " city_id INTEGER NOT NULL REFERENCES cities(id) ON DELETE CASCADE,"
    " latitude REAL NOT NULL, longitude REAL NOT NULL);"
    "CREATE TABLE transfers(id INTEGER PRIMARY KEY,"
    " origin INTEGER NOT NULL REFERENCES locations(id) ON DELETE CASCADE,"
    " destination INTEGER NOT NULL REFERENCES locations(id) ON DELETE CASCADE,"
    " capacity INTEGER NOT NULL, date TEXT NOT NULL,"
    " duration_start TEXT NOT NULL, duration_end TEXT NOT NULL,"
    " price INTEGER NOT NULL, description TEXT NOT NULL);"
    "CREATE TABLE users(id INTEGER PRIMARY KEY, first_name TEXT NOT NULL, last_name TEXT NOT NULL,"
    " email TEXT NOT NULL, phone TEXT NOT NULL);"
    "CREATE TABLE users_transfers("
    " user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    " transfer_id INTEGER NOT NULL REFERENCES transfers(id) ON DELETE CASCADE,"
    " state TEXT NOT NULL, description TEXT NOT NULL,"
    " PRIMARY KEY(user_id, transfer_id)) WITHOUT ROWID;"
    "CREATE TABLE a2b_meta(seed INTEGER NOT NULL, scale REAL NOT NULL);";

static const char index_sql[] =
    "CREATE INDEX cities_country ON cities(country_id);"
    "CREATE INDEX locations_city ON locations(city_id);"
    "CREATE INDEX transfers_search ON transfers(origin, destination, date);"
    "CREATE UNIQUE INDEX users_email ON users(email);"
    "CREATE UNIQUE INDEX users_phone ON users(phone);";

/* A location with its city and country: 9 columns, in the order
 * read_location() takes them. */
#define LOCATION_COLUMNS(l, c, k)                                                                   \
    l ".id, " l ".latitude, " l ".longitude, " c ".id, " c ".name, " c ".code, " k ".id, " k      \
      ".name, " k ".code"
#define TRANSFER_COLUMNS                                                                           \
    "t.id, " LOCATION_COLUMNS("lo", "co", "ko") ", " LOCATION_COLUMNS("ld", "cd", "kd")            \
        ", t.capacity, t.duration_start, t.duration_end, t.price, t.description"
/* Follows "transfers t". */
#define TRANSFER_JOINS                                                                             \
    " JOIN locations lo ON lo.id = t.origin JOIN cities co ON co.id = lo.city_id"                  \
    " JOIN countries ko ON ko.id = co.country_id"                                                  \
    " JOIN locations ld ON ld.id = t.destination JOIN cities cd ON cd.id = ld.city_id"             \
    " JOIN countries kd ON kd.id = cd.country_id"
#define USER_COLUMNS "u.id, u.first_name, u.last_name, u.email, u.phone"
#define BOOKING_SELECT                                                                             \
    "SELECT " USER_COLUMNS ", " TRANSFER_COLUMNS ", ut.state, ut.description"                      \
    " FROM users_transfers ut JOIN users u ON u.id = ut.user_id"                                   \
    " JOIN transfers t ON t.id = ut.transfer_id" TRANSFER_JOINS

enum stmt_id {
    S_COUNTRIES,
    S_CITIES,
    S_COUNTRY_EXISTS,
    S_LOCATIONS,
    S_CITY_IN_COUNTRY,
    S_TRANSFERS,
    S_BOOK,
    S_USER_EXISTS,
    S_BOOKINGS,
    S_BOOKING,
    S_UPDATE_BOOKING,
    S_USER,
    S_UPDATE_USER,
    S_READY,
    S_COUNT
};

static const char *const stmt_sql[S_COUNT] = {
    [S_COUNTRIES] = "SELECT id, name, code FROM countries ORDER BY id",
    [S_CITIES] = "SELECT c.id, c.name, c.code, k.id, k.name, k.code FROM cities c"
                 " JOIN countries k ON k.id = c.country_id WHERE c.country_id = ?1 ORDER BY c.id",
    [S_COUNTRY_EXISTS] = "SELECT 1 FROM countries WHERE id = ?1",
    [S_LOCATIONS] = "SELECT " LOCATION_COLUMNS("l", "c", "k") " FROM locations l"
                    " JOIN cities c ON c.id = l.city_id JOIN countries k ON k.id = c.country_id"
                    " WHERE l.city_id = ?2 AND c.country_id = ?1 ORDER BY l.id",
    [S_CITY_IN_COUNTRY] = "SELECT 1 FROM cities WHERE id = ?2 AND country_id = ?1",
    [S_TRANSFERS] = "SELECT " TRANSFER_COLUMNS " FROM transfers t" TRANSFER_JOINS
                    " WHERE t.origin = ?1 AND t.destination = ?2 AND t.date = ?3 ORDER BY t.id",
    /* One statement, so it is atomic without a transaction; when nothing
     * is inserted, S_USER_EXISTS tells which parent is missing. */
    [S_BOOK] = "INSERT INTO users_transfers(user_id, transfer_id, state, description)"
               " SELECT ?1, ?2, 'BOOKED', ?3 WHERE EXISTS (SELECT 1 FROM users WHERE id = ?1)"
               " AND EXISTS (SELECT 1 FROM transfers WHERE id = ?2)",
    [S_USER_EXISTS] = "SELECT 1 FROM users WHERE id = ?1",
    [S_BOOKINGS] = BOOKING_SELECT " WHERE ut.user_id = ?1 ORDER BY ut.transfer_id",
    [S_BOOKING] = BOOKING_SELECT " WHERE ut.user_id = ?1 AND ut.transfer_id = ?2",
    [S_UPDATE_BOOKING] = "UPDATE users_transfers SET state = ?3, description = ?4"
                         " WHERE user_id = ?1 AND transfer_id = ?2",
    [S_USER] = "SELECT " USER_COLUMNS " FROM users u WHERE u.id = ?1",
    [S_UPDATE_USER] = "UPDATE users SET first_name = ?2, last_name = ?3 WHERE id = ?1",
    [S_READY] = "SELECT 1",
};

struct a2b_sqlite {
    sqlite3 *db;
    sqlite3_stmt *stmt[S_COUNT];
};

static void set_err(char *err, size_t errlen, const char *what, sqlite3 *db)
{
    snprintf(err, errlen, "%s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
}

/* ---- creating the database ------------------------------------------------ */

struct loader {
    sqlite3 *db;
    sqlite3_stmt *country, *city, *location, *transfer, *user, *booking, *meta;
};

/* Steps an insert whose parameters are bound, and resets it. */
static int insert_row(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : -1;
}

static void bind_text(sqlite3_stmt *s, int i, const char *text)
{
    sqlite3_bind_text(s, i, text, -1, SQLITE_STATIC);
}

static int load_rows(struct loader *l, const struct a2b_data *d)
{
    for (int64_t id = 1; id <= A2B_DATA_COUNTRIES; id++) {
        struct a2b_country_row r;
        a2b_data_country(d, id, &r);
        sqlite3_bind_int64(l->country, 1, r.id);
        bind_text(l->country, 2, r.name);
        bind_text(l->country, 3, r.code);
        if (insert_row(l->country))
            return -1;
    }
    for (int64_t id = 1; id <= A2B_DATA_CITIES; id++) {
        struct a2b_city_row r;
        a2b_data_city(d, id, &r);
        sqlite3_bind_int64(l->city, 1, r.id);
        sqlite3_bind_int64(l->city, 2, r.country_id);
        bind_text(l->city, 3, r.name);
        bind_text(l->city, 4, r.code);
        if (insert_row(l->city))
            return -1;
    }
    for (int64_t id = 1; id <= A2B_DATA_LOCATIONS; id++) {
        struct a2b_location_row r;
        a2b_data_location(d, id, &r);
        sqlite3_bind_int64(l->location, 1, r.id);
        sqlite3_bind_int64(l->location, 2, r.city_id);
        sqlite3_bind_double(l->location, 3, r.latitude);
        sqlite3_bind_double(l->location, 4, r.longitude);
        if (insert_row(l->location))
            return -1;
    }
    for (int64_t id = 1; id <= d->transfers; id++) {
        struct a2b_transfer_row r;
        a2b_data_transfer(d, id, &r);
        sqlite3_bind_int64(l->transfer, 1, r.id);
        sqlite3_bind_int64(l->transfer, 2, r.origin);
        sqlite3_bind_int64(l->transfer, 3, r.destination);
        sqlite3_bind_int(l->transfer, 4, r.capacity);
        bind_text(l->transfer, 5, r.date);
        bind_text(l->transfer, 6, r.start);
        bind_text(l->transfer, 7, r.end);
        sqlite3_bind_int64(l->transfer, 8, r.price_cents);
        bind_text(l->transfer, 9, r.description);
        if (insert_row(l->transfer))
            return -1;
    }
    for (int64_t id = 1; id <= d->users; id++) {
        struct a2b_user_row r;
        a2b_data_user(d, id, &r);
        sqlite3_bind_int64(l->user, 1, r.id);
        bind_text(l->user, 2, r.first_name);
        bind_text(l->user, 3, r.last_name);
        bind_text(l->user, 4, r.email);
        bind_text(l->user, 5, r.phone);
        if (insert_row(l->user))
            return -1;
        /* Users in id order and their bookings in transfer order: every
         * booking lands at the end of the clustered primary key. */
        struct a2b_booking_row b[A2B_DATA_MAX_USER_BOOKINGS];
        unsigned n = a2b_data_user_bookings(d, id, b);
        for (unsigned i = 0; i < n; i++) {
            sqlite3_bind_int64(l->booking, 1, b[i].user_id);
            sqlite3_bind_int64(l->booking, 2, b[i].transfer_id);
            bind_text(l->booking, 3, b[i].state);
            bind_text(l->booking, 4, b[i].description);
            if (insert_row(l->booking))
                return -1;
        }
    }
    return 0;
}

static int loader_prepare(struct loader *l)
{
    static const char *const sql[] = {
        "INSERT INTO countries VALUES (?1, ?2, ?3)",
        "INSERT INTO cities VALUES (?1, ?2, ?3, ?4)",
        "INSERT INTO locations VALUES (?1, ?2, ?3, ?4)",
        "INSERT INTO transfers VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        "INSERT INTO users VALUES (?1, ?2, ?3, ?4, ?5)",
        "INSERT INTO users_transfers VALUES (?1, ?2, ?3, ?4)",
        "INSERT INTO a2b_meta VALUES (?1, ?2)",
    };
    sqlite3_stmt **out[] = {&l->country, &l->city, &l->location, &l->transfer,
                            &l->user,    &l->booking, &l->meta};
    for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++)
        if (sqlite3_prepare_v2(l->db, sql[i], -1, out[i], NULL) != SQLITE_OK)
            return -1;
    return 0;
}

static void loader_finalize(struct loader *l)
{
    sqlite3_stmt *all[] = {l->country, l->city, l->location, l->transfer,
                           l->user,    l->booking, l->meta};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sqlite3_finalize(all[i]);
}

static int fsync_path(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* The journal is off and nothing is synced while loading: the file is not
 * at its final path until it is complete and synced. */
static const char load_pragmas[] = "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                                   "PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-65536;"
                                   "PRAGMA temp_store=MEMORY;";

int a2b_sqlite_create(const char *path, uint64_t seed, double scale, char *err, size_t errlen)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.loading", path) >= (int)sizeof tmp) {
        snprintf(err, errlen, "path too long: %s", path);
        return -1;
    }
    unlink(tmp);
    struct a2b_data d;
    a2b_data_init(&d, seed, scale);
    struct loader l = {0};
    int rc = -1;
    if (sqlite3_open_v2(tmp, &l.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        set_err(err, errlen, tmp, l.db);
        goto out;
    }
    if (sqlite3_exec(l.db, load_pragmas, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(l.db, schema_sql, NULL, NULL, NULL) != SQLITE_OK ||
        loader_prepare(&l) || sqlite3_exec(l.db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        set_err(err, errlen, "creating the schema", l.db);
        goto out;
    }
    sqlite3_bind_int64(l.meta, 1, (sqlite3_int64)seed);
    sqlite3_bind_double(l.meta, 2, scale);
    if (load_rows(&l, &d) || insert_row(l.meta)) {
        set_err(err, errlen, "loading the data set", l.db);
        goto out;
    }
    if (sqlite3_exec(l.db, index_sql, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(l.db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(l.db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) != SQLITE_OK) {
        set_err(err, errlen, "indexing", l.db);
        goto out;
    }
    rc = 0;
out:
    loader_finalize(&l);
    sqlite3_close(l.db);
    if (rc == 0 && (fsync_path(tmp, O_RDONLY) || rename(tmp, path))) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        rc = -1;
    }
    if (rc == 0) {
        /* The rename itself is durable once the directory is synced. */
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *(slash == dir ? slash + 1 : slash) = '\0';
        fsync_path(slash ? dir : ".", O_RDONLY | O_DIRECTORY);
    } else {
        unlink(tmp);
    }
    return rc;
}

/* ---- serving ---------------------------------------------------------- */

struct a2b_sqlite *a2b_sqlite_open(const char *path, char *err, size_t errlen)
{
    struct a2b_sqlite *s = mem_calloc(1, sizeof *s);
    /* One thread per connection at a time: SQLite's own mutexes are not
     * needed. */
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        set_err(err, errlen, path, s->db);
        goto fail;
    }
    if (sqlite3_exec(s->db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
                     NULL, NULL, NULL) != SQLITE_OK) {
        set_err(err, errlen, path, s->db);
        goto fail;
    }
    sqlite3_busy_timeout(s->db, 5000);
    for (int i = 0; i < S_COUNT; i++)
        if (sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->stmt[i], NULL) !=
            SQLITE_OK) {
            set_err(err, errlen, "not an a2b database", s->db);
            goto fail;
        }
    return s;
fail:
    a2b_sqlite_close(s);
    return NULL;
}

void a2b_sqlite_close(struct a2b_sqlite *s)
{
    if (!s)
        return;
    for (int i = 0; i < S_COUNT; i++)
        sqlite3_finalize(s->stmt[i]);
    sqlite3_close(s->db);
    mem_free(s);
}

static const char *col_text(const struct a2b_row *r, int col)
{
    const unsigned char *t = sqlite3_column_text((sqlite3_stmt *)r->cursor, col);
    return t ? (const char *)t : "";
}

static int64_t col_integer(const struct a2b_row *r, int col)
{
    return sqlite3_column_int64((sqlite3_stmt *)r->cursor, col);
}

static double col_real(const struct a2b_row *r, int col)
{
    return sqlite3_column_double((sqlite3_stmt *)r->cursor, col);
}

/* The failure of a statement: busy is 503 (try again), the rest 500. */
static void db_failed(struct a2b_sqlite *s, enum a2b_op op, int rc, struct a2b_result *res)
{
    log_warn("a2b %s: %s", a2b_op_name(op), sqlite3_errmsg(s->db));
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
        a2b_result_error(res, 503, "The database is busy");
    else
        a2b_result_error(res, 500, "Database error");
}

/* Binds what statement id needs from args (parameters are numbered as in
 * stmt_sql). */
static sqlite3_stmt *bind(struct a2b_sqlite *s, enum stmt_id id, const struct a2b_args *a)
{
    sqlite3_stmt *st = s->stmt[id];
    switch (id) {
    case S_CITIES:
    case S_COUNTRY_EXISTS:
        sqlite3_bind_int64(st, 1, a->country_id);
        break;
    case S_LOCATIONS:
    case S_CITY_IN_COUNTRY:
        sqlite3_bind_int64(st, 1, a->country_id);
        sqlite3_bind_int64(st, 2, a->city_id);
        break;
    case S_TRANSFERS:
        sqlite3_bind_int64(st, 1, a->origin_id);
        sqlite3_bind_int64(st, 2, a->destination_id);
        bind_text(st, 3, a->date);
        break;
    case S_BOOK:
        sqlite3_bind_int64(st, 1, a->user_id);
        sqlite3_bind_int64(st, 2, a->transfer_id);
        bind_text(st, 3, a->description);
        break;
    case S_USER_EXISTS:
    case S_BOOKINGS:
    case S_USER:
        sqlite3_bind_int64(st, 1, a->user_id);
        break;
    case S_BOOKING:
        sqlite3_bind_int64(st, 1, a->user_id);
        sqlite3_bind_int64(st, 2, a->transfer_id);
        break;
    case S_UPDATE_BOOKING:
        sqlite3_bind_int64(st, 1, a->user_id);
        sqlite3_bind_int64(st, 2, a->transfer_id);
        bind_text(st, 3, a->state);
        bind_text(st, 4, a->description);
        break;
    case S_UPDATE_USER:
        sqlite3_bind_int64(st, 1, a->user_id);
        bind_text(st, 2, a->first_name);
        bind_text(st, 3, a->last_name);
        break;
    default:
        break;
    }
    return st;
}

/* Resets a statement and drops its bindings (strings it must not keep). */
static void done_with(sqlite3_stmt *st)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

/* Runs a one-row existence query: 1 if a row came back, 0 if none, or the
 * SQLite error code negated. */
static int exists(struct a2b_sqlite *s, enum stmt_id id, const struct a2b_args *a)
{
    sqlite3_stmt *st = bind(s, id, a);
    int rc = sqlite3_step(st);
    done_with(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -rc;
}

/* Rows of statement id as a JSON array of op's objects (or, if one, the
 * single object). When no row came back, parent (if not S_COUNT)
 * tells whether the owning resource exists: if not, the result is 404. */
static void query(struct a2b_sqlite *s, enum a2b_op op, enum stmt_id id, const struct a2b_args *a,
                  bool one, enum stmt_id parent, struct a2b_result *res)
{
    struct json_buf b = {0};
    struct json j;
    json_init_buf(&j, &b);
    if (!one)
        json_array_begin(&j);
    sqlite3_stmt *st = bind(s, id, a);
    struct a2b_row row = {.cursor = st, .text = col_text, .integer = col_integer, .real = col_real};
    int rc, rows = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && !(one && rows == 1)) {
        a2b_json_row(&j, op, &row);
        rows++;
    }
    done_with(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        json_buf_free(&b);
        db_failed(s, op, rc, res);
        return;
    }
    if (rows == 0 && one) {
        json_buf_free(&b);
        a2b_result_error(res, 404, a2b_op_not_found(op));
        return;
    }
    if (rows == 0 && parent != S_COUNT) {
        int found = exists(s, parent, a);
        if (found <= 0) {
            json_buf_free(&b);
            if (found < 0)
                db_failed(s, op, -found, res);
            else
                a2b_result_error(res, 404, a2b_op_not_found(op));
            return;
        }
    }
    if (!one)
        json_array_end(&j);
    a2b_result_json(res, &b);
}

static void book(struct a2b_sqlite *s, const struct a2b_args *a, struct a2b_result *res)
{
    sqlite3_stmt *st = bind(s, S_BOOK, a);
    int rc = sqlite3_step(st);
    done_with(st);
    if (rc == SQLITE_CONSTRAINT) {
        a2b_result_error(res, 409, A2B_ALREADY_BOOKED);
        return;
    }
    if (rc != SQLITE_DONE) {
        db_failed(s, A2B_BOOK, rc, res);
        return;
    }
    if (sqlite3_changes(s->db) == 1) {
        a2b_result_empty(res, 201);
        return;
    }
    int user = exists(s, S_USER_EXISTS, a);
    if (user < 0)
        db_failed(s, A2B_BOOK, -user, res);
    else
        a2b_result_error(res, 404, user ? A2B_TRANSFER_NOT_FOUND : a2b_op_not_found(A2B_BOOK));
}

static void update(struct a2b_sqlite *s, enum a2b_op op, enum stmt_id id, const struct a2b_args *a,
                   struct a2b_result *res)
{
    sqlite3_stmt *st = bind(s, id, a);
    int rc = sqlite3_step(st);
    done_with(st);
    if (rc != SQLITE_DONE)
        db_failed(s, op, rc, res);
    else if (sqlite3_changes(s->db) == 0)
        a2b_result_error(res, 404, a2b_op_not_found(op));
    else
        a2b_result_empty(res, 204);
}

static void ready(struct a2b_sqlite *s, struct a2b_result *res)
{
    int rc = exists(s, S_READY, NULL);
    if (rc < 0) {
        log_warn("a2b ready: %s", sqlite3_errmsg(s->db));
        a2b_result_error(res, 503, "The database is not ready");
        return;
    }
    a2b_result_up(res);
}

void a2b_sqlite_exec(struct a2b_sqlite *s, enum a2b_op op, const struct a2b_args *a,
                     struct a2b_result *res)
{
    if (!a2b_args_check(op, a, res))
        return;
    switch (op) {
    case A2B_COUNTRIES:
        query(s, op, S_COUNTRIES, a, false, S_COUNT, res);
        break;
    case A2B_CITIES:
        query(s, op, S_CITIES, a, false, S_COUNTRY_EXISTS, res);
        break;
    case A2B_LOCATIONS:
        query(s, op, S_LOCATIONS, a, false, S_CITY_IN_COUNTRY, res);
        break;
    case A2B_TRANSFERS:
        query(s, op, S_TRANSFERS, a, false, S_COUNT, res);
        break;
    case A2B_BOOK:
        book(s, a, res);
        break;
    case A2B_BOOKINGS:
        query(s, op, S_BOOKINGS, a, false, S_USER_EXISTS, res);
        break;
    case A2B_BOOKING:
        query(s, op, S_BOOKING, a, true, S_COUNT, res);
        break;
    case A2B_UPDATE_BOOKING:
        update(s, op, S_UPDATE_BOOKING, a, res);
        break;
    case A2B_USER:
        query(s, op, S_USER, a, true, S_COUNT, res);
        break;
    case A2B_UPDATE_USER:
        update(s, op, S_UPDATE_USER, a, res);
        break;
    case A2B_READY:
        ready(s, res);
        break;
    default:
        a2b_result_error(res, 500, "Unknown operation");
    }
}
