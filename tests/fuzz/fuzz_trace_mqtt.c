/* fuzz_trace_mqtt.c - libFuzzer target for the wire trace's MQTT decoding
 * (load/trace.c): the first input byte picks the protocol version (3, 4 or
 * 5) and the rest is a packet as it might arrive from a broker, whole,
 * truncated or lying about its length. The summary must be a NUL-ended,
 * printable line shorter than its buffer, whatever the bytes, and the body
 * escaping must stay within its buffer too. Any broken invariant abort()s.
 */
#include <stdlib.h>
#include <string.h>

#include "load/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)          \
    do {                     \
        if (!(cond))         \
            abort();         \
    } while (0)

static void check_line(const char *s, size_t n, size_t cap)
{
    CHECK(n < cap && strlen(s) == n);
    for (size_t i = 0; i < n; i++)
        CHECK(s[i] >= 0x20 && s[i] < 0x7f); /* one line, escaped */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t version = (uint8_t)(3 + data[0] % 3);
    char out[160]; /* small, so that long topics and filter lists are cut */
    size_t n = trace_mqtt_format(out, sizeof out, version, data + 1, size - 1);
    check_line(out, n, sizeof out);
    char esc[64];
    n = trace_escape(esc, sizeof esc, data, size, data[0]);
    check_line(esc, n, sizeof esc);
    return 0;
}
