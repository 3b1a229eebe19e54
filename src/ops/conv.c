/* 2-D convolution: geometry, the plan (which algorithm runs each pass,
 * conv_algo.h), dispatch, and the tensor API. It names no algorithm: it
 * goes through their table (conv_algo.h) and list (conv_algos.c). */
#include "ops/conv.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/conv_algo.h"
#include "tensor/tensor.h"

/* Largest supported size of any one dimension (keeps int index math in the
 * kernels safe; a tensor of this much is far beyond any device anyway). */
#define CONV_DIM_MAX (1 << 24)

clt_status clt_conv_geom_init(clt_conv_geom *g, int n, int c, int h, int w, int co, int k,
                              int stride, int pad)
{
    if (!g) return clt_fail(CLT_ERR_INVALID_ARG, "clt_conv_geom_init: geometry is NULL");
    memset(g, 0, sizeof *g);
    if (n < 1 || c < 1 || h < 1 || w < 1 || co < 1 || n > CONV_DIM_MAX || c > CONV_DIM_MAX ||
        h > CONV_DIM_MAX || w > CONV_DIM_MAX || co > CONV_DIM_MAX)
        return clt_fail(CLT_ERR_SHAPE,
                        "conv2d: input (%d, %d, %d, %d) with %d output channels: every size must be in 1..%d",
                        n, c, h, w, co, CONV_DIM_MAX);
    if (k < 1 || k > CONV_DIM_MAX)
        return clt_fail(CLT_ERR_SHAPE, "conv2d: kernel size %d (must be at least 1)", k);
    if (stride < 1 || stride > CONV_DIM_MAX)
        return clt_fail(CLT_ERR_SHAPE, "conv2d: stride %d (must be at least 1)", stride);
    if (pad < 0 || pad > CONV_DIM_MAX)
        return clt_fail(CLT_ERR_SHAPE, "conv2d: padding %d (must be 0 or more)", pad);
    int64_t eh = (int64_t)h + 2 * (int64_t)pad - k, ew = (int64_t)w + 2 * (int64_t)pad - k;
    if (eh < 0 || ew < 0)
        return clt_fail(CLT_ERR_SHAPE,
                        "conv2d: a %dx%d kernel does not fit a %dx%d input with padding %d "
                        "(output size would be %lldx%lld)",
                        k, k, h, w, pad, (long long)(eh < 0 ? eh / stride : eh / stride + 1),
                        (long long)(ew < 0 ? ew / stride : ew / stride + 1));
    int64_t ckk = (int64_t)c * k * k;
    if (ckk > INT32_MAX / 16 || (int64_t)co * k * k > INT32_MAX / 16)
        return clt_fail(CLT_ERR_SHAPE, "conv2d: %d channels with a %dx%d kernel is too large", c, k, k);
    g->n = n;
    g->c = c;
    g->h = h;
    g->w = w;
    g->co = co;
    g->k = k;
    g->stride = stride;
    g->pad = pad;
    g->oh = (int)(eh / stride + 1);
    g->ow = (int)(ew / stride + 1);
    return CLT_OK;
}

/* ------------------------------------------------------------------ */
/* Plan                                                                */
/* ------------------------------------------------------------------ */

static const unsigned all_passes = (1u << CLT_CONV_PASSES) - 1;

/* The geometry must be what clt_conv_geom_init makes of its sizes (the
 * kernels trust oh and ow). */
static clt_status check_geom(const clt_device *dev, const clt_conv_geom *g, const char *op)
{
    if (!dev || !g) return clt_fail(CLT_ERR_INVALID_ARG, "%s: device or geometry is NULL", op);
    clt_conv_geom chk;
    if (clt_conv_geom_init(&chk, g->n, g->c, g->h, g->w, g->co, g->k, g->stride, g->pad) != CLT_OK ||
        chk.oh != g->oh || chk.ow != g->ow)
        return clt_fail(CLT_ERR_INVALID_ARG,
                        "%s: geometry (n %d, c %d, %dx%d, co %d, k %d, stride %d, pad %d, output %dx%d) "
                        "is not one clt_conv_geom_init makes",
                        op, g->n, g->c, g->h, g->w, g->co, g->k, g->stride, g->pad, g->oh, g->ow);
    return CLT_OK;
}

