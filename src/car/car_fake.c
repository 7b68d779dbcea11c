/* car_fake.c - seedable random Car/Driver records (see car_fake.h). */
#include "car/car_fake.h"

#include <string.h>

/* A word with its length, so that building a field is a few memcpys. */
struct word {
    const char *s;
    uint8_t len;
};

#define W(lit) {lit, sizeof lit - 1}
#define NWORDS(list) ((uint32_t)(sizeof list / sizeof list[0]))

static const struct word last_names[] = {
    W("Adams"),    W("Baker"),   W("Brennan"),  W("Castillo"), W("Dalton"),    W("Eriksen"),
    W("Fischer"),  W("García"),  W("Hartmann"), W("Ito"),      W("Jensen"),    W("Kowalski"),
    W("Larsen"),   W("Moreau"),  W("Novak"),    W("O'Brien"),  W("Petrov"),    W("Quinn"),
    W("Rossi"),    W("Schmidt"), W("Tanaka"),   W("Urban"),    W("Vargas"),    W("Weber"),
    W("Xu"),       W("Young"),   W("Zhang"),    W("Müller"),   W("Søndergaard"), W("Łukasik"),
    W("Nakamura"), W("Okafor"),  W("Lindqvist"), W("Smith"),   W("Duarte"),    W("Keller"),
};

static const struct word first_names[] = {
    W("Alice"),  W("Bruno"), W("Chloé"),  W("Dmitri"), W("Elena"),   W("Farid"),  W("Grace"),
    W("Hugo"),   W("Ingrid"), W("Jonas"), W("Keiko"),  W("Liam"),    W("Maya"),   W("Noah"),
    W("Olga"),   W("Pablo"), W("Quentin"), W("Rosa"),  W("Sven"),    W("Tara"),   W("Umar"),
    W("Vera"),   W("Wen"),   W("Ximena"), W("Yusuf"),  W("Zoë"),     W("John"),   W("Amara"),
    W("Björn"),  W("Carmen"), W("Deepak"), W("Emil"),
};

static const struct word company_suffixes[] = {
    W("Inc"), W("LLC"), W("Group"), W("and Sons"), W("Ltd"), W("Corp"), W("Partners"),
};

static const struct word teams[] = {
    W("Neon Tigers"),    W("Crimson Foxes"),  W("Night Owls"),     W("Iron Wolves"),
    W("Frost Giants"),   W("Storm Riders"),   W("Silver Hawks"),   W("Void Walkers"),
    W("Apex Vipers"),    W("Blue Comets"),    W("Golden Bears"),   W("Shadow Lynx"),
    W("Rapid Falcons"),  W("Ember Dragons"),  W("Quantum Sharks"), W("Pixel Pirates"),
    W("Solar Flares"),   W("Arctic Ravens"),  W("Thunder Rams"),   W("Jade Cobras"),
    W("Lunar Knights"),  W("Copper Coyotes"), W("Echo Squad"),     W("Vortex Gaming"),
    W("Nova Esports"),   W("Red Kestrels"),   W("Team Borealis"),  W("Static Shock"),
    W("Wild Orchids"),   W("Ghost Division"),
};

static const struct word adjectives[] = {
    W("Ergonomic"),   W("Rustic"),   W("Sleek"),       W("Small"),     W("Gorgeous"),
    W("Durable"),     W("Heavy Duty"), W("Lightweight"), W("Practical"), W("Incredible"),
    W("Fantastic"),   W("Intelligent"), W("Enormous"), W("Mediocre"),  W("Aerodynamic"),
    W("Refined"),     W("Handmade"), W("Compact"),     W("Elegant"),   W("Sturdy"),
};

static const struct word materials[] = {
    W("Steel"),  W("Wooden"), W("Concrete"), W("Plastic"), W("Cotton"), W("Granite"),
    W("Rubber"), W("Leather"), W("Silk"),    W("Wool"),    W("Linen"),  W("Marble"),
    W("Iron"),   W("Bronze"), W("Copper"),   W("Aluminum"), W("Paper"), W("Glass"),
};

static const struct word products[] = {
    W("Chair"),  W("Car"),   W("Computer"), W("Gloves"), W("Pants"),    W("Shirt"),
    W("Table"),  W("Shoes"), W("Hat"),      W("Plate"),  W("Knife"),    W("Bottle"),
    W("Coat"),   W("Lamp"),  W("Keyboard"), W("Bag"),    W("Bench"),    W("Clock"),
    W("Watch"),  W("Wallet"), W("Helmet"),  W("Sofa"),
};

static const struct word colors[] = {
    W("gray"),   W("red"),    W("blue"),    W("green"),   W("black"),     W("white"),
    W("silver"), W("gold"),   W("orange"),  W("yellow"),  W("purple"),    W("maroon"),
    W("navy"),   W("teal"),   W("olive"),   W("lime"),    W("turquoise"), W("indigo"),
    W("violet"), W("salmon"), W("tan"),     W("plum"),    W("orchid"),    W("azure"),
    W("ivory"),  W("lavender"), W("magenta"), W("cyan"),  W("sky blue"),  W("mint green"),
};

