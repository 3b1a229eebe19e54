#include "log.h"
#include "world.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The lowest level printed, from CLTRAIN_LOG; -1 for a value it is not. */
static int threshold(void)
{
    const char *e = getenv("CLTRAIN_LOG");
    if (!e || !e[0] || !strcmp(e, "info")) return 1;
    if (!strcmp(e, "debug")) return 0;
    if (!strcmp(e, "warning")) return 2;
    return -1;
}

int cli_log_check(void)
{
    if (threshold() >= 0) return 0;
    fprintf(stderr, "cltrain: CLTRAIN_LOG=\"%s\": expected debug, info or warning\n", getenv("CLTRAIN_LOG"));
    return 2;
}

void cli_log(void *user, int level, const char *message)
{
    if (level < (int)(intptr_t)user) return;
    int rank = cli_launch_rank(); /* under mpirun every process may speak: say which */
    if (rank >= 0) fprintf(stderr, "cltrain: rank %d: %s\n", rank, message);
    else fprintf(stderr, "cltrain: %s\n", message);
}

void *cli_log_user(void)
{
    int t = threshold();
    return (void *)(intptr_t)(t < 0 ? 1 : t);
}
