/* json_bench.c - why the Car service's JSON is our own code (car_json.c):
 * parses and encodes the same records with car_json and with cJSON, the
 * faster of the two JSON libraries Debian packages for C (yyjson is not
 * packaged), and prints the cost per record of each. Both sides do the
 * whole job the REST server and client need: parse = read the document and
 * check all nine fields' presence and types; encode = write the minified
 * document.
 *
 *   make json-bench && build/perf/json_bench [records] [rounds]
 *
 * Not a test; its output goes to docs/BENCHMARKS.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "car/car_fake.h"
#include "car/car_json.h"

#define DOC_MAX 1024

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads one string field, as car_json checks it: present and a string. */
static const char *cj_string(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int cj_uint(const cJSON *obj, const char *key, uint32_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 4294967295.0 ||
        v->valuedouble != (double)(uint32_t)v->valuedouble)
        return -1;
    *out = (uint32_t)v->valuedouble;
    return 0;
}

/* cJSON's parse of one document into the same checked fields. The strings
 * are copied out as car_json_parse writes them into the caller's buffer. */
static int cj_parse(const char *doc, size_t len, char *buf, size_t cap)
{
    cJSON *root = cJSON_ParseWithLength(doc, len);
    if (!root)
        return -1;
    const cJSON *car = cJSON_GetObjectItemCaseSensitive(root, "car");
    const cJSON *driver = cJSON_GetObjectItemCaseSensitive(root, "driver");
    static const char *const car_keys[] = {"make", "model", "trim", "color"};
    static const char *const driver_keys[] = {"firstname", "lastname", "driverId"};
    int rc = cJSON_IsObject(car) && cJSON_IsObject(driver) ? 0 : -1;
    size_t used = 0;
    for (int i = 0; i < 7 && rc == 0; i++) {
        const char *s = i < 4 ? cj_string(car, car_keys[i]) : cj_string(driver, driver_keys[i - 4]);
        size_t n = s ? strlen(s) + 1 : 0;
        if (!s || used + n > cap)
            rc = -1;
        else
            memcpy(buf + used, s, n), used += n;
    }
    uint32_t year, mileage;
    if (rc == 0 && (cj_uint(car, "year", &year) < 0 || cj_uint(car, "mileage", &mileage) < 0))
        rc = -1;
    cJSON_Delete(root);
    return rc;
}

static size_t cj_encode(const Com__Stevenpg__Rvg__Message *m, char *out, size_t cap)
{
    cJSON *root = cJSON_CreateObject(), *car = cJSON_AddObjectToObject(root, "car"),
          *driver = cJSON_AddObjectToObject(root, "driver");
    cJSON_AddStringToObject(car, "make", m->car->make);
    cJSON_AddStringToObject(car, "model", m->car->model);
    cJSON_AddStringToObject(car, "trim", m->car->trim);
    cJSON_AddStringToObject(car, "color", m->car->color);
    cJSON_AddNumberToObject(car, "year", m->car->year);
    cJSON_AddNumberToObject(car, "mileage", m->car->mileage);
    cJSON_AddStringToObject(driver, "firstname", m->driver->firstname);
    cJSON_AddStringToObject(driver, "lastname", m->driver->lastname);
    cJSON_AddStringToObject(driver, "driverId", m->driver->driverid);
    size_t n = cJSON_PrintPreallocated(root, out, (int)cap, 0) ? strlen(out) : 0;
    cJSON_Delete(root);
    return n;
}

int main(int argc, char **argv)
{
    size_t nrec = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000;
    unsigned rounds = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 20;
    if (!nrec || !rounds) {
        fprintf(stderr, "usage: json_bench [records] [rounds]\n");
        return 2;
    }
    struct car_fake gen;
    car_fake_seed(&gen, 1);
    struct car_fake_record *recs = calloc(nrec, sizeof *recs);
    char (*docs)[DOC_MAX] = calloc(nrec, DOC_MAX);
    size_t *lens = calloc(nrec, sizeof *lens);
    if (!recs || !docs || !lens)
        return 1;
    for (size_t i = 0; i < nrec; i++) {
        const Com__Stevenpg__Rvg__Message *m = car_fake_next(&gen, &recs[i]);
        if (car_json_encode(m, docs[i], DOC_MAX, &lens[i]) != CAR_JSON_OK)
            return 1;
    }
    char out[DOC_MAX], buf[DOC_MAX];
    struct car_record rec;
    double best[4] = {1e9, 1e9, 1e9, 1e9};
    size_t sink = 0;
    for (unsigned r = 0; r < rounds; r++) {
        double t = now_s();
        for (size_t i = 0; i < nrec; i++)
            if (car_json_parse(docs[i], lens[i], &rec, buf, sizeof buf, NULL) != CAR_JSON_OK)
                return 1;
        double t1 = now_s();
        for (size_t i = 0; i < nrec; i++)
            if (cj_parse(docs[i], lens[i], buf, sizeof buf) < 0)
                return 1;
        double t2 = now_s();
        for (size_t i = 0; i < nrec; i++) {
            size_t n;
            car_json_encode(&recs[i].rec.msg, out, sizeof out, &n);
            sink += n;
        }
        double t3 = now_s();
        for (size_t i = 0; i < nrec; i++)
            sink += cj_encode(&recs[i].rec.msg, out, sizeof out);
        double t4 = now_s(), d[4] = {t1 - t, t2 - t1, t3 - t2, t4 - t3};
        for (int k = 0; k < 4; k++)
            if (d[k] < best[k])
                best[k] = d[k];
    }
    printf("%zu records (%.0f bytes mean), best of %u rounds, ns per record:\n", nrec,
           (double)sink / (2.0 * rounds * nrec), rounds);
    printf("            car_json    cJSON 1.7    cJSON/car_json\n");
    printf("parse      %9.0f    %9.0f    %6.1fx\n", best[0] / nrec * 1e9, best[1] / nrec * 1e9, best[1] / best[0]);
    printf("encode     %9.0f    %9.0f    %6.1fx\n", best[2] / nrec * 1e9, best[3] / nrec * 1e9, best[3] / best[2]);
    free(recs);
    free(docs);
    free(lens);
    return 0;
}
