/* One op case of cltrain bench ops on a device (bench_case.h). */
#include "bench_case.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "ops/activation.h"
#include "ops/bn.h"
#include "ops/conv.h"
#include "ops/dense.h"
#include "ops/dense_cpu.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/pool.h"
#include "runtime/queue.h"
#include "optim/sgd.h"

/* B_E*: batch norm's statistics vectors. */
enum { B_X, B_W, B_B, B_Y, B_DY, B_DX, B_DW, B_DB, B_AUX, B_E1, B_E2, B_E3, B_E4, N_BUFS };

struct bench_case {
    clt_device *dev;
    const clt_op_case *c;
    clt_conv_geom g; /* conv */
    cl_mem m[N_BUFS];
};

/* The passes of each kind. */
static const char *const conv_passes[] = {"forward", "backward-data", "backward-weights", NULL};
static const char *const fb_passes[] = {"forward", "backward", NULL};
static const char *const xent_passes[] = {"forward+backward", NULL};
static const char *const fwd_passes[] = {"forward", NULL};
static const char *const sgd_passes[] = {"step", NULL};

const char *const *bench_case_passes(clt_op_kind kind)
{
    switch (kind) {
    case CLT_OP_CONV:
    case CLT_OP_DENSE: return conv_passes;
    case CLT_OP_XENT: return xent_passes;
    case CLT_OP_SGD: return sgd_passes;
    case CLT_OP_ADD: return fwd_passes;
    default: return fb_passes;
    }
}

void bench_case_shape(const clt_op_case *c, char *buf, size_t cap)
{
    switch (c->kind) {
    case CLT_OP_CONV:
        if (c->stride != 1 || c->pad != 0)
            snprintf(buf, cap, "%dx%dx%d -> %dx%dx%d k%d s%d p%d", c->c, c->h, c->w, c->co, c->oh, c->ow, c->k,
                     c->stride, c->pad);
        else
            snprintf(buf, cap, "%dx%dx%d -> %dx%dx%d k%d", c->c, c->h, c->w, c->co, c->oh, c->ow, c->k);
        break;
    case CLT_OP_POOL:
        snprintf(buf, cap, "%s %dx%dx%d -> %dx%dx%d", c->pool == CLT_POOL_MAX ? "max" : "avg", c->c, c->h, c->w,
                 c->c, c->oh, c->ow);
        break;
    case CLT_OP_GAP: snprintf(buf, cap, "%dx%dx%d -> %d", c->c, c->h, c->w, c->c); break;
    case CLT_OP_ACT:
    case CLT_OP_BN:
    case CLT_OP_ADD: snprintf(buf, cap, "%dx%dx%d", c->c, c->h, c->w); break;
    case CLT_OP_DENSE: snprintf(buf, cap, "%d -> %d", c->c, c->co); break;
    case CLT_OP_XENT: snprintf(buf, cap, "%d classes", c->c); break;
    case CLT_OP_SGD: snprintf(buf, cap, "%lld params, momentum", (long long)c->params); break;
    }
}

double bench_case_own_flop(const clt_op_case *c, const char *kernel)
{
    int m;
    if (c->kind != CLT_OP_CONV || sscanf(kernel, "winograd f%d", &m) != 1 || m < 1) return 0;
    double tiles = (double)((c->oh + m - 1) / m) * ((c->ow + m - 1) / m);
    return 2.0 * c->n * tiles * (m + 2) * (m + 2) * (double)c->c * c->co;
}

void bench_case_work(const clt_device *dev, const clt_op_case *c, int pass, double *flop, double *bytes)
{
    double n = c->n, in = (double)c->n * c->c * c->h * c->w;
    *flop = 0, *bytes = 0;
    switch (c->kind) {
    case CLT_OP_CONV: *flop = 2.0 * n * c->co * c->oh * c->ow * (double)c->c * c->k * c->k; break;
    case CLT_OP_DENSE: *flop = 2.0 * n * c->c * (double)c->co; break;
    case CLT_OP_POOL: {
        double out = n * c->c * c->oh * c->ow;
        int rh = (c->oh - 1) * c->stride + c->k, rw = (c->ow - 1) * c->stride + c->k; /* rows/cols read */
        double read = n * c->c * (double)(rh < c->h ? rh : c->h) * (rw < c->w ? rw : c->w);
        /* forward: input in, output (and argmax, as the layer keeps it) out;
         * backward: dy (and argmax) in, the whole dx out */
        double am = c->pool == CLT_POOL_MAX ? (double)clt_pool_argmax_bytes(dev, CLT_POOL_ARGMAX_PRIVATE, c->n, c->c,
                                                                              c->h, c->w, c->k, c->stride)
                                            : 0.0;
        *bytes = pass == 0 ? 4.0 * (read + out) + am : 4.0 * (out + in) + am;
        break;
    }
    case CLT_OP_GAP: *bytes = 4.0 * (in + n * c->c); break;
    case CLT_OP_ACT: *bytes = 4.0 * in * (pass == 0 ? 2 : 3); break;
    /* forward: x read by the statistics and by the apply, y written;
     * backward: x and dy read by the statistics and by the apply, dx written */
    case CLT_OP_BN: *bytes = 4.0 * in * (pass == 0 ? 3 : 5); break;
    case CLT_OP_ADD: *bytes = 4.0 * in * 3; break;
    case CLT_OP_XENT: *bytes = 4.0 * (2 * n * c->c + n + 2 * n); break;
    case CLT_OP_SGD: *bytes = 4.0 * 5 * (double)c->params; break; /* read w, g, v; write w, v */
    }
}

