/* main.c - the `shootout` command: subcommand dispatch and option parsing.
 *
 * Exit codes: 0 success, 1 runtime failure (e.g. cannot listen), 2 usage
 * error.
 */
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "a2b/a2b_server.h"
#include "broker/broker.h"
#include "broker/broker_conf.h"
#include "broker/passwd_cmd.h"
#include "car/car_server.h"
#include "cli/bench_cmd.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/opt.h"
#include "core/version.h"
#include "report/compare.h"
#include "report/compare_print.h"
#include "report/merge.h"
#include "run/shootout_run.h"

#define EXIT_USAGE 2

static const char usage_main[] =
    "usage: shootout <command> [options]\n"
    "\n"
    "Servers, load generators and experiments for honest protocol and broker\n"
    "benchmarks.\n"
    "\n"
    "commands:\n"
    "  run        the main job: races our MQTT broker, car-server and a2b-server\n"
    "             against the articles' other implementations and prints the tables\n"
    "  peers      the contenders `run` races ours against, and which are installed\n"
    "  broker     MQTT 3.1, 3.1.1 and 5.0 broker\n"
    "  car-server the Car service of the gRPC-vs-REST article over REST and gRPC\n"
    "  a2b-server the a2b transfer-booking service of the Gatling article (HTTP/1.1,\n"
    "             SQLite or PostgreSQL)\n"
    "  passwd     add, change or delete users in a broker password file\n"
    "  bench      load generators (mqtt-load, mqtt-ping); `shootout bench --help`\n"
    "  compare    two results files (--json of run or bench) side by side: medians,\n"
    "             ratios, and which differences are significant\n"
    "  version    print the version\n"
    "  help       this text; `shootout <command> --help` for a command's options\n";

static const char broker_head[] =
    "usage: shootout broker [options]\n"
    "\n"
    "MQTT 3.1, 3.1.1 and 5.0 broker (all on every listener). Runs in the\n"
    "foreground, logs to stderr, stops gracefully on SIGTERM or SIGINT.\n"
    "\n";

static const char car_head[] =
    "usage: shootout car-server [options]\n"
    "\n"
    "The Car service of the gRPC-vs-REST article: POST /v1/create over REST\n"
    "(HTTP/1.1 + JSON) and /com.stevenpg.rvg.MessageService/send over gRPC\n"
    "(HTTP/2 cleartext + protobuf), plus grpc.health.v1.Health/Check. Runs in\n"
    "the foreground, logs to stderr, drains gracefully on SIGTERM or SIGINT.\n"
    "\n";

static const char a2b_head[] =
    "usage: shootout a2b-server [options]\n"
    "\n"
    "The a2b transfer-booking service of the Gatling article: the reference's\n"
    "endpoints under /api/v1 (OpenAPI at /api/v1/openapi.json), health at\n"
    "/actuator/health/{liveness,readiness}, Prometheus text at /metrics. Runs\n"
    "in the foreground, logs to stderr, drains gracefully on SIGTERM or SIGINT.\n"
    "\n";

static int bad_usage(const char *usage)
{
    fprintf(stderr, "%s", usage);
    return EXIT_USAGE;
}

/* -c: read before every flag, so that flags override it (cmd_broker). */
static int set_config_later(const struct opt *o, void *base, const char *name, const char *value,
                            char *err, size_t errlen)
{
    return 0;
}

static int set_debug(const struct opt *o, void *base, const char *name, const char *value,
                     char *err, size_t errlen)
{
    log_set_level(LOG_DEBUG);
    return 0;
}

/* The broker's flags that are no settings; the settings are
 * broker_options, with their file keywords. */
static const struct opt broker_cli_options[] = {
    {"config", 'c', OPT_CALL, "FILE",
     "read settings from FILE (mosquitto.conf keywords; see docs/broker.md); flags given on the "
     "command line override it", NULL, .set = set_config_later},
    {"verbose", 'v', OPT_CALL, NULL, "debug logging", NULL, .set = set_debug},
    {.kind = OPT_END},
};

static const struct opt_table broker_tables[] = {
    {broker_cli_options, 0},
    {broker_options, 0},
    {NULL, 0},
};

static const struct opt_cmd broker_command = {
    .head = broker_head,
    .tables = broker_tables,
    .tail = "\nSIGHUP reloads the password and ACL files.\n",
};

