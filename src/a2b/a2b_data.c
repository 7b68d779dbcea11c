/* a2b_data.c - the deterministic a2b data set: each row from a hash of
 * (seed, table, id). */
#include "a2b/a2b_data.h"

#include <stdio.h>
#include <string.h>

enum a2b_table { T_LOCATION = 1, T_TRANSFER, T_USER, T_BOOKING };

/* splitmix64's finaliser: a bijective 64-bit mix, good enough to make
 * neighbouring ids look unrelated. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A row's private random stream. */
struct row_rng {
    uint64_t state;
};

static struct row_rng row_rng(const struct a2b_data *d, enum a2b_table t, int64_t id)
{
    return (struct row_rng){mix64(d->seed ^ mix64(((uint64_t)t << 56) ^ (uint64_t)id))};
}

/* Uniform enough in [0, n) for data generation; n > 0. */
static uint64_t draw(struct row_rng *r, uint64_t n)
{
    r->state += 0x9e3779b97f4a7c15ull;
    return mix64(r->state) % n;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
    const char *name, *code;
    int32_t lat_u, lon_u; /* centre, micro-degrees */
} cities[A2B_DATA_CITIES] = {
    {"Mogilev", "22", 53900700, 30331400}, {"Gomel", "23", 52441200, 30987800},
    {"Vitebsk", "21", 55190400, 30204900}, {"Brest", "16", 52097600, 23734100},
    {"Grodno", "15", 53669400, 23813100},  {"Minsk", "17", 53904500, 27561500},
};

static const char *const first_names[] = {
    "Ales",   "Andrei",  "Anna",   "Darya",  "Dzmitry", "Hanna",   "Ihar",   "Iryna",
    "Kastus", "Katsiaryna", "Lizaveta", "Maksim", "Maryia", "Mikalai", "Nadzeya", "Natallia",
    "Palina", "Pavel",   "Raman",  "Siarhei", "Sviatlana", "Taciana", "Uladzimir", "Vadzim",
    "Valeryia", "Viktar", "Volha",  "Yauhen", "Yuliya", "Zmicier", "Alena",  "Artsiom",
};

static const char *const last_names[] = {
    "Kavalenka", "Bahdanovich", "Karatkevich", "Kupala",  "Kolas",    "Bykau",   "Shamiakin",
    "Melezh",    "Brouka",      "Tank",        "Hilevich", "Bahushevich", "Lynkou", "Pimenau",
    "Zhuk",      "Shved",       "Novik",       "Kazlou",  "Marozau",  "Paulau",  "Sidarenka",
    "Tsikhanau", "Vasilevich",  "Hrynevich",   "Lukashevich", "Shymanski", "Dubrouski", "Astapenka",
};

/* Invented notes. Some need JSON escapes or are not ASCII, so that every
 * client meets those in ordinary traffic. */
static const char *const transfer_notes[] = {
    "Direct coach, two stops on request.",
    "Minibus with luggage trailer.",
    "Night run; the driver calls 30 minutes ahead.",
    "Meet at the \"blue\" gate of the bus station.",
    "Seats are not numbered.",
    "Air-conditioned van, Wi-Fi on board.",
    "Route via the ring road\\bypass when the centre is closed.",
    "Дзённы рэйс праз цэнтр горада.",
    "Pets in carriers only.",
    "Stops at the airport terminal 1.",
};

static const char *const booking_notes[] = {
    "Window seat, please.",
    "Travelling with a bicycle.",
    "Two suitcases and a \"small\" box.",
    "Child seat needed.",
    "Will be 5 minutes late\tmaybe.",
    "Пасадка каля вакзала.",
    "Business trip; invoice to the company.",
    "Wheelchair access required.",
};

