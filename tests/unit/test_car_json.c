/* test_car_json.c - unit tests for the Car service's JSON mapping
 * (car_json.c): the article's document, round trips through JSON and
 * through protobuf-c, and every error with its field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "car/car_json.h"

/* The article's document, as printed there, and minified (175 bytes). */
static const char article[] = "{\n"
                              "    \"car\": {\n"
                              "        \"make\": \"toyota\",\n"
                              "        \"model\": \"corolla\",\n"
                              "        \"trim\": \"4DR Sedan\",\n"
                              "        \"color\": \"gray\",\n"
                              "        \"year\": 2012,\n"
                              "        \"mileage\": 120000\n"
                              "    },\n"
                              "    \"driver\": {\n"
                              "        \"firstname\": \"John\",\n"
                              "        \"lastname\": \"Smith\",\n"
                              "        \"driverId\": \"someId\"\n"
                              "    }\n"
                              "}\n";
static const char article_min[] =
    "{\"car\":{\"make\":\"toyota\",\"model\":\"corolla\",\"trim\":\"4DR Sedan\",\"color\":\"gray\","
    "\"year\":2012,\"mileage\":120000},\"driver\":{\"firstname\":\"John\",\"lastname\":\"Smith\","
    "\"driverId\":\"someId\"}}";

static struct car_record rec;
static char buf[4096];
static struct car_json_error err;

static enum car_json_err parse_n(const char *s, size_t n)
{
    return car_json_parse(s, n, &rec, buf, sizeof buf, &err);
}

static enum car_json_err parse(const char *s) { return parse_n(s, strlen(s)); }

/* article_min with the first occurrence of find replaced by repl. */
static const char *edit(const char *find, const char *repl)
{
    static char out[4096];
    const char *at = strstr(article_min, find);
    assert_non_null(at);
    snprintf(out, sizeof out, "%.*s%s%s", (int)(at - article_min), article_min, repl,
             at + strlen(find));
    return out;
}

static void expect_err(const char *doc, enum car_json_err code, const char *field)
{
    enum car_json_err rc = parse(doc);
    if (rc != code || (field == NULL) != (err.field == NULL) ||
        (field && strcmp(field, err.field) != 0))
        fail_msg("%s: got %s (%s) at %zu, want %s (%s)", doc, car_json_strerror(rc),
                 err.field ? err.field : "-", err.offset, car_json_strerror(code),
                 field ? field : "-");
    assert_int_equal(err.code, code);
    assert_true(err.offset <= strlen(doc));
}

static void assert_article(const Com__Stevenpg__Rvg__Message *m)
{
    assert_non_null(m->car);
    assert_non_null(m->driver);
    assert_string_equal(m->car->make, "toyota");
    assert_string_equal(m->car->model, "corolla");
    assert_string_equal(m->car->trim, "4DR Sedan");
    assert_string_equal(m->car->color, "gray");
    assert_int_equal(m->car->year, 2012);
    assert_int_equal(m->car->mileage, 120000);
    assert_string_equal(m->driver->firstname, "John");
    assert_string_equal(m->driver->lastname, "Smith");
    assert_string_equal(m->driver->driverid, "someId");
}

static void assert_same(const Com__Stevenpg__Rvg__Message *a, const Com__Stevenpg__Rvg__Message *b)
{
    assert_string_equal(a->car->make, b->car->make);
    assert_string_equal(a->car->model, b->car->model);
    assert_string_equal(a->car->trim, b->car->trim);
    assert_string_equal(a->car->color, b->car->color);
    assert_int_equal(a->car->year, b->car->year);
    assert_int_equal(a->car->mileage, b->car->mileage);
    assert_string_equal(a->driver->firstname, b->driver->firstname);
    assert_string_equal(a->driver->lastname, b->driver->lastname);
    assert_string_equal(a->driver->driverid, b->driver->driverid);
}