/* Offers the passes in `open` to each algorithm in turn; one takes every
 * pass it supports for the shape when its work buffer fits, or none. */
static void assign(const clt_device *dev, clt_conv_plan *plan, unsigned open)
{
    const clt_conv_algo *const *order;
    size_t n = clt_conv_offered(dev, &order);
    for (size_t i = 0; i < n && open; i++) {
        unsigned take = order[i]->supports(&plan->g, open);
        if (!take || !order[i]->plan(dev, plan, take)) continue;
        for (int p = 0; p < CLT_CONV_PASSES; p++)
            if (take & CLT_CONV_PASS(p)) plan->algo[p] = order[i];
        open &= ~take;
    }
}

/* A plan for the passes in `passes` (the forward is planned on its own,
 * the two backward passes together). */
static clt_status plan_init(const clt_device *dev, const clt_conv_geom *g, unsigned passes,
                            clt_conv_plan *plan, const char *op)
{
    CLT_TRY(check_geom(dev, g, op));
    memset(plan, 0, sizeof *plan);
    plan->g = *g;
    plan->dev = dev;
    plan->settings_version = clt_device_settings_version(dev);
    plan->planned = passes;
    assign(dev, plan, passes & CLT_CONV_PASS(CLT_CONV_FWD));
    assign(dev, plan, passes & ~CLT_CONV_PASS(CLT_CONV_FWD));
    return CLT_OK;
}

/* The tuners, for the passes planned so far (each skips what it tuned). */
static clt_status tune(clt_device *dev, clt_conv_plan *plan)
{
    for (int i = 0; i < CLT_CONV_ALGOS; i++)
        if (clt_conv_algos[i]->tune) CLT_TRY(clt_conv_algos[i]->tune(dev, plan));
    return CLT_OK;
}

clt_status clt_conv_plan_ensure_passes(clt_device *dev, const clt_conv_geom *g, unsigned passes,
                                       clt_conv_plan **plan)
{
    if (!plan) return clt_fail(CLT_ERR_INVALID_ARG, "clt_conv_plan_ensure: plan is NULL");
    passes &= all_passes;
    clt_conv_plan *p = *plan;
    if (p && dev && g && p->dev == dev && p->settings_version == clt_device_settings_version(dev) &&
        memcmp(&p->g, g, sizeof *g) == 0) {
        unsigned missing = passes & ~p->planned;
        if (!missing) return CLT_OK;
        /* the forward on its own, the backward passes together (as plan_init) */
        assign(dev, p, missing & CLT_CONV_PASS(CLT_CONV_FWD));
        assign(dev, p, missing & ~CLT_CONV_PASS(CLT_CONV_FWD));
        p->planned |= missing;
        return tune(dev, p);
    }
    if (!p && !(p = malloc(sizeof *p))) return clt_fail(CLT_ERR_NO_MEMORY, "convolution plan");
    clt_status s = plan_init(dev, g, passes, p, "conv2d plan");
    if (s == CLT_OK) s = tune(dev, p);
    if (s != CLT_OK) {
        free(p);
        *plan = NULL;
        return s;
    }
    *plan = p;
    return CLT_OK;
}

clt_status clt_conv_plan_ensure(clt_device *dev, const clt_conv_geom *g, clt_conv_plan **plan)
{
    return clt_conv_plan_ensure_passes(dev, g, all_passes, plan);
}

void clt_conv_plan_destroy(clt_conv_plan *plan) { free(plan); }

const char *clt_conv_plan_algo(const clt_conv_plan *plan, int pass)
{
    if (!plan || pass < 0 || pass >= CLT_CONV_PASSES || !plan->algo[pass]) return NULL;
    return plan->algo[pass]->name;
}

void clt_conv_plan_describe(const clt_conv_plan *plan, int pass, char *buf, size_t cap)
{
    const char *algo = clt_conv_plan_algo(plan, pass);
    char how[64] = "";
    if (algo && plan->algo[pass]->describe) plan->algo[pass]->describe(plan, pass, how, sizeof how);
    snprintf(buf, cap, "%s%s%s", algo ? algo : "", how[0] ? " " : "", how);
}

/* ------------------------------------------------------------------ */
/* Dispatch                                                            */
/* ------------------------------------------------------------------ */

