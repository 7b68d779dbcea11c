/* fuzz_kvrec.c - libFuzzer target for the decoder of the retained-message
 * records of the cluster's KV bucket (cluster/kvrec.c), which reads what
 * any client of the NATS server could have written under the bucket.
 *
 * Checks: decoding any bytes does not crash or read past them (copied to
 * an exact-size buffer for ASan); a record it accepts has QoS 0..2, keeps
 * none but the retained copy's properties, and encodes back to exactly
 * the same bytes (the decoder takes only what the encoder writes). Any
 * broken invariant abort()s.
 */
#include <stdlib.h>
#include <string.h>

#include "cluster/kvrec.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *in = malloc(size ? size : 1);
    memcpy(in, data, size);
    struct kvrec r;
    struct mqtt_props props;
    if (kvrec_decode(in, size, &r, &props) == 0) {
        check(r.qos <= 2);
        check(!(props.present & (MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY) |
                                 MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS) |
                                 MQTT_PROP_BIT(MQTT_PROP_SUBSCRIPTION_ID))));
        check(kvrec_size(&r) == size);
        uint8_t *out = malloc(size);
        check(kvrec_encode(out, &r) == size);
        check(memcmp(out, in, size) == 0);
        free(out);
    }
    free(in);
    return 0;
}