/* ---- random numbers ------------------------------------------------------ */

void car_fake_seed(struct car_fake *g, uint64_t seed) { g->state = seed; }

/* splitmix64 (Steele, Lea and Flood): one add and a mix per draw, and
 * every seed, 0 included, gives a good sequence. */
static uint64_t next64(struct car_fake *g)
{
    uint64_t z = (g->state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform in [0, n) by multiply-shift; the bias, below n / 2^32, does not
 * matter for test data. */
static uint32_t below(struct car_fake *g, uint32_t n)
{
    return (uint32_t)(((next64(g) >> 32) * n) >> 32);
}

static uint32_t between(struct car_fake *g, uint32_t lo, uint32_t hi)
{
    return lo + below(g, hi - lo + 1);
}

/* ---- building fields ----------------------------------------------------- */

/* Appends w to the string being built at *pos within [buf, end), always
 * leaving room for the NUL; the buffers are sized so that nothing is ever
 * cut, which the unit tests check. */
static void put(char **pos, const char *end, struct word w)
{
    size_t room = (size_t)(end - *pos) - 1;
    size_t n = w.len < room ? w.len : room;
    memcpy(*pos, w.s, n);
    *pos += n;
}

static struct word pick(struct car_fake *g, const struct word *list, uint32_t n)
{
    return list[below(g, n)];
}

#define PICK(g, list) pick(g, list, NWORDS(list))

/* company().name's three shapes: "Last Suffix", "Last-Last",
 * "Last, Last and Last". */
static void company_name(struct car_fake *g, char *buf, size_t cap)
{
    char *p = buf;
    const char *end = buf + cap;
    put(&p, end, PICK(g, last_names));
    switch (below(g, 3)) {
    case 0:
        put(&p, end, (struct word)W(" "));
        put(&p, end, PICK(g, company_suffixes));
        break;
    case 1:
        put(&p, end, (struct word)W("-"));
        put(&p, end, PICK(g, last_names));
        break;
    default:
        put(&p, end, (struct word)W(", "));
        put(&p, end, PICK(g, last_names));
        put(&p, end, (struct word)W(" and "));
        put(&p, end, PICK(g, last_names));
        break;
    }
    *p = '\0';
}

static void product_name(struct car_fake *g, char *buf, size_t cap)
{
    char *p = buf;
    const char *end = buf + cap;
    put(&p, end, PICK(g, adjectives));
    put(&p, end, (struct word)W(" "));
    put(&p, end, PICK(g, materials));
    put(&p, end, (struct word)W(" "));
    put(&p, end, PICK(g, products));
    *p = '\0';
}

static void one_word(struct word w, char *buf, size_t cap)
{
    char *p = buf;
    put(&p, buf + cap, w);
    *p = '\0';
}

/* digits decimal digits of v, with leading zeros. */
static char *put_digits(char *p, uint32_t v, int digits)
{
    for (int i = digits - 1; i >= 0; i--) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return p + digits;
}

/* A US social security number of the form idNumber().valid() makes: no
 * area 000, 666 or 900-999, no group 00, no serial 0000. */
static void ssn(struct car_fake *g, char out[12])
{
    uint32_t area = between(g, 1, 898);
    if (area >= 666)
        area++;
    char *p = put_digits(out, area, 3);
    *p++ = '-';
    p = put_digits(p, between(g, 1, 99), 2);
    *p++ = '-';
    p = put_digits(p, between(g, 1, 9999), 4);
    *p = '\0';
}

const Com__Stevenpg__Rvg__Message *car_fake_next(struct car_fake *g, struct car_fake_record *r)
{
    company_name(g, r->make, sizeof r->make);
    one_word(PICK(g, teams), r->model, sizeof r->model);
    product_name(g, r->trim, sizeof r->trim);
    one_word(PICK(g, colors), r->color, sizeof r->color);
    one_word(PICK(g, first_names), r->firstname, sizeof r->firstname);
    one_word(PICK(g, last_names), r->lastname, sizeof r->lastname);
    ssn(g, r->driver_id);

    struct car_record *rec = &r->rec;
    rec->car = (Com__Stevenpg__Rvg__Message__Car)COM__STEVENPG__RVG__MESSAGE__CAR__INIT;
    rec->car.make = r->make;
    rec->car.model = r->model;
    rec->car.trim = r->trim;
    rec->car.color = r->color;
    rec->car.year = between(g, 1990, 2021);
    rec->car.mileage = between(g, 10000, 200000);
    rec->driver = (Com__Stevenpg__Rvg__Message__Driver)COM__STEVENPG__RVG__MESSAGE__DRIVER__INIT;
    rec->driver.firstname = r->firstname;
    rec->driver.lastname = r->lastname;
    rec->driver.driverid = r->driver_id;
    rec->msg = (Com__Stevenpg__Rvg__Message)COM__STEVENPG__RVG__MESSAGE__INIT;
    rec->msg.car = &rec->car;
    rec->msg.driver = &rec->driver;
    return &rec->msg;
}
