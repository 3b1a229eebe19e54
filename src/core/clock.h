/* Monotonic wall time in seconds, for timings (library and tools). */
#ifndef CLT_CORE_CLOCK_H
#define CLT_CORE_CLOCK_H

#include <time.h>

static inline double clt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
