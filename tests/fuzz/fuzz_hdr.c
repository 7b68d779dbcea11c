/* fuzz_hdr.c - libFuzzer target for the NATS headers that carry RETAIN and
 * the MQTT 5 properties between cluster nodes (cluster/hdr.c), which a
 * node reads from any publisher on its prefix.
 *
 * The input is a list of headers, one a line ('\n'): the first byte of a
 * line picks the name (ours, or one that is not), the rest is the value.
 * Checks: decoding never crashes; what it keeps is a property block the
 * MQTT 5 decoder accepts for a PUBLISH (so a subscriber gets a valid
 * packet); encoding that again and decoding it gives the same block and
 * flag, with nothing counted bad; and a line kept on its own is encoded
 * back to exactly its value (one spelling per value). Any broken
 * invariant abort()s.
 */
#include <stdlib.h>
#include <string.h>

#include "cluster/hdr.h"
#include "fuzz_check.h"
#include "mqtt/mqtt_codec.h"
#include "mqtt/mqtt_props.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const NAMES[] = {HDR_RETAIN,         HDR_EXPIRY,      HDR_FORMAT,
                                    HDR_CONTENT_TYPE,   HDR_RESPONSE_TOPIC, HDR_CORRELATION,
                                    HDR_USER,           "Mqtt-Id",       "X-Other"};
#define NNAMES (sizeof NAMES / sizeof *NAMES)

/* What hdr_encode put, in order. */
struct headers {
    const char **name;
    char **value;
    size_t n, cap;
};

static bool collect(void *ctx, const char *name, const char *value)
{
    struct headers *h = ctx;
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 16;
        h->name = realloc(h->name, h->cap * sizeof *h->name);
        h->value = realloc(h->value, h->cap * sizeof *h->value);
    }
    h->name[h->n] = name;
    h->value[h->n++] = strdup(value);
    return true;
}

static void headers_free(struct headers *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->value[i]);
    free(h->name);
    free(h->value);
}

/* The MQTT encoding of p (NULL: none) in a malloc'd buffer, *len bytes;
 * the decoder must take it. */
static uint8_t *mqtt_block(const struct mqtt_props *p, size_t *len)
{
    struct mqtt_props none = {0};
    if (!p)
        p = &none;
    *len = mqtt_props_size(p);
    uint8_t *b = malloc(*len);
    check(mqtt_props_encode(b, p) == *len);
    struct mqtt_props back;
    size_t used = 0;
    check(mqtt_props_decode(b, *len, MQTT_PUBLISH, &back, &used) == MQTT_PROPS_OK && used == *len);
    return b;
}

/* One line, its value NUL-terminated. */
struct line {
    const char *name;
    char *value;
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct line *lines = malloc((size + 1) * sizeof *lines);
    size_t n = 0;
    for (size_t at = 0; at < size;) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t end = nl ? (size_t)(nl - data) : size;
        if (end > at) { /* an empty line has no name: skipped */
            size_t vlen = end - at - 1;
            lines[n].name = NAMES[data[at] % NNAMES];
            lines[n].value = malloc(vlen + 1);
            memcpy(lines[n].value, data + at + 1, vlen);
            lines[n].value[vlen] = '\0';
            n++;
        }
        at = end + 1;
    }

    struct hdr_in h;
    hdr_in_init(&h);
    for (size_t i = 0; i < n; i++)
        hdr_in_add(&h, lines[i].name, lines[i].value);
    const struct mqtt_props *p = hdr_in_end(&h);
    size_t len1;
    uint8_t *block1 = mqtt_block(p, &len1);

    /* Again through the headers: the same, and nothing bad. */
    struct headers out = {0};
    check(hdr_encode(p, h.retain, collect, &out));
    struct hdr_in h2;
    hdr_in_init(&h2);
    for (size_t i = 0; i < out.n; i++)
        hdr_in_add(&h2, out.name[i], out.value[i]);
    size_t len2;
    uint8_t *block2 = mqtt_block(hdr_in_end(&h2), &len2);
    check(h2.bad == 0 && h2.retain == h.retain);
    check(len1 == len2 && memcmp(block1, block2, len1) == 0);
    hdr_in_free(&h2);
    headers_free(&out);
    free(block1);
    free(block2);
    hdr_in_free(&h);

    /* Each line alone: kept means written back as it was. */
    for (size_t i = 0; i < n; i++) {
        struct hdr_in one;
        hdr_in_init(&one);
        hdr_in_add(&one, lines[i].name, lines[i].value);
        const struct mqtt_props *q = hdr_in_end(&one);
        struct headers back = {0};
        check(hdr_encode(q, one.retain, collect, &back));
        if (one.bad == 0 && back.n == 1)
            check(strcmp(back.name[0], lines[i].name) == 0 &&
                  strcmp(back.value[0], lines[i].value) == 0);
        check(back.n <= 1 && (back.n == 1) == (one.bad == 0 && lines[i].name[0] == 'M' &&
                                               strcmp(lines[i].name, "Mqtt-Id") != 0));
        headers_free(&back);
        hdr_in_free(&one);
    }
    for (size_t i = 0; i < n; i++)
        free(lines[i].value);
    free(lines);
    return 0;
}
