/* scenario.h - load-test scenarios as data: the journey one virtual user
 * walks, as Gatling's scenario DSL, parsed from a small line-based text
 * format (docs/http_open.md) by a pure parser. The a2b journey of the
 * reference ships built in, written in that same format.
 *
 * A scenario is a list of steps: requests (method, path template with
 * ${var} references, optional body template, accepted statuses,
 * extractions of values from JSON answers into variables), pauses (uniform
 * between a minimum and a maximum), and exit-if-failed (the user stops
 * when any earlier request failed). Feeders give each user variables drawn
 * uniformly from an integer range; ${uuid} is a fresh random UUID at each
 * use.
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

struct scn_feeder {
    unsigned var;
    uint64_t min, max; /* uniform, inclusive */
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

/* The reference's a2b journey: 14 requests, 14 pauses (docs/http_open.md). */
extern const char scn_a2b_text[];

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