static int load_config(const char *path, void *cfg)
{
    char err[512];
    if (broker_conf_load(cfg, path, err, sizeof err) == 0)
        return 0;
    fprintf(stderr, "shootout broker: %s\n", err);
    return 1;
}

/* ---- the servers ----------------------------------------------------------- */

/* -v: debug logging, and a line per request. */
static int set_verbose(const struct opt *o, void *base, const char *name, const char *value,
                       char *err, size_t errlen)
{
    log_set_level(LOG_DEBUG);
    *(bool *)opt_field(o, base) = true;
    return 0;
}

/* "off" disables a listener (-1); otherwise a port number, 0 = any. */
static int set_port_or_off(const struct opt *o, void *base, const char *name, const char *value,
                           char *err, size_t errlen)
{
    uint64_t v;
    if (!strcmp(value, "off")) {
        *(int *)opt_field(o, base) = -1;
        return 0;
    }
    if (opt_parse_uint(value, 0, 65535, &v) < 0)
        return opt_fail(err, errlen, "%s wants a port from 0 to 65535 or off, not '%s'", name,
                        value);
    *(int *)opt_field(o, base) = (int)v;
    return 0;
}

/* What both HTTP servers' configurations call alike, in a struct T whose
 * fields are named as car_server_config's after the prefix P. */
#define SERVER_BIND(T, P)                                                                   \
    {"bind", 'b', OPT_STRING, "ADDR", "listen address", "127.0.0.1", OPT_FIELD(T, P bind)}
#define SERVER_THREADS(T, P, what)                                                          \
    {"threads", 't', OPT_UINT, "N", "worker threads, each with its own event loop and "      \
     what, "1", OPT_FIELD(T, P threads), .min = 1, .max = 1024}
#define SERVER_LIMITS(T, P)                                                                 \
    {"max-connections-per-address", 0, OPT_UINT, "N",                                       \
     "connections from one IP address at once, 0: any; more are closed as soon as accepted",\
     "0", OPT_FIELD(T, P max_per_address), .min = 0, .max = 10000000},                       \
    {"max-header-size", 0, OPT_UINT, "B", "HTTP/1.1 request head; 431 over", "8192",         \
     OPT_FIELD(T, P max_header), .min = 256, .max = 1024 * 1024},                            \
    {"max-body-size", 0, OPT_UINT, "B", "request body; 413 over", "1048576",                 \
     OPT_FIELD(T, P max_body), .min = 0, .max = 1024 * 1024 * 1024}
#define SERVER_TIMEOUTS(T, P)                                                               \
    {"idle-timeout", 0, OPT_UINT, "SECS", "keep-alive connection without a request", "60",  \
     OPT_FIELD(T, P idle_timeout_ms), .min = 1, .max = 86400, .scale = 1000},                \
    {"request-timeout", 0, OPT_UINT, "SECS",                                                \
     "time to send a request head once begun, and a body before --min-body-rate applies; "  \
     "slow clients are answered 408", "10",                                                 \
     OPT_FIELD(T, P request_timeout_ms), .min = 1, .max = 86400, .scale = 1000},             \
    {"min-body-rate", 0, OPT_UINT, "BYTES",                                                 \
     "past --request-timeout, an HTTP/1.1 request body still arriving must have brought "   \
     "this many bytes for every second beyond it, or it is answered 408; 0: the timeout "  \
     "bounds bodies too", "4096",                                                           \
     OPT_FIELD(T, P min_body_rate), .min = 0, .max = UINT32_MAX},                           \
    {"drain-timeout", 0, OPT_UINT, "SECS", "graceful shutdown bound", "5",                   \
     OPT_FIELD(T, P drain_timeout_ms), .min = 1, .max = 86400, .scale = 1000},               \
    {"verbose", 'v', OPT_CALL, NULL, "log every connection and request", NULL,              \
     OPT_FIELD(T, P log_requests), .set = set_verbose}

/* Parses a command's options with cmd into cfg: -1 to go on (optind at
 * the first argument), or the exit code. A bad value is told as "invalid
 * value", or with why, what the value should be. */
