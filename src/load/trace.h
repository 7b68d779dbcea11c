/* trace.h - `--trace FILE` of the load generators: what goes over the wire,
 * one compact text line per packet, request, response, header or body,
 * stamped and sampled so that tracing a run does not become its bottleneck.
 *
 * Line format (docs/bench.md, "Tracing"):
 *
 *     SECONDS CONN DIR KIND SUMMARY
 *
 * SECONDS since the trace was opened (microseconds), CONN the connection id
 * (MQTT: the connection's index, as in its client id; HTTP and gRPC: the
 * order in which the run opened it), DIR '>' sent or '<' received, KIND
 * one of mqtt, http (request or status line), hdr, body, grpc, and SUMMARY
 * the decoded packet or message. Lines starting with '#' are comments.
 *
 * Sampling keeps whole exchanges: with --trace-sample N, an HTTP or gRPC
 * connection's 0th, Nth, 2Nth... call is traced with its answer; an MQTT
 * QoS 1/2 flow is traced when its packet id is a multiple of N (so the
 * PUBLISH and all its acknowledgements appear together), a QoS 0 PUBLISH
 * when it is a multiple of N on its connection, and the other packets
 * (CONNECT, SUBSCRIBE and their answers) on connections whose id is a
 * multiple of N.
 *
 * Threads: lines are formatted on the caller's stack and appended under a
 * mutex to one buffered stream, so every line is whole. Every hook in a
 * client is one test of its trace pointer, NULL without --trace.
 */
#ifndef SHOOTOUT_TRACE_H
#define SHOOTOUT_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct trace;
struct http_tracer;

/* Largest --trace-sample: MQTT flows are sampled by packet id, which goes
 * round at 65535. */
#define TRACE_SAMPLE_MAX 65535u
/* Default and largest --trace-body (bytes of each body kept). */
#define TRACE_BODY_DEFAULT 80u
#define TRACE_BODY_MAX 65536u

/* Opens path ('-': stdout) for writing and writes the header comment.
 * NULL with the reason in err. */
struct trace *trace_open(const char *path, unsigned sample, unsigned body_max,
                         const char *command_line, char *err, size_t errlen);
/* Flushes and closes. 0, or -1 with the reason in err (a write failed);
 * NULL is a no-op. */
int trace_close(struct trace *t, char *err, size_t errlen);

/* A comment line ("# ...") such as the start of a run. */
void trace_note(struct trace *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether the exchange numbered seq (from 0, per connection) is traced. */
bool trace_pick(const struct trace *t, uint64_t seq);
/* A fresh connection id for clients without an index of their own. */
unsigned trace_conn_id(struct trace *t);
/* Bytes of each body to show. */
unsigned trace_body_max(const struct trace *t);

/* t as an HTTP client connection's tracer (http/http_client.h), its
 * exchanges traced with trace_pick, trace_http_head and trace_body; NULL
 * when t is. */
struct http_tracer *trace_http(struct trace *t);

/* One line: KIND SUMMARY, with SUMMARY from fmt. */
void trace_line(struct trace *t, unsigned conn, char dir, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* One whole MQTT packet pkt[0..len) of protocol level version (3, 4, 5),
 * decoded, if the sampling rules above pick it; q0_seq counts the QoS 0
 * PUBLISH packets of its connection. A PUBLISH's payload is not read
 * (it may not be written yet), only its length. */
void trace_mqtt(struct trace *t, unsigned conn, char dir, uint8_t version, const uint8_t *pkt,
                size_t len, uint64_t *q0_seq);

/* An HTTP/1.1 head: its start line as an http line and each field as a
 * hdr line. head[0..len) may end with or without the empty line. */
void trace_http_head(struct trace *t, unsigned conn, char dir, const char *head, size_t len);
/* A body line: its whole length, then its first trace_body_max() bytes
 * (of data[0..kept)) with bytes outside printable ASCII escaped. */
void trace_body(struct trace *t, unsigned conn, char dir, const void *data, size_t kept,
                uint64_t total);

/* The summary of an MQTT packet as trace_mqtt writes it, into out; for the
 * unit tests and the fuzz target. Returns the length (< cap). */
size_t trace_mqtt_format(char *out, size_t cap, uint8_t version, const uint8_t *pkt, size_t len);
/* Text as a body line shows it: escaped, cut at max bytes of input. */
size_t trace_escape(char *out, size_t cap, const void *data, size_t len, size_t max);

#endif
