/* Shared by the .npz tests: temporary paths under `dir`. */
#ifndef CLT_TESTS_COMMON_PATHS_H
#define CLT_TESTS_COMMON_PATHS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

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
