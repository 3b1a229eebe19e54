/* cltrain_version.h, through cltrain.h, in strict C11: its macros name the
 * version clt_version() reports (tests link the library of the same build),
 * and CLTRAIN_VERSION_AT_LEAST orders versions, in #if and in code. */
#include <stdio.h>
#include <string.h>

#include "cltrain.h"

#if !CLTRAIN_VERSION_AT_LEAST(0, 0, 0) || !CLTRAIN_VERSION_AT_LEAST(0, 8, 0)
#error "CLTRAIN_VERSION_AT_LEAST refuses an older version"
#endif
#if CLTRAIN_VERSION_AT_LEAST(CLTRAIN_VERSION_MAJOR, CLTRAIN_VERSION_MINOR, CLTRAIN_VERSION_PATCH + 1) || \
    CLTRAIN_VERSION_AT_LEAST(CLTRAIN_VERSION_MAJOR, CLTRAIN_VERSION_MINOR + 1, 0) ||               \
    CLTRAIN_VERSION_AT_LEAST(CLTRAIN_VERSION_MAJOR + 1, 0, 0)
#error "CLTRAIN_VERSION_AT_LEAST accepts a newer version"
#endif

static int fails;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        fails++;
    }
}

int main(void)
{
    int major = -1, minor = -1, patch = -1;
    const char *v = clt_version(&major, &minor, &patch);
    printf("headers %s, library %s\n", CLTRAIN_VERSION_STRING, v);
    check(major == CLTRAIN_VERSION_MAJOR && minor == CLTRAIN_VERSION_MINOR && patch == CLTRAIN_VERSION_PATCH,
          "clt_version()'s numbers are the macros'");
    check(strcmp(v, CLTRAIN_VERSION_STRING) == 0, "clt_version()'s string is CLTRAIN_VERSION_STRING");
    char numbers[64];
    snprintf(numbers, sizeof numbers, "%d.%d.%d", CLTRAIN_VERSION_MAJOR, CLTRAIN_VERSION_MINOR,
             CLTRAIN_VERSION_PATCH);
    check(strcmp(numbers, CLTRAIN_VERSION_STRING) == 0, "CLTRAIN_VERSION_STRING is MAJOR.MINOR.PATCH");
    check(CLTRAIN_VERSION_AT_LEAST(major, minor, patch), "at least the library's own version");
    check(CLTRAIN_VERSION_AT_LEAST(major, minor, 0), "at least the minor's first release");
    check(!CLTRAIN_VERSION_AT_LEAST(major, minor, patch + 1), "not the next patch");
    check(!CLTRAIN_VERSION_AT_LEAST(major, minor + 1, 0), "not the next minor");
    check(!CLTRAIN_VERSION_AT_LEAST(major + 1, 0, 0), "not the next major");
    check(CLTRAIN_VERSION_NUMBER(0, 10, 0) > CLTRAIN_VERSION_NUMBER(0, 9, 99), "0.10.0 after 0.9.99");
    return fails ? 1 : 0;
}
