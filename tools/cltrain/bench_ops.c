/* cltrain bench ops: every op of LeNet and ResNet-18 (28x28) at its real
 * shapes, timed through the raw launchers, against the device's own
 * measured peaks (bench_peak.c): compute ops (convolution, dense) as GFLOP/s
 * and a fraction of the FMA peak, memory-bound ops (pooling, activation,
 * loss, optimizer step) as GB/s and a fraction of the copy bandwidth.
 *
 * Timing: one warm-up call (first-use builds), one probe call, then N calls
 * enqueued back to back and drained once; ms/call is their mean. N is
 * --repeat, or as many calls as fit in about BUDGET_S seconds (3..200).
 * The FMA and copy peaks are measured before the ops and again after each
 * model, and the highest figure counts, so a peak taken while something
 * else loaded the device does not inflate the fractions; the tables are
 * printed once a device's peaks are final. */
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/args.h"
#include "../common/json.h"
#include "bench_ops.h"
#include "ops/activation.h"
#include "ops/bn.h"
#include "ops/conv.h"
#include "ops/dense.h"
#include "ops/loss.h"
#include "ops/pool.h"
#include "optim/sgd.h"
#include "options.h"

#define BUDGET_S 0.2
#define MAX_CALLS 200

/* ------------------------------------------------------------------ */
/* The op shapes of the models                                         */
/* ------------------------------------------------------------------ */

typedef enum layer_kind { L_CONV, L_POOL, L_GAP, L_RELU, L_BN, L_ADD, L_DENSE, L_XENT, L_SGD } layer_kind;

typedef struct layer {
    const char *name;
    layer_kind kind;
    int c, h, w;          /* per-sample input (dense: c = in features; xent: c = classes) */
    int co, k, s, p;      /* conv: out channels, kernel, stride, pad; pool: k, s; dense: co = out */
    clt_pool_kind pool;
    int uses;             /* times the net runs this shape in one step (parameter count) */
    const char *note;
} layer;

typedef struct model {
    const char *name;
    const layer *layers;
    int n_layers;
    int cpu_batch;        /* default batch on CPU devices, 0: 256 */
    const char *note;
} model;

static const layer lenet_layers[] = {
    {"conv1", L_CONV, 1, 28, 28, 20, 3, 1, 0, 0, 1, NULL},
    {"relu1", L_RELU, 20, 26, 26, 0, 0, 0, 0, 0, 1, NULL},
    {"avgpool1", L_POOL, 20, 26, 26, 0, 2, 2, 0, CLT_POOL_AVG, 1, NULL},
    {"maxpool1", L_POOL, 20, 26, 26, 0, 2, 2, 0, CLT_POOL_MAX, 0, "lenet-max"},
    {"conv2", L_CONV, 20, 13, 13, 50, 5, 1, 0, 0, 1, NULL},
    {"relu2", L_RELU, 50, 9, 9, 0, 0, 0, 0, 0, 1, NULL},
    {"avgpool2", L_POOL, 50, 9, 9, 0, 2, 2, 0, CLT_POOL_AVG, 1, NULL},
    {"maxpool2", L_POOL, 50, 9, 9, 0, 2, 2, 0, CLT_POOL_MAX, 0, "lenet-max"},
    {"dense1", L_DENSE, 800, 1, 1, 128, 0, 0, 0, 0, 1, NULL},
    {"relu3", L_RELU, 128, 1, 1, 0, 0, 0, 0, 0, 1, NULL},
    {"dense2", L_DENSE, 128, 1, 1, 10, 0, 0, 0, 0, 1, NULL},
    {"xent", L_XENT, 10, 1, 1, 0, 0, 0, 0, 0, 1, NULL},
    {"sgd", L_SGD, 0, 0, 0, 0, 0, 0, 0, 0, 1, NULL},
};

/* ResNet-18 for 28x28 inputs (the builtin resnet18): a 3x3 stem conv, bn
 * and relu without max pooling, then four stages of two residual blocks
 * relu(bn(conv(relu(bn(conv(x))))) + shortcut(x)) with 64 channels at 28x28,
 * 128 at 14x14, 256 at 7x7 and 512 at 4x4; the first block of stages 2-4
 * has a stride-2 3x3 conv and a 1x1 stride-2 projection shortcut. One row
 * per distinct shape; `uses` counts the layers of that shape in the net. */
