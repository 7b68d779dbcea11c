/* fuzz_broker.c - libFuzzer target for the broker's packet handling: the
 * input is a script of byte chunks sent by three clients over socket pairs
 * into a real broker (connections, sessions, subscription tree, retained
 * store, QoS flows, wills), with small limits so that every bound is hit.
 * Each chunk is preceded by one control byte:
 *   low 2 bits 0..2: the client that sends the chunk; 3: that client
 *   (next byte % 3) hangs up and a new connection takes its place;
 *   the next byte: the chunk's length.
 * ASan, UBSan and LeakSanitizer do the checking; at the end every client
 * hangs up and the broker shuts down, so everything must be freed.
 */
#include <signal.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/broker_int.h"
#include "core/log.h"

#define FUZZ_CLIENTS 3

static int fuzz_connect(struct broker *b)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
        abort();
    conn_accept(b, sv[0]);
    return sv[1];
}

/* Let the broker handle what arrived, and read what it answered so that
 * its output never backs up. */
static void fuzz_step(struct ev_loop *loop, const int *peers)
{
    uint8_t sink[65536];
    for (int round = 0; round < 2; round++) {
        ev_run_once(loop, 0);
        for (int i = 0; i < FUZZ_CLIENTS; i++)
            while (peers[i] >= 0 && read(peers[i], sink, sizeof sink) > 0) {
            }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int once;
    if (!once) {
        signal(SIGPIPE, SIG_IGN);
        log_set_level(LOG_ERROR);
        once = 1;
    }
    struct ev_loop *loop = ev_loop_new();
    struct broker_config cfg;
    broker_config_defaults(&cfg);
    cfg.max_packet_size = 2048;
    cfg.max_inflight = 3;
    cfg.max_queued = 5;
    cfg.max_output = 4096;
    cfg.queue_qos0 = size & 1;
    struct broker b;
    broker_init(&b, &cfg, loop);

    int peers[FUZZ_CLIENTS];
    for (int i = 0; i < FUZZ_CLIENTS; i++)
        peers[i] = fuzz_connect(&b);

    size_t pos = 0;
    while (pos + 2 <= size) {
        uint8_t ctl = data[pos], arg = data[pos + 1];
        pos += 2;
        if ((ctl & 3) == 3) {
            int who = arg % FUZZ_CLIENTS;
            close(peers[who]);
            peers[who] = fuzz_connect(&b);
        } else {
            size_t len = arg;
            if (len > size - pos)
                len = size - pos;
            if (write(peers[ctl & 3], data + pos, len) < 0) {
                /* The broker closed this client (a protocol error): it
                 * reconnects, as a real client would. */
                close(peers[ctl & 3]);
                peers[ctl & 3] = fuzz_connect(&b);
            }
            pos += len;
        }
        fuzz_step(loop, peers);
    }
    for (int i = 0; i < FUZZ_CLIENTS; i++) {
        close(peers[i]);
        peers[i] = -1;
    }
    fuzz_step(loop, peers);
    broker_shutdown(&b);
    ev_loop_free(loop);
    return 0;
}