static int options_parse(const char *name, const struct opt_cmd *cmd, int argc, char **argv,
                         void *cfg, bool why)
{
    struct opt_error e;
    switch (opt_parse(cmd, argc, argv, cfg, &e)) {
    case OPT_OK:
        break;
    case OPT_HELP:
        return 0;
    case OPT_ERROR:
        if (!e.opt) { /* getopt_long has said what was wrong */
            opt_help(stderr, cmd);
            return EXIT_USAGE;
        }
        if (why)
            fprintf(stderr, "shootout %s: %s\n", name, e.msg);
        else
            fprintf(stderr, "shootout %s: invalid value '%s' for --%s\n", name, e.value,
                    e.opt->name);
        return EXIT_USAGE;
    }
    return -1;
}

/* options_parse for a server, which takes no arguments. */
static int server_parse(const char *name, const struct opt_cmd *cmd, int argc, char **argv,
                        void *cfg, bool why)
{
    int rc = options_parse(name, cmd, argc, argv, cfg, why);
    if (rc >= 0)
        return rc;
    if (optind < argc) {
        fprintf(stderr, "shootout %s: unexpected argument '%s'\n", name, argv[optind]);
        opt_help(stderr, cmd);
        return EXIT_USAGE;
    }
    return -1;
}

static int cmd_broker(int argc, char **argv)
{
    struct broker_config cfg;
    broker_config_defaults(&cfg);
    /* The files first, wherever -c stands, so that flags override them. */
    if (opt_each(&broker_command, argc, argv, "config", load_config, &cfg))
        return 1;
    int rc = server_parse("broker", &broker_command, argc, argv, &cfg, true);
    return rc >= 0 ? rc : broker_run(&cfg);
}

#define CAR(f) OPT_FIELD(struct car_server_config, f)

static const struct opt car_options[] = {
    SERVER_BIND(struct car_server_config, ),
    {"rest-port", 0, OPT_CALL, "N|off", "REST port; 0 picks a free one", "8080", CAR(rest_port),
     .set = set_port_or_off},
    {"grpc-port", 0, OPT_CALL, "N|off", "gRPC port; 0 picks a free one", "50051", CAR(grpc_port),
     .set = set_port_or_off},
    SERVER_THREADS(struct car_server_config, , "SO_REUSEPORT listeners"),
    {"max-connections", 0, OPT_UINT, "N",
     "simultaneous connections, both protocols; more are closed at once", "10000",
     CAR(max_connections), .min = 1, .max = 10000000},
    SERVER_LIMITS(struct car_server_config, ),
    {"max-message-size", 0, OPT_UINT, "B", "gRPC message; RESOURCE_EXHAUSTED over", "4194304",
     CAR(max_message), .min = 0, .max = 1024 * 1024 * 1024},
    {"tls-cert", 0, OPT_STRING, "FILE", "with --tls-key: gRPC over TLS (ALPN h2 only)", NULL,
     CAR(tls_cert)},
    {"tls-key", 0, OPT_STRING, "FILE", "PEM private key of --tls-cert", NULL, CAR(tls_key)},
    {"tls-ca", 0, OPT_STRING, "FILE", "PEM CAs for client certificates", NULL, CAR(tls_ca)},
    {"tls-require-client-cert", 0, OPT_FLAG, NULL,
     "mutual TLS: clients need a certificate that chains to --tls-ca (REST stays cleartext)",
     NULL, CAR(tls_require_client_cert)},
    SERVER_TIMEOUTS(struct car_server_config, ),
    {.kind = OPT_END},
};

static const struct opt_table car_tables[] = {{car_options, 0}, {NULL, 0}};

static const struct opt_cmd car_command = {.head = car_head, .tables = car_tables};

static int cmd_car_server(int argc, char **argv)
{
    struct car_server_config cfg;
    car_server_config_defaults(&cfg);
    int rc = server_parse("car-server", &car_command, argc, argv, &cfg, false);
    if (rc >= 0)
        return rc;
    if (cfg.rest_port < 0 && cfg.grpc_port < 0) {
        fprintf(stderr, "shootout car-server: both listeners are off; nothing to serve\n");
        return EXIT_USAGE;
    }
    const char *tls_misuse = !cfg.tls_cert != !cfg.tls_key ? "--tls-cert and --tls-key go together"
                             : !cfg.tls_cert && (cfg.tls_ca || cfg.tls_require_client_cert)
                                 ? "--tls-ca and --tls-require-client-cert need --tls-cert"
                             : cfg.tls_require_client_cert && !cfg.tls_ca
                                 ? "--tls-require-client-cert needs --tls-ca"
                                 : NULL;
    if (tls_misuse) {
        fprintf(stderr, "shootout car-server: %s\n", tls_misuse);
        return EXIT_USAGE;
    }
    return car_server_run(&cfg);
}

