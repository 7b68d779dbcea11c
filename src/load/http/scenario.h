/* scenario.h - load-test scenarios as data: the journey one virtual user
 * walks, as Gatling's scenario DSL, parsed from a small line-based text
 * format (docs/http_open.md) by a pure parser. The a2b journey of the
 * reference ships built in, written in that same format.
 *
 * A scenario is a list of steps: requests (method, path template with
 * ${var} references, optional body template, accepted statuses,
 * extractions of values from JSON answers into variables), pauses (uniform
 * between a minimum and a maximum), and exit-if-failed (the user stops
 * when any earlier request failed). Feeders give each user variables when
 * it starts: drawn uniformly from an integer range, a record of a CSV file
 * (random, circular or queue, as Gatling's csv feeders), or a route of the
 * a2b data set (a2b_data.h) that has a transfer. ${uuid} is a fresh random
 * UUID at each use.
 *
 * The JSONPath subset: "$" then optionally "[*]" (or "[:]") for "every
 * element of the root array", then ".field" any number of times; the
 * fields must lead to a string or a number. The pick is "first" or
 * "random" (Gatling's find and findRandom).
 */
#ifndef SHOOTOUT_SCENARIO_H
#define SHOOTOUT_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "a2b/a2b_data.h"

#define SCN_MAX_VARS 32
#define SCN_MAX_STEPS 256
#define SCN_MAX_EXPECT 8
#define SCN_MAX_EXTRACT 4
#define SCN_MAX_FIELDS 8
#define SCN_MAX_FEEDERS 8
/* The variable every scenario has: a fresh UUID at each use. */
#define SCN_VAR_UUID 0

/* A template: text with ${var} references, as segments. */
struct scn_seg {
    int var;          /* -1: literal text */
    const char *text; /* literal: into the template's text */
    size_t len;
};

struct scn_tpl {
    char *text; /* owned copy of the literal text */
    struct scn_seg *segs;
    unsigned nsegs;
};

enum scn_pick { SCN_PICK_FIRST, SCN_PICK_RANDOM };

struct scn_path {
    bool each; /* "[*]": every element of the root array */
    unsigned nfields;
    char *fields[SCN_MAX_FIELDS];
};

struct scn_extract {
    unsigned var;
    struct scn_path path;
    enum scn_pick pick;
};

struct scn_request {
    unsigned name;  /* index into scenario.names: stats are per name */
    char *method;
    struct scn_tpl path;
    bool has_body;
    struct scn_tpl body;
    unsigned nexpect; /* 0: any 2xx or 304, as Gatling's default check */
    int expect[SCN_MAX_EXPECT];
    unsigned nextract;
    struct scn_extract extract[SCN_MAX_EXTRACT];
};

enum scn_step_kind { SCN_REQUEST, SCN_PAUSE, SCN_EXIT_IF_FAILED };

struct scn_step {
    enum scn_step_kind kind;
    struct scn_request req;      /* SCN_REQUEST */
    double pause_min, pause_max; /* SCN_PAUSE, seconds */
};

/* A CSV file (RFC 4180) parsed whole: a header row naming ncols columns,
 * then nrows records of as many fields. */
struct scn_csv {
    unsigned ncols;
    uint32_t nrows;
    char *data;    /* every field unescaped and NUL-terminated, row after row */
    uint32_t *row; /* nrows + 1 offsets into data; row[0] is the header */
};

#define SCN_CSV_MAX_BYTES (64u * 1024 * 1024)
#define SCN_CSV_MAX_RECORDS 1000000u
#define SCN_CSV_MAX_COLUMNS 16u
#define SCN_CSV_MAX_FIELD 4096u

/* Parses text[0..len) into out (free it with scn_csv_free). Fields are
 * separated by ',' and records by LF or CRLF; a field starting with '"' is
 * quoted ("" stands for a quote, commas are data); empty lines are skipped
 * and a leading UTF-8 BOM is ignored. Refused, with "name:LINE: why" in
 * err: a control character in a field (values go into requests as they
 * are), a quote inside an unquoted field, text after a closing quote, a
 * record whose field count differs from the header's, a header name that
 * is not a variable name (letters, digits, '_', '-') or repeats, no
 * record, and anything over the SCN_CSV_MAX_* bounds. */
int scn_csv_parse(const char *name, const char *text, size_t len, struct scn_csv *out, char *err,
                  size_t errlen);
void scn_csv_free(struct scn_csv *c);
/* Field col of row (0: the header, 1..nrows: the records). */
const char *scn_csv_field(const struct scn_csv *c, uint32_t row, unsigned col);

