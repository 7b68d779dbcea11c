/* fuzz_broker_ws.c - libFuzzer target for the broker's WebSocket transport
 * (src/broker/transport.c over src/http/ws.c): two clients over socket
 * pairs into a real broker whose default listener speaks MQTT over
 * WebSockets. The input is a script of chunks, each preceded by a control
 * byte and a length byte:
 *   control & 3 = 0, 1: client 0 or 1 sends the chunk;
 *   2: that client (length byte & 1) hangs up and reconnects with a valid
 *      upgrade request, so the script goes on with frames;
 *   3: the same, but the chunk is sent as the whole opening request.
 * Both clients start upgraded. Frames need a mask, but a zero mask leaves
 * the payload as it is, which keeps MQTT inside frames reachable.
 * ASan, UBSan and LeakSanitizer do the checking; at the end every client
 * hangs up and the broker shuts down, so everything must be freed.
 */
#include <signal.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/broker_int.h"
#include "broker/transport.h"
#include "core/log.h"
#include "fuzz_broker_harness.h"

#define FUZZ_CLIENTS 2

static const char fuzz_upgrade[] =
    "GET /mqtt HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    "Sec-WebSocket-Protocol: mqtt\r\n\r\n";

/* A new connection whose peer first sends request[0..len). */
static int fuzz_connect(struct broker *b, const void *request, size_t len)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
        abort();
    struct conn *c = conn_accept(b->home, sv[0]);
    if (!c || transport_attach(b->home, c, 0) < 0)
        abort();
    if (len && write(sv[1], request, len) != (ssize_t)len)
        abort();
    return sv[1];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_broker_once();
    struct ev_loop *loop = ev_loop_new();
    struct broker_config cfg;
    broker_config_defaults(&cfg);
    cfg.max_packet_size = 2048;
    cfg.max_output = 4096;
    cfg.listeners.v[0].websockets = true;
    struct broker b;
    fuzz_broker_start(&b, &cfg, loop);
    char err[256];
    if (transport_setup(&b, err, sizeof err) < 0)
        abort();

    int peers[FUZZ_CLIENTS];
    for (int i = 0; i < FUZZ_CLIENTS; i++)
        peers[i] = fuzz_connect(&b, fuzz_upgrade, strlen(fuzz_upgrade));
    size_t pos = 0;
    while (pos + 2 <= size) {
        uint8_t ctl = data[pos] & 3, arg = data[pos + 1];
        pos += 2;
        size_t len = arg < size - pos ? arg : size - pos;
        int who = ctl < 2 ? ctl : arg & 1;
        if (ctl >= 2) {
            close(peers[who]);
            peers[who] = ctl == 2 ? fuzz_connect(&b, fuzz_upgrade, strlen(fuzz_upgrade))
                                  : fuzz_connect(&b, data + pos, len);
        } else if (write(peers[who], data + pos, len) < 0) {
            /* The broker closed this client: it reconnects. */
            close(peers[who]);
            peers[who] = fuzz_connect(&b, fuzz_upgrade, strlen(fuzz_upgrade));
        }
        if (ctl != 2)
            pos += len;
        fuzz_broker_step(loop, peers, FUZZ_CLIENTS);
    }
    for (int i = 0; i < FUZZ_CLIENTS; i++)
        close(peers[i]);
    ev_run_once(loop, 0);
    fuzz_broker_stop(&b);
    ev_loop_free(loop);
    return 0;
}