static void test_article_document(void **state)
{
    (void)state;
    assert_int_equal(strlen(article_min), 175);
    assert_int_equal(parse(article), CAR_JSON_OK);
    assert_article(&rec.msg);
    assert_int_equal(err.code, CAR_JSON_OK);
    assert_null(err.field);
    /* Strings live in the caller's buffer. */
    assert_true(rec.car.make >= buf && rec.car.make < buf + sizeof buf);

    assert_int_equal(parse(article_min), CAR_JSON_OK);
    assert_article(&rec.msg);

    /* Encoding gives back the article's minified document exactly. */
    char out[256];
    size_t n;
    assert_int_equal(car_json_encode(&rec.msg, out, sizeof out, &n), CAR_JSON_OK);
    assert_int_equal(n, 175);
    assert_memory_equal(out, article_min, n);
}

static void test_fields_in_any_order_unknown_ignored(void **state)
{
    (void)state;
    const char *doc =
        "{\"extra\":[1,-2.5e+3,{\"a\":[[],{}]},\"s\\n\",true,false,null],"
        "\"driver\":{\"driverId\":\"someId\",\"lastname\":\"Smith\",\"firstname\":\"John\",\"x\":{}"
        "},"
        "\"car\":{\"mileage\":120000,\"year\":2012,\"color\":\"gray\",\"trim\":\"4DR Sedan\","
        "\"model\":\"corolla\",\"make\":\"toyota\",\"Make\":\"ignored: keys are case-sensitive\"},"
        "\"z\":0}";
    assert_int_equal(parse(doc), CAR_JSON_OK);
    assert_article(&rec.msg);

    /* Keys are compared after unescaping; a long unknown key is skipped. */
    assert_int_equal(parse(edit("\"make\"", "\"m\\u0061ke\"")), CAR_JSON_OK);
    assert_string_equal(rec.car.make, "toyota");
    assert_int_equal(
        parse(edit("\"car\":{", "\"car\":{\"a_very_long_unknown_key_name_indeed\":1,")),
        CAR_JSON_OK);
    /* A key that is a known name plus U+0000 is another, unknown key. */
    assert_int_equal(parse(edit("\"car\":{", "\"car\":{\"make\\u0000\":1,")), CAR_JSON_OK);
}

static void test_strings_unescaped(void **state)
{
    (void)state;
    assert_int_equal(parse(edit("\"toyota\"", "\"q\\\"b\\\\s\\/ \\b\\f\\n\\r\\t\"")), CAR_JSON_OK);
    assert_string_equal(rec.car.make, "q\"b\\s/ \b\f\n\r\t");
    assert_int_equal(
        parse(edit("\"toyota\"",
                   "\"\\u00e9\\u20AC\\ud83d\\ude97 \xc3\xa9\xe2\x82\xac\xf0\x9f\x9a\x97\"")),
        CAR_JSON_OK);
    assert_string_equal(
        rec.car.make, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x9a\x97 \xc3\xa9\xe2\x82\xac\xf0\x9f\x9a\x97");
    assert_int_equal(parse(edit("\"toyota\"", "\"\\u007f\\u0001\"")), CAR_JSON_OK);
    assert_string_equal(rec.car.make, "\x7f\x01");
    assert_int_equal(parse(edit("\"toyota\"", "\"\"")), CAR_JSON_OK);
    assert_string_equal(rec.car.make, "");
    /* Largest code point, and U+FFFF, which is not a surrogate. */
    assert_int_equal(parse(edit("\"toyota\"", "\"\\uDBFF\\uDFFF\\uffff\xf4\x8f\xbf\xbf\"")),
                     CAR_JSON_OK);
    assert_string_equal(rec.car.make, "\xf4\x8f\xbf\xbf\xef\xbf\xbf\xf4\x8f\xbf\xbf");
}

static void test_numbers(void **state)
{
    (void)state;
    assert_int_equal(parse(edit("2012", "0")), CAR_JSON_OK);
    assert_int_equal(rec.car.year, 0);
    assert_int_equal(parse(edit("120000", "4294967295")), CAR_JSON_OK);
    assert_int_equal(rec.car.mileage, UINT32_MAX);

    static const char *const out_of_range[] = {
        "4294967296",
        "18446744073709551616",
        "99999999999999999999999",
        "-1",
        "-0",
        "2012.0",
        "1e3",
        "20E1",
        "1.5",
        "0e0",
    };
    for (size_t i = 0; i < sizeof out_of_range / sizeof out_of_range[0]; i++)
        expect_err(edit("120000", out_of_range[i]), CAR_JSON_E_RANGE, "car.mileage");

    static const char *const malformed[] = {"01",   "1.",    "1.e5", "1e",    "1e+",
                                            "-",    "--1",   "1ee5", "1e5E5", "1.2.3",
                                            "0x10", "1e5.5", "12a",  "2012-", "+1"};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++)
        expect_err(edit("2012", malformed[i]), CAR_JSON_E_SYNTAX, NULL);
    /* Skipped numbers are checked too, whatever their size. */
    assert_int_equal(
        parse(edit("\"car\":{", "\"car\":{\"n\":-123456789012345678901234567890.5E-300,")),
        CAR_JSON_OK);
    expect_err(edit("\"car\":{", "\"car\":{\"n\":012,"), CAR_JSON_E_SYNTAX, NULL);
    expect_err(edit("\"car\":{", "\"car\":{\"n\":.5,"), CAR_JSON_E_SYNTAX, NULL);
}