static clt_status check_plan(const clt_device *dev, const clt_conv_plan *plan, const char *op)
{
    if (!dev || !plan) return clt_fail(CLT_ERR_INVALID_ARG, "%s: device or plan is NULL", op);
    if (plan->dev != dev)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: the plan was made for device %d, not device %d", op,
                        clt_device_get_info(plan->dev)->index, clt_device_get_info(dev)->index);
    return CLT_OK;
}

/* The layer fuses the pooling where the first algorithm the device offers
 * any of its passes takes them all and pools, unless a budget in the
 * settings may make that one give them away (its pool_needs_room). */
int clt_conv_fuses_pool(const clt_device *dev, const clt_conv_geom *g, int kind, int first)
{
    if (!dev || !g) return 0;
    /* the layer's passes: a first layer has no backward-data */
    unsigned want = all_passes & ~(first ? CLT_CONV_PASS(CLT_CONV_BWD_DATA) : 0u);
    const clt_conv_algo *const *order;
    size_t n = clt_conv_offered(dev, &order);
    for (size_t i = 0; i < n; i++) {
        const clt_conv_algo *a = order[i];
        unsigned take = a->supports(g, want);
        if (!take) continue;
        int budget = clt_device_get_settings(dev)->conv_budget != 0;
        return take == want && a->pools && a->pools(g, kind) && !(a->pool_needs_room && budget);
    }
    return 0;
}

/* The algorithm that runs pass with epi: the one a tuner replaced, where
 * a pooling is fused and that one pools. */
static const clt_conv_algo *pass_algo(const clt_conv_plan *plan, int pass, const clt_epilogue *epi)
{
    return epi && epi->pool && plan->pool_algo[pass] ? plan->pool_algo[pass] : plan->algo[pass];
}

/* A fused pooling runs where clt_conv_fuses_pool says the layer fuses it,
 * in the algorithm of the pass, which must pool (one may have given way to
 * another where its work buffer exceeds a budget set since). */
static clt_status check_pooled(const clt_conv_plan *plan, int pass, const clt_epilogue *epi, const char *op)
{
    if (!epi || !epi->pool) return CLT_OK;
    const clt_conv_algo *a = pass_algo(plan, pass, epi);
    if (a && a->pools && a->pools(&plan->g, epi->pool)) return CLT_OK;
    static const char *const passes[CLT_CONV_PASSES] = {"forward", "backward-data", "backward-weights"};
    return clt_fail(CLT_ERR_INTERNAL,
                    "%s: a fused pooling in the %s, which the %s algorithm runs and does not fuse (the work "
                    "buffer over its budget?); CLTRAIN_FUSE=0 runs the layers apart",
                    op, passes[pass], a ? a->name : "no");
}

clt_status clt_conv_plan_forward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                                 cl_mem b, const clt_epilogue *epi, cl_mem y)
{
    CLT_TRY(check_plan(dev, plan, "conv2d forward"));
    if (!x || !w || !y) return clt_fail(CLT_ERR_INVALID_ARG, "conv2d forward: x, w or y is NULL");
    const clt_conv_algo *a = pass_algo(plan, CLT_CONV_FWD, epi);
    if (!a) return clt_fail(CLT_ERR_INVALID_ARG, "conv2d forward: the plan does not cover the forward");
    CLT_TRY(check_pooled(plan, CLT_CONV_FWD, epi, "conv2d forward"));
    CLT_TRY(clt_epi_check(epi, 0, "conv2d forward"));
    return a->forward(dev, plan, x, w, b, epi, y);
}