#define A2B(f) OPT_FIELD(struct a2b_server_config, f)

static const struct opt a2b_options[] = {
    SERVER_BIND(struct a2b_server_config, http.),
    {"port", 'p', OPT_UINT, "N", "TCP port; 0 picks a free one", "8080", A2B(http.port),
     .min = 0, .max = 65535},
    SERVER_THREADS(struct a2b_server_config, http., "SO_REUSEPORT listener"),
    {"db", 0, OPT_STRING, "PATH|URI",
     "SQLite file, created and filled on first start, or postgres://... (filled by --init)",
     "a2b.db in the current directory", A2B(db)},
    {"init", 0, OPT_FLAG, NULL,
     "create and fill the database, then exit (PostgreSQL: replaces schema a2b)", NULL,
     A2B(init_only)},
    {"scale", 0, OPT_DOUBLE, "X", "data set size, 1 = the reference's 200,000 users",
     "1; tests use 0.01", A2B(scale), .dmin = 0, .dmin_open = true, .dmax = 100,
     .wants = "a number above 0 and up to 100"},
    {"seed", 0, OPT_UINT, "N", "data set seed", "1", A2B(seed), .min = 0, .max = UINT64_MAX},
    {"workers", 0, OPT_UINT, "N", "SQLite worker threads", "2", A2B(workers), .min = 1,
     .max = 256},
    {"pool", 0, OPT_UINT, "N", "PostgreSQL connections per thread", "4", A2B(pool), .min = 1,
     .max = 256},
    {"queue", 0, OPT_UINT, "N", "store requests waiting; 503 over", "1024", A2B(queue_max),
     .min = 1, .max = 1000000},
    {"max-connections", 0, OPT_UINT, "N", "simultaneous connections", "10000",
     A2B(http.max_connections), .min = 1, .max = 10000000},
    {"max-inflight", 0, OPT_UINT, "N", "pipelined requests per connection", "16",
     A2B(http.max_inflight), .min = 1, .max = 1024},
    SERVER_LIMITS(struct a2b_server_config, http.),
    SERVER_TIMEOUTS(struct a2b_server_config, http.),
    {.kind = OPT_END},
};

static const struct opt_table a2b_tables[] = {{a2b_options, 0}, {NULL, 0}};

static const struct opt_cmd a2b_command = {.head = a2b_head, .tables = a2b_tables};

static int cmd_a2b_server(int argc, char **argv)
{
    struct a2b_server_config cfg;
    a2b_server_config_defaults(&cfg);
    int rc = server_parse("a2b-server", &a2b_command, argc, argv, &cfg, false);
    return rc >= 0 ? rc : a2b_server_run(&cfg);
}

/* ---- compare ----------------------------------------------------------------- */

static const char compare_head[] =
    "usage: shootout compare [options] OLD.json NEW.json\n"
    "\n"
    "Compares two results files (the --json of `shootout run` or `shootout bench`)\n"
    "point by point, matched by name: for throughput, latency p50/p90/p99/p99.9 and\n"
    "server CPU per operation, the medians of the runs, their ratio new/old, and\n"
    "whether the difference is significant: Mann-Whitney U over the runs at p <\n"
    "--alpha and at least --noise, as benchstat judges; else \"~\". Lower\n"
    "throughput and higher latency or CPU are worse. With 3 and 3 runs or fewer\n"
    "no difference can be significant at 0.05: give `run`/`bench` --runs 4 or\n"
    "more. Points in only one file are listed. A warning goes to stderr when the\n"
    "files come from different machines (host name, CPU count or CPU model).\n"
    "\n";

static const char compare_tail[] =
    "\nexit status: 0 compared, 1 a significant regression beyond --fail-on-regression,\n"
    "2 usage error, a file that cannot be read as results, or output that cannot be\n"
    "written.\n";

