/* fuzz_check.h - the invariant check the fuzz targets share: abort() so
 * libFuzzer records the input, from a macro so that the crash report names
 * the line of the broken check. */
#ifndef SHOOTOUT_FUZZ_CHECK_H
#define SHOOTOUT_FUZZ_CHECK_H

#include <stdlib.h>

#define check(ok)                                                                                 \
    do {                                                                                          \
        if (!(ok))                                                                                \
            abort();                                                                              \
    } while (0)

#endif
