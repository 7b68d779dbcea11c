/* bench_cmd.c - `shootout bench <experiment>`: the list of experiments,
 * their one-line summaries, and the dispatch to each one's main. */
#include "cli/bench_cmd.h"

#include <stdio.h>
#include <string.h>

#include "load/bench.h"
#include "load/http/http_open.h"
#include "load/mqtt/mqtt_conns.h"
#include "load/mqtt/mqtt_load.h"
#include "load/mqtt/mqtt_ping.h"
#include "load/rpc/rpc_seq.h"
#include "report/texttab.h"

static const struct {
    const char *name;
    int (*main)(int argc, char **argv, const struct result_context *ctx);
    const char *summary;
} experiments[] = {
    {"mqtt-load", mqtt_load_main,
     "the article's loadtest: publishers flood as many subscribers (throughput)"},
    {"mqtt-ping", mqtt_ping_main,
     "the article's pingtest: request/reply pairs and wildcard subscribers (latency)"},
    {"mqtt-conns", mqtt_conns_main,
     "idle connections (broker RSS per connection) and connect storms (refusals, stalls)"},
    {"http-open", http_open_main,
     "a Gatling-style HTTP load test: scenario users, open or closed injection"},
    {"rpc-seq", rpc_seq_main,
     "the gRPC-vs-REST article's test: N calls, one at a time, REST or gRPC (total time)"},
};

#define NEXPERIMENTS (sizeof experiments / sizeof experiments[0])

static void bench_usage(FILE *f)
{
    fputs("usage: shootout bench <experiment> [options]\n"
          "\n"
          "Load generators that reproduce published benchmark experiments against\n"
          "any server. `shootout bench <experiment> --help` lists its options.\n"
          "\n"
          "experiments:\n",
          f);
    struct tt tt;
    tt_init(&tt, "ll");
    tt.indent = "  ";
    for (size_t i = 0; i < NEXPERIMENTS; i++) {
        tt_cell(&tt, "%s", experiments[i].name);
        tt_cell(&tt, "%s", experiments[i].summary);
    }
    tt_print(f, &tt);
    tt_free(&tt);
}

int bench_main(int argc, char **argv, const char *version)
{
    if (argc < 3) {
        bench_usage(stderr);
        return BENCH_EXIT_USAGE;
    }
    const char *name = argv[2];
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
        bench_usage(stdout);
        return BENCH_EXIT_OK;
    }
    for (size_t i = 0; i < NEXPERIMENTS; i++) {
        if (strcmp(name, experiments[i].name))
            continue;
        struct result_context ctx;
        result_context_init(&ctx, argc, argv, version);
        int rc = experiments[i].main(argc - 2, argv + 2, &ctx);
        result_context_free(&ctx);
        return rc;
    }
    fprintf(stderr, "shootout bench: unknown experiment '%s'\n", name);
    bench_usage(stderr);
    return BENCH_EXIT_USAGE;
}

