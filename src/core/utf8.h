/* utf8.h - UTF-8 as RFC 3629 defines it: no overlong forms, no surrogates
 * (U+D800..U+DFFF), nothing above U+10FFFF. The one validator and encoder
 * every parser uses; rules of a protocol on top (MQTT's refusal of U+0000,
 * JSON's escapes) stay with that protocol.
 */
#ifndef SHOOTOUT_UTF8_H
#define SHOOTOUT_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length (1 to 4) of the well-formed sequence at s[0..avail), avail >= 1;
 * 0 when it is ill-formed; -1 when its bytes are a well-formed beginning
 * that avail cuts short (a reader of a stream may want more input, a reader
 * of a whole document says "truncated"). Looks at no byte past the first
 * bad one, so a NUL-terminated string may be read with avail 4. */
int utf8_seq_len(const uint8_t *s, size_t avail);

/* Whether s[0..len) is well-formed UTF-8 (U+0000 included). */
bool utf8_valid(const uint8_t *s, size_t len);

/* Writes code point cp (at most U+10FFFF, no surrogate) as UTF-8 to out;
 * returns its length, 1 to 4. */
size_t utf8_encode(uint32_t cp, uint8_t out[4]);

#endif
