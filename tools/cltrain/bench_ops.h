/* cltrain bench ops: shared between the op timings (bench_ops.c) and the
 * device peak measurements (bench_peak.c). */
#ifndef CLT_CLI_BENCH_OPS_H
#define CLT_CLI_BENCH_OPS_H

#include "core/clock.h"
#include "runtime/device.h"

/* The device's measured limits. 0 where a measurement failed. */
typedef struct bench_peaks {
    double fma_gflops;      /* best FMA kernel variant */
    char fma_variant[96];   /* which: "float16 x 16 chains, 8192 work-items" */
    double copy_gbps;       /* device-memory streaming copy, read + write bytes */
    char copy_variant[64];
    double h2d_pinned_gbps, d2h_pinned_gbps;     /* CL_MEM_ALLOC_HOST_PTR, mapped */
    double h2d_unpinned_gbps, d2h_unpinned_gbps; /* malloc'ed host memory */
    size_t copy_bytes, transfer_bytes;           /* buffer sizes used */
    int samples;                                 /* FMA and copy measurements taken */
    int fma_best_variant, copy_best_variant;     /* for bench_peaks_refresh */
    size_t fma_best_global;
} bench_peaks;

/* Measures every peak of the device; the status of the first failure (the
 * detail in clt_last_error()), after which the remaining fields stay 0. */
clt_status bench_peaks_measure(clt_device *dev, bench_peaks *p);
/* Measures the FMA and copy peaks again with the best variants found by
 * bench_peaks_measure and keeps the maxima: a peak taken while other work
 * shared the device would otherwise inflate every fraction. */
clt_status bench_peaks_refresh(clt_device *dev, bench_peaks *p);

#endif