struct compare_args {
    unsigned format;
    const char *html;
    struct cmp_options opt;
};

static const struct opt_choice compare_formats[] = {
    {"text", NULL, CMP_FORMAT_TEXT},
    {"markdown", "md", CMP_FORMAT_MARKDOWN},
    {"json", NULL, CMP_FORMAT_JSON},
    {NULL, NULL, 0},
};

#define CMPA(f) OPT_FIELD(struct compare_args, f)

static const struct opt compare_options[] = {
    {"format", 'f', OPT_ENUM, "FORMAT", "on stdout: text (a terminal table), markdown or json",
     "text", CMPA(format), .choices = compare_formats},
    {"html", 0, OPT_STRING, "FILE", "also write the comparison as an HTML page", NULL,
     CMPA(html)},
    {"alpha", 0, OPT_DOUBLE, "P", "significance level of the Mann-Whitney U test", "0.05",
     CMPA(opt.alpha), .dmin = 0, .dmin_open = true, .dmax = 1,
     .wants = "a number above 0 and up to 1"},
    {"noise", 0, OPT_DOUBLE, "PCT",
     "noise threshold: a significant difference smaller than PCT percent is still \"~\"", "1",
     CMPA(opt.noise_pct), .dmin = 0, .dmax = 1000, .wants = "a percentage from 0 to 1000"},
    {"fail-on-regression", 0, OPT_DOUBLE, "PCT",
     "exit 1 if a figure is significantly worse by more than PCT percent (for CI)", NULL,
     CMPA(opt.fail_pct), .dmin = 0, .dmax = 1000, .wants = "a percentage from 0 to 1000"},
    {.kind = OPT_END},
};

static const struct opt_table compare_tables[] = {{compare_options, 0}, {NULL, 0}};

static const struct opt_cmd compare_command = {
    .head = compare_head, .tables = compare_tables, .tail = compare_tail};

static int cmd_compare(int argc, char **argv)
{
    struct compare_args a = {.format = CMP_FORMAT_TEXT,
                             .opt = {.alpha = 0.05, .noise_pct = 1, .fail_pct = -1}};
    int rc = options_parse("compare", &compare_command, argc, argv, &a, true);
    if (rc >= 0)
        return rc;
    if (argc - optind != 2) {
        fprintf(stderr, "shootout compare: wants two results files, OLD.json NEW.json\n");
        return EXIT_USAGE;
    }
    struct cmp_file old, new;
    char err[512];
    if (cmp_load(&old, argv[optind], err, sizeof err) < 0) {
        fprintf(stderr, "shootout compare: %s\n", err);
        return EXIT_USAGE;
    }
    if (cmp_load(&new, argv[optind + 1], err, sizeof err) < 0) {
        fprintf(stderr, "shootout compare: %s\n", err);
        cmp_file_free(&old);
        return EXIT_USAGE;
    }
    char differ[512];
    if (cmp_machines_differ(&old, &new, differ, sizeof differ))
        fprintf(stderr,
                "shootout compare: warning: the files come from different machines (%s): a "
                "difference may be the machine's, not the code's\n",
                differ);
    struct cmp_result r;
    cmp_compare(&r, &old, &new, &a.opt);
    r.old_path = argv[optind];
    r.new_path = argv[optind + 1];
    rc = r.regressions ? 1 : 0;
    if (cmp_print(stdout, a.format, &r) < 0 || fflush(stdout) != 0) {
        fprintf(stderr, "shootout compare: cannot write the comparison\n");
        rc = EXIT_USAGE;
    }
    if (a.html && cmp_html_write(a.html, &r, err, sizeof err) < 0) {
        fprintf(stderr, "shootout compare: %s\n", err);
        rc = EXIT_USAGE;
    }
    cmp_result_free(&r);
    cmp_file_free(&old);
    cmp_file_free(&new);
    return rc;
}

/* ---- merge ------------------------------------------------------------------- */