clt_status clt_conv_plan_backward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                                  cl_mem dy, const clt_epilogue *epi, cl_mem dx, cl_mem dw, cl_mem db)
{
    CLT_TRY(check_plan(dev, plan, "conv2d backward"));
    if (!dy) return clt_fail(CLT_ERR_INVALID_ARG, "conv2d backward: dy is NULL");
    CLT_TRY(clt_epi_check(epi, 1, "conv2d backward"));
    if ((dw && !x) || (dx && !w))
        return clt_fail(CLT_ERR_INVALID_ARG, "conv2d backward: dw needs x and dx needs w");
    const clt_conv_algo *data = dx ? pass_algo(plan, CLT_CONV_BWD_DATA, epi) : NULL;
    const clt_conv_algo *weights = dw ? pass_algo(plan, CLT_CONV_BWD_WEIGHTS, epi) : NULL;
    if ((dx && !data) || (dw && !weights))
        return clt_fail(CLT_ERR_INVALID_ARG, "conv2d backward: the plan does not cover %s",
                        dx && !data ? "backward-data" : "backward-weights");
    if (dw) CLT_TRY(check_pooled(plan, CLT_CONV_BWD_WEIGHTS, epi, "conv2d backward"));
    if (dx) CLT_TRY(check_pooled(plan, CLT_CONV_BWD_DATA, epi, "conv2d backward"));
    /* One algorithm running both passes shares the work on dy. */
    if (weights && weights == data) return weights->backward(dev, plan, x, w, dy, epi, dx, dw, db);
    if (weights) CLT_TRY(weights->backward(dev, plan, x, w, dy, epi, NULL, dw, db));
    else if (db) CLT_TRY(clt_conv_bias_grad(dev, &plan->g, dy, epi, db));
    if (data) CLT_TRY(data->backward(dev, plan, x, w, dy, epi, dx, NULL, NULL));
    return CLT_OK;
}

/* ------------------------------------------------------------------ */
/* Raw launchers: a plan for the passes of this call (the tuned        */
/* configurations come from the device's memory after the first call) */
/* ------------------------------------------------------------------ */

clt_status clt_conv_forward_raw(clt_device *dev, const clt_conv_geom *g, cl_mem x, cl_mem w,
                                cl_mem b, const clt_epilogue *epi, cl_mem y)
{
    clt_conv_plan plan;
    CLT_TRY(plan_init(dev, g, CLT_CONV_PASS(CLT_CONV_FWD), &plan, "conv2d forward"));
    CLT_TRY(tune(dev, &plan));
    return clt_conv_plan_forward(dev, &plan, x, w, b, epi, y);
}

clt_status clt_conv_backward_raw(clt_device *dev, const clt_conv_geom *g, cl_mem x, cl_mem w,
                                 cl_mem dy, const clt_epilogue *epi, cl_mem dx, cl_mem dw, cl_mem db)
{
    unsigned passes = (dx ? CLT_CONV_PASS(CLT_CONV_BWD_DATA) : 0) |
                      (dw ? CLT_CONV_PASS(CLT_CONV_BWD_WEIGHTS) : 0);
    clt_conv_plan plan;
    CLT_TRY(plan_init(dev, g, passes, &plan, "conv2d backward"));
    CLT_TRY(tune(dev, &plan));
    return clt_conv_plan_backward(dev, &plan, x, w, dy, epi, dx, dw, db);
}

clt_status clt_conv_describe_raw(clt_device *dev, const clt_conv_geom *g, int pass, char *buf, size_t cap)
{
    if (cap) buf[0] = 0;
    if (pass < 0 || pass >= CLT_CONV_PASSES) return clt_fail(CLT_ERR_INVALID_ARG, "conv2d describe: pass %d", pass);
    clt_conv_plan plan;
    CLT_TRY(plan_init(dev, g, CLT_CONV_PASS(pass), &plan, "conv2d describe"));
    CLT_TRY(tune(dev, &plan));
    clt_conv_plan_describe(&plan, pass, buf, cap);
    return CLT_OK;
}

/* ------------------------------------------------------------------ */
/* Tensor API                                                          */
/* ------------------------------------------------------------------ */

/* Validates x and w and fills the geometry from them. */
static clt_status tensor_geom(const char *op, const clt_tensor *x, const clt_tensor *w, int stride,
                              int pad, clt_conv_geom *g)
{
    static const int64_t any4[4] = {-1, -1, -1, -1};
    CLT_TRY(clt_tensor_expect(x, op, "x", CLT_DTYPE_FLOAT32, 4, any4));
    int64_t wshape[4] = {-1, x->shape[1], -1, -1};
    CLT_TRY(clt_tensor_expect(w, op, "w", CLT_DTYPE_FLOAT32, 4, wshape));
    if (w->shape[2] != w->shape[3]) {
        char a[160];
        return clt_fail(CLT_ERR_SHAPE, "%s: w has shape %s; only square kernels (co, c, k, k) are supported",
                        op, clt_shape_str(4, w->shape, a, sizeof a));
    }
    for (int i = 0; i < 4; i++) {
        if (x->shape[i] > CONV_DIM_MAX || w->shape[i] > CONV_DIM_MAX) {
            char a[160], b[160];
            return clt_fail(CLT_ERR_SHAPE, "%s: x %s or w %s has a dimension above %d", op,
                            clt_shape_str(4, x->shape, a, sizeof a),
                            clt_shape_str(4, w->shape, b, sizeof b), CONV_DIM_MAX);
        }
    }
    clt_status s = clt_conv_geom_init(g, (int)x->shape[0], (int)x->shape[1], (int)x->shape[2],
                                      (int)x->shape[3], (int)w->shape[0], (int)w->shape[2], stride,
                                      pad);
    if (s != CLT_OK) return clt_fail_context(s, "%s", op);
    return CLT_OK;
}

