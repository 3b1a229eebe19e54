/* cltrain bench ops: the device's measured peaks. FMA throughput from the
 * best of several kernel variants (kernels/peak.cl) and global sizes; device
 * memory bandwidth from a streaming copy; host <-> device bandwidth from
 * blocking transfers out of pinned (CL_MEM_ALLOC_HOST_PTR, mapped) and
 * ordinary malloc'ed memory. Every figure is the best of a few runs after a
 * warm-up, so it is what the device can reach, not what it reaches on
 * average. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_ops.h"
#include "runtime/launch.h"
#include "runtime/queue.h"

typedef struct fma_variant {
    const char *kernel;
    const char *type;
    int width, chains;
} fma_variant;

static const fma_variant fma_variants[] = {
    {"peak_fma_f1x8", "float", 1, 8},      {"peak_fma_f1x16", "float", 1, 16},
    {"peak_fma_f4x8", "float4", 4, 8},     {"peak_fma_f4x16", "float4", 4, 16},
    {"peak_fma_f8x8", "float8", 8, 8},     {"peak_fma_f8x16", "float8", 8, 16},
    {"peak_fma_f16x8", "float16", 16, 8},  {"peak_fma_f16x16", "float16", 16, 16},
};

#define FMA_TARGET_S 0.03 /* length of one timed FMA launch */
#define RUNS 3            /* timed runs per measurement; the best counts */

static clt_status fma_run(clt_device *dev, const char *kernel, cl_mem out, size_t global, size_t local, int iters,
                          double *sec)
{
    float a = 0.999f, b = 1e-3f;
    double t0 = clt_now();
    CLT_TRY(clt_launch_1d_local(dev, "peak", kernel, global, local,
                                CLT_ARGS(CLT_ARG(out), CLT_ARG(a), CLT_ARG(b), CLT_ARG(iters))));
    CLT_TRY(clt_queue_finish(clt_device_queue(dev), "clFinish"));
    *sec = clt_now() - t0;
    return CLT_OK;
}

/* GFLOP/s of one variant at one global size: iterations grown until a launch
 * takes FMA_TARGET_S, then the best of RUNS launches. */
static clt_status fma_measure(clt_device *dev, const fma_variant *v, cl_mem out, size_t global, size_t local,
                              double *gflops)
{
    double t;
    int iters = 1;
    CLT_TRY(fma_run(dev, v->kernel, out, global, local, iters, &t)); /* warm-up */
    iters = 4;
    for (;;) {
        CLT_TRY(fma_run(dev, v->kernel, out, global, local, iters, &t));
        if (t >= 0.6 * FMA_TARGET_S || iters >= (1 << 24)) break;
        double grow = t > 0 ? FMA_TARGET_S / t : 64;
        grow = grow < 2 ? 2 : grow > 64 ? 64 : grow;
        iters = (int)(iters * grow);
        if (iters > (1 << 24)) iters = 1 << 24;
    }
    double best = t;
    for (int r = 0; r < RUNS; r++) {
        CLT_TRY(fma_run(dev, v->kernel, out, global, local, iters, &t));
        if (t < best) best = t;
    }
    double flop = 2.0 * 4.0 * v->chains * v->width * (double)iters * (double)global;
    *gflops = flop / best * 1e-9;
    return CLT_OK;
}

static size_t fma_local(const clt_device_info *info)
{
    size_t local = 256;
    if (info->max_work_group_size > 0 && (size_t)info->max_work_group_size < local)
        local = (size_t)info->max_work_group_size;
    return local;
}

/* The lowest of a peak's measurements so far, `low`, given this one's. */
static void keep_low(double *low, double sample)
{
    if (sample > 0 && (*low == 0 || sample < *low)) *low = sample;
}

/* Every variant at two global sizes (all = 1), or only the best one found
 * before (all = 0); p keeps the maximum, and the lowest measurement. */
