/* result.h - the one result model of every experiment: a row per measured
 * repetition (and per aggregate over them), the run's context, and the
 * writers that serve every experiment alike: the JSON file (fields after
 * Google Benchmark's context/benchmarks[] and k6's percentile names, see
 * ARCHITECTURE.md) and the terminal table.
 *
 * Experiments fill rows; they never format output themselves.
 */
#ifndef SHOOTOUT_RESULT_H
#define SHOOTOUT_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report/hist.h"
#include "report/seclat.h"
#include "report/texttab.h"

struct json;

#define RESULT_MAX_CONFIG 12
/* The latency percentiles every row with latency keeps, for the report's
 * spectrum: 1/(1-p) = 2, 4, 10, 20, 40, 100 ... 10000, evenly spread on a
 * logarithmic axis (result_spectrum_p). */
#define RESULT_SPECTRUM_N 12
/* How many figures of its own an experiment may keep in a row (own[]). */
#define RESULT_OWN_N 6
#define RESULT_NMETRICS (30 + RESULT_SPECTRUM_N + RESULT_OWN_N)

extern const double result_spectrum_p[RESULT_SPECTRUM_N];

/* One configuration value of an experiment, e.g. {"conns", 1000}. */
struct result_param {
    const char *key; /* static */
    double value;
};

/* One second of a run's time series: the open-model runs' (as the
 * saturation point and the report's timelines read it), and the closed
 * runs' throughput (mqtt-load, mqtt-ping, rpc-seq). A latency of 0: not
 * measured that second. */
struct result_point {
    double active;    /* Gatling's active users in that second; 0 for a closed run */
    double responses; /* responses per second, OK and KO (the generator's own KOs
                       * too); a closed run's ops (op_def: those of the CPU
                       * per op, not always the throughput's) per second */
    double p95_ms;    /* p95 of the OK responses that ended in that second */
    double sent;      /* requests sent in that second: the demand */
    double ok;        /* OK responses that ended in that second */
    double ko_server; /* KO responses that ended in it, but the generator's own failures */
    double p50_ms, p99_ms; /* of the ops that ended in that second */
};

/* A run's series, second by second; n = 0: the run has none. */
struct result_series {
    /* mem_alloc'd; the row owns it once appended to a result_set, which
     * frees it (aggregate rows carry no series). */
    struct result_point *points;
    unsigned n;
    int saturation_s; /* the saturation second, -1: none */
};

/* A sharded run's part (`--shard I/N`: report/merge.h puts the parts
 * together), or a merged row's parts; count 0: neither. */
struct result_shard {
    unsigned index, count; /* this part, of count; a merged row: index 0 */
    unsigned threads;      /* the client's threads, for judging its CPU */
    double start_at;       /* the common start, unix seconds; 0: none */
    /* The measured window in wall-clock unix seconds: the run's start
     * plus its setup, for duration_s. */
    double window_start, window_end;
    /* A merged row: the shards whose own CPU shows they were saturated
     * (bit i: shard i), so that the merged figures may be the client's. */
    uint64_t saturated;
    bool merged;
};

/* A column of the terminal table: its title ("%s": the op's unit), the
 * metric it shows (RESULT_METRIC) times scale with precision decimals, and
 * what it counts, printed above the table (NULL: the title says it). */
#define RESULT_TABLE_COLS 16 /* a table's columns at most, the run's aside */
struct result_col {
    const char *title;
    unsigned metric;
    double scale;
    int precision;
    const char *def;
};

struct result_row {
    char name[128];         /* "mqtt-load/mosquitto/1000c" */
    const char *experiment; /* static: "mqtt-load" */
    char target[80];        /* what was measured: a label or host:port */
    const char *target_version; /* what it says it is ("Mosquitto 2.0.11"), NULL: unknown */
    /* NULL for an iteration row; "mean", "median" or "stddev" for an
     * aggregate over the iterations. */
    const char *aggregate_name;
    unsigned repetitions, repetition_index;
    struct result_param config[RESULT_MAX_CONFIG];
    unsigned nconfig;
    /* Static texts saying what each figure counts, carried into the JSON
     * so that a reader never has to guess. */
    const char *throughput_def;
    const char *throughput_messaging_def; /* NULL: no second throughput */
    /* An experiment in two timed phases (mqtt-load --offline: publishing
     * into queues, then draining them) names each phase's throughput;
     * NULL: no phases. */
    const char *publish_def, *drain_def;
    const char *op_def;                   /* one "op" of the cpu_us_per_op fields */
    const char *op_unit; /* an op's short name in units ("msg" when NULL, "call"): k msg/s */
    /* The table's columns of an experiment whose ops are not messages
     * (mqtt-conns: connections), ncols of them, in place of the message
     * experiments' (whose sent, received and lost its JSON then leaves
     * out too); NULL: those. Static, or outliving the rows. */
    const struct result_col *cols;
    unsigned ncols;
    bool has_latency;
    /* The latency histogram (ns) in full, for merging rows of several
     * processes (report/merge.h); mem_alloc'd by result_set_latency and,
     * like the series, owned by the result_set the row is appended to;
     * NULL for aggregate rows. */
    struct hist *lat_hist;
    int server_pid;  /* 0: the server was not sampled; else its (first) process */
    /* The processes sampled together as the server (a cluster's nodes and
     * its NATS server), their figures summed; 1 for one. */
    unsigned server_processes;
    /* An experiment's own details, written into an iteration row's JSON
     * object by extra_json (keys and values); NULL for none. extra_arg
     * must outlive the writing of the results. */
    void (*extra_json)(struct json *j, const void *extra_arg);
    const void *extra_arg;
    struct result_series series;
    /* Each series point's latencies, the buckets its p50_ms and p99_ms
     * are read from (report/seclat.h), written in the JSON so that shards'
     * series merge exactly; NULL: none. Owned like the series. */
    uint32_t (*series_lat)[SECLAT_BUCKETS];
    struct result_shard shard;
    char error[256]; /* empty, or why this iteration failed */
    /* Every number that aggregates over repetitions, so that aggregates are
     * computed field by field over metric[]. */
    union {
        struct {
            double duration_s; /* the window the throughput is measured over */
            double setup_s;    /* connecting and subscribing */
            double sent, received, lost;
            double throughput;           /* per second, see throughput_def */
            double throughput_messaging; /* see throughput_messaging_def */
            double lat_min, lat_mean, lat_stddev, lat_max; /* microseconds */
            double lat_p50, lat_p90, lat_p99, lat_p99_9;
            double server_cpu_s, server_cpu_us_per_op, server_rss_max_kb, server_threads_max;
            double client_cpu_s, client_cpu_us_per_op;
            double err_connect, err_timeout, err_protocol;
            double err_status, err_closed; /* RPC: error answers, connections lost */
            double publish_s, throughput_publish; /* see publish_def */
            double drain_s, throughput_drain;     /* see drain_def */
            double lat_spectrum[RESULT_SPECTRUM_N]; /* us, at result_spectrum_p */
            /* An experiment's own figures, for its cols: aggregated like
             * the rest, in the JSON only as it writes them (extra_json). */
            double own[RESULT_OWN_N];
        };
        double metric[RESULT_NMETRICS];
    };
};