/* Sizes in elements of each buffer of the case. */
static void buf_sizes(const clt_op_case *c, size_t sz[N_BUFS])
{
    size_t n = (size_t)c->n, in = n * c->c * c->h * c->w;
    memset(sz, 0, N_BUFS * sizeof sz[0]);
    switch (c->kind) {
    case CLT_OP_CONV:
        sz[B_X] = sz[B_DX] = in;
        sz[B_W] = sz[B_DW] = (size_t)c->co * c->c * c->k * c->k;
        sz[B_B] = sz[B_DB] = (size_t)c->co;
        sz[B_Y] = sz[B_DY] = n * c->co * c->oh * c->ow;
        break;
    case CLT_OP_POOL:
        sz[B_X] = sz[B_DX] = in;
        sz[B_Y] = sz[B_DY] = sz[B_AUX] = n * c->c * c->oh * c->ow;
        break;
    case CLT_OP_GAP:
        sz[B_X] = sz[B_DX] = in;
        sz[B_Y] = sz[B_DY] = n * c->c;
        break;
    case CLT_OP_ACT:
    case CLT_OP_ADD: /* y = x + dy */
        sz[B_X] = sz[B_Y] = sz[B_DY] = sz[B_DX] = in;
        break;
    case CLT_OP_BN:
        sz[B_X] = sz[B_Y] = sz[B_DY] = sz[B_DX] = in;
        sz[B_W] = sz[B_B] = (size_t)c->c;                  /* gamma, beta */
        sz[B_AUX] = sz[B_E3] = sz[B_E4] = (size_t)c->c;    /* shift, running mean, running var */
        sz[B_DW] = sz[B_E1] = sz[B_E2] = 2 * (size_t)c->c; /* bstats, stats, mean_invstd */
        break;
    case CLT_OP_DENSE:
        sz[B_X] = sz[B_DX] = in;
        sz[B_W] = sz[B_DW] = (size_t)c->co * c->c;
        sz[B_B] = sz[B_DB] = (size_t)c->co;
        sz[B_Y] = sz[B_DY] = n * c->co;
        break;
    case CLT_OP_XENT:
        sz[B_X] = sz[B_DX] = in; /* logits, dlogits */
        sz[B_AUX] = n;           /* labels */
        sz[B_Y] = 2 * n;         /* stats */
        break;
    case CLT_OP_SGD:
        sz[B_W] = sz[B_DW] = sz[B_AUX] = (size_t)c->params; /* w, g, velocity */
        break;
    }
}

/* A device buffer of `count` floats, uniform in [-1, 1) (int32 labels in
 * [0, classes) when classes > 0). */
static clt_status buf_new(clt_device *dev, size_t count, uint32_t seed, int classes, cl_mem *out)
{
    size_t bytes = (count ? count : 1) * 4;
    int64_t max_alloc = clt_device_get_info(dev)->max_alloc_bytes;
    if (max_alloc > 0 && bytes > (size_t)max_alloc)
        return clt_fail(CLT_ERR_DEVICE_MEMORY, "a %zu-byte buffer exceeds the device's largest allocation (%lld bytes)",
                        bytes, (long long)max_alloc);
    uint32_t *host = malloc(bytes);
    if (!host) return clt_fail(CLT_ERR_NO_MEMORY, "%zu-byte host buffer", bytes);
    uint32_t r = seed * 2654435761u + 1;
    for (size_t i = 0; i < bytes / 4; i++) {
        r = r * 1664525u + 1013904223u;
        if (classes > 0) {
            host[i] = (uint32_t)(i % (size_t)classes);
        } else {
            float f = (float)(r >> 8) * (2.0f / 16777216.0f) - 1.0f;
            memcpy(&host[i], &f, 4);
        }
    }
    clt_status s = clt_buffer_create(dev, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, host, "clCreateBuffer", out);
    free(host);
    return s;
}