static const layer resnet18_layers[] = {
    {"stem", L_CONV, 1, 28, 28, 64, 3, 1, 1, 0, 1, NULL},
    {"s1.conv", L_CONV, 64, 28, 28, 64, 3, 1, 1, 0, 4, NULL},
    {"s2.down", L_CONV, 64, 28, 28, 128, 3, 2, 1, 0, 1, NULL},
    {"s2.proj", L_CONV, 64, 28, 28, 128, 1, 2, 0, 0, 1, NULL},
    {"s2.conv", L_CONV, 128, 14, 14, 128, 3, 1, 1, 0, 3, NULL},
    {"s3.down", L_CONV, 128, 14, 14, 256, 3, 2, 1, 0, 1, NULL},
    {"s3.proj", L_CONV, 128, 14, 14, 256, 1, 2, 0, 0, 1, NULL},
    {"s3.conv", L_CONV, 256, 7, 7, 256, 3, 1, 1, 0, 3, NULL},
    {"s4.down", L_CONV, 256, 7, 7, 512, 3, 2, 1, 0, 1, NULL},
    {"s4.proj", L_CONV, 256, 7, 7, 512, 1, 2, 0, 0, 1, NULL},
    {"s4.conv", L_CONV, 512, 4, 4, 512, 3, 1, 1, 0, 3, NULL},
    {"s1.bn", L_BN, 64, 28, 28, 0, 0, 0, 0, 0, 5, NULL},
    {"s2.bn", L_BN, 128, 14, 14, 0, 0, 0, 0, 0, 4, NULL},
    {"s3.bn", L_BN, 256, 7, 7, 0, 0, 0, 0, 0, 4, NULL},
    {"s4.bn", L_BN, 512, 4, 4, 0, 0, 0, 0, 0, 4, NULL},
    {"s1.relu", L_RELU, 64, 28, 28, 0, 0, 0, 0, 0, 5, NULL},
    {"s2.relu", L_RELU, 128, 14, 14, 0, 0, 0, 0, 0, 4, NULL},
    {"s3.relu", L_RELU, 256, 7, 7, 0, 0, 0, 0, 0, 4, NULL},
    {"s4.relu", L_RELU, 512, 4, 4, 0, 0, 0, 0, 0, 4, NULL},
    {"s1.add", L_ADD, 64, 28, 28, 0, 0, 0, 0, 0, 2, "backward: the identity"},
    {"s2.add", L_ADD, 128, 14, 14, 0, 0, 0, 0, 0, 2, "backward: the identity"},
    {"s3.add", L_ADD, 256, 7, 7, 0, 0, 0, 0, 0, 2, "backward: the identity"},
    {"s4.add", L_ADD, 512, 4, 4, 0, 0, 0, 0, 0, 2, "backward: the identity"},
    {"gap", L_GAP, 512, 4, 4, 0, 0, 0, 0, 0, 1, NULL},
    {"dense", L_DENSE, 512, 1, 1, 10, 0, 0, 0, 0, 1, NULL},
    {"xent", L_XENT, 10, 1, 1, 0, 0, 0, 0, 0, 1, NULL},
    {"sgd", L_SGD, 0, 0, 0, 0, 0, 0, 0, 0, 1, NULL},
};

static const model models[] = {
    {"lenet", lenet_layers, (int)(sizeof lenet_layers / sizeof lenet_layers[0]), 0, NULL},
    {"resnet18", resnet18_layers, (int)(sizeof resnet18_layers / sizeof resnet18_layers[0]), 32,
     "one row per distinct shape; bn is the training-mode batch norm (statistics, then apply)"},
};
#define N_MODELS (int)(sizeof models / sizeof models[0])

