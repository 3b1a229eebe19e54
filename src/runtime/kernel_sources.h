/* The kernels/NAME.cl sources embedded at build time (tools/embed_kernels.py). */
#ifndef CLT_RUNTIME_KERNEL_SOURCES_H
#define CLT_RUNTIME_KERNEL_SOURCES_H

#include <stddef.h>

typedef struct clt_kernel_source {
    const char *name;   /* file name without .cl */
    const char *source; /* NUL-terminated */
    size_t length;
    int on_demand;      /* 1: built on first use only (clt_device_warmup skips it) */
} clt_kernel_source;

extern const clt_kernel_source clt_kernel_sources[];
/* kernels/prelude.h and a #line 1: already at the head of every embedded
 * source, for sources read from CLTRAIN_KERNEL_DIR to get too. */
extern const char clt_kernel_prelude[];
extern const size_t clt_kernel_prelude_length;
extern const int clt_kernel_source_count;

#endif
