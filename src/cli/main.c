/* main.c - the `shootout` command: subcommand dispatch and option parsing.
 *
 * Exit codes: 0 success, 1 runtime failure (e.g. cannot listen), 2 usage
 * error.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2b/a2b_server.h"
#include "broker/broker.h"
#include "broker/broker_conf.h"
#include "broker/passwd_cmd.h"
#include "car/car_server.h"
#include "cli/bench_cmd.h"
#include "core/log.h"
#include "core/opt.h"
#include "core/version.h"
#include "run/shootout_run.h"

#define EXIT_USAGE 2

static const char usage_main[] =
    "usage: shootout <command> [options]\n"
    "\n"
    "Servers, load generators and experiments for honest protocol and broker\n"
    "benchmarks.\n"
    "\n"
    "commands:\n"
    "  run        the main job: races our MQTT broker against Mosquitto with the\n"
    "             article's loadtest and pingtest and prints the tables\n"
    "  broker     MQTT 3.1, 3.1.1 and 5.0 broker\n"
    "  car-server the Car service of the gRPC-vs-REST article over REST and gRPC\n"
    "  a2b-server the a2b transfer-booking service of the Gatling article (HTTP/1.1,\n"
    "             SQLite or PostgreSQL)\n"
    "  passwd     add, change or delete users in a broker password file\n"
    "  bench      load generators (mqtt-load, mqtt-ping); `shootout bench --help`\n"
    "  version    print the version\n"
    "  help       this text; `shootout <command> --help` for a command's options\n";

static const char usage_broker[] =
    "usage: shootout broker [options]\n"
    "\n"
    "MQTT 3.1, 3.1.1 and 5.0 broker (all on every listener). Runs in the\n"
    "foreground, logs to stderr, stops gracefully on SIGTERM or SIGINT.\n"
    "\n"
    "options:\n"
    "  -c, --config FILE             read settings from FILE (mosquitto.conf\n"
    "                                keywords; see docs/broker.md); flags given\n"
    "                                on the command line override it\n"
    "  -b, --bind ADDR               listen address (default 127.0.0.1; :: or\n"
    "                                0.0.0.0 for all interfaces)\n"
    "  -p, --port N                  TCP port (default 1883; 0 picks a free one)\n"
    "      --max-connections N       simultaneous clients (default 100000);\n"
    "                                more are answered CONNACK 3 and closed\n"
    "      --max-packet-size BYTES   largest packet accepted (default 1048576);\n"
    "                                a larger one closes its connection (MQTT 5\n"
    "                                clients are told it in CONNACK)\n"
    "      --max-queued-messages N   QoS 1/2 messages queued per session beyond\n"
    "                                the inflight window (default 1000)\n"
    "      --max-inflight-messages N unacknowledged QoS 1/2 messages per client\n"
    "                                (default 20, at most 65535); also the MQTT 5\n"
    "                                Receive Maximum for QoS 2 from clients\n"
    "      --max-output-bytes BYTES  pending output per client before QoS 0\n"
    "                                messages to it are dropped (default 8388608)\n"
    "      --queue-qos0              also queue QoS 0 messages for offline\n"
    "                                persistent sessions\n"
    "      --connect-timeout SECS    time a new connection has to send CONNECT,\n"
    "                                TLS handshake and WebSocket upgrade included\n"
    "                                (default 10)\n"
    "      --max-keepalive SECS      longest keep alive a client may use (default\n"
    "                                0: any); MQTT 5 clients asking for more, or\n"
    "                                for none, are told this one, MQTT 3.1.1\n"
    "                                clients get CONNACK 2\n"
    "      --sys-interval SECS       period of the $SYS/broker/... figures\n"
    "                                (default 10; 0 turns them off)\n"
    "      --persistence             keep sessions, wills, subscriptions, retained\n"
    "                                and queued messages across restarts and crashes\n"
    "                                (docs/persistence.md)\n"
    "      --persistence-location DIR  its data directory (default broker-data)\n"
    "      --persistence-sync-interval MS  0 (default): fdatasync before every\n"
    "                                acknowledgement; N: at most every N ms\n"
    "      --password-file FILE      check usernames and passwords against a\n"
    "                                Mosquitto password file (`shootout passwd`)\n"
    "      --acl-file FILE           Mosquitto ACL file for publish, subscribe\n"
    "                                and delivery\n"
    "      --allow-anonymous true|false\n"
    "                                let clients without a username in\n"
    "                                (default true)\n"
    "                                (SIGHUP reloads the password and ACL files)\n"
    "      --metrics-port N          serve Prometheus GET /metrics on this port\n"
    "                                of the listen address (default off)\n"
    "      --connection-messages true|false\n"
    "                                log each connect and disconnect at info\n"
    "                                level (default true)\n"
    "  -v, --verbose                 debug logging\n"
    "  -h, --help                    this text\n";

static const char usage_car_server[] =
    "usage: shootout car-server [options]\n"
    "\n"
    "The Car service of the gRPC-vs-REST article: POST /v1/create over REST\n"
    "(HTTP/1.1 + JSON) and /com.stevenpg.rvg.MessageService/send over gRPC\n"
    "(HTTP/2 cleartext + protobuf), plus grpc.health.v1.Health/Check. Runs in\n"
    "the foreground, logs to stderr, drains gracefully on SIGTERM or SIGINT.\n"
    "\n"
    "options:\n"
    "  -b, --bind ADDR            listen address (default 127.0.0.1)\n"
    "      --rest-port N|off      REST port (default 8080; 0 picks a free one)\n"
    "      --grpc-port N|off      gRPC port (default 50051; 0 picks a free one)\n"
    "  -t, --threads N            worker threads, each with its own event loop\n"
    "                             and SO_REUSEPORT listeners (default 1)\n"
    "      --max-connections N    simultaneous connections, both protocols\n"
    "                             (default 10000); more are closed at once\n"
    "      --max-header-size B    HTTP/1.1 request head (default 8192; 431 over)\n"
    "      --max-body-size B      REST request body (default 1048576; 413 over)\n"
    "      --max-message-size B   gRPC message (default 4194304;\n"
    "                             RESOURCE_EXHAUSTED over)\n"
    "      --idle-timeout SECS    keep-alive connection without a request\n"
    "                             (default 60)\n"
    "      --request-timeout SECS time to send a whole request once begun\n"
    "                             (default 10; slow clients are answered 408)\n"
    "      --drain-timeout SECS   graceful shutdown bound (default 5)\n"
    "      --tls-cert FILE        with --tls-key: gRPC over TLS (ALPN h2 only)\n"
    "      --tls-key FILE         PEM private key of --tls-cert\n"
    "      --tls-ca FILE          PEM CAs for client certificates\n"
    "      --tls-require-client-cert  mutual TLS: clients need a certificate\n"
    "                             that chains to --tls-ca (REST stays cleartext)\n"
    "  -v, --verbose              log every connection and request\n"
    "  -h, --help                 this text\n";

static const char usage_a2b_server[] =
    "usage: shootout a2b-server [options]\n"
    "\n"
    "The a2b transfer-booking service of the Gatling article: the reference's\n"
    "endpoints under /api/v1 (OpenAPI at /api/v1/openapi.json), health at\n"
    "/actuator/health/{liveness,readiness}, Prometheus text at /metrics. Runs\n"
    "in the foreground, logs to stderr, drains gracefully on SIGTERM or SIGINT.\n"
    "\n"
    "options:\n"
    "  -b, --bind ADDR            listen address (default 127.0.0.1)\n"
    "  -p, --port N               TCP port (default 8080; 0 picks a free one)\n"
    "  -t, --threads N            worker threads, each with its own event loop\n"
    "                             and SO_REUSEPORT listener (default 1)\n"
    "      --db PATH|URI          SQLite file (default a2b.db in the current\n"
    "                             directory, created and filled on first start)\n"
    "                             or postgres://... (filled by --init)\n"
    "      --init                 create and fill the database, then exit\n"
    "                             (PostgreSQL: replaces schema a2b)\n"
    "      --scale X              data set size, 1 = the reference's 200,000\n"
    "                             users (default 1; tests use 0.01)\n"
    "      --seed N               data set seed (default 1)\n"
    "      --workers N            SQLite worker threads (default 2)\n"
    "      --pool N               PostgreSQL connections per thread (default 4)\n"
    "      --queue N              store requests waiting (default 1024; 503 over)\n"
    "      --max-connections N    simultaneous connections (default 10000)\n"
    "      --max-inflight N       pipelined requests per connection (default 16)\n"
    "      --max-header-size B    request head (default 8192; 431 over)\n"
    "      --max-body-size B      request body (default 1048576; 413 over)\n"
    "      --idle-timeout SECS    keep-alive connection without a request\n"
    "                             (default 60)\n"
    "      --request-timeout SECS time to send a whole request once begun\n"
    "                             (default 10; slow clients are answered 408)\n"
    "      --drain-timeout SECS   graceful shutdown bound (default 5)\n"
    "  -v, --verbose              log every connection and request\n"
    "  -h, --help                 this text\n";

static int bad_usage(const char *usage)
{
    fprintf(stderr, "%s", usage);
    return EXIT_USAGE;
}

static int cmd_broker(int argc, char **argv)
{
    /* Every long option but config, help and verbose is a broker setting,
     * handed to broker_conf_set under its own name. */
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"bind", required_argument, NULL, 'b'},
        {"port", required_argument, NULL, 'p'},
        {"max-connections", required_argument, NULL, 0},
        {"max-packet-size", required_argument, NULL, 0},
        {"max-queued-messages", required_argument, NULL, 0},
        {"max-inflight-messages", required_argument, NULL, 0},
        {"max-output-bytes", required_argument, NULL, 0},
        {"queue-qos0", no_argument, NULL, 0},
        {"connect-timeout", required_argument, NULL, 0},
        {"max-keepalive", required_argument, NULL, 0},
        {"sys-interval", required_argument, NULL, 0},
        {"persistence", no_argument, NULL, 0},
        {"persistence-location", required_argument, NULL, 0},
        {"persistence-sync-interval", required_argument, NULL, 0},
        {"password-file", required_argument, NULL, 0},
        {"acl-file", required_argument, NULL, 0},
        {"allow-anonymous", required_argument, NULL, 0},
        {"metrics-port", required_argument, NULL, 0},
        {"connection-messages", required_argument, NULL, 0},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char shortopts[] = "c:b:p:vh";
    struct broker_config cfg;
    broker_config_defaults(&cfg);
    char err[512];
    int c, index;

    /* The file first, wherever -c stands, so that flags override it. */
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
        if (c == 'c' && broker_conf_load(&cfg, optarg, err, sizeof err) < 0) {
            fprintf(stderr, "shootout broker: %s\n", err);
            return 1;
        }
    }
    opterr = 1;
    optind = 1;
    while ((c = getopt_long(argc, argv, shortopts, opts, &index)) != -1) {
        const char *name = NULL, *value = optarg;
        switch (c) {
        case 'c':
            break;
        case 'b':
            name = "bind";
            break;
        case 'p':
            name = "port";
            break;
        case 0:
            name = opts[index].name;
            if (opts[index].has_arg == no_argument)
                value = "true";
            break;
        case 'v':
            log_set_level(LOG_DEBUG);
            break;
        case 'h':
            fputs(usage_broker, stdout);
            return 0;
        default:
            return bad_usage(usage_broker);
        }
        if (name && broker_conf_set(&cfg, name, value, err, sizeof err) < 0) {
            fprintf(stderr, "shootout broker: --%s\n", err);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "shootout broker: unexpected argument '%s'\n", argv[optind]);
        return bad_usage(usage_broker);
    }
    return broker_run(&cfg);
}

