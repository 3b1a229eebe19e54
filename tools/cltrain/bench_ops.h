/* cltrain bench ops: shared between the driver (bench_ops.c), its tables
 * and JSON (bench_ops_report.c) and the device peak measurements
 * (bench_peak.c). */
#ifndef CLT_CLI_BENCH_OPS_H
#define CLT_CLI_BENCH_OPS_H

#include "core/clock.h"
#include "options.h"
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
    double fma_low_gflops, copy_low_gbps;        /* the lowest measurement of each: far below the
                                                  * peak, other load shared the device meanwhile */
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

/* A model of the command: the op cases of its builtin specs (a variant,
 * lenet-max, adds the ops it does not share; its rows name it). */
typedef struct bench_model {
    const char *name;
    const char *specs[2];
    int n_specs;
    int cpu_batch; /* default batch on CPU devices, 0: 256 */
    const char *note;
} bench_model;

#define BENCH_N_MODELS 2
extern const bench_model bench_models[BENCH_N_MODELS];

/* One timed pass of one op. */
typedef struct bench_row {
    const char *model, *pass, *note; /* model: bench_models[].name */
    char op[16];
    char shape[96];
    char kernel[48]; /* conv and dense: the algorithm and its configuration */
    int batch, calls;
    double ms, flop, bytes; /* per call; flop > 0 for compute ops */
    double own_flop;        /* winograd: the algorithm's own multiply-adds x 2 (flop counts every tap); else 0 */
    char error[320];
} bench_row;

typedef struct bench_device {
    int index, opened, peaks_ok;
    clt_device_info info;
    bench_peaks peaks;
    char error[320];
    bench_row *rows;
    int n_rows, cap_rows;
    int batch[BENCH_N_MODELS];
    int64_t params[BENCH_N_MODELS];
    int tf32;               /* the device passed its TF32 probe (clt_device_tf32) */
    int compute_capability; /* NVIDIA's, major * 10 + minor; 0: none reported */
} bench_device;

typedef struct bench_opts {
    int devices[CLT_MAX_DEVICES], n_devices, all_devices;
    int model_mask;
    int64_t batch, repeat;
    int json;
    int fp32; /* --precision fp32: no TF32 convolutions */
    int tty; /* progress lines on stderr */
} bench_opts;

/* Budget of the timed calls of one pass when --repeat is not given. */
#define BENCH_BUDGET_S 0.2
#define BENCH_MAX_CALLS 200

/* A device's tables (its peaks, then one table per model). */
void bench_report_text(const bench_device *d, const bench_opts *o);
/* One JSON object for every device. */
void bench_report_json(const bench_device *res, int n, const bench_opts *o);

#endif
