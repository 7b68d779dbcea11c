/* opt.h - strict parsing of command-line option values, shared by every
 * subcommand so that all of them accept and refuse the same spellings.
 */
#ifndef SHOOTOUT_OPT_H
#define SHOOTOUT_OPT_H

#include <stdint.h>

/* Parses a whole decimal number in [min, max] (no sign, no trailing text).
 * Returns 0 and sets *out, or -1 leaving *out alone. */
int opt_parse_uint(const char *arg, uint64_t min, uint64_t max, uint64_t *out);

#endif
