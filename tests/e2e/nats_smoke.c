/* nats_smoke.c - proves the broker cluster's toolchain: the libnats C client
 * (Debian's libnats-dev) links with our library and talks to a NATS server,
 * carrying an MQTT topic through the subjects cluster/subject.c maps it to.
 * Run by tests/e2e/test_natsd_fixture.py against the natsd.py fixture.
 *
 *   nats_smoke URL[,URL...] TOPIC FILTER
 *
 * Subscribes to FILTER's subscription(s) on the first URL, publishes TOPIC
 * on the last one (another node of a cluster, so the message crosses a
 * route), and prints the subject and the topic decoded from what arrives.
 * Exit 0: received; 3: nothing received in 2 s (as when the filter does
 * not match); 1: an error; 2: usage.
 */
#include <stdio.h>
#include <string.h>

#include <nats/nats.h>

#include "cluster/subject.h"
#include "core/clock.h"

static int fail(const char *what, natsStatus s)
{
    fprintf(stderr, "nats_smoke: %s: %s\n", what, natsStatus_GetText(s));
    return 1;
}

/* The whole exchange; the caller closes the library. */
static int smoke(char *urls, const char *topic, const char *filter)
{
    subject_map m;
    subject_map_init(&m, SUBJECT_DEFAULT_PREFIX);
    static subject_subs subs;
    static char subj[SUBJECT_MAX + 1];
    size_t slen = subject_from_topic(&m, (const uint8_t *)topic, strlen(topic), subj, sizeof subj);
    if (slen == 0 || subject_subs_from_filter(&m, (const uint8_t *)filter, strlen(filter), &subs) != 0) {
        fprintf(stderr, "nats_smoke: not a topic and a filter: '%s' '%s'\n", topic, filter);
        return 2;
    }
    char *last = strrchr(urls, ',');
    const char *pub_url = last ? last + 1 : urls;
    if (last)
        *last = '\0';
    char *comma = strchr(urls, ',');
    if (comma)
        *comma = '\0'; /* the subscriber's server: the first URL */

    natsConnection *sc = NULL, *pc = NULL;
    natsSubscription *sub[2] = {NULL, NULL};
    natsMsg *msg = NULL;
    int rc = 1;
    natsStatus s = natsConnection_ConnectTo(&sc, urls);
    if (s != NATS_OK) {
        rc = fail("connect (subscriber)", s);
        goto out;
    }
    if ((s = natsConnection_ConnectTo(&pc, pub_url)) != NATS_OK) {
        rc = fail("connect (publisher)", s);
        goto out;
    }
    for (int i = 0; i < subs.n; i++) {
        printf("subscribe %s\n", subs.subj[i]);
        if ((s = natsConnection_SubscribeSync(&sub[i], sc, subs.subj[i])) != NATS_OK) {
            rc = fail("subscribe", s);
            goto out;
        }
    }
    if ((s = natsConnection_Flush(sc)) != NATS_OK) {
        rc = fail("flush (subscriber)", s);
        goto out;
    }
    printf("publish %s as %s\n", topic, subj);
    /* Interest reaches the other servers of a cluster asynchronously, so
     * publish again every 100 ms until something arrives, for 2 s. */
    uint64_t deadline = clock_now_ns() + 2000000000u;
    while (msg == NULL && clock_now_ns() < deadline) {
        if ((s = natsConnection_Publish(pc, subj, "smoke", 5)) != NATS_OK ||
            (s = natsConnection_Flush(pc)) != NATS_OK) {
            rc = fail("publish", s);
            goto out;
        }
        for (int i = 0; i < subs.n && msg == NULL; i++) {
            s = natsSubscription_NextMsg(&msg, sub[i], 50);
            if (s != NATS_OK && s != NATS_TIMEOUT) {
                rc = fail("next message", s);
                goto out;
            }
        }
    }
    if (msg == NULL) {
        printf("nothing received\n");
        rc = 3;
        goto out;
    }
    const char *got = natsMsg_GetSubject(msg);
    static uint8_t back[SUBJECT_MAX];
    size_t tn = subject_to_topic(&m, got, strlen(got), back, sizeof back);
    if (tn == 0) {
        fprintf(stderr, "nats_smoke: received subject %s is not a topic's\n", got);
        goto out;
    }
    printf("received %.*s on %s\n", (int)tn, (const char *)back, got);
    rc = 0;
out:
    natsMsg_Destroy(msg);
    for (int i = 0; i < 2; i++)
        natsSubscription_Destroy(sub[i]);
    natsConnection_Destroy(pc);
    natsConnection_Destroy(sc);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: nats_smoke URL[,URL...] TOPIC FILTER\n");
        return 2;
    }
    int rc = smoke(argv[1], argv[2], argv[3]);
    /* Waits for the library's threads, so nothing is left for LeakSanitizer. */
    nats_CloseAndWait(5000);
    return rc;
}