static const char merge_head[] =
    "usage: shootout merge [options] SHARD.json... > RUN.json\n"
    "\n"
    "Puts together the results files of one load test split over N processes or\n"
    "machines (`shootout bench EXPERIMENT --shard I/N --start-at T --json\n"
    "SHARD.json` on each, I = 0 .. N-1): counters and CPU times summed, latency\n"
    "histograms added bucket by bucket and the percentiles computed from the\n"
    "sum, never averaged; throughput as all the shards' operations over the\n"
    "common wall-clock window (earliest start to latest end). The output has\n"
    "the shards' JSON schema. Every shard must be given once, all of one run.\n"
    "A shard whose own CPU over its window reached 0.9 cores per client thread\n"
    "is flagged (stderr, and \"shard\": {\"saturated\": [...]} in the output): its\n"
    "figures may be its own limit, not the server's. docs/bench.md, \"Load from\n"
    "several machines\".\n"
    "\n";

static const char merge_tail[] =
    "\nexit status: 0 merged, 1 the output cannot be written, 2 usage error or\n"
    "files that cannot be merged (not shards, of different runs, a shard given\n"
    "twice or missing).\n";

struct merge_args {
    const char *output;
};

static const struct opt merge_options[] = {
    {"output", 'o', OPT_STRING, "FILE", "write the merged results to FILE ('-': stdout)", "-",
     OPT_FIELD(struct merge_args, output)},
    {.kind = OPT_END},
};

static const struct opt_table merge_tables[] = {{merge_options, 0}, {NULL, 0}};

static const struct opt_cmd merge_command = {
    .head = merge_head, .tables = merge_tables, .tail = merge_tail};

static int cmd_merge(int argc, char **argv)
{
    struct merge_args a = {.output = "-"};
    int rc = options_parse("merge", &merge_command, argc, argv, &a, true);
    if (rc >= 0)
        return rc;
    unsigned n = (unsigned)(argc - optind);
    if (n == 0 || n > MERGE_MAX_SHARDS) {
        fprintf(stderr, "shootout merge: wants 1 to %d shards' results files\n",
                MERGE_MAX_SHARDS);
        return EXIT_USAGE;
    }
    struct merge_file *files = mem_calloc(n, sizeof *files);
    char err[512], warn[4096];
    rc = 0;
    for (unsigned i = 0; i < n && !rc; i++)
        if (merge_load(&files[i], argv[optind + i], err, sizeof err) < 0)
            rc = EXIT_USAGE;
    struct result_set out = {0};
    if (!rc && merge_combine(files, n, &out, warn, sizeof warn, err, sizeof err) < 0)
        rc = EXIT_USAGE;
    if (rc) {
        fprintf(stderr, "shootout merge: %s\n", err);
    } else {
        if (warn[0])
            fprintf(stderr, "shootout merge: warning: %s", warn);
        struct result_context ctx;
        result_context_init(&ctx, argc, argv, SHOOTOUT_VERSION);
        if (result_write_json(a.output, &ctx, out.rows, out.n, err, sizeof err) < 0) {
            fprintf(stderr, "shootout merge: %s\n", err);
            rc = 1;
        }
        result_context_free(&ctx);
    }
    result_set_free(&out);
    for (unsigned i = 0; i < n; i++)
        merge_file_free(&files[i]);
    mem_free(files);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return bad_usage(usage_main);
    const char *cmd = argv[1];
    if (!strcmp(cmd, "broker"))
        return cmd_broker(argc - 1, argv + 1);
    if (!strcmp(cmd, "car-server"))
        return cmd_car_server(argc - 1, argv + 1);
    if (!strcmp(cmd, "a2b-server"))
        return cmd_a2b_server(argc - 1, argv + 1);
    if (!strcmp(cmd, "passwd"))
        return passwd_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench"))
        return bench_main(argc, argv, SHOOTOUT_VERSION);
    if (!strcmp(cmd, "compare"))
        return cmd_compare(argc - 1, argv + 1);
    if (!strcmp(cmd, "merge"))
        return cmd_merge(argc - 1, argv + 1);
    if (!strcmp(cmd, "run"))
        return shootout_run_main(argc, argv, SHOOTOUT_VERSION);
    if (!strcmp(cmd, "peers"))
        return shootout_peers_main(argc, argv);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("shootout %s\n", SHOOTOUT_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        fputs(usage_main, stdout);
        return 0;
    }
    fprintf(stderr, "shootout: unknown command '%s'\n", cmd);
    return bad_usage(usage_main);
}