/* "off" disables a listener (-1); otherwise a port number, 0 = any. */
static int parse_port_or_off(const char *arg, int *out)
{
    uint64_t v;
    if (!strcmp(arg, "off")) {
        *out = -1;
        return 0;
    }
    if (opt_parse_uint(arg, 0, 65535, &v) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

static int cmd_car_server(int argc, char **argv)
{
    enum {
        O_REST = 256,
        O_GRPC,
        O_MAXCONN,
        O_HEADER,
        O_BODY,
        O_MESSAGE,
        O_IDLE,
        O_REQUEST,
        O_DRAIN,
        O_TLS_CERT,
        O_TLS_KEY,
        O_TLS_CA,
        O_TLS_REQUIRE,
    };
    static const struct option opts[] = {
        {"bind", required_argument, NULL, 'b'},
        {"rest-port", required_argument, NULL, O_REST},
        {"grpc-port", required_argument, NULL, O_GRPC},
        {"threads", required_argument, NULL, 't'},
        {"max-connections", required_argument, NULL, O_MAXCONN},
        {"max-header-size", required_argument, NULL, O_HEADER},
        {"max-body-size", required_argument, NULL, O_BODY},
        {"max-message-size", required_argument, NULL, O_MESSAGE},
        {"idle-timeout", required_argument, NULL, O_IDLE},
        {"request-timeout", required_argument, NULL, O_REQUEST},
        {"drain-timeout", required_argument, NULL, O_DRAIN},
        {"tls-cert", required_argument, NULL, O_TLS_CERT},
        {"tls-key", required_argument, NULL, O_TLS_KEY},
        {"tls-ca", required_argument, NULL, O_TLS_CA},
        {"tls-require-client-cert", no_argument, NULL, O_TLS_REQUIRE},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct car_server_config cfg;
    car_server_config_defaults(&cfg);
    int c, index = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "b:t:vh", opts, &index)) != -1) {
        uint64_t v = 0;
        bool ok = true;
        switch (c) {
        case 'b':
            cfg.bind = optarg;
            break;
        case O_REST:
            ok = parse_port_or_off(optarg, &cfg.rest_port) == 0;
            break;
        case O_GRPC:
            ok = parse_port_or_off(optarg, &cfg.grpc_port) == 0;
            break;
        case 't':
            ok = opt_parse_uint(optarg, 1, 1024, &v) == 0;
            cfg.threads = (unsigned)v;
            break;
        case O_MAXCONN:
            ok = opt_parse_uint(optarg, 1, 10000000, &v) == 0;
            cfg.max_connections = (unsigned)v;
            break;
        case O_HEADER:
            ok = opt_parse_uint(optarg, 256, 1024 * 1024, &v) == 0;
            cfg.max_header = (size_t)v;
            break;
        case O_BODY:
            ok = opt_parse_uint(optarg, 0, 1024 * 1024 * 1024, &v) == 0;
            cfg.max_body = (size_t)v;
            break;
        case O_MESSAGE:
            ok = opt_parse_uint(optarg, 0, 1024 * 1024 * 1024, &v) == 0;
            cfg.max_message = (size_t)v;
            break;
        case O_IDLE:
            ok = opt_parse_uint(optarg, 1, 86400, &v) == 0;
            cfg.idle_timeout_ms = (uint32_t)v * 1000;
            break;
        case O_REQUEST:
            ok = opt_parse_uint(optarg, 1, 86400, &v) == 0;
            cfg.request_timeout_ms = (uint32_t)v * 1000;
            break;
        case O_DRAIN:
            ok = opt_parse_uint(optarg, 1, 86400, &v) == 0;
            cfg.drain_timeout_ms = (uint32_t)v * 1000;
            break;
        case O_TLS_CERT:
            cfg.tls_cert = optarg;
            break;
        case O_TLS_KEY:
            cfg.tls_key = optarg;
            break;
        case O_TLS_CA:
            cfg.tls_ca = optarg;
            break;
        case O_TLS_REQUIRE:
            cfg.tls_require_client_cert = true;
            break;
        case 'v':
            log_set_level(LOG_DEBUG);
            cfg.log_requests = true;
            break;
        case 'h':
            fputs(usage_car_server, stdout);
            return 0;
        default:
            return bad_usage(usage_car_server);
        }
        if (!ok) {
            fprintf(stderr, "shootout car-server: invalid value '%s' for --%s\n", optarg,
                    c == 'b' ? "bind" : c == 't' ? "threads" : opts[index].name);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "shootout car-server: unexpected argument '%s'\n", argv[optind]);
        return bad_usage(usage_car_server);
    }
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

static int cmd_a2b_server(int argc, char **argv)
{
    enum { O_DB = 256, O_INIT, O_SCALE, O_SEED, O_WORKERS, O_POOL, O_QUEUE, O_MAXCONN, O_INFLIGHT,
           O_HEADER, O_BODY, O_IDLE, O_REQUEST, O_DRAIN };
    static const struct option opts[] = {
        {"bind", required_argument, NULL, 'b'},
        {"port", required_argument, NULL, 'p'},
        {"threads", required_argument, NULL, 't'},
        {"db", required_argument, NULL, O_DB},
        {"init", no_argument, NULL, O_INIT},
        {"scale", required_argument, NULL, O_SCALE},
        {"seed", required_argument, NULL, O_SEED},
        {"workers", required_argument, NULL, O_WORKERS},
        {"pool", required_argument, NULL, O_POOL},
        {"queue", required_argument, NULL, O_QUEUE},
        {"max-connections", required_argument, NULL, O_MAXCONN},
        {"max-inflight", required_argument, NULL, O_INFLIGHT},
        {"max-header-size", required_argument, NULL, O_HEADER},
        {"max-body-size", required_argument, NULL, O_BODY},
        {"idle-timeout", required_argument, NULL, O_IDLE},
        {"request-timeout", required_argument, NULL, O_REQUEST},
        {"drain-timeout", required_argument, NULL, O_DRAIN},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct a2b_server_config cfg;
    a2b_server_config_defaults(&cfg);
    struct http_server_config *h = &cfg.http;
    int c, index = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "b:p:t:vh", opts, &index)) != -1) {
        uint64_t v = 0;
        bool ok = true;
        char *end;
        switch (c) {
        case 'b': h->bind = optarg; break;
        case 'p':
            ok = opt_parse_uint(optarg, 0, 65535, &v) == 0;
            h->port = (int)v;
            break;
        case 't':
            ok = opt_parse_uint(optarg, 1, 1024, &v) == 0;
            h->threads = (unsigned)v;
            break;
        case O_DB: cfg.db = optarg; break;
        case O_INIT: cfg.init_only = true; break;
        case O_SCALE:
            cfg.scale = strtod(optarg, &end);
            ok = end != optarg && *end == 0 && cfg.scale > 0 && cfg.scale <= 100;
            break;
        case O_SEED: ok = opt_parse_uint(optarg, 0, UINT64_MAX, &cfg.seed) == 0; break;
        case O_WORKERS:
            ok = opt_parse_uint(optarg, 1, 256, &v) == 0;
            cfg.workers = (unsigned)v;
            break;
        case O_POOL:
            ok = opt_parse_uint(optarg, 1, 256, &v) == 0;
            cfg.pool = (unsigned)v;
            break;
        case O_QUEUE:
            ok = opt_parse_uint(optarg, 1, 1000000, &v) == 0;
            cfg.queue_max = (unsigned)v;
            break;
        case O_MAXCONN:
            ok = opt_parse_uint(optarg, 1, 10000000, &v) == 0;
            h->max_connections = (unsigned)v;
            break;
        case O_INFLIGHT:
            ok = opt_parse_uint(optarg, 1, 1024, &v) == 0;
            h->max_inflight = (unsigned)v;
            break;
        case O_HEADER:
            ok = opt_parse_uint(optarg, 256, 1024 * 1024, &v) == 0;
            h->max_header = (size_t)v;
            break;
        case O_BODY:
            ok = opt_parse_uint(optarg, 0, 1024 * 1024 * 1024, &v) == 0;
            h->max_body = (size_t)v;
            break;
        case O_IDLE:
            ok = opt_parse_uint(optarg, 1, 86400, &v) == 0;
            h->idle_timeout_ms = (uint32_t)v * 1000;
            break;
        case O_REQUEST:
            ok = opt_parse_uint(optarg, 1, 86400, &v) == 0;
            h->request_timeout_ms = (uint32_t)v * 1000;
            break;
        case O_DRAIN:
            ok = opt_parse_uint(optarg, 1, 86400, &v) == 0;
            h->drain_timeout_ms = (uint32_t)v * 1000;
            break;
        case 'v':
            log_set_level(LOG_DEBUG);
            h->log_requests = true;
            break;
        case 'h': fputs(usage_a2b_server, stdout); return 0;
        default: return bad_usage(usage_a2b_server);
        }
        if (!ok) {
            fprintf(stderr, "shootout a2b-server: invalid value '%s' for --%s\n", optarg,
                    c == 'b' ? "bind" : c == 'p' ? "port" : c == 't' ? "threads" : opts[index].name);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "shootout a2b-server: unexpected argument '%s'\n", argv[optind]);
        return bad_usage(usage_a2b_server);
    }
    return a2b_server_run(&cfg);
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
    if (!strcmp(cmd, "run"))
        return shootout_run_main(argc, argv, SHOOTOUT_VERSION);
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
