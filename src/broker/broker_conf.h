/* broker_conf.h - the broker's settings by name: one option table
 * (core/opt.h) behind both the command-line flags and a mosquitto.conf-style
 * configuration file, so a setting has one range, one conversion and one
 * meaning wherever it is given; each entry has its flag's name and its
 * keyword.
 *
 * File syntax (as mosquitto.conf): one `keyword value...` per line, `#`
 * starts a comment line, blank lines are ignored. The keywords shared with
 * Mosquitto mean the same thing there (port, bind_address, listener,
 * max_connections, max_packet_size, max_queued_messages,
 * max_inflight_messages, queue_qos0_messages); docs/broker.md lists them all.
 */
#ifndef SHOOTOUT_BROKER_CONF_H
#define SHOOTOUT_BROKER_CONF_H

#include <stddef.h>

#include "broker/broker.h"
#include "core/opt.h"

/* The settings, on a struct broker_config: a flag and a keyword each;
 * --help is written from their help texts. */
extern const struct opt broker_options[];

/* Sets one setting from its text value. name is a file keyword
 * ("max_connections") or a flag's long name ("max-connections"). Returns
 * 0, or -1 with a message in err. */
int broker_conf_set(struct broker_config *cfg, const char *name, const char *value, char *err,
                    size_t errlen);

/* Applies a configuration held in text (origin names it in messages).
 * Returns 0, or -1 with "origin:LINE: message" in err. */
int broker_conf_parse(struct broker_config *cfg, const char *text, const char *origin, char *err,
                      size_t errlen);

/* Reads and applies a configuration file. Returns 0, or -1 with err. */
int broker_conf_load(struct broker_config *cfg, const char *path, char *err, size_t errlen);

#endif