/* The index in metric[] of a named metric field, e.g.
 * RESULT_METRIC(throughput), for code that picks a figure by table. */
#define RESULT_METRIC(field) \
    ((offsetof(struct result_row, field) - offsetof(struct result_row, metric)) / sizeof(double))

/* Where and how the results were produced. */
struct result_context {
    char date[32]; /* ISO 8601, UTC */
    char host_name[256];
    long num_cpus;
    char cpu_model[128]; /* /proc/cpuinfo's first "model name"; "" if none */
    char *command_line; /* owned */
    const char *version;
    const char *build_type;
    /* How the CPUs idled during the runs (shootout run's --no-keep-awake,
     * load/awake.h); NULL: not written. */
    const char *cpu_idle;
    /* More of the context (shootout run's contenders), written by
     * extra_json into the context object; NULL for none. */
    void (*extra_json)(struct json *j, const void *extra_arg);
    const void *extra_arg;
};

/* Rows gathered over several experiments, for one JSON document. */
struct result_set {
    struct result_row *rows; /* owned */
    unsigned n, cap;
};

/* Appends copies of rows[0..n) to set, which takes over their series and
 * histograms. */
void result_set_append(struct result_set *set, const struct result_row *rows, unsigned n);
void result_set_free(struct result_set *set);

/* argv and version are copied or must outlive ctx (version: static). */
void result_context_init(struct result_context *ctx, int argc, char **argv, const char *version);
void result_context_free(struct result_context *ctx);

/* row->op_unit, or "msg" when it is not set. */
const char *result_unit(const struct result_row *row);

/* Appends a configuration value to row (at most RESULT_MAX_CONFIG). */
void result_param(struct result_row *row, const char *key, double value);

/* Fills the latency fields (microseconds) from a histogram of nanoseconds,
 * keeps a copy of it in lat_hist and sets has_latency. */
void result_set_latency(struct result_row *row, const struct hist *ns);

/* Gives row a copy of the n-second series pts (saturation_s: -1, none),
 * replacing any it had. */
void result_set_series(struct result_row *row, const struct result_point *pts, unsigned n,
                       int saturation_s);

/* Gives row's series (n points, set first) a copy of the points' latency
 * buckets lat[0..n), and their p50 and p99. */
void result_set_series_latency(struct result_row *row, const uint32_t (*lat)[SECLAT_BUCKETS]);

/* Fills out[0..2] with the mean, median and stddev (sample, n - 1) rows of
 * the n >= 1 iteration rows, which must share one configuration. */
void result_aggregate(const struct result_row *iters, unsigned n, struct result_row out[3]);

/* Writes the context and rows as JSON to path ("-" for stdout). Returns 0,
 * or -1 with a message in err. */
int result_write_json(const char *path, const struct result_context *ctx,
                      const struct result_row *rows, unsigned n, char *err, size_t errlen);

/* The definitions of the terminal table's figures for rows shaped like r. */
void result_print_defs(FILE *f, const struct result_row *r);
/* The terminal table (texttab.h): result_table_begin starts tt with the
 * columns rows shaped like r have, and their titles; result_table_row adds
 * a row, "run" being its repetition number or its aggregate's name. The
 * caller prints with tt_print as rows come. */
void result_table_begin(struct tt *tt, const struct result_row *r);
void result_table_row(struct tt *tt, const struct result_row *r);
/* The article's form, "123.4 +/- 1.2" thousand msgs/s, for the throughput,
 * the measured window's wall time and the CPU per message, from mean and
 * stddev aggregate rows. */
void result_print_summary(FILE *f, const struct result_row *mean, const struct result_row *stddev);

#endif
