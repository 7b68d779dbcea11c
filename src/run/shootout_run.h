/* shootout_run.h - `shootout run`, the main job, in three parts, each
 * starting its servers as child processes (child.h) on free loopback ports
 * and stopping them at its end.
 *
 * MQTT (run_mqtt.h): our broker and, where installed, Mosquitto; the MQTT
 * article's loadtest and pingtest grid against both, broker after broker
 * at every grid point; the article's tables (thousands of msgs/s, mean +/-
 * stddev, a row per broker and their ratio) with each broker's CPU time
 * per message.
 *
 * RPC (run_rpc.h): our car-server and, where built, the gRPC C++ peer; the
 * gRPC-vs-REST article's sweep of sequential calls and its three tables,
 * latency and CPU per call, and throughput with calls in flight.
 *
 * a2b (run_a2b.h): our a2b-server on SQLite and PostgreSQL and the Node
 * peer under the Gatling article's journey, time-scaled; its table.
 *
 * `--only mqtt|rpc|a2b` runs one part. Every row goes into one JSON document
 * and one HTML page.
 *
 * Exit codes: 0 success, 1 a server could not start, died, or (ours) did
 * not exit 0 on SIGTERM, 2 usage error, 3 an experiment failed (messages
 * missing, a call failed, or a connection or protocol failure with the
 * server still up). What was measured is printed and written in every case.
 */
#ifndef SHOOTOUT_SHOOTOUT_RUN_H
#define SHOOTOUT_SHOOTOUT_RUN_H

/* `shootout run ...` with main()'s argc and argv (argv[1] is "run");
 * version is static. */
int shootout_run_main(int argc, char **argv, const char *version);

/* `shootout peers` with main()'s argc and argv (argv[1] is "peers"): the
 * contenders and whether each can run here (contender.h). */
int shootout_peers_main(int argc, char **argv);

#endif
