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

#include "bench/bench.h"
#include "bench/shootout_run.h"
#include "broker/broker.h"
#include "core/log.h"
#include "core/opt.h"

#define SHOOTOUT_VERSION "0.1.0"
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
    "  broker     MQTT 3.1.1 broker\n"
    "  bench      load generators (mqtt-load, mqtt-ping); `shootout bench --help`\n"
    "  version    print the version\n"
    "  help       this text; `shootout <command> --help` for a command's options\n";

static const char usage_broker[] =
    "usage: shootout broker [options]\n"
    "\n"
    "MQTT 3.1.1 broker. Runs in the foreground, logs to stderr, stops\n"
    "gracefully on SIGTERM or SIGINT.\n"
    "\n"
    "options:\n"
    "  -b, --bind ADDR               listen address (default 127.0.0.1; :: or\n"
    "                                0.0.0.0 for all interfaces)\n"
    "  -p, --port N                  TCP port (default 1883; 0 picks a free one)\n"
    "      --max-connections N       simultaneous clients (default 100000);\n"
    "                                more are answered CONNACK 3 and closed\n"
    "      --max-packet-size BYTES   largest packet accepted (default 1048576);\n"
    "                                a larger one closes its connection\n"
    "      --max-queued-messages N   QoS 1/2 messages queued per session beyond\n"
    "                                the inflight window (default 1000)\n"
    "      --max-inflight-messages N unacknowledged QoS 1/2 messages per client\n"
    "                                (default 20, at most 65535)\n"
    "      --max-output-bytes BYTES  pending output per client before QoS 0\n"
    "                                messages to it are dropped (default 8388608)\n"
    "      --queue-qos0              also queue QoS 0 messages for offline\n"
    "                                persistent sessions\n"
    "      --connect-timeout SECS    time a new connection has to send CONNECT\n"
    "                                (default 10)\n"
    "  -v, --verbose                 log every connect and disconnect\n"
    "  -h, --help                    this text\n";

/* Parses an unsigned option value in [min, max]; exits on error. */
static unsigned long long parse_uint(const char *opt, const char *s, unsigned long long min,
                                     unsigned long long max)
{
    uint64_t v;
    if (opt_parse_uint(s, min, max, &v) < 0) {
        fprintf(stderr, "shootout: %s wants a whole number from %llu to %llu, not '%s'\n", opt, min,
                max, s);
        exit(EXIT_USAGE);
    }
    return v;
}

static int bad_usage(const char *usage)
{
    fprintf(stderr, "%s", usage);
    return EXIT_USAGE;
}

static int cmd_broker(int argc, char **argv)
{
    enum {
        OPT_MAX_CONN = 256,
        OPT_MAX_PACKET,
        OPT_MAX_QUEUED,
        OPT_MAX_INFLIGHT,
        OPT_MAX_OUTPUT,
        OPT_QUEUE_QOS0,
        OPT_CONNECT_TIMEOUT,
    };
    static const struct option opts[] = {
        {"bind", required_argument, NULL, 'b'},
        {"port", required_argument, NULL, 'p'},
        {"max-connections", required_argument, NULL, OPT_MAX_CONN},
        {"max-packet-size", required_argument, NULL, OPT_MAX_PACKET},
        {"max-queued-messages", required_argument, NULL, OPT_MAX_QUEUED},
        {"max-inflight-messages", required_argument, NULL, OPT_MAX_INFLIGHT},
        {"max-output-bytes", required_argument, NULL, OPT_MAX_OUTPUT},
        {"queue-qos0", no_argument, NULL, OPT_QUEUE_QOS0},
        {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct broker_config cfg;
    broker_config_defaults(&cfg);
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "b:p:vh", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            cfg.bind = optarg;
            break;
        case 'p':
            cfg.port = (int)parse_uint("--port", optarg, 0, 65535);
            break;
        case OPT_MAX_CONN:
            cfg.max_connections = (uint32_t)parse_uint("--max-connections", optarg, 1, UINT32_MAX);
            break;
        case OPT_MAX_PACKET:
            cfg.max_packet_size = (uint32_t)parse_uint("--max-packet-size", optarg, 64, 268435460);
            break;
        case OPT_MAX_QUEUED:
            cfg.max_queued = (uint32_t)parse_uint("--max-queued-messages", optarg, 0, UINT32_MAX);
            break;
        case OPT_MAX_INFLIGHT:
            cfg.max_inflight = (uint32_t)parse_uint("--max-inflight-messages", optarg, 1, 65535);
            break;
        case OPT_MAX_OUTPUT:
            cfg.max_output = (size_t)parse_uint("--max-output-bytes", optarg, 1024, SIZE_MAX);
            break;
        case OPT_QUEUE_QOS0:
            cfg.queue_qos0 = true;
            break;
        case OPT_CONNECT_TIMEOUT:
            cfg.connect_timeout_ms = (uint32_t)parse_uint("--connect-timeout", optarg, 1, 3600) * 1000;
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
    }
    if (optind < argc) {
        fprintf(stderr, "shootout broker: unexpected argument '%s'\n", argv[optind]);
        return bad_usage(usage_broker);
    }
    return broker_run(&cfg);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return bad_usage(usage_main);
    const char *cmd = argv[1];
    if (!strcmp(cmd, "broker"))
        return cmd_broker(argc - 1, argv + 1);
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