static clt_status buffers(bench_case *b)
{
    const clt_op_case *c = b->c;
    if (c->kind == CLT_OP_CONV)
        CLT_TRY(clt_conv_geom_init(&b->g, c->n, c->c, c->h, c->w, c->co, c->k, c->stride, c->pad));
    size_t sz[N_BUFS];
    buf_sizes(c, sz);
    for (int i = 0; i < N_BUFS; i++) {
        if (!sz[i]) continue;
        int classes = c->kind == CLT_OP_XENT && i == B_AUX ? c->c : 0;
        if (c->kind == CLT_OP_POOL && i == B_AUX) classes = 1; /* argmax: written by the forward pass */
        CLT_TRY(buf_new(b->dev, sz[i], (uint32_t)(i + 1), classes, &b->m[i]));
    }
    return CLT_OK;
}

clt_status bench_case_create(clt_device *dev, const clt_op_case *c, bench_case **out)
{
    bench_case *b = calloc(1, sizeof *b);
    if (!b) return clt_fail(CLT_ERR_NO_MEMORY, "bench case");
    b->dev = dev, b->c = c;
    clt_status s = buffers(b);
    if (s == CLT_OK) *out = b;
    else bench_case_destroy(b);
    return s;
}

void bench_case_destroy(bench_case *b)
{
    if (!b) return;
    for (int i = 0; i < N_BUFS; i++)
        clt_buffer_release(b->m[i]);
    free(b);
}

void bench_case_kernel(bench_case *b, int pass, char *buf, size_t cap)
{
    const clt_op_case *c = b->c;
    buf[0] = 0;
    if (c->kind == CLT_OP_POOL && c->pool == CLT_POOL_MAX) { /* the argmax as the layer keeps it (ops/pool.h) */
        size_t kept = clt_pool_argmax_bytes(b->dev, CLT_POOL_ARGMAX_PRIVATE, c->n, c->c, c->h, c->w, c->k, c->stride);
        size_t plane = clt_pool_argmax_bytes(b->dev, CLT_POOL_ARGMAX_PLANE, c->n, c->c, c->h, c->w, c->k, c->stride);
        snprintf(buf, cap, "argmax %s", kept < plane ? "2 bits" : "int32");
        return;
    }
    if (c->kind != CLT_OP_CONV && c->kind != CLT_OP_DENSE) return;
    if (c->kind == CLT_OP_DENSE) { /* ops/dense.c: its CPU kernels where the lanes kernels run */
        if (clt_dense_fuses(b->dev)) clt_dense_cpu_describe(b->dev, pass, buf, cap);
        else snprintf(buf, cap, "CLBlast SGEMM");
        return;
    }
    if (clt_conv_describe_raw(b->dev, &b->g, pass, buf, cap) != CLT_OK) clt_clear_error();
}

static clt_status run_bn(bench_case *b, int pass)
{
    const clt_op_case *c = b->c;
    clt_device *dev = b->dev;
    cl_mem *m = b->m;
    int hw = c->h * c->w;
    double elems = (double)c->n * hw;
    if (pass == 1) {
        CLT_TRY(clt_bn_backward_stats_raw(dev, c->n, c->c, hw, m[B_X], m[B_DY], NULL, m[B_E2], m[B_DW]));
        return clt_bn_backward_apply_raw(dev, c->n, c->c, hw, m[B_X], m[B_DY], NULL, m[B_E2], m[B_W], m[B_DW], elems,
                                         m[B_DX]);
    }
    CLT_TRY(clt_bn_shift_raw(dev, c->n, c->c, hw, m[B_X], m[B_AUX]));
    CLT_TRY(clt_bn_stats_raw(dev, c->n, c->c, hw, m[B_X], m[B_AUX], m[B_E1]));
    CLT_TRY(clt_bn_finalize_raw(dev, c->c, elems, m[B_E1], m[B_AUX], CLT_BN_MOMENTUM, CLT_BN_EPS, m[B_E3], m[B_E4],
                                m[B_E2]));
    return clt_bn_apply_raw(dev, c->n, c->c, hw, m[B_X], m[B_E2], m[B_W], m[B_B], NULL, m[B_Y]);
}

