/* car_rest.c - placeholder until the protocol lands: refuses connections. */
#include "car/car_rest.h"

#include <unistd.h>

#include "car/car_server.h"

void car_rest_accept(struct car_worker *w, int fd)
{
    close(fd);
    car_worker_conn_closed(w);
}

bool car_rest_prepare(struct car_worker *w) { return false; }

void car_rest_drain(struct car_worker *w) {}

void car_rest_close_all(struct car_worker *w) {}
