/* si.h - numbers as a reader takes them in at a glance: three significant
 * digits and an SI prefix (n, µ, m, k, M, G, T), with the unit, for the
 * HTML report's axes, labels and cells alike.
 */
#ifndef SHOOTOUT_SI_H
#define SHOOTOUT_SI_H

#include <stddef.h>

/* Writes v with unit into buf: "250 µs", "1.5 ms", "2 s" for the SI units
 * "s" and "B", whose symbol takes the prefix; "12.3k msg/s", "400k" for
 * any other unit (or "" for none), where the prefix stays on the number.
 * Zero is "0" (with the unit); NaN and infinities are "–". Returns buf. */
char *si_format(char *buf, size_t cap, double v, const char *unit);

#endif