static clt_status run_pass(bench_case *b, int pass)
{
    const clt_op_case *c = b->c;
    clt_device *dev = b->dev;
    cl_mem *m = b->m;
    size_t count = (size_t)c->n * c->c * c->h * c->w;
    switch (c->kind) {
    case CLT_OP_CONV:
        if (pass == 0) return clt_conv_forward_raw(dev, &b->g, m[B_X], m[B_W], m[B_B], NULL, m[B_Y]);
        if (pass == 1) return clt_conv_backward_raw(dev, &b->g, m[B_X], m[B_W], m[B_DY], NULL, m[B_DX], NULL, NULL);
        return clt_conv_backward_raw(dev, &b->g, m[B_X], m[B_W], m[B_DY], NULL, NULL, m[B_DW], m[B_DB]);
    case CLT_OP_DENSE:
        if (pass == 0) return clt_dense_forward_raw(dev, c->n, c->c, c->co, m[B_X], m[B_W], m[B_B], NULL, m[B_Y]);
        if (pass == 1)
            return clt_dense_backward_raw(dev, c->n, c->c, c->co, m[B_X], m[B_W], m[B_DY], NULL, m[B_DX], NULL, NULL);
        return clt_dense_backward_raw(dev, c->n, c->c, c->co, m[B_X], m[B_W], m[B_DY], NULL, NULL, m[B_DW], m[B_DB]);
    case CLT_OP_POOL:
        if (pass == 0)
            return clt_pool_forward_raw(dev, c->pool, c->n, c->c, c->h, c->w, c->k, c->stride, m[B_X], m[B_Y],
                                        m[B_AUX], CLT_POOL_ARGMAX_PRIVATE); /* as the layer */
        return clt_pool_backward_raw(dev, c->pool, c->n, c->c, c->h, c->w, c->k, c->stride, m[B_DY], m[B_AUX],
                                     CLT_POOL_ARGMAX_PRIVATE, m[B_DX]);
    case CLT_OP_GAP:
        if (pass == 0) return clt_gap_forward_raw(dev, c->n * c->c, c->h * c->w, m[B_X], m[B_Y]);
        return clt_gap_backward_raw(dev, c->n * c->c, c->h * c->w, m[B_DY], m[B_DX]);
    case CLT_OP_ACT:
        if (pass == 0) return clt_act_forward_raw(dev, c->act, count, m[B_X], m[B_Y]);
        return clt_act_backward_raw(dev, c->act, count, m[B_Y], m[B_DY], m[B_DX]);
    case CLT_OP_BN: return run_bn(b, pass);
    case CLT_OP_ADD: return clt_add_raw(dev, count, m[B_X], m[B_DY], m[B_Y]);
    case CLT_OP_XENT:
        return clt_xent_raw(dev, c->n, c->c, m[B_X], m[B_AUX], 1.0f / (float)c->n, m[B_DX], m[B_Y]);
    case CLT_OP_SGD: return clt_sgd_raw(dev, (size_t)c->params, m[B_W], m[B_DW], m[B_AUX], 1e-3f, 0.9f, 5e-4f);
    }
    return clt_fail(CLT_ERR_INTERNAL, "bench ops: unknown op kind %d", (int)c->kind);
}

static clt_status finish(clt_device *dev) { return clt_queue_finish(clt_device_queue(dev), "clFinish"); }

clt_status bench_case_time(bench_case *b, int pass, int64_t repeat, double budget_s, int max_calls, double *sec,
                           int *calls)
{
    CLT_TRY(run_pass(b, pass));
    CLT_TRY(finish(b->dev));
    int n = (int)repeat;
    if (n <= 0) {
        double t0 = clt_now();
        CLT_TRY(run_pass(b, pass));
        CLT_TRY(finish(b->dev));
        double t = clt_now() - t0;
        double fit = t > 0 ? budget_s / t : max_calls;
        n = fit < 3 ? 3 : fit > max_calls ? max_calls : (int)fit;
    }
    /* The calls in bench_rounds(n) rounds of n/rounds calls (one more in
     * some), each drained; the fastest round's mean counts, as the best
     * run does for the peaks: a round that shared the machine with another
     * job does not lower the fraction */
    int rounds = bench_rounds(n);
    double best = 0;
    for (int r = 0; r < rounds; r++) {
        int k = n * (r + 1) / rounds - n * r / rounds;
        double t0 = clt_now();
        for (int i = 0; i < k; i++) CLT_TRY(run_pass(b, pass));
        CLT_TRY(finish(b->dev));
        double t = (clt_now() - t0) / k;
        if (r == 0 || t < best) best = t;
    }
    *sec = best;
    *calls = n;
    return CLT_OK;
}