static clt_status measure_fma(clt_device *dev, bench_peaks *p, int all)
{
    const clt_device_info *info = clt_device_get_info(dev);
    size_t cu = info->compute_units > 0 ? (size_t)info->compute_units : 1;
    size_t local = fma_local(info);
    /* Enough work-items to fill every compute unit several times over (GPUs
     * hide latency with resident threads), and a larger size to be sure. */
    size_t sizes[2] = {cu * 1024, cu * 8192};
    size_t max_global = (sizes[1] + local - 1) / local * local;
    int nv = (int)(sizeof fma_variants / sizeof fma_variants[0]);
    if (!all && p->fma_best_global == 0) return CLT_OK; /* nothing measured before */
    cl_mem out;
    CLT_TRY(clt_buffer_create(dev, CL_MEM_WRITE_ONLY, max_global * sizeof(float), NULL,
                              "clCreateBuffer (peak fma output)", &out));
    clt_status s = CLT_OK;
    double sample = 0; /* this measurement: its best variant */
    for (int i = 0; i < nv && s == CLT_OK; i++) {
        for (int j = 0; j < 2 && s == CLT_OK; j++) {
            size_t global = (sizes[j] + local - 1) / local * local;
            if (!all && (i != p->fma_best_variant || global != p->fma_best_global)) continue;
            double g = 0;
            s = fma_measure(dev, &fma_variants[i], out, global, local, &g);
            if (s == CLT_OK && g > sample) sample = g;
            if (s == CLT_OK && g > p->fma_gflops) {
                p->fma_gflops = g;
                p->fma_best_variant = i;
                p->fma_best_global = global;
                snprintf(p->fma_variant, sizeof p->fma_variant, "%s x %d chains, %zu work-items",
                         fma_variants[i].type, fma_variants[i].chains, global);
            }
        }
    }
    clt_buffer_release(out);
    if (s != CLT_OK) return clt_fail_context(s, "FMA peak");
    keep_low(&p->fma_low_gflops, sample);
    return CLT_OK;
}

/* One copy of `bytes` from x to y: variant 0 and 1 kernels, 2 clEnqueueCopyBuffer. */
static clt_status copy_once(clt_device *dev, int variant, cl_mem x, cl_mem y, size_t bytes)
{
    if (variant == 2) {
        return clt_queue_copy(clt_device_queue(dev), x, 0, y, 0, bytes, "clEnqueueCopyBuffer");
    }
    cl_ulong n = bytes / (variant == 0 ? 16 : 64);
    return clt_launch_1d(dev, "peak", variant == 0 ? "peak_copy_f4" : "peak_copy_f16", (size_t)n,
                         CLT_ARGS(CLT_ARG(x), CLT_ARG(y), CLT_ARG(n)));
}

/* Every copy variant (all = 1) or only the best one found before; p keeps
 * the maximum, and the lowest measurement. */
static clt_status measure_copy(clt_device *dev, bench_peaks *p, int all)
{
    if (!all && !p->copy_variant[0]) return CLT_OK;
    const clt_device_info *info = clt_device_get_info(dev);
    size_t bytes = (size_t)256 << 20;
    if (info->max_alloc_bytes > 0 && (size_t)info->max_alloc_bytes / 2 < bytes)
        bytes = (size_t)info->max_alloc_bytes / 2;
    if (info->global_mem_bytes > 0 && (size_t)info->global_mem_bytes / 8 < bytes)
        bytes = (size_t)info->global_mem_bytes / 8;
    bytes &= ~(size_t)63;
    p->copy_bytes = bytes;
    cl_mem x, y;
    CLT_TRY(clt_buffer_create(dev, CL_MEM_READ_WRITE, bytes, NULL, "clCreateBuffer (peak copy)", &x));
    clt_status s = clt_buffer_create(dev, CL_MEM_READ_WRITE, bytes, NULL, "clCreateBuffer (peak copy)", &y);
    if (s != CLT_OK) {
        clt_buffer_release(x);
        return s;
    }
    static const char *const names[] = {"float4 kernel", "float16 kernel", "clEnqueueCopyBuffer"};
    cl_command_queue q = clt_device_queue(dev);
    float one = 1.0f;
    s = clt_queue_fill(q, x, &one, sizeof one, 0, bytes, "clEnqueueFillBuffer");
    if (s == CLT_OK) s = clt_queue_fill(q, y, &one, sizeof one, 0, bytes, "clEnqueueFillBuffer");
    double sample = 0;
    for (int v = 0; v < 3 && s == CLT_OK; v++) {
        if (!all && v != p->copy_best_variant) continue;
        double best = 0;
        for (int r = 0; r <= RUNS && s == CLT_OK; r++) { /* run 0 is the warm-up */
            double t0 = clt_now();
            s = copy_once(dev, v, x, y, bytes);
            if (s == CLT_OK) s = clt_queue_finish(q, "clFinish");
            double t = clt_now() - t0;
            if (r > 0 && (best == 0 || t < best)) best = t;
        }
        double gbps = s == CLT_OK && best > 0 ? 2.0 * (double)bytes / best * 1e-9 : 0;
        if (gbps > sample) sample = gbps;
        if (gbps > p->copy_gbps) {
            p->copy_gbps = gbps;
            p->copy_best_variant = v;
            snprintf(p->copy_variant, sizeof p->copy_variant, "%s", names[v]);
        }
    }
    clt_buffer_release(x);
    clt_buffer_release(y);
    if (s != CLT_OK) return clt_fail_context(s, "copy peak");
    keep_low(&p->copy_low_gbps, sample);
    return CLT_OK;
}