static clt_status distinct(const char *op, const char *out_name, const clt_tensor *out,
                           const clt_tensor *const *ins, const char *const *in_names, int n)
{
    for (int i = 0; i < n; i++)
        if (out && ins[i] && (out == ins[i] || out->buf == ins[i]->buf))
            return clt_fail(CLT_ERR_INVALID_ARG, "%s: output %s is the same tensor as input %s", op,
                            out_name, in_names[i]);
    return CLT_OK;
}

clt_status clt_conv2d_forward(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                              int stride, int pad, clt_tensor *y)
{
    const char *op = "clt_conv2d_forward";
    clt_conv_geom g;
    CLT_TRY(tensor_geom(op, x, w, stride, pad, &g));
    if (b) {
        int64_t bshape[1] = {g.co};
        CLT_TRY(clt_tensor_expect(b, op, "b", CLT_DTYPE_FLOAT32, 1, bshape));
    }
    int64_t yshape[4] = {g.n, g.co, g.oh, g.ow};
    CLT_TRY(clt_tensor_expect(y, op, "y", CLT_DTYPE_FLOAT32, 4, yshape));
    const clt_tensor *others[3] = {w, b, y};
    CLT_TRY(clt_tensor_same_device(op, x, 3, others));
    const clt_tensor *ins[3] = {x, w, b};
    const char *names[3] = {"x", "w", "b"};
    CLT_TRY(distinct(op, "y", y, ins, names, 3));
    return clt_conv_forward_raw(x->dev, &g, x->buf, w->buf, b ? b->buf : NULL, NULL, y->buf);
}

clt_status clt_conv2d_backward(const clt_tensor *x, const clt_tensor *w, const clt_tensor *dy,
                               int stride, int pad, clt_tensor *dx, clt_tensor *dw, clt_tensor *db)
{
    const char *op = "clt_conv2d_backward";
    clt_conv_geom g;
    CLT_TRY(tensor_geom(op, x, w, stride, pad, &g));
    int64_t yshape[4] = {g.n, g.co, g.oh, g.ow};
    CLT_TRY(clt_tensor_expect(dy, op, "dy", CLT_DTYPE_FLOAT32, 4, yshape));
    if (dx) CLT_TRY(clt_tensor_expect(dx, op, "dx", CLT_DTYPE_FLOAT32, 4, x->shape));
    if (dw) CLT_TRY(clt_tensor_expect(dw, op, "dw", CLT_DTYPE_FLOAT32, 4, w->shape));
    if (db) {
        int64_t bshape[1] = {g.co};
        CLT_TRY(clt_tensor_expect(db, op, "db", CLT_DTYPE_FLOAT32, 1, bshape));
    }
    const clt_tensor *others[5] = {w, dy, dx, dw, db};
    CLT_TRY(clt_tensor_same_device(op, x, 5, others));
    const clt_tensor *ins[3] = {x, w, dy};
    const char *names[3] = {"x", "w", "dy"};
    CLT_TRY(distinct(op, "dx", dx, ins, names, 3));
    CLT_TRY(distinct(op, "dw", dw, ins, names, 3));
    CLT_TRY(distinct(op, "db", db, ins, names, 3));
    if ((dx && dw && dx->buf == dw->buf) || (dx && db && dx->buf == db->buf) ||
        (dw && db && dw->buf == db->buf))
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: dx, dw and db must be distinct tensors", op);
    return clt_conv_backward_raw(x->dev, &g, x->buf, w->buf, dy->buf, NULL, dx ? dx->buf : NULL,
                                 dw ? dw->buf : NULL, db ? db->buf : NULL);
}
