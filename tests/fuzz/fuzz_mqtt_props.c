/* fuzz_mqtt_props.c - libFuzzer target for the MQTT 5 property codec.
 *
 * The input is decoded as the property block of every packet type. Whatever
 * decodes must re-encode to exactly the bytes it was decoded from, give the
 * same values when decoded again, and encode the same from caller lists as
 * from the decoded raw ranges. Any broken invariant abort()s.
 */
#include <stdlib.h>
#include <string.h>

#include "mqtt/mqtt_props.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)          \
    do {                     \
        if (!(cond))         \
            abort();         \
    } while (0)

/* Inputs are capped by libFuzzer's -max_len; larger ones are skipped. */
#define MAX_INPUT 65536

static bool same_bytes(struct mqtt_bytes a, struct mqtt_bytes b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static void check_same(const struct mqtt_props *a, const struct mqtt_props *b)
{
    CHECK(a->present == b->present);
    CHECK(a->payload_format == b->payload_format);
    CHECK(a->message_expiry == b->message_expiry);
    CHECK(same_bytes(a->content_type, b->content_type));
    CHECK(same_bytes(a->response_topic, b->response_topic));
    CHECK(same_bytes(a->correlation_data, b->correlation_data));
    CHECK(a->session_expiry == b->session_expiry);
    CHECK(same_bytes(a->assigned_client_id, b->assigned_client_id));
    CHECK(a->server_keep_alive == b->server_keep_alive);
    CHECK(same_bytes(a->auth_method, b->auth_method));
    CHECK(same_bytes(a->auth_data, b->auth_data));
    CHECK(a->request_problem_info == b->request_problem_info);
    CHECK(a->will_delay == b->will_delay);
    CHECK(a->request_response_info == b->request_response_info);
    CHECK(same_bytes(a->response_info, b->response_info));
    CHECK(same_bytes(a->server_reference, b->server_reference));
    CHECK(same_bytes(a->reason_string, b->reason_string));
    CHECK(a->receive_max == b->receive_max);
    CHECK(a->topic_alias_max == b->topic_alias_max);
    CHECK(a->topic_alias == b->topic_alias);
    CHECK(a->max_qos == b->max_qos);
    CHECK(a->retain_available == b->retain_available);
    CHECK(a->max_packet_size == b->max_packet_size);
    CHECK(a->wildcard_sub_available == b->wildcard_sub_available);
    CHECK(a->subscription_id_available == b->subscription_id_available);
    CHECK(a->shared_sub_available == b->shared_sub_available);

    CHECK(a->user_count == b->user_count);
    struct mqtt_props_iter ia, ib;
    struct mqtt_user_prop ua, ub;
    mqtt_props_users(a, &ia);
    mqtt_props_users(b, &ib);
    while (mqtt_props_next_user(&ia, &ua)) {
        CHECK(mqtt_props_next_user(&ib, &ub));
        CHECK(same_bytes(ua.name, ub.name) && same_bytes(ua.value, ub.value));
    }
    CHECK(!mqtt_props_next_user(&ib, &ub));

    CHECK(a->subid_count == b->subid_count);
    uint32_t sa, sb;
    mqtt_props_subids(a, &ia);
    mqtt_props_subids(b, &ib);
    while (mqtt_props_next_subid(&ia, &sa)) {
        CHECK(mqtt_props_next_subid(&ib, &sb));
        CHECK(sa == sb && sa != 0);
    }
    CHECK(!mqtt_props_next_subid(&ib, &sb));
}

static uint8_t out1[MAX_INPUT], out2[MAX_INPUT];
static struct mqtt_user_prop users[MAX_INPUT / 5]; /* at least 5 bytes each */
static uint32_t subids[MAX_INPUT / 2];              /* at least 2 bytes each */

static void check_packet(const uint8_t *data, size_t size, uint8_t packet)
{
    struct mqtt_props p, q;
    size_t used = 0;
    if (mqtt_props_decode(data, size, packet, &p, &used) != MQTT_PROPS_OK)
        return;
    CHECK(used <= size);

    /* Minimal varints make every value's encoding unique, so only the order
     * may change: the size must not. */
    size_t n = mqtt_props_size(&p);
    CHECK(n == used);
    CHECK(mqtt_props_encode(out1, &p) == n);

    size_t used2 = 0;
    CHECK(mqtt_props_decode(out1, n, packet, &q, &used2) == MQTT_PROPS_OK);
    CHECK(used2 == n);
    check_same(&p, &q);

    /* The canonical order is a fixed point. */
    CHECK(mqtt_props_encode(out2, &q) == n);
    CHECK(memcmp(out1, out2, n) == 0);

    /* Caller lists encode exactly as the raw ranges they were copied from. */
    struct mqtt_props_iter it;
    uint32_t k = 0;
    mqtt_props_users(&p, &it);
    while (mqtt_props_next_user(&it, &users[k]))
        k++;
    CHECK(k == p.user_count);
    k = 0;
    mqtt_props_subids(&p, &it);
    while (mqtt_props_next_subid(&it, &subids[k]))
        k++;
    CHECK(k == p.subid_count);
    p.user_raw = (struct mqtt_bytes){0};
    p.subid_raw = (struct mqtt_bytes){0};
    p.user_list = users;
    p.subid_list = subids;
    CHECK(mqtt_props_size(&p) == n);
    CHECK(mqtt_props_encode(out2, &p) == n);
    CHECK(memcmp(out1, out2, n) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT)
        return 0;
    /* 0 and 17 stand for packet values outside the table. */
    for (uint8_t packet = 0; packet <= MQTT_PROPS_WILL + 1; packet++)
        check_packet(data, size, packet);
    return 0;
}
