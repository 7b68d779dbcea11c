/* bench_cmd.h - `shootout bench <experiment>`: dispatch to the experiments. */
#ifndef SHOOTOUT_BENCH_CMD_H
#define SHOOTOUT_BENCH_CMD_H

/* `shootout bench ...` with main()'s argc and argv (argv[1] is "bench");
 * version is static. Returns the experiment's exit code (load/bench.h). */
int bench_main(int argc, char **argv, const char *version);

#endif