static int64_t model_params(const model *m)
{
    int64_t n = 0;
    for (int i = 0; i < m->n_layers; i++) {
        const layer *l = &m->layers[i];
        if (l->kind == L_CONV) n += (int64_t)l->uses * ((int64_t)l->co * l->c * l->k * l->k + l->co);
        if (l->kind == L_DENSE) n += (int64_t)l->uses * ((int64_t)l->co * l->c + l->co);
        if (l->kind == L_BN) n += (int64_t)l->uses * 2 * l->c; /* scale and shift */
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* Results                                                             */
/* ------------------------------------------------------------------ */

typedef struct row {
    const char *model, *op, *pass, *note;
    char shape[96];
    int batch, calls;
    double ms, flop, bytes; /* per call; flop > 0 for compute ops */
    char error[320];
} row;

typedef struct device_result {
    int index, opened, peaks_ok;
    clt_device_info info;
    bench_peaks peaks;
    char error[320];
    row *rows;
    int n_rows, cap_rows;
    int batch[N_MODELS];
} device_result;

typedef struct bench_opts {
    int devices[CLI_MAX_DEVICES], n_devices, all_devices;
    int model_mask;
    int64_t batch, repeat;
    int json;
    int tty; /* progress lines on stderr */
} bench_opts;

static double frac_of(const row *r, const bench_peaks *p)
{
    if (r->error[0] || !(r->ms > 0)) return NAN;
    double per_s = 1e3 / r->ms;
    if (r->flop > 0) return p->fma_gflops > 0 ? r->flop * per_s * 1e-9 / p->fma_gflops : NAN;
    return p->copy_gbps > 0 ? r->bytes * per_s * 1e-9 / p->copy_gbps : NAN;
}

/* ------------------------------------------------------------------ */
/* Buffers and running one pass                                        */
/* ------------------------------------------------------------------ */

/* B_E*: batch norm's statistics vectors. */
enum { B_X, B_W, B_B, B_Y, B_DY, B_DX, B_DW, B_DB, B_AUX, B_E1, B_E2, B_E3, B_E4, N_BUFS };

typedef struct op_bufs {
    cl_mem m[N_BUFS];
} op_bufs;

static void bufs_release(op_bufs *b)
{
    for (int i = 0; i < N_BUFS; i++)
        if (b->m[i]) clReleaseMemObject(b->m[i]);
    memset(b, 0, sizeof *b);
}

/* A device buffer of `count` floats, uniform in [-1, 1) (int32 labels in
 * [0, classes) when classes > 0). */
static clt_status buf_new(clt_device *dev, size_t count, uint32_t seed, int classes, cl_mem *out)
{
    size_t bytes = (count ? count : 1) * 4;
    if (dev->info.max_alloc_bytes > 0 && bytes > (size_t)dev->info.max_alloc_bytes)
        return clt_fail(CLT_ERR_DEVICE_MEMORY, "a %zu-byte buffer exceeds the device's largest allocation (%lld bytes)",
                        bytes, (long long)dev->info.max_alloc_bytes);
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
    cl_int err;
    *out = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, host, &err);
    free(host);
    if (!*out) return clt_cl_fail(err, "clCreateBuffer");
    return CLT_OK;
}

typedef struct op_ctx {
    clt_device *dev;
    const layer *l;
    int n;
    int64_t params; /* sgd */
    clt_conv_geom g;
    int oh, ow;
    op_bufs b;
} op_ctx;

/* Sizes in elements of each buffer of the layer at batch n. */
static void buf_sizes(const op_ctx *c, size_t sz[N_BUFS])
{
    const layer *l = c->l;
    size_t n = (size_t)c->n;
    memset(sz, 0, N_BUFS * sizeof sz[0]);
    switch (l->kind) {
    case L_CONV:
        sz[B_X] = sz[B_DX] = n * l->c * l->h * l->w;
        sz[B_W] = sz[B_DW] = (size_t)l->co * l->c * l->k * l->k;
        sz[B_B] = sz[B_DB] = (size_t)l->co;
        sz[B_Y] = sz[B_DY] = n * l->co * c->oh * c->ow;
        break;
    case L_POOL:
        sz[B_X] = sz[B_DX] = n * l->c * l->h * l->w;
        sz[B_Y] = sz[B_DY] = sz[B_AUX] = n * l->c * c->oh * c->ow;
        break;
    case L_GAP:
        sz[B_X] = sz[B_DX] = n * l->c * l->h * l->w;
        sz[B_Y] = sz[B_DY] = n * l->c;
        break;
    case L_RELU:
    case L_ADD: /* y = x + dy */
        sz[B_X] = sz[B_Y] = sz[B_DY] = sz[B_DX] = n * l->c * l->h * l->w;
        break;
    case L_BN:
        sz[B_X] = sz[B_Y] = sz[B_DY] = sz[B_DX] = n * l->c * l->h * l->w;
        sz[B_W] = sz[B_B] = (size_t)l->c;                     /* gamma, beta */
        sz[B_AUX] = sz[B_E3] = sz[B_E4] = (size_t)l->c;       /* shift, running mean, running var */
        sz[B_DW] = sz[B_E1] = sz[B_E2] = 2 * (size_t)l->c;    /* bstats, stats, mean_invstd */
        break;
    case L_DENSE:
        sz[B_X] = sz[B_DX] = n * l->c;
        sz[B_W] = sz[B_DW] = (size_t)l->co * l->c;
        sz[B_B] = sz[B_DB] = (size_t)l->co;
        sz[B_Y] = sz[B_DY] = n * l->co;
        break;
    case L_XENT:
        sz[B_X] = sz[B_DX] = n * l->c; /* logits, dlogits */
        sz[B_AUX] = n;                 /* labels */
        sz[B_Y] = 2 * n;               /* stats */
        break;
    case L_SGD:
        sz[B_W] = sz[B_DW] = sz[B_AUX] = (size_t)c->params; /* w, g, velocity */
        break;
    }
}

static clt_status ctx_init(op_ctx *c)
{
    const layer *l = c->l;
    if (l->kind == L_CONV) {
        CLT_TRY(clt_conv_geom_init(&c->g, c->n, l->c, l->h, l->w, l->co, l->k, l->s, l->p));
        c->oh = c->g.oh, c->ow = c->g.ow;
    } else if (l->kind == L_POOL) {
        c->oh = (l->h - l->k) / l->s + 1, c->ow = (l->w - l->k) / l->s + 1;
    }
    size_t sz[N_BUFS];
    buf_sizes(c, sz);
    for (int i = 0; i < N_BUFS; i++) {
        if (!sz[i]) continue;
        int classes = l->kind == L_XENT && i == B_AUX ? l->c : 0;
        if (l->kind == L_POOL && i == B_AUX) classes = 1; /* argmax: written by the forward pass */
        CLT_TRY(buf_new(c->dev, sz[i], (uint32_t)(i + 1), classes, &c->b.m[i]));
    }
    return CLT_OK;
}

/* The passes of each layer kind. */
static const char *const conv_passes[] = {"forward", "backward-data", "backward-weights", NULL};
static const char *const fb_passes[] = {"forward", "backward", NULL};
static const char *const xent_passes[] = {"forward+backward", NULL};
static const char *const fwd_passes[] = {"forward", NULL};
static const char *const sgd_passes[] = {"step", NULL};

static const char *const *passes_of(layer_kind k)
{
    switch (k) {
    case L_CONV:
    case L_DENSE: return conv_passes;
    case L_XENT: return xent_passes;
    case L_SGD: return sgd_passes;
    case L_ADD: return fwd_passes;
    default: return fb_passes;
    }
}

static clt_status run_pass(op_ctx *c, int pass)
{
    const layer *l = c->l;
    clt_device *dev = c->dev;
    cl_mem *m = c->b.m;
    size_t count = (size_t)c->n * l->c * l->h * l->w;
    switch (l->kind) {
    case L_CONV:
        if (pass == 0) return clt_conv_forward_raw(dev, &c->g, m[B_X], m[B_W], m[B_B], m[B_Y]);
        if (pass == 1) return clt_conv_backward_raw(dev, &c->g, m[B_X], m[B_W], m[B_DY], m[B_DX], NULL, NULL);
        return clt_conv_backward_raw(dev, &c->g, m[B_X], m[B_W], m[B_DY], NULL, m[B_DW], m[B_DB]);
    case L_DENSE:
        if (pass == 0) return clt_dense_forward_raw(dev, c->n, l->c, l->co, m[B_X], m[B_W], m[B_B], m[B_Y]);
        if (pass == 1)
            return clt_dense_backward_raw(dev, c->n, l->c, l->co, m[B_X], m[B_W], m[B_DY], m[B_DX], NULL, NULL);
        return clt_dense_backward_raw(dev, c->n, l->c, l->co, m[B_X], m[B_W], m[B_DY], NULL, m[B_DW], m[B_DB]);
    case L_POOL:
        if (pass == 0)
            return clt_pool_forward_raw(dev, l->pool, c->n, l->c, l->h, l->w, l->k, l->s, m[B_X], m[B_Y], m[B_AUX]);
        return clt_pool_backward_raw(dev, l->pool, c->n, l->c, l->h, l->w, l->k, l->s, m[B_DY], m[B_AUX], m[B_DX]);
    case L_GAP:
        if (pass == 0) return clt_gap_forward_raw(dev, c->n * l->c, l->h * l->w, m[B_X], m[B_Y]);
        return clt_gap_backward_raw(dev, c->n * l->c, l->h * l->w, m[B_DY], m[B_DX]);
    case L_RELU:
        if (pass == 0) return clt_act_forward_raw(dev, CLT_RELU, count, m[B_X], m[B_Y]);
        return clt_act_backward_raw(dev, CLT_RELU, count, m[B_Y], m[B_DY], m[B_DX]);
    case L_BN: {
        int hw = l->h * l->w;
        double elems = (double)c->n * hw;
        if (pass == 1) {
            CLT_TRY(clt_bn_backward_stats_raw(dev, c->n, l->c, hw, m[B_X], m[B_DY], m[B_E2], m[B_DW]));
            return clt_bn_backward_apply_raw(dev, c->n, l->c, hw, m[B_X], m[B_DY], m[B_E2], m[B_W], m[B_DW], elems,
                                             m[B_DX]);
        }
        CLT_TRY(clt_bn_shift_raw(dev, c->n, l->c, hw, m[B_X], m[B_AUX]));
        CLT_TRY(clt_bn_stats_raw(dev, c->n, l->c, hw, m[B_X], m[B_AUX], m[B_E1]));
        CLT_TRY(clt_bn_finalize_raw(dev, l->c, elems, m[B_E1], m[B_AUX], CLT_BN_MOMENTUM, CLT_BN_EPS, m[B_E3],
                                    m[B_E4], m[B_E2]));
        return clt_bn_apply_raw(dev, c->n, l->c, hw, m[B_X], m[B_E2], m[B_W], m[B_B], m[B_Y]);
    }
    case L_ADD:
        return clt_add_raw(dev, count, m[B_X], m[B_DY], m[B_Y]);
    case L_XENT:
        return clt_xent_raw(dev, c->n, l->c, m[B_X], m[B_AUX], 1.0f / (float)c->n, m[B_DX], m[B_Y]);
    case L_SGD:
        return clt_sgd_raw(dev, (size_t)c->params, m[B_W], m[B_DW], m[B_AUX], 1e-3f, 0.9f, 5e-4f);
    }
    return clt_fail(CLT_ERR_INTERNAL, "bench ops: unknown layer kind");
}

/* Work of one call: FLOPs for compute ops, else bytes that must move. */
static void work_of(const op_ctx *c, int pass, double *flop, double *bytes)
{
    const layer *l = c->l;
    double n = c->n, in = (double)c->n * l->c * l->h * l->w;
    *flop = 0, *bytes = 0;
    switch (l->kind) {
    case L_CONV: *flop = 2.0 * n * l->co * c->oh * c->ow * (double)l->c * l->k * l->k; break;
    case L_DENSE: *flop = 2.0 * n * l->c * (double)l->co; break;
    case L_POOL: {
        double out = n * l->c * c->oh * c->ow;
        int rh = (c->oh - 1) * l->s + l->k, rw = (c->ow - 1) * l->s + l->k; /* rows/cols read */
        double read = n * l->c * (double)(rh < l->h ? rh : l->h) * (rw < l->w ? rw : l->w);
        int maxp = l->pool == CLT_POOL_MAX;
        /* forward: input in, output (and argmax) out; backward: dy (and
         * argmax) in, the whole dx out */
        *bytes = pass == 0 ? 4.0 * (read + out * (1 + maxp)) : 4.0 * (out * (1 + maxp) + in);
        break;
    }
    case L_GAP: *bytes = 4.0 * (in + n * l->c); break;
    case L_RELU: *bytes = 4.0 * in * (pass == 0 ? 2 : 3); break;
    /* forward: x read by the statistics and by the apply, y written;
     * backward: x and dy read by the statistics and by the apply, dx written */
    case L_BN: *bytes = 4.0 * in * (pass == 0 ? 3 : 5); break;
    case L_ADD: *bytes = 4.0 * in * 3; break;
    case L_XENT: *bytes = 4.0 * (2 * n * l->c + n + 2 * n); break;
    case L_SGD: *bytes = 4.0 * 5 * (double)c->params; break; /* read w, g, v; write w, v */
    }
}

static void shape_of(const op_ctx *c, char *buf, size_t cap)
{
    const layer *l = c->l;
    switch (l->kind) {
    case L_CONV:
        if (l->s != 1 || l->p != 0)
            snprintf(buf, cap, "%dx%dx%d -> %dx%dx%d k%d s%d p%d", l->c, l->h, l->w, l->co, c->oh, c->ow, l->k, l->s,
                     l->p);
        else
            snprintf(buf, cap, "%dx%dx%d -> %dx%dx%d k%d", l->c, l->h, l->w, l->co, c->oh, c->ow, l->k);
        break;
    case L_POOL:
        snprintf(buf, cap, "%s %dx%dx%d -> %dx%dx%d", l->pool == CLT_POOL_MAX ? "max" : "avg", l->c, l->h, l->w, l->c,
                 c->oh, c->ow);
        break;
    case L_GAP: snprintf(buf, cap, "%dx%dx%d -> %d", l->c, l->h, l->w, l->c); break;
    case L_RELU:
    case L_BN:
    case L_ADD: snprintf(buf, cap, "%dx%dx%d", l->c, l->h, l->w); break;
    case L_DENSE: snprintf(buf, cap, "%d -> %d", l->c, l->co); break;
    case L_XENT: snprintf(buf, cap, "%d classes", l->c); break;
    case L_SGD: snprintf(buf, cap, "%lld params, momentum", (long long)c->params); break;
    }
}

static clt_status finish(clt_device *dev)
{
    cl_int err = clFinish(dev->queue);
    return err == CL_SUCCESS ? CLT_OK : clt_cl_fail(err, "clFinish");
}

/* Warm-up, probe, then `calls` back-to-back calls: mean seconds per call. */
static clt_status time_pass(op_ctx *c, int pass, int64_t repeat, double *sec, int *calls)
{
    CLT_TRY(run_pass(c, pass));
    CLT_TRY(finish(c->dev));
    int n = (int)repeat;
    if (n <= 0) {
        double t0 = clt_now();
        CLT_TRY(run_pass(c, pass));
        CLT_TRY(finish(c->dev));
        double t = clt_now() - t0;
        double fit = t > 0 ? BUDGET_S / t : MAX_CALLS;
        n = fit < 3 ? 3 : fit > MAX_CALLS ? MAX_CALLS : (int)fit;
    }
    double t0 = clt_now();
    for (int i = 0; i < n; i++) CLT_TRY(run_pass(c, pass));
    CLT_TRY(finish(c->dev));
    *sec = (clt_now() - t0) / n;
    *calls = n;
    return CLT_OK;
}

/* ------------------------------------------------------------------ */
/* Output                                                              */
/* ------------------------------------------------------------------ */

static const char *type_name(clt_device_type t)
{
    return t == CLT_DEVICE_GPU ? "GPU" : t == CLT_DEVICE_CPU ? "CPU" : t == CLT_DEVICE_ACCELERATOR ? "accelerator" : "other";
}

static void print_row_text(const row *r, const bench_peaks *p)
{
    if (r->error[0]) {
        printf("%-10s %-17s %-32s  failed: %s\n", r->op, r->pass, r->shape, r->error);
        return;
    }
    double per_s = 1e3 / r->ms, f = frac_of(r, p);
    char rate[32], pct[32];
    if (r->flop > 0) snprintf(rate, sizeof rate, "%9.1f GFLOP/s", r->flop * per_s * 1e-9);
    else snprintf(rate, sizeof rate, "%9.2f GB/s   ", r->bytes * per_s * 1e-9);
    if (isfinite(f)) snprintf(pct, sizeof pct, "%6.1f%%", 100 * f);
    else snprintf(pct, sizeof pct, "%7s", "-");
    if (r->note)
        printf("%-10s %-17s %-32s %10.3f %s %s %-4s  %s\n", r->op, r->pass, r->shape, r->ms, rate, pct,
               r->flop > 0 ? "fma" : "copy", r->note);
    else
        printf("%-10s %-17s %-32s %10.3f %s %s %s\n", r->op, r->pass, r->shape, r->ms, rate, pct,
               r->flop > 0 ? "fma" : "copy");
}

static void print_peaks_text(const device_result *d)
{
    const bench_peaks *p = &d->peaks;
    printf("device %d: %s (%s, %s, %d compute units, %d MHz)\n", d->index, d->info.name, d->info.platform,
           type_name(d->info.type), d->info.compute_units, d->info.max_clock_mhz);
    printf("peaks (FMA and copy: the best of %d measurements, before and after the ops):\n", p->samples);
    printf("       FMA %.1f GFLOP/s (%s)\n", p->fma_gflops, p->fma_variant[0] ? p->fma_variant : "-");
    printf("       copy %.2f GB/s read+write (%s, 2 x %zu MiB)\n", p->copy_gbps,
           p->copy_variant[0] ? p->copy_variant : "-", p->copy_bytes >> 20);
    printf("       host->device %.2f GB/s pinned, %.2f GB/s unpinned; device->host %.2f GB/s pinned, %.2f GB/s "
           "unpinned (%zu MiB)\n",
           p->h2d_pinned_gbps, p->h2d_unpinned_gbps, p->d2h_pinned_gbps, p->d2h_unpinned_gbps,
           p->transfer_bytes >> 20);
    if (!d->peaks_ok) printf("       (peak measurement failed: %s)\n", d->error);
    printf("compute ops: %% of the FMA peak; memory ops: %% of the copy peak, which is measured beyond the\n"
           "caches, so ops whose data stays in cache can pass 100%%\n");
    fflush(stdout);
}

static void json_num(const char *key, double v, int comma)
{
    if (isfinite(v)) printf("\"%s\": %.6g%s", key, v, comma ? ", " : "");
    else printf("\"%s\": null%s", key, comma ? ", " : "");
}

static void print_json(const device_result *res, int n, const bench_opts *o)
{
    printf("{\"command\": \"bench ops\", ");
    if (o->repeat) printf("\"repeat\": %lld, ", (long long)o->repeat);
    else printf("\"repeat\": null, \"budget_s\": %g, ", BUDGET_S);
    printf("\"devices\": [");
    for (int i = 0; i < n; i++) {
        const device_result *d = &res[i];
        const bench_peaks *p = &d->peaks;
        printf("%s\n {\"index\": %d, \"name\": ", i ? "," : "", d->index);
        json_string(stdout, d->info.name);
        printf(", \"platform\": ");
        json_string(stdout, d->info.platform);
        printf(", \"type\": \"%s\", \"compute_units\": %d, \"max_clock_mhz\": %d, ", type_name(d->info.type),
               d->info.compute_units, d->info.max_clock_mhz);
        if (d->error[0]) {
            printf("\"error\": ");
            json_string(stdout, d->error);
            printf(", ");
        }
        printf("\n  \"peaks\": {");
        json_num("fma_gflop_per_s", p->fma_gflops, 1);
        printf("\"fma_variant\": ");
        json_string(stdout, p->fma_variant);
        printf(", ");
        json_num("copy_gb_per_s", p->copy_gbps, 1);
        printf("\"copy_variant\": ");
        json_string(stdout, p->copy_variant);
        printf(", \"copy_bytes\": %zu, ", p->copy_bytes);
        json_num("h2d_pinned_gb_per_s", p->h2d_pinned_gbps, 1);
        json_num("d2h_pinned_gb_per_s", p->d2h_pinned_gbps, 1);
        json_num("h2d_unpinned_gb_per_s", p->h2d_unpinned_gbps, 1);
        json_num("d2h_unpinned_gb_per_s", p->d2h_unpinned_gbps, 1);
        printf("\"transfer_bytes\": %zu, \"samples\": %d},\n  \"models\": [", p->transfer_bytes, p->samples);
        int first = 1;
        for (int m = 0; m < N_MODELS; m++) {
            if (!(o->model_mask & (1 << m))) continue;
            printf("%s{\"model\": \"%s\", \"batch_size\": %d, \"params\": %lld", first ? "" : ", ", models[m].name,
                   d->batch[m], (long long)model_params(&models[m]));
            if (models[m].note) {
                printf(", \"note\": ");
                json_string(stdout, models[m].note);
            }
            printf("}");
            first = 0;
        }
        printf("],\n  \"ops\": [");
        for (int j = 0; j < d->n_rows; j++) {
            const row *r = &d->rows[j];
            double per_s = r->ms > 0 ? 1e3 / r->ms : NAN;
            printf("%s\n   {\"model\": \"%s\", \"op\": \"%s\", \"pass\": \"%s\", \"shape\": ", j ? "," : "", r->model,
                   r->op, r->pass);
            json_string(stdout, r->shape);
            printf(", \"batch_size\": %d, \"calls\": %d, ", r->batch, r->calls);
            json_num("ms_per_call", r->error[0] ? NAN : r->ms, 1);
            json_num("flop", r->flop > 0 ? r->flop : NAN, 1);
            json_num("bytes", r->flop > 0 ? NAN : r->bytes, 1);
            json_num("gflop_per_s", r->flop > 0 && !r->error[0] ? r->flop * per_s * 1e-9 : NAN, 1);
            json_num("gb_per_s", r->flop > 0 || r->error[0] ? NAN : r->bytes * per_s * 1e-9, 1);
            printf("\"peak\": \"%s\", ", r->flop > 0 ? "fma" : "copy");
            json_num("fraction_of_peak", frac_of(r, p), r->note || r->error[0]);
            if (r->note) {
                printf("\"note\": ");
                json_string(stdout, r->note);
                if (r->error[0]) printf(", ");
            }
            if (r->error[0]) {
                printf("\"error\": ");
                json_string(stdout, r->error);
            }
            printf("}");
        }
        printf("]}");
    }
    printf("\n]}\n");
}

/* ------------------------------------------------------------------ */
/* Driver                                                              */
/* ------------------------------------------------------------------ */

static row *row_add(device_result *d)
{
    if (d->n_rows == d->cap_rows) {
        int cap = d->cap_rows ? 2 * d->cap_rows : 64;
        row *r = realloc(d->rows, (size_t)cap * sizeof *r);
        if (!r) return NULL;
        d->rows = r;
        d->cap_rows = cap;
    }
    row *r = &d->rows[d->n_rows++];
    memset(r, 0, sizeof *r);
    return r;
}

/* Times every pass of one layer; rows are appended. Returns nonzero when
 * something failed. */
static int bench_layer(clt_device *dev, device_result *d, const model *m, const layer *l, int batch, int64_t repeat)
{
    op_ctx c;
    memset(&c, 0, sizeof c);
    c.dev = dev, c.l = l, c.n = batch, c.params = model_params(m);
    clt_status init = ctx_init(&c);
    char shape[96] = "", init_error[320] = "";
    if (init != CLT_OK) snprintf(init_error, sizeof init_error, "%s", clt_last_error());
    shape_of(&c, shape, sizeof shape); /* output size 0x0 if the geometry was refused */
    int failed = 0;
    const char *const *passes = passes_of(l->kind);
    for (int p = 0; passes[p]; p++) {
        row *r = row_add(d);
        if (!r) {
            fprintf(stderr, "cltrain: out of memory\n");
            bufs_release(&c.b);
            return 1;
        }
        r->model = m->name, r->op = l->name, r->pass = passes[p], r->batch = batch;
        snprintf(r->shape, sizeof r->shape, "%s", shape);
        if (l->kind == L_CONV && p == 1 && l->c <= 3) r->note = "first layer: not needed in training";
        else r->note = l->note;
        double sec = 0;
        if (init != CLT_OK) snprintf(r->error, sizeof r->error, "%s", init_error);
        else if (time_pass(&c, p, repeat, &sec, &r->calls) != CLT_OK) /* the next pass may still work */
            snprintf(r->error, sizeof r->error, "%s", clt_last_error());
        if (r->error[0]) {
            fprintf(stderr, "cltrain: bench ops: device %d, %s %s %s: %s\n", d->index, m->name, l->name, passes[p],
                    r->error);
            failed = 1;
        } else {
            r->ms = 1e3 * sec;
            work_of(&c, p, &r->flop, &r->bytes);
        }
    }
    bufs_release(&c.b);
    return failed;
}

/* Progress on a terminal's stderr while a device is measured (the table is
 * printed once its peaks are final). */
static void progress(const bench_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(const bench_opts *o, const char *fmt, ...)
{
    if (!o->tty) return;
    char line[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
}

static void print_device_text(const device_result *d, const bench_opts *o)
{
    print_peaks_text(d);
    int is_cpu = d->info.type == CLT_DEVICE_CPU;
    for (int mi = 0; mi < N_MODELS; mi++) {
        if (!(o->model_mask & (1 << mi))) continue;
        const model *m = &models[mi];
        printf("\n%s, batch %d%s; ms/call is the mean of back-to-back calls after a warm-up\n", m->name,
               d->batch[mi],
               !o->batch && is_cpu && m->cpu_batch ? " (the default on CPU devices; --batch-size sets it)" : "");
        if (m->note) printf("(%s)\n", m->note);
        printf("%-10s %-17s %-32s %10s %17s %s\n", "op", "pass", "shape (per sample)", "ms/call", "rate",
               "  of peak");
        for (int j = 0; j < d->n_rows; j++)
            if (d->rows[j].model == m->name) print_row_text(&d->rows[j], &d->peaks);
    }
    printf("\n");
    fflush(stdout);
}

static int bench_device(int index, device_result *d, const bench_opts *o)
{
    d->index = index;
    clt_device *dev = NULL;
    if (clt_device_open(index, &dev) != CLT_OK) {
        snprintf(d->error, sizeof d->error, "%s", clt_last_error());
        fprintf(stderr, "cltrain: bench ops: device %d: %s\n", index, clt_last_error());
        clt_device_query(index, &d->info);
        return 1;
    }
    d->opened = 1;
    d->info = *clt_device_get_info(dev);
    int rc = 0;
    progress(o, "device %d: measuring peaks", index);
    if (bench_peaks_measure(dev, &d->peaks) == CLT_OK) {
        d->peaks_ok = 1;
    } else {
        snprintf(d->error, sizeof d->error, "%s", clt_last_error());
        fprintf(stderr, "cltrain: bench ops: device %d: %s\n", index, clt_last_error());
        rc = 1;
    }
    int is_cpu = d->info.type == CLT_DEVICE_CPU;
    for (int mi = 0; mi < N_MODELS; mi++) {
        if (!(o->model_mask & (1 << mi))) continue;
        const model *m = &models[mi];
        int batch = o->batch ? (int)o->batch : is_cpu && m->cpu_batch ? m->cpu_batch : 256;
        d->batch[mi] = batch;
        for (int li = 0; li < m->n_layers; li++) {
            progress(o, "device %d: %s %s", index, m->name, m->layers[li].name);
            rc |= bench_layer(dev, d, m, &m->layers[li], batch, o->repeat);
        }
        /* The peaks again after the ops: the highest measurement counts. */
        if (d->peaks_ok) {
            progress(o, "device %d: measuring peaks again", index);
            if (bench_peaks_refresh(dev, &d->peaks) != CLT_OK) {
                snprintf(d->error, sizeof d->error, "%s", clt_last_error());
                fprintf(stderr, "cltrain: bench ops: device %d: %s\n", index, clt_last_error());
                rc = 1;
            }
        }
    }
    if (o->tty) fprintf(stderr, "\r\033[K");
    if (!o->json) print_device_text(d, o);
    clt_device_destroy(dev);
    return rc;
}

static void help(void)
{
    printf("Usage: cltrain bench ops [--devices LIST|all] [--model lenet|resnet18|all] [--batch-size N]\n"
           "                         [--repeat N] [--json]\n\n"
           "Times every op of LeNet and ResNet-18 (28x28 inputs) at its real shapes on each device:\n"
           "convolution forward, backward-data and backward-weights, pooling, ReLU, batch norm, the\n"
           "residual add, dense, softmax cross-entropy and the SGD step. Compute ops are reported\n"
           "in GFLOP/s against the device's FMA peak, memory-bound ops in GB/s against its\n"
           "streaming-copy bandwidth; both peaks, and host<->device bandwidth from pinned and\n"
           "unpinned memory, are measured by the same command (FMA and copy before the ops and\n"
           "again after each model; the best measurement counts).\n\n"
           "  --devices LIST|all   device indices as cltrain-smi numbers them (default: all GPUs, else all CPUs)\n"
           "  --model NAME         lenet, resnet18 or all (default all)\n"
           "  --batch-size N       samples per call (default 256; 32 for resnet18 on CPU devices)\n"
           "  --repeat N           timed calls per op after a warm-up (default: as many as fit in ~0.2 s, 3..200)\n"
           "  --json               one JSON object on stdout instead of the tables\n"
           "  -h, --help           this help\n");
}

static int parse(bench_opts *o, int argc, char **argv)
{
    enum { OPS_DEVICES = 256, OPS_MODEL, OPS_BATCH, OPS_REPEAT, OPS_JSON };
    static const struct option longs[] = {
        {"devices", required_argument, NULL, OPS_DEVICES}, {"model", required_argument, NULL, OPS_MODEL},
        {"batch-size", required_argument, NULL, OPS_BATCH}, {"repeat", required_argument, NULL, OPS_REPEAT},
        {"json", no_argument, NULL, OPS_JSON},             {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *prog = "cltrain";
    memset(o, 0, sizeof *o);
    o->model_mask = (1 << N_MODELS) - 1;
    optind = 1;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, ":h", longs, NULL), rc = 0;
        if (c == -1) break;
        switch (c) {
        case OPS_DEVICES:
            rc = arg_devices(prog, "--devices", optarg, o->devices, CLI_MAX_DEVICES, &o->n_devices, &o->all_devices);
            break;
        case OPS_MODEL:
            if (!strcmp(optarg, "all")) {
                o->model_mask = (1 << N_MODELS) - 1;
                break;
            }
            o->model_mask = 0;
            for (int m = 0; m < N_MODELS; m++)
                if (!strcmp(optarg, models[m].name)) o->model_mask = 1 << m;
            if (!o->model_mask) rc = usage_error(prog, "--model: \"%s\" is not lenet, resnet18 or all", optarg);
            break;
        case OPS_BATCH: rc = arg_int(prog, "--batch-size", optarg, 1, 1 << 16, &o->batch); break;
        case OPS_REPEAT: rc = arg_int(prog, "--repeat", optarg, 1, 100000, &o->repeat); break;
        case OPS_JSON: o->json = 1; break;
        case 'h': help(); return -1;
        case ':': return usage_error(prog, "option %s needs a value", argv[optind - 1]);
        default: return usage_error(prog, "unknown option \"%s\" for cltrain bench ops", argv[optind - 1]);
        }
        if (rc) return rc;
    }
    if (optind < argc) return usage_error(prog, "unexpected argument \"%s\"", argv[optind]);
    o->tty = isatty(STDERR_FILENO);
    return 0;
}

int cli_bench_ops(int argc, char **argv)
{
    bench_opts o;
    int rc = parse(&o, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    cli_options co;
    cli_options_default(&co);
    memcpy(co.devices, o.devices, sizeof co.devices);
    co.n_devices = o.n_devices;
    co.all_devices = o.all_devices;
    int devs[CLI_MAX_DEVICES], n = 0;
    if ((rc = cli_resolve_devices(&co, devs, &n))) return rc;
    device_result *res = calloc((size_t)n, sizeof *res);
    if (!res) {
        fprintf(stderr, "cltrain: out of memory\n");
        return 1;
    }
    for (int i = 0; i < n; i++) rc |= bench_device(devs[i], &res[i], &o);
    if (o.json) print_json(res, n, &o);
    for (int i = 0; i < n; i++) free(res[i].rows);
    free(res);
    return rc ? 1 : 0;
}
