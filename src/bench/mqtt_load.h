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

#include "bench/result.h"

/* argv[0] is "mqtt-load". Returns the exit code (see bench.h). */
int mqtt_load_main(int argc, char **argv, const struct result_context *ctx);

#endif