/* Best of RUNS blocking transfers (after a warm-up) between host and d. */
static clt_status transfer_gbps(clt_device *dev, cl_mem d, void *host, size_t bytes, int to_device, double *gbps)
{
    cl_command_queue q = clt_device_queue(dev);
    double best = 0;
    for (int r = 0; r <= RUNS; r++) {
        double t0 = clt_now();
        if (to_device)
            CLT_TRY(clt_queue_write(q, d, 1, 0, bytes, host, 0, NULL, NULL, "clEnqueueWriteBuffer"));
        else
            CLT_TRY(clt_queue_read(q, d, 1, 0, bytes, host, 0, NULL, NULL, "clEnqueueReadBuffer"));
        double t = clt_now() - t0;
        if (r > 0 && (best == 0 || t < best)) best = t;
    }
    *gbps = best > 0 ? (double)bytes / best * 1e-9 : 0;
    return CLT_OK;
}

static clt_status measure_transfers(clt_device *dev, bench_peaks *p)
{
    int64_t max_alloc = clt_device_get_info(dev)->max_alloc_bytes;
    size_t bytes = (size_t)64 << 20;
    if (max_alloc > 0 && (size_t)max_alloc < bytes) bytes = (size_t)max_alloc;
    p->transfer_bytes = bytes;
    cl_mem d;
    CLT_TRY(clt_buffer_create(dev, CL_MEM_READ_WRITE, bytes, NULL, "clCreateBuffer (transfer peak)", &d));
    clt_status s = CLT_OK;
    void *h = malloc(bytes);
    if (!h) s = clt_fail(CLT_ERR_NO_MEMORY, "%zu-byte host buffer", bytes);
    if (s == CLT_OK) {
        memset(h, 0, bytes); /* fault the pages in before timing */
        s = transfer_gbps(dev, d, h, bytes, 1, &p->h2d_unpinned_gbps);
        if (s == CLT_OK) s = transfer_gbps(dev, d, h, bytes, 0, &p->d2h_unpinned_gbps);
    }
    free(h);
    cl_mem pinned = NULL;
    if (s == CLT_OK)
        s = clt_buffer_create(dev, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL,
                              "clCreateBuffer (CL_MEM_ALLOC_HOST_PTR)", &pinned);
    cl_command_queue q = clt_device_queue(dev);
    void *ph = NULL;
    if (s == CLT_OK) s = clt_queue_map(q, pinned, bytes, "clEnqueueMapBuffer (pinned staging)", &ph);
    if (s == CLT_OK) {
        memset(ph, 0, bytes);
        s = transfer_gbps(dev, d, ph, bytes, 1, &p->h2d_pinned_gbps);
        if (s == CLT_OK) s = transfer_gbps(dev, d, ph, bytes, 0, &p->d2h_pinned_gbps);
    }
    if (ph) {
        clt_queue_unmap(q, pinned, ph);
        clt_queue_drain(q);
    }
    clt_buffer_release(pinned);
    clt_buffer_release(d);
    if (s != CLT_OK) return clt_fail_context(s, "host-device transfer peak");
    return CLT_OK;
}

clt_status bench_peaks_measure(clt_device *dev, bench_peaks *p)
{
    memset(p, 0, sizeof *p);
    /* kernels/peak.cl serves this tool only: device warm-up skips it */
    CLT_TRY(clt_device_build_program(dev, "peak"));
    CLT_TRY(measure_fma(dev, p, 1));
    CLT_TRY(measure_copy(dev, p, 1));
    CLT_TRY(measure_transfers(dev, p));
    p->samples = 1;
    return CLT_OK;
}

clt_status bench_peaks_refresh(clt_device *dev, bench_peaks *p)
{
    CLT_TRY(measure_fma(dev, p, 0));
    CLT_TRY(measure_copy(dev, p, 0));
    p->samples++;
    return CLT_OK;
}
