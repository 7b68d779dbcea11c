/* car_grpc.c - placeholder until the protocol lands: refuses connections. */
#include "car/car_grpc.h"

#include <unistd.h>

#include "car/car_server.h"

void car_grpc_accept(struct car_worker *w, int fd)
{
    close(fd);
    car_worker_conn_closed(w);
}

bool car_grpc_prepare(struct car_worker *w) { return false; }

void car_grpc_drain(struct car_worker *w) {}

void car_grpc_close_all(struct car_worker *w) {}
