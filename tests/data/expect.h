/* Asserting a failure: the status and words the detail must contain. */
#ifndef CLT_TESTS_EXPECT_H
#define CLT_TESTS_EXPECT_H

#include <string.h>

#include "check.h"

/* CHECK_FAIL(call, CLT_ERR_FORMAT, "file.idx", "truncated") */
#define CHECK_FAIL(expr, want, ...)                                                          \
    do {                                                                                     \
        clt_status fail_s_ = (expr);                                                         \
        CHECK(fail_s_ == (want), "%s returned %s, want %s (%s)", #expr,                      \
              clt_status_name(fail_s_), clt_status_name(want), clt_last_error());            \
        const char *fail_words_[] = {__VA_ARGS__};                                           \
        for (size_t fail_i_ = 0; fail_i_ < sizeof fail_words_ / sizeof *fail_words_; fail_i_++) \
            CHECK(strstr(clt_last_error(), fail_words_[fail_i_]) != NULL,                    \
                  "%s: detail lacks \"%s\": %s", #expr, fail_words_[fail_i_], clt_last_error()); \
    } while (0)

#endif