/* Every strict prefix of a valid document is reported as truncated, also
 * when the cut falls inside an escape, a surrogate pair, a UTF-8 sequence,
 * a literal or an unknown field. */
static void test_every_truncation(void **state)
{
    (void)state;
    const char *docs[] = {
        article,
        article_min,
        "{\"car\":{\"make\":\"a\\u00e9\\ud83d\\ude97\xf0\x9f\x9a\x97\\n\",\"model\":\"\",\"trim\":"
        "\"t\","
        "\"color\":\"c\",\"year\":1,\"mileage\":0},\"u\":[true,false,null,-1.5e-7,{\"k\":[]}],"
        "\"driver\":{\"firstname\":\"f\",\"lastname\":\"l\",\"driverId\":\"d\"}}",
    };
    for (size_t d = 0; d < sizeof docs / sizeof docs[0]; d++) {
        size_t len = strlen(docs[d]);
        /* The article's trailing newline is whitespace: the prefix without
         * it is already complete. */
        size_t complete = len;
        while (complete > 0 && docs[d][complete - 1] == '\n')
            complete--;
        for (size_t n = 0; n < complete; n++) {
            enum car_json_err rc = parse_n(docs[d], n);
            if (rc != CAR_JSON_E_TRUNCATED)
                fail_msg("doc %zu cut at %zu: %s", d, n, car_json_strerror(rc));
            assert_int_equal(err.offset, n);
        }
        for (size_t n = complete; n <= len; n++)
            assert_int_equal(parse_n(docs[d], n), CAR_JSON_OK);
    }
}