enum scn_feed_kind {
    SCN_FEED_RANGE,      /* feed VAR MIN MAX */
    SCN_FEED_CSV,        /* feed-csv PATH [random|circular|queue] */
    /* feed-a2b-routes [SCALE [SEED]]: originId, destinationId and date of
     * a transfer, so that a search with them finds it */
    SCN_FEED_A2B_ROUTES,
};

enum scn_order { SCN_ORDER_RANDOM, SCN_ORDER_CIRCULAR, SCN_ORDER_QUEUE };

/* A CSV feeder's records, order and run-time cursor (scenario.c). */
struct scn_csv_feed;

/* The variables a feeder sets are var .. var + nvars - 1. */
struct scn_feeder {
    enum scn_feed_kind kind;
    unsigned var, nvars;
    uint64_t min, max;         /* RANGE: uniform, inclusive */
    struct scn_csv_feed *csv;  /* CSV, owned */
    struct a2b_data routes;    /* A2B_ROUTES: the data set whose transfers are drawn */
};

struct scenario {
    char *name;
    char *headers; /* "Name: value\r\n" lines sent with every request */
    unsigned nsteps;
    struct scn_step *steps;
    unsigned nvars;
    char *vars[SCN_MAX_VARS]; /* vars[SCN_VAR_UUID] is "uuid" */
    unsigned nnames;
    char **names; /* distinct request names, in order of appearance */
    unsigned nfeeders;
    struct scn_feeder feeders[SCN_MAX_FEEDERS];
    unsigned nrequests; /* request steps */
};

/* Parses a scenario file's text[0..len). Returns 0 with *out filled (free
 * it with scn_free), or -1 with "line N: why" in err and *out empty. */
int scn_parse(const char *text, size_t len, struct scenario *out, char *err, size_t errlen);
void scn_free(struct scenario *s);

/* The reference's a2b journey: 14 requests, 14 pauses (docs/http_open.md),
 * its transfer search on a route of our data set (feed-a2b-routes). */
extern const char scn_a2b_text[];

/* Gives a starting user its fed variables: sets vals[v] (freeing what was
 * there) to a new string for every variable of every feeder, drawing from
 * *rng. Safe from several threads at once (circular and queue cursors are
 * atomic). Returns 0, or -1 when a queue feeder has no record left; the
 * user must not start then, and vals holds no fed value. */
int scn_feed(const struct scenario *s, char **vals, uint64_t *rng);
/* Puts the circular and queue feeders back at their first record, for a
 * new run. Not concurrent with scn_feed. */
void scn_feed_rewind(const struct scenario *s);
/* The path of a queue feeder that refused a user since the last rewind
 * (it ran dry), or NULL. */
const char *scn_feed_dry(const struct scenario *s);

/* Makes s the feeders of shard index of count (`--shard I/N`), so that no
 * two shards give a user the same record or value: record i of a CSV
 * feeder (from 0) goes to the shard i mod count, and a range feeder's
 * MIN..MAX is cut into count contiguous blocks, the index-th this shard's.
 * An a2b route is data to search, not an identity, and is drawn from all.
 * 0, or -1 with a message in err when a feeder has fewer records or values
 * than shards. Before the run, once. */
int scn_set_shard(struct scenario *s, unsigned index, unsigned count, char *err, size_t errlen);

/* Whether status passes the request's expectations. */
bool scn_status_ok(const struct scn_request *r, int status);

/* A growable output buffer (mem.h); zero it before first use. */
struct scn_buf {
    char *data;
    size_t len, cap;
};
void scn_buf_add(struct scn_buf *b, const void *data, size_t len);
void scn_buf_free(struct scn_buf *b);

/* Appends the template with vals[i] (NUL-terminated, NULL when unset) in
 * place of ${var i}; ${uuid} draws from *rng. Returns 0, or the index of
 * a referenced variable that is unset (> 0), leaving b partly written. */
int scn_render(const struct scn_tpl *t, char *const *vals, uint64_t *rng, struct scn_buf *b);

/* Parses a JSONPath of the subset into out (fields owned: scn_path_free).
 * 0, or -1 if it is not in the subset. */
int scn_path_parse(const char *s, size_t len, struct scn_path *out);
void scn_path_free(struct scn_path *p);

/* Evaluates path over the JSON document json[0..len) and picks one match
 * (random: uniformly from *rng). A string match is its text between the
 * quotes (escapes not decoded), a number its text; *out points into json.
 * Returns 1 with a match, 0 with none, -1 if json is not valid JSON (or
 * nests deeper than 64). */
int scn_path_eval(const struct scn_path *path, const char *json, size_t len, enum scn_pick pick,
                  uint64_t *rng, const char **out, size_t *out_len);

#endif
