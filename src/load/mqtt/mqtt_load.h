/* mqtt_load.h - `shootout bench mqtt-load`, the source article's loadtest:
 * C connections, half of them subscribers (subscriber i on loadtest/<i>),
 * half publishers (publisher i sends M messages to loadtest/<i> as fast as
 * the broker takes them). The run ends when every subscriber has its M
 * messages.
 *
 * Two throughputs, both messages delivered to subscribers per second: the
 * article's, timed from the first connect to the last message, and the
 * messaging phase's, timed from the moment every subscription was
 * established (publishing starts only then) to the last message.
 */
#ifndef SHOOTOUT_MQTT_LOAD_H
#define SHOOTOUT_MQTT_LOAD_H

#include <stdbool.h>

#include "load/bench.h"
#include "load/mqtt/mqtt_bench.h"

struct mqtt_load_opts {
    struct mqtt_bench_opts mqtt;
    unsigned conns;  /* an even number: half subscribe, half publish */
    bool persistent; /* --session persistent */
    bool offline;    /* --offline (with persistent and QoS 1 or 2) */
};

/* argv[0] is "mqtt-load". Returns the exit code (see bench.h). */
int mqtt_load_main(int argc, char **argv, const struct result_context *ctx);

/* The experiment itself, for callers that set the options up themselves
 * (o->host numeric, o->target named, see bench_finish_options): o->runs
 * repetitions of l. Appends the rows to out and returns the exit code. */
int mqtt_load_exec(const struct bench_opts *o, const struct mqtt_load_opts *l,
                   const struct result_context *ctx, struct result_set *out);

/* The rows' name (mqtt_bench_row_name), the session variant "persistent"
 * or "offline" when it is not the clean default, the point "<conns>c". */
void mqtt_load_row_name(struct result_row *tmpl, const struct bench_opts *o,
                        const struct mqtt_load_opts *l);

#endif