static void test_syntax_errors(void **state)
{
    (void)state;
    static const struct {
        const char *doc;
        enum car_json_err code;
    } cases[] = {
        {"", CAR_JSON_E_TRUNCATED},
        {"   \n", CAR_JSON_E_TRUNCATED},
        {"x", CAR_JSON_E_SYNTAX},
        {"[]", CAR_JSON_E_TYPE},
        {"\"car\"", CAR_JSON_E_TYPE},
        {"null", CAR_JSON_E_TYPE},
        {"42", CAR_JSON_E_TYPE},
        {"{}", CAR_JSON_E_MISSING},
        {"{,}", CAR_JSON_E_SYNTAX},
        {"{\"car\" 1}", CAR_JSON_E_SYNTAX},
        {"{car:1}", CAR_JSON_E_SYNTAX},
        {"{'car':1}", CAR_JSON_E_SYNTAX},
        {"{\"a\":1,}", CAR_JSON_E_SYNTAX},
        {"{\"a\":1 \"b\":2}", CAR_JSON_E_SYNTAX},
        {"{\"a\":[1,]}", CAR_JSON_E_SYNTAX},
        {"{\"a\":[1 2]}", CAR_JSON_E_SYNTAX},
        {"{\"a\":[1}", CAR_JSON_E_SYNTAX},
        {"{\"a\":{\"b\":1]}", CAR_JSON_E_SYNTAX},
        {"{\"a\":tru}", CAR_JSON_E_SYNTAX},
        {"{\"a\":nul}", CAR_JSON_E_SYNTAX},
        {"{\"a\":True}", CAR_JSON_E_SYNTAX},
        {"{\"a\":undefined}", CAR_JSON_E_SYNTAX},
        {"{\"a\":\"tab\there\"}", CAR_JSON_E_SYNTAX},
        {"{\"a\":\"nl\nhere\"}", CAR_JSON_E_SYNTAX},
        {"{\"a\"\v:1}", CAR_JSON_E_SYNTAX},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_err(cases[i].doc, cases[i].code, cases[i].code == CAR_JSON_E_MISSING ? "car" : NULL);

    /* Anything after the document, even a second document. */
    char doc[512];
    snprintf(doc, sizeof doc, "%s\v", article_min);
    expect_err(doc, CAR_JSON_E_SYNTAX, NULL);
    snprintf(doc, sizeof doc, "%s x", article_min);
    expect_err(doc, CAR_JSON_E_SYNTAX, NULL);
    assert_int_equal(err.offset, 176);
    snprintf(doc, sizeof doc, "%s%s", article_min, article_min);
    expect_err(doc, CAR_JSON_E_SYNTAX, NULL);
    assert_int_equal(err.offset, 175);
    /* A NUL byte is not whitespace. */
    memcpy(doc, article_min, 175);
    doc[175] = '\0';
    assert_int_equal(parse_n(doc, 176), CAR_JSON_E_SYNTAX);
}

static void test_wrong_types(void **state)
{
    (void)state;
    static const struct {
        const char *find, *repl, *field;
    } cases[] = {
        {"\"toyota\"", "7", "car.make"},         {"\"corolla\"", "null", "car.model"},
        {"\"4DR Sedan\"", "{}", "car.trim"},     {"\"gray\"", "[\"gray\"]", "car.color"},
        {"2012", "\"2012\"", "car.year"},        {"120000", "true", "car.mileage"},
        {"120000", "null", "car.mileage"},       {"\"John\"", "false", "driver.firstname"},
        {"\"Smith\"", "1.5", "driver.lastname"}, {"\"someId\"", "null", "driver.driverId"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_err(edit(cases[i].find, cases[i].repl), CAR_JSON_E_TYPE, cases[i].field);

    /* car and driver must be objects. */
    static const char *const not_object[] = {"1", "null", "[]", "\"car\"", "true"};
    const char *driver = strstr(article_min, ",\"driver\"");
    char doc[512];
    for (size_t i = 0; i < sizeof not_object / sizeof not_object[0]; i++) {
        snprintf(doc, sizeof doc, "{\"car\":%s%s", not_object[i], driver);
        expect_err(doc, CAR_JSON_E_TYPE, "car");
        snprintf(doc, sizeof doc, "%.*s%s}", (int)(driver - article_min) + 10, article_min,
                 not_object[i]);
        expect_err(doc, CAR_JSON_E_TYPE, "driver");
    }
}

static void test_missing_fields(void **state)
{
    (void)state;
    static const struct {
        const char *member, *field;
    } cases[] = {
        {"\"make\":\"toyota\",", "car.make"},
        {"\"model\":\"corolla\",", "car.model"},
        {"\"trim\":\"4DR Sedan\",", "car.trim"},
        {"\"color\":\"gray\",", "car.color"},
        {"\"year\":2012,", "car.year"},
        {",\"mileage\":120000", "car.mileage"},
        {"\"firstname\":\"John\",", "driver.firstname"},
        {"\"lastname\":\"Smith\",", "driver.lastname"},
        {",\"driverId\":\"someId\"", "driver.driverId"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_err(edit(cases[i].member, ""), CAR_JSON_E_MISSING, cases[i].field);
    /* Whole objects, and fields that sit in the wrong object. */
    expect_err(
        "{\"driver\":{\"firstname\":\"John\",\"lastname\":\"Smith\",\"driverId\":\"someId\"}}",
        CAR_JSON_E_MISSING, "car");
    expect_err(
        edit(",\"driver\":{\"firstname\":\"John\",\"lastname\":\"Smith\",\"driverId\":\"someId\"}",
             ""),
        CAR_JSON_E_MISSING, "driver");
    expect_err(edit("\"make\":\"toyota\",", "\"driverId\":\"x\","), CAR_JSON_E_MISSING, "car.make");
}

static void test_duplicates_refused(void **state)
{
    (void)state;
    expect_err(edit("\"model\"", "\"make\":\"honda\",\"model\""), CAR_JSON_E_DUPLICATE, "car.make");
    expect_err(edit("\"mileage\":120000", "\"mileage\":1,\"mileage\":2"), CAR_JSON_E_DUPLICATE,
               "car.mileage");
    expect_err(edit("\"driverId\":\"someId\"", "\"driverId\":\"a\",\"driver\\u0049d\":\"b\""),
               CAR_JSON_E_DUPLICATE, "driver.driverId");
    char doc[512];
    snprintf(doc, sizeof doc, "%.*s,\"car\":{}}", 174, article_min);
    expect_err(doc, CAR_JSON_E_DUPLICATE, "car");
    /* Unknown fields may repeat: they are not stored. */
    assert_int_equal(parse(edit("\"car\":{", "\"car\":{\"x\":1,\"x\":2,")), CAR_JSON_OK);
}

/* The article's document with an unknown field whose value nests down to
 * level depth (the document itself is level 1), in arrays or objects. */
static const char *nested(int depth, bool objects)
{
    static char doc[1024];
    size_t n = (size_t)snprintf(doc, sizeof doc, "%.*s,\"deep\":", 174, article_min);
    for (int i = 2; i <= depth; i++)
        n += (size_t)snprintf(doc + n, sizeof doc - n, "%s", objects ? "{\"k\":" : "[");
    n += (size_t)snprintf(doc + n, sizeof doc - n, "%s", objects ? "0" : "");
    for (int i = 2; i <= depth; i++)
        doc[n++] = objects ? '}' : ']';
    snprintf(doc + n, sizeof doc - n, "}");
    return doc;
}

static void test_depth_limit(void **state)
{
    (void)state;
    assert_int_equal(parse(nested(CAR_JSON_MAX_DEPTH, false)), CAR_JSON_OK);
    expect_err(nested(CAR_JSON_MAX_DEPTH + 1, false), CAR_JSON_E_DEPTH, NULL);
    assert_int_equal(parse(nested(CAR_JSON_MAX_DEPTH, true)), CAR_JSON_OK);
    expect_err(nested(CAR_JSON_MAX_DEPTH + 1, true), CAR_JSON_E_DEPTH, NULL);

    /* Far deeper input is refused at the limit, not by running out of stack. */
    static char deep[100001];
    memset(deep, '[', sizeof deep - 1);
    deep[0] = '{';
    memcpy(deep + 1, "\"a\":", 4);
    assert_int_equal(parse_n(deep, sizeof deep - 1), CAR_JSON_E_DEPTH);
    assert_int_equal(err.offset, 5 + CAR_JSON_MAX_DEPTH - 1);
}

static void test_bad_escapes(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "\\x",
        "\\U0041",
        "\\u00g0",
        "\\u12",
        "\\'",
        "\\ud800",
        "\\ud800x",
        "\\ud800\\n",
        "\\ud800\\u0041",
        "\\udc00",
        "\\ude97\\ud83d",
        "\\ud800\\ud800",
        "\\ud800\\uXXXX",
        "\\0",
        "\\a",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char repl[64];
        snprintf(repl, sizeof repl, "\"ab%s\"", bad[i]);
        expect_err(edit("\"toyota\"", repl), CAR_JSON_E_ESCAPE, NULL);
        /* Reported at the escape's backslash. */
        assert_int_equal(err.offset, (size_t)(strstr(article_min, "\"toyota\"") - article_min) + 3);
    }
    /* In keys and skipped values too. */
    expect_err(edit("\"car\":{", "\"car\":{\"\\q\":1,"), CAR_JSON_E_ESCAPE, NULL);
    expect_err(edit("\"car\":{", "\"car\":{\"k\":[\"\\ud800\"],"), CAR_JSON_E_ESCAPE, NULL);

    /* U+0000 cannot be stored in a C string; it may appear in skipped strings. */
    expect_err(edit("\"Smith\"", "\"a\\u0000b\""), CAR_JSON_E_NUL, "driver.lastname");
    assert_int_equal(parse(edit("\"car\":{", "\"car\":{\"k\":\"\\u0000\",")), CAR_JSON_OK);
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "\x80",             /* stray continuation */
        "\xbf",             /* stray continuation */
        "\xc0\xaf",         /* overlong '/' */
        "\xc1\xbf",         /* overlong */
        "\xe0\x80\xaf",     /* overlong */
        "\xe0\x9f\xbf",     /* overlong */
        "\xf0\x8f\xbf\xbf", /* overlong */
        "\xed\xa0\x80",     /* encoded surrogate U+D800 */
        "\xed\xbf\xbf",     /* encoded surrogate U+DFFF */
        "\xf4\x90\x80\x80", /* U+110000 */
        "\xf5\x80\x80\x80", /* above U+10FFFF */
        "\xf8\x88\x80\x80\x80",
        "\xfe",
        "\xff",
        "\xc3x",          /* continuation missing */
        "\xe2\x82x",      /* continuation missing */
        "\xf0\x9f\x9a\"", /* continuation missing */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char repl[64];
        snprintf(repl, sizeof repl, "\"ab%s\"", bad[i]);
        expect_err(edit("\"gray\"", repl), CAR_JSON_E_UTF8, NULL);
        snprintf(repl, sizeof repl, "\"car\":{\"k%s\":1,", bad[i]);
        expect_err(edit("\"car\":{", repl), CAR_JSON_E_UTF8, NULL);
    }
    /* Outside strings, a non-ASCII byte is not JSON at all. */
    expect_err(edit("\"car\":{", "\"car\":\xc3\xa9{"), CAR_JSON_E_SYNTAX, NULL);
    /* A byte-order mark is not accepted either (RFC 8259 section 8.1). */
    char doc[512];
    snprintf(doc, sizeof doc, "\xef\xbb\xbf%s", article_min);
    expect_err(doc, CAR_JSON_E_SYNTAX, NULL);
}

static void test_buffer_space(void **state)
{
    (void)state;
    /* The strings of the article need 6+7+9+4+4+5+6 bytes and 7 NULs. */
    const size_t need = 6 + 7 + 9 + 4 + 4 + 5 + 6 + 7;
    char small[64];
    struct car_json_error e;
    assert_int_equal(car_json_parse(article_min, 175, &rec, small, need, &e), CAR_JSON_OK);
    assert_article(&rec.msg);
    assert_int_equal(car_json_parse(article_min, 175, &rec, small, need - 1, &e),
                     CAR_JSON_E_NOSPACE);
    assert_string_equal(e.field, "driver.driverId");
    assert_int_equal(car_json_parse(article_min, 175, &rec, NULL, 0, &e), CAR_JSON_E_NOSPACE);
    assert_string_equal(e.field, "car.make");
    /* err may be NULL. */
    assert_int_equal(car_json_parse(article_min, 175, &rec, NULL, 0, NULL), CAR_JSON_E_NOSPACE);

    /* buf_len == len is always enough, with the worst case of short strings. */
    const char *doc =
        "{\"car\":{\"make\":\"\",\"model\":\"\",\"trim\":\"\",\"color\":\"\",\"year\":0,"
        "\"mileage\":0},\"driver\":{\"firstname\":\"\",\"lastname\":\"\",\"driverId\":\"\"}}";
    char *exact = malloc(strlen(doc));
    assert_non_null(exact);
    assert_int_equal(car_json_parse(doc, strlen(doc), &rec, exact, strlen(doc), &e), CAR_JSON_OK);
    free(exact);
}

static void fill(Com__Stevenpg__Rvg__Message__Car *car, Com__Stevenpg__Rvg__Message__Driver *driver,
                 Com__Stevenpg__Rvg__Message *msg)
{
    *car = (Com__Stevenpg__Rvg__Message__Car)COM__STEVENPG__RVG__MESSAGE__CAR__INIT;
    *driver = (Com__Stevenpg__Rvg__Message__Driver)COM__STEVENPG__RVG__MESSAGE__DRIVER__INIT;
    *msg = (Com__Stevenpg__Rvg__Message)COM__STEVENPG__RVG__MESSAGE__INIT;
    car->make = "Schmidt \"&\" S\xc3\xb6hne \\ GmbH";
    car->model = "tab\there\nnewline\x01\x1f\x7f";
    car->trim = "\xf0\x9f\x9a\x97 / </script>";
    car->color = "";
    car->year = UINT32_MAX;
    car->mileage = 0;
    driver->firstname = "Jos\xc3\xa9";
    driver->lastname = "\xe2\x82\xac\xe2\x82\xac";
    driver->driverid = "\b\f\r";
    msg->car = car;
    msg->driver = driver;
}

static void test_encode_round_trip(void **state)
{
    (void)state;
    Com__Stevenpg__Rvg__Message__Car car;
    Com__Stevenpg__Rvg__Message__Driver driver;
    Com__Stevenpg__Rvg__Message msg;
    fill(&car, &driver, &msg);

    char out[512];
    size_t n;
    assert_int_equal(car_json_encode(&msg, out, sizeof out, &n), CAR_JSON_OK);
    const char *want = "\"model\":\"tab\\there\\nnewline\\u0001\\u001f\x7f\"";
    assert_non_null(memmem(out, n, want, strlen(want)));
    assert_int_equal(parse_n(out, n), CAR_JSON_OK);
    assert_same(&rec.msg, &msg);

    /* Exactly enough room, one byte short, and none. */
    char exact[512];
    size_t m;
    assert_int_equal(car_json_encode(&msg, exact, n, &m), CAR_JSON_OK);
    assert_int_equal(m, n);
    assert_memory_equal(exact, out, n);
    assert_int_equal(car_json_encode(&msg, exact, n - 1, &m), CAR_JSON_E_NOSPACE);
    assert_int_equal(m, n);
    assert_int_equal(car_json_encode(&msg, NULL, 0, &m), CAR_JSON_E_NOSPACE);
    assert_int_equal(m, n);
}

static void test_encode_errors(void **state)
{
    (void)state;
    Com__Stevenpg__Rvg__Message__Car car;
    Com__Stevenpg__Rvg__Message__Driver driver;
    Com__Stevenpg__Rvg__Message msg;
    char out[512];
    size_t n;

    fill(&car, &driver, &msg);
    msg.car = NULL;
    assert_int_equal(car_json_encode(&msg, out, sizeof out, &n), CAR_JSON_E_MISSING);
    fill(&car, &driver, &msg);
    msg.driver = NULL;
    assert_int_equal(car_json_encode(&msg, out, sizeof out, &n), CAR_JSON_E_MISSING);
    fill(&car, &driver, &msg);
    driver.lastname = NULL;
    assert_int_equal(car_json_encode(&msg, out, sizeof out, &n), CAR_JSON_E_MISSING);
    fill(&car, &driver, &msg);
    car.color = "bad \xc3";
    assert_int_equal(car_json_encode(&msg, out, sizeof out, &n), CAR_JSON_E_UTF8);
    car.color = "bad \xed\xa0\x80";
    assert_int_equal(car_json_encode(&msg, out, sizeof out, &n), CAR_JSON_E_UTF8);
}

/* The parsed record is a real protobuf-c message: it packs to the 66 bytes
 * the reference notes count, and unpacks to the same record. */
static void test_protobuf_round_trip(void **state)
{
    (void)state;
    assert_int_equal(parse(article), CAR_JSON_OK);
    uint8_t wire[256];
    size_t n = com__stevenpg__rvg__message__get_packed_size(&rec.msg);
    assert_int_equal(n, 66);
    assert_int_equal(com__stevenpg__rvg__message__pack(&rec.msg, wire), n);

    Com__Stevenpg__Rvg__Message *back = com__stevenpg__rvg__message__unpack(NULL, n, wire);
    assert_non_null(back);
    assert_article(back);
    char out[256];
    size_t m;
    assert_int_equal(car_json_encode(back, out, sizeof out, &m), CAR_JSON_OK);
    assert_int_equal(m, 175);
    assert_memory_equal(out, article_min, m);
    com__stevenpg__rvg__message__free_unpacked(back, NULL);

    /* The same with escapes and every byte width of UTF-8. */
    Com__Stevenpg__Rvg__Message__Car car;
    Com__Stevenpg__Rvg__Message__Driver driver;
    Com__Stevenpg__Rvg__Message msg;
    fill(&car, &driver, &msg);
    assert_int_equal(car_json_encode(&msg, out, sizeof out, &m), CAR_JSON_OK);
    assert_int_equal(parse_n(out, m), CAR_JSON_OK);
    n = com__stevenpg__rvg__message__pack(&rec.msg, wire);
    back = com__stevenpg__rvg__message__unpack(NULL, n, wire);
    assert_non_null(back);
    assert_same(back, &msg);
    com__stevenpg__rvg__message__free_unpacked(back, NULL);
}

static void test_error_body(void **state)
{
    (void)state;
    char body[128];
    expect_err(edit("2012", "\"2012\""), CAR_JSON_E_TYPE, "car.year");
    size_t n = car_json_error_body(&err, body, sizeof body);
    char want[128];
    snprintf(want, sizeof want, "{\"error\":\"wrong type\",\"field\":\"car.year\",\"offset\":%zu}",
             (size_t)(strstr(article_min, "2012") - article_min));
    assert_string_equal(body, want);
    assert_int_equal(n, strlen(body));

    expect_err("{", CAR_JSON_E_TRUNCATED, NULL);
    car_json_error_body(&err, body, sizeof body);
    assert_string_equal(body, "{\"error\":\"unexpected end of input\",\"offset\":1}");
    /* Truncated to fit, like snprintf. */
    assert_int_equal(car_json_error_body(&err, body, 10), 46);
    assert_string_equal(body, "{\"error\":");

    for (int c = CAR_JSON_OK; c <= CAR_JSON_E_NOSPACE; c++)
        assert_string_not_equal(car_json_strerror((enum car_json_err)c), "unknown error");
    assert_string_equal(car_json_strerror((enum car_json_err)99), "unknown error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_article_document),
        cmocka_unit_test(test_fields_in_any_order_unknown_ignored),
        cmocka_unit_test(test_strings_unescaped),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_every_truncation),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_missing_fields),
        cmocka_unit_test(test_duplicates_refused),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_bad_escapes),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_buffer_space),
        cmocka_unit_test(test_encode_round_trip),
        cmocka_unit_test(test_encode_errors),
        cmocka_unit_test(test_protobuf_round_trip),
        cmocka_unit_test(test_error_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