void a2b_data_init(struct a2b_data *d, uint64_t seed, double scale)
{
    if (!(scale > 0))
        scale = 0;
    double t = A2B_DATA_TRANSFERS * scale + 0.5, u = A2B_DATA_USERS * scale + 0.5,
           b = A2B_DATA_BOOKINGS * scale + 0.5;
    d->seed = seed;
    d->transfers = t < 1 ? 1 : t > 1e9 ? 1000000000u : (uint32_t)t;
    /* Phones are unique for ids below 10^7 (a bijection of 7 digits). */
    d->users = u < 1 ? 1 : u > 9999999 ? 9999999u : (uint32_t)u;
    uint64_t per_user = d->transfers < A2B_DATA_MAX_USER_BOOKINGS ? d->transfers : A2B_DATA_MAX_USER_BOOKINGS;
    uint64_t max_bookings = per_user * d->users;
    d->bookings = b > (double)max_bookings ? (uint32_t)max_bookings : (uint32_t)b;
    /* Near the golden ratio of the table, and coprime with it, so that j *
     * stride visits every transfer before it repeats. */
    uint64_t s = (uint64_t)(d->transfers * 0.618) | 1;
    for (;; s++) {
        uint64_t a = s, m = d->transfers;
        while (m) {
            uint64_t r = a % m;
            a = m;
            m = r;
        }
        if (a == 1)
            break;
    }
    d->stride = (uint32_t)(s % d->transfers);
}

void a2b_data_country(const struct a2b_data *d, int64_t id, struct a2b_country_row *out)
{
    (void)d;
    *out = (struct a2b_country_row){.id = id, .name = "Republic of Belarus", .code = "BY"};
}

void a2b_data_city(const struct a2b_data *d, int64_t id, struct a2b_city_row *out)
{
    (void)d;
    *out = (struct a2b_city_row){
        .id = id, .country_id = 1, .name = cities[id - 1].name, .code = cities[id - 1].code};
}

void a2b_data_location(const struct a2b_data *d, int64_t id, struct a2b_location_row *out)
{
    struct row_rng r = row_rng(d, T_LOCATION, id);
    int64_t city = 1 + (int64_t)draw(&r, A2B_DATA_CITIES);
    /* Within about 0.1 degrees (~10 km) of the city centre. */
    int64_t lat = cities[city - 1].lat_u + (int64_t)draw(&r, 200001) - 100000;
    int64_t lon = cities[city - 1].lon_u + (int64_t)draw(&r, 200001) - 100000;
    *out = (struct a2b_location_row){
        .id = id, .city_id = city, .latitude = (double)lat / 1e6, .longitude = (double)lon / 1e6};
}

static void format_time(int32_t day, int hour, char out[20])
{
    char date[11];
    a2b_data_format_day(day, date);
    snprintf(out, 20, "%.10s %02u:00:00", date, (unsigned)hour % 24u);
}

void a2b_data_transfer(const struct a2b_data *d, int64_t id, struct a2b_transfer_row *out)
{
    struct row_rng r = row_rng(d, T_TRANSFER, id);
    out->id = id;
    out->origin = 1 + (int64_t)draw(&r, A2B_DATA_LOCATIONS);
    out->destination = A2B_DATA_LOCATIONS + 1 - out->origin;
    out->capacity = 4 + (int)draw(&r, 57);
    int32_t day = A2B_DATA_FIRST_DAY + (int32_t)draw(&r, A2B_DATA_DAYS);
    a2b_data_format_day(day, out->date);
    /* As the reference: leave between 01:00 and 05:00, arrive between
     * 06:00 and 11:00 (here the same day or the next). */
    /* One draw per statement: the order in which a call's arguments are
     * evaluated is unspecified, and the data set must not depend on the
     * compiler. */
    int start_hour = 1 + (int)draw(&r, 5);
    int32_t end_day = day + (int32_t)draw(&r, 2);
    int end_hour = 6 + (int)draw(&r, 6);
    format_time(day, start_hour, out->start);
    format_time(end_day, end_hour, out->end);
    out->price_cents = 100 + (int64_t)draw(&r, 9900);
    out->description = transfer_notes[draw(&r, COUNT(transfer_notes))];
}

