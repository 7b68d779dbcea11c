/* car_fake.h - random Car/Driver records for the RPC load generator, in
 * the manner of the gRPC-vs-REST article's JavaFaker calls:
 *
 *   make      company().name          "Weber LLC", "Novak-Rossi", "Ito, Baker and Quinn"
 *   model     esports().team          "Neon Tigers"
 *   trim      commerce().productName  "Ergonomic Steel Chair"
 *   color     color().name            "gray"
 *   year      1990..2021 (inclusive)
 *   mileage   10000..200000 (inclusive)
 *   firstname / lastname              "Chloé" / "García" (a few names are not ASCII)
 *   driverId  idNumber().valid()      "123-45-6789": area 001-899 but not 666,
 *                                     group 01-99, serial 0001-9999
 *
 * The word lists are our own and compiled in. A generator is seeded and
 * fully deterministic (splitmix64), so a seed names a sequence of records;
 * a record costs a handful of random draws and copies, and no allocation:
 * its strings live in the record itself.
 */
#ifndef SHOOTOUT_CAR_FAKE_H
#define SHOOTOUT_CAR_FAKE_H

#include <stdint.h>

#include "car/car_json.h"

struct car_fake {
    uint64_t state;
};

/* One record: rec.msg, whose strings point into the buffers below, so a
 * record must not be copied by value while its message is in use. Every
 * buffer is larger than the longest string the lists can make. */
struct car_fake_record {
    struct car_record rec;
    char make[64], model[32], trim[48], color[24];
    char firstname[24], lastname[24], driver_id[12];
};

void car_fake_seed(struct car_fake *g, uint64_t seed);

/* Fills r with the generator's next record and returns its message
 * (&r->rec.msg). */
const Com__Stevenpg__Rvg__Message *car_fake_next(struct car_fake *g, struct car_fake_record *r);

#endif
