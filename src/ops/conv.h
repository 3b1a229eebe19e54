/* 2-D convolution launchers on raw device buffers (NCHW, float32).
 *
 * Semantics (docs/ARCHITECTURE.md, "Numerics contract"): cross-correlation, zero padding, weight (co, c, k, k),
 * bias per output channel, oh = (h + 2 pad - k) / stride + 1. The backward
 * gives gradient SUMS over the batch and overwrites dx, dw, db.
 *
 * A plan holds, for one geometry on one device, the algorithm each pass
 * runs (conv_algo.h: direct, lanes, implicit, gemm or winograd) and that algorithm's
 * block sizes and chunking. Callers that run the same shape again (a layer) keep a plan;
 * the *_raw calls plan per call. */
#ifndef CLT_OPS_CONV_H
#define CLT_OPS_CONV_H

#include "ops/epilogue.h"
#include "runtime/device.h"

typedef struct clt_conv_geom {
    int n, c, h, w;   /* input batch, channels, height, width */
    int co, k;        /* output channels, square kernel size */
    int stride, pad;
    int oh, ow;       /* output size: (h + 2 pad - k) / stride + 1 */
} clt_conv_geom;

/* Passes, as indices of clt_conv_plan_algo. */
enum { CLT_CONV_FWD, CLT_CONV_BWD_DATA, CLT_CONV_BWD_WEIGHTS, CLT_CONV_PASSES };

typedef struct clt_conv_plan clt_conv_plan;

/* The algorithm the settings force (clt_device_settings' conv_algo, from
 * CLTRAIN_CONV_ALGO: ops/conv_algos.c); AUTO: lanes on CPU devices,
 * implicit and gemm elsewhere; WINOGRAD: winograd where it runs the shape
 * (3x3, stride 1), AUTO's choice elsewhere. */
enum { CLT_CONV_ALGO_AUTO, CLT_CONV_ALGO_LANES, CLT_CONV_ALGO_GEMM, CLT_CONV_ALGO_IMPLICIT, CLT_CONV_ALGO_WINOGRAD };

/* Fills oh/ow and checks the geometry (error names the sizes). */
clt_status clt_conv_geom_init(clt_conv_geom *g, int n, int c, int h, int w, int co, int k,
                              int stride, int pad);
/* Whether convolutions run the lane kernels on this device (CPU devices,
 * unless its settings say otherwise); other ops may borrow them. */
clt_status clt_conv_uses_lanes(const clt_device *dev, int *yes);
/* Bytes per sample of the work buffer g's passes take on dev (g's n
 * samples), as estimated for a memory check: the lanes layouts' copies on
 * CPU devices; 0 where the kernels read the tensors in place (GPUs), whose
 * work buffers do not grow with the batch beyond their budget. */
double clt_conv_work_bytes(const clt_device *dev, const clt_conv_geom *g);

/* Pass bits (CLT_CONV_PASS(CLT_CONV_FWD) | ...). */
#define CLT_CONV_PASS(p) (1u << (p))

/* Makes *plan (NULL: none yet) the plan of geometry g on dev for the passes
 * in `passes` (pass bits): kept when it already is one for g and the
 * device's current settings (a pass it lacks is planned, and tuned, then),
 * else (re)made. Planning a pass where it is first needed keeps the tuners
 * from timing passes that never run (a first layer's backward-data, the
 * backward of an evaluation-only batch size). Free it with
 * clt_conv_plan_destroy. */
clt_status clt_conv_plan_ensure_passes(clt_device *dev, const clt_conv_geom *g, unsigned passes,
                                       clt_conv_plan **plan);
/* The same for every pass. */
clt_status clt_conv_plan_ensure(clt_device *dev, const clt_conv_geom *g, clt_conv_plan **plan);
void clt_conv_plan_destroy(clt_conv_plan *plan);
/* The name of the algorithm that runs pass `pass` (CLT_CONV_FWD...):
 * "direct", "lanes", "implicit", "gemm" or "winograd"; NULL for an unplanned pass. */
const char *clt_conv_plan_algo(const clt_conv_plan *plan, int pass);
/* The algorithm and how it runs the pass (its kernel configuration, and
 * whether a tuner chose it: "lanes vw8 rm6 nv2 tuned"), into buf; "" for
 * an unplanned pass. */
void clt_conv_plan_describe(const clt_conv_plan *plan, int pass, char *buf, size_t cap);
/* The same for what a raw launcher of that pass alone runs on dev (it
 * tunes the pass first where the device tunes). */
clt_status clt_conv_describe_raw(clt_device *dev, const clt_conv_geom *g, int pass, char *buf, size_t cap);
/* Whether a 2x2 stride-2 pooling of kind CLT_EPI_POOL_* after a
 * convolution of geometry g (its batch aside) fuses into it on dev
 * (ops/epilogue.h), on devices that run the lanes kernels (CPUs, or any
 * device with CLTRAIN_CONV_ALGO=lanes):
 * - first (a net's first layer with parameters, which has no
 *   backward-data): average or max, where its forward and backward-weights
 *   run the direct algorithm (stride 1, no padding, c*k*k <= 9) with even
 *   output rows and columns, at least 16 columns;
 * - any layer: average or max, where the direct algorithm runs no pass
 *   (the lanes copies pool, LeNet's conv2), at least 2x2 outputs, and no
 *   work-buffer budget in the settings (under which the lanes kernels may
 *   give way to gemm). */
int clt_conv_fuses_pool(const clt_device *dev, const clt_conv_geom *g, int kind, int first);
/* y = conv(x, w) + b with a plan of dev; b may be NULL; epi (NULL: none)
 * a ReLU, and a pooling where clt_conv_fuses_pool, fused into the store
 * (ops/epilogue.h). */
clt_status clt_conv_plan_forward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                                 cl_mem b, const clt_epilogue *epi, cl_mem y);
/* Gradient sums with a plan of dev; dx, dw, db may each be NULL (skipped).
 * epi: the forward's epilogue with its output y (dy is the gradient of
 * that output; the ReLU's derivative is applied while reading it). */
clt_status clt_conv_plan_backward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                                  cl_mem dy, const clt_epilogue *epi, cl_mem dx, cl_mem dw, cl_mem db);

/* The same with a plan made for this call only. */
clt_status clt_conv_forward_raw(clt_device *dev, const clt_conv_geom *g, cl_mem x, cl_mem w,
                                cl_mem b, const clt_epilogue *epi, cl_mem y);
clt_status clt_conv_backward_raw(clt_device *dev, const clt_conv_geom *g, cl_mem x, cl_mem w,
                                 cl_mem dy, const clt_epilogue *epi, cl_mem dx, cl_mem dw, cl_mem db);

#endif