static void lower_ascii(char *s)
{
    for (; *s; s++)
        if (*s >= 'A' && *s <= 'Z')
            *s = (char)(*s - 'A' + 'a');
}

void a2b_data_user(const struct a2b_data *d, int64_t id, struct a2b_user_row *out)
{
    struct row_rng r = row_rng(d, T_USER, id);
    out->id = id;
    out->first_name = first_names[draw(&r, COUNT(first_names))];
    out->last_name = last_names[draw(&r, COUNT(last_names))];
    /* The id makes the email unique; the multiplier, odd and not a multiple
     * of 5, permutes the 7 digits so that the phone is unique too. */
    snprintf(out->email, sizeof out->email, "%s.%s.%lld@example.com", out->first_name, out->last_name,
             (long long)id);
    lower_ascii(out->email);
    snprintf(out->phone, sizeof out->phone, "+37529%07llu",
             (unsigned long long)(((uint64_t)id * 7368787u) % 10000000u));
}

unsigned a2b_data_user_bookings(const struct a2b_data *d, int64_t user_id, struct a2b_booking_row *out)
{
    /* floor(u * B / U) - floor((u - 1) * B / U): every user gets B / U
     * rounded up or down, spread evenly, and the counts add up to B. */
    uint64_t u = (uint64_t)user_id, B = d->bookings, U = d->users;
    unsigned n = (unsigned)(u * B / U - (u - 1) * B / U);
    struct row_rng r = row_rng(d, T_BOOKING, user_id);
    uint64_t first = draw(&r, d->transfers);
    for (unsigned j = 0; j < n; j++) {
        int64_t t = 1 + (int64_t)((first + (uint64_t)j * d->stride) % d->transfers);
        unsigned k = j;
        for (; k > 0 && out[k - 1].transfer_id > t; k--)
            out[k] = out[k - 1];
        /* Separate statements: initialisers are evaluated in no set order. */
        const char *state = draw(&r, 2) ? "COMPLETED" : "BOOKED";
        const char *note = booking_notes[draw(&r, COUNT(booking_notes))];
        out[k] = (struct a2b_booking_row){
            .user_id = user_id, .transfer_id = t, .state = state, .description = note};
    }
    return n;
}

/* Howard Hinnant's days_from_civil / civil_from_days (proleptic
 * Gregorian, any year). */
static int32_t days_from_civil(int y, unsigned m, unsigned dd)
{
    y -= m <= 2;
    int era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + dd - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int32_t)doe - 719468;
}

void a2b_data_format_day(int32_t day, char out[11])
{
    int32_t z = day + 719468;
    int era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int y = (int)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned dd = doy - (153 * mp + 2) / 5 + 1;
    unsigned m = mp < 10 ? mp + 3 : mp - 9;
    y += m <= 2;
    /* Years outside 0..9999 have no YYYY form; they wrap (never used). */
    unsigned yy = (unsigned)(y % 10000 + 10000) % 10000;
    snprintf(out, 11, "%04u-%02u-%02u", yy, m % 100u, dd % 100u);
}

bool a2b_data_parse_day(const char *s, int32_t *day)
{
    for (int i = 0; i < 10; i++) {
        bool dash = i == 4 || i == 7;
        if (dash ? s[i] != '-' : (s[i] < '0' || s[i] > '9'))
            return false;
    }
    if (s[10] != '\0')
        return false;
    int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
    unsigned m = (unsigned)((s[5] - '0') * 10 + (s[6] - '0'));
    unsigned dd = (unsigned)((s[8] - '0') * 10 + (s[9] - '0'));
    static const unsigned char mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || dd < 1 || dd > mdays[m - 1])
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (m == 2 && dd == 29 && !leap)
        return false;
    *day = days_from_civil(y, m, dd);
    return true;
}
