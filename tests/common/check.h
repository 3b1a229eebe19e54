/* Test helpers: CHECK records a failure and goes on; a test returns
 * test_result(). Tests that need OpenCL call test_need_devices(). */
#ifndef CLT_TESTS_CHECK_H
#define CLT_TESTS_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cltrain.h"

static int test_failures;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            test_failures++;                                                \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
        }                                                                   \
    } while (0)

/* Asserts a cltrain call returns CLT_OK; prints the detail otherwise. */
#define CHECK_OK(expr)                                                      \
    do {                                                                    \
        clt_status check_s_ = (expr);                                       \
        if (check_s_ != CLT_OK) {                                           \
            test_failures++;                                                \
            fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #expr, \
                    clt_status_name(check_s_), clt_last_error());           \
        }                                                                   \
    } while (0)

/* Fatal variant for set-up steps the rest depends on. */
#define REQUIRE_OK(expr)                                                    \
    do {                                                                    \
        clt_status check_s_ = (expr);                                       \
        if (check_s_ != CLT_OK) {                                           \
            fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #expr, \
                    clt_status_name(check_s_), clt_last_error());           \
            exit(1);                                                        \
        }                                                                   \
    } while (0)

/* A condition the rest of the test cannot go on without (an allocation). */
#define REQUIRE(cond, ...)                                                  \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                 \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
            exit(1);                                                        \
        }                                                                   \
    } while (0)

/* Asserting a failure: the status and words the detail must contain,
 * CHECK_FAIL(call, CLT_ERR_FORMAT, "file.idx", "truncated"). */
#define CHECK_FAIL(expr, want, ...)                                                             \
    do {                                                                                        \
        clt_status fail_s_ = (expr);                                                            \
        CHECK(fail_s_ == (want), "%s returned %s, want %s (%s)", #expr, clt_status_name(fail_s_), \
              clt_status_name(want), clt_last_error());                                         \
        const char *fail_words_[] = {__VA_ARGS__};                                              \
        for (size_t fail_i_ = 0; fail_i_ < sizeof fail_words_ / sizeof *fail_words_; fail_i_++) \
            CHECK(strstr(clt_last_error(), fail_words_[fail_i_]) != NULL, "%s: detail lacks \"%s\": %s", #expr, \
                  fail_words_[fail_i_], clt_last_error());                                      \
    } while (0)

static inline int test_result(void)
{
    if (test_failures) fprintf(stderr, "%d check(s) failed\n", test_failures);
    return test_failures ? 1 : 0;
}

/* Whether a struct the library filled has its reserved words all zero
 * (cltrain.h, "Room to grow"); fill it with RESERVED_DIRTY before the call. */
#define RESERVED_DIRTY(s) memset(&(s), 0xa5, sizeof(s))
#define RESERVED_ZERO(s) test_all_zero((s).reserved, sizeof (s).reserved)
static inline int test_all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i]) return 0;
    return 1;
}

/* Exits 77 (meson's skip) when fewer than `n` OpenCL devices are visible. */
static inline int test_need_devices(int n)
{
    int count = 0;
    if (clt_device_count(&count) != CLT_OK || count < n) {
        fprintf(stderr, "skip: need %d OpenCL device(s), have %d\n", n, count);
        exit(77);
    }
    return count;
}

/* Max relative error of b against reference a, relative to max |a| (floor 1e-6). */
static inline double max_rel_err(const float *ref, const float *got, size_t n)
{
    double scale = 1e-6, err = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(ref[i]) > scale) scale = fabs(ref[i]);
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)ref[i] - (double)got[i]);
        if (e != e) return INFINITY; /* NaN */
        if (e > err) err = e;
    }
    return err / scale;
}

#endif
