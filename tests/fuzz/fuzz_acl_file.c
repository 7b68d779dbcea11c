/* fuzz_acl_file.c - libFuzzer target for the ACL parser and checks
 * (acl.c). The input is "<acl file>\0<topic or filter>". When the file
 * parses, the rules are bound to a few identities (anonymous, users named
 * in the file's usual seeds, client ids with and without wildcards) and the
 * second part is checked as a publish, a delivery and a subscription.
 * Checked: for a filter without wildcards, the subscription answer agrees
 * with the read check (granted exactly when readable, never "filtered"),
 * and the sanitizers see nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "broker/acl.h"
#include "mqtt/mqtt_topic.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, '\0', size);
    size_t acl_len = nul ? (size_t)(nul - data) : size;
    const uint8_t *topic = nul ? nul + 1 : data + size;
    size_t tlen = nul ? size - acl_len - 1 : 0;
    struct acl *acl;
    char err[256];
    if (acl_parse(&acl, "fuzz", (const char *)data, acl_len, err, sizeof err) < 0) {
        check(strncmp(err, "fuzz:", 5) == 0);
        return 0;
    }
    static const struct {
        const char *id, *user;
    } who[] = {{"c1", NULL}, {"c1", "roger"}, {"dev", "u"}, {"a+b", "u"}, {"x", "a/b"}, {"", ""}};
    bool is_name = mqtt_topic_name_valid(topic, tlen);
    bool is_filter = mqtt_topic_filter_valid(topic, tlen);
    for (size_t i = 0; i < sizeof who / sizeof who[0]; i++) {
        struct acl_client *c = acl_client_new(acl, who[i].id, strlen(who[i].id), who[i].user,
                                              who[i].user ? strlen(who[i].user) : 0);
        if (is_name) {
            bool readable = acl_client_check(c, topic, tlen, ACL_READ);
            (void)acl_client_check(c, topic, tlen, ACL_WRITE);
            enum acl_sub_result s = acl_client_check_subscribe(c, topic, tlen);
            check(s == (readable ? ACL_SUB_GRANTED : ACL_SUB_DENIED));
        } else if (is_filter) {
            (void)acl_client_check_subscribe(c, topic, tlen);
        }
        acl_client_free(c);
    }
    acl_free(acl);
    return 0;
}
