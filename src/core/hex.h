/* hex.h - hexadecimal digits, read and written: chunk sizes (HTTP/1.1),
 * percent-encoding (gRPC messages, query strings) and \u escapes (JSON).
 */
#ifndef SHOOTOUT_HEX_H
#define SHOOTOUT_HEX_H

/* "0123456789ABCDEF": digit i of either case is written from here. */
extern const char hex_upper[16];

/* The value 0..15 of hex digit c, either case, or -1. */
int hex_value(unsigned char c);

/* The byte two hex digits s[0], s[1] stand for, 0..255, or -1 when either
 * is not a hex digit (s[1] is not read when s[0] is not one). */
int hex_byte(const char *s);

#endif
