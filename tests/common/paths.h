/* Shared by the .npz tests: CHECK_FAIL and temporary paths under `dir`. */
#ifndef CLT_TESTS_COMMON_PATHS_H
#define CLT_TESTS_COMMON_PATHS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* CHECK_FAIL(call, CLT_ERR_FORMAT, "words", "the detail", "must contain") */
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

static char dir[4096];

/* dir/name in a buffer of its own, freed by free_paths. */
static char *made_paths[128];
static int n_made_paths;

static inline const char *path_of(const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (!p || n_made_paths == (int)(sizeof made_paths / sizeof *made_paths)) {
        fprintf(stderr, "path_of: out of room\n");
        exit(1);
    }
    snprintf(p, n, "%s/%s", dir, name);
    made_paths[n_made_paths++] = p;
    return p;
}

static inline void free_paths(void)
{
    while (n_made_paths) free(made_paths[--n_made_paths]);
}

#endif
