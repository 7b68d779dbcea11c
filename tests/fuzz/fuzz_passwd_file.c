/* fuzz_passwd_file.c - libFuzzer target for the password file parser
 * (passwd.c). The input is a password file; when it parses, every user in
 * it is checked with a wrong and a fixed password, twice, so both the full
 * and the remembered path run. Checked: the first and second answers agree,
 * a user read from a line is always found, and ASan/UBSan/LeakSanitizer
 * see nothing. Files with a $7$ iteration count above 1000 are parsed but
 * not checked, to keep executions fast.
 */
#include <stdlib.h>
#include <string.h>

#include "broker/passwd.h"
#include "core/textfile.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool has_slow_hash(const char *s, size_t len)
{
    for (size_t i = 0; i + 3 < len; i++) {
        if (memcmp(s + i, "$7$", 3) != 0)
            continue;
        size_t digits = 0;
        while (i + 3 + digits < len && s[i + 3 + digits] >= '0' && s[i + 3 + digits] <= '9')
            digits++;
        if (digits > 3)
            return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct passwd_table *t;
    char err[256];
    if (passwd_parse(&t, "fuzz", text, size, err, sizeof err) < 0) {
        check(strncmp(err, "fuzz:", 5) == 0);
        return 0;
    }
    if (!has_slow_hash(text, size)) {
        size_t pos = 0, users = 0;
        struct textfile_line line = {.lineno = 0};
        while (textfile_next_line(text, size, &pos, &line)) {
            const char *u;
            size_t ulen;
            if (!passwd_line_user(line.ptr, line.len, &u, &ulen))
                continue;
            users++;
            enum passwd_result a = passwd_check(t, u, ulen, "pw", 2);
            check(a != PASSWD_UNKNOWN_USER);
            check(passwd_check(t, u, ulen, "pw", 2) == a);
            check(passwd_check(t, u, ulen, "other", 5) != PASSWD_UNKNOWN_USER);
        }
        check(users == passwd_count(t));
    }
    check(passwd_check(t, "\n", 1, "pw", 2) == PASSWD_UNKNOWN_USER);
    passwd_free(t);
    return 0;
}
