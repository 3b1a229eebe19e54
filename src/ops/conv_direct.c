/* The "direct" convolution (CPU devices, stride 1 and a tiny reduction
 * c*k*k: first layers): kernels over NCHW rows (kernels/conv_direct.cl),
 * which read x in place unless it needs padding and sum db on the way.
 * First layers are bound by memory, not FMAs (LeNet conv1 writes, and its
 * backward reads, 13.8 MB of y / dy for 62 MFLOP), so the lanes layout
 * copies of whole output and dy tensors cost more than the arithmetic:
 * on AVX-512, at batch 256, direct measured faster than lanes in the
 * forward and the weight gradient of LeNet's conv1 and the ResNet stem
 * (bench/README.md). It has no backward-data: a first layer's dx would be
 * the net's input.
 *
 * A 2x2 pooling after the layer (ops/epilogue.h) runs in both kernels
 * (-DPOOL): the forward pools row pairs in registers, the weight gradient
 * spreads the pooling's dy while it reads it. That drops the pooling's
 * backward and the 13.8 MB dy (the backward measured faster) and the
 * convolution's output: after a ReLU the backward's derivative comes from
 * a byte per window (max pooling: its argmax; average: its cells > 0).
 *
 * The vector width follows the device (kernels built with -DVW): 16 where
 * its native float width is 16 (AVX-512), else 8, with register blocks
 * that keep the accumulators in 12 of the 16 AVX2 registers: forward 2
 * vectors x 4 channels, backward-weights 9 taps x 1 channel (the AVX-512
 * blocks, 2 x 10 and 9 x 3 float16, spilled there). */
#include <stdio.h>

#include "ops/conv_algo.h"
#include "runtime/launch.h"

#define ALIGN CLT_CONV_ALIGN_FLOATS
/* Most taps (c*k*k) of conv_direct_bwd_weights: one work-item holds them
 * all, so dy is read once. */
#define TG 9

static unsigned direct_supports(const clt_conv_geom *g, unsigned open)
{
    unsigned s = 0;
    size_t ckk = (size_t)g->c * g->k * g->k;
    if (g->stride != 1) return 0;
    if (g->k > 1 && ckk <= 27) s |= CLT_CONV_PASS(CLT_CONV_FWD);
    if (ckk <= TG) s |= CLT_CONV_PASS(CLT_CONV_BWD_WEIGHTS);
    return s & open;
}

/* The vector width: the device's native float width, 8 or 16. */
static int direct_vw(const clt_device *dev) { return clt_device_vector_width(dev) >= 16 ? 16 : 8; }

/* The program of the plan's vector width with the forward (fwd = 1) or
 * the backward-weights kernel of its block (kernels/conv_direct.cl), with
 * a fused pooling where epi has one. */
void clt_conv_direct_program(const clt_conv_geom *g, const clt_conv_direct_params *d, int fwd,
                             const clt_epilogue *epi, char *spec, size_t cap)
{
    int pool = epi ? epi->pool : 0;
    char kw[16] = ""; /* the tuner's choice (conv_direct_tune.c) */
    if (d->kc) snprintf(kw, sizeof kw, " -DKW=%d", g->k);
    if (fwd) snprintf(spec, cap, "conv_direct -DVW=%d -DRM=%d -DPOOL=%d%s", d->vw, d->rm, pool, kw);
    else
        snprintf(spec, cap, "conv_direct -DVW=%d -DCB=%d -DKW=%d -DNT=%d -DPOOL=%d", d->vw, d->cb, g->k,
                 g->c * g->k * g->k, pool);
}

/* The kernels read 2*VW output pixels of a row as two vectors that slide
 * back to end at OW, so with OW >= VW they stay inside a row of
 * W + 2*PAD: without padding they read x itself. Shorter rows read VW + K - 1
 * floats and need a copy that wide. */
static void input_rows(const clt_conv_geom *g, clt_conv_direct_params *d)
{
    int vw = d->vw;
    d->hp = g->h + 2 * g->pad;
    d->wpp = g->w + 2 * g->pad;
    d->copy = g->pad > 0 || g->ow < vw;
    if (g->ow < vw && d->wpp < vw + g->k - 1) d->wpp = vw + g->k - 1;
    d->xp_elems = d->copy ? clt_conv_round_up((size_t)g->n * g->c * d->hp * d->wpp, ALIGN) : 0;
}

/* Forward: RM output channels (vw 16: the block of 4, 8, 10 that pads them
 * least; vw 8: 4, or 2 for 2 channels or fewer) x rows of one image per
 * work-item: a whole image unless that leaves too few items. */
static void forward_split(const clt_device *dev, const clt_conv_geom *g, clt_conv_direct_params *d)
{
    d->rm = d->vw == 16 ? clt_conv_pick_rm(g->co) : g->co <= 2 ? 2 : 4;
    size_t blocks = ((size_t)g->co + (size_t)d->rm - 1) / (size_t)d->rm;
    size_t want = clt_conv_items_wanted(dev);
    size_t per = blocks * (size_t)g->n, rgroups = per >= want ? 1 : (want + per - 1) / per;
    if (rgroups > (size_t)g->oh) rgroups = (size_t)g->oh;
    d->rows = (int)(((size_t)g->oh + rgroups - 1) / rgroups);
    d->rows += g->oh % 2 == 0 && d->rows % 2; /* row pairs for a fused pooling */
    rgroups = ((size_t)g->oh + (size_t)d->rows - 1) / (size_t)d->rows;
    d->items = (size_t)g->n * rgroups;
}

/* Backward weights: blocks of cb output channels (each x vector load
 * feeds cb channels), one image per chunk, and the blocks in as many
 * groups as it takes to have enough work-items for every compute unit. A
 * work-item walks its image's dy planes in memory order (a work-item per
 * channel over chunks of images read 2.7 KB runs 54 KB apart: on AVX2,
 * PoCL, memory order measured faster on LeNet's conv1 in training and the
 * ResNet stem at batch 128). Where the partial sums do not fit: one
 * chunk of every image. */
static void weights_split(const clt_device *dev, const clt_conv_geom *g, int one_chunk, int cb,
                          clt_conv_direct_params *d)
{
    int ckk = g->c * g->k * g->k;
    d->cb = cb;
    size_t want = clt_conv_items_wanted(dev), blocks = ((size_t)g->co + (size_t)d->cb - 1) / (size_t)d->cb;
    d->imgs = one_chunk ? g->n : 1;
    d->chunks = (g->n + d->imgs - 1) / d->imgs;
    size_t groups = ((size_t)want + (size_t)d->chunks - 1) / (size_t)d->chunks;
    d->groups = (int)(groups < blocks ? groups : blocks);
    /* dw's partials, then db's */
    size_t dw_part = clt_conv_round_up((size_t)d->chunks * g->co * (size_t)ckk, ALIGN);
    d->part_elems = d->chunks > 1 ? dw_part + (size_t)d->chunks * g->co : 0;
}

/* The rule's block is the largest: 3 channels at vw 16 (3 x 9
 * accumulators; when it was set, on AVX-512, LeNet's conv1 and the ResNet
 * stem measured faster the larger the block), 1 at vw 8
 * (AVX2's 16 registers hold no more). The tuner times the smaller ones
 * (conv_direct_tune.c). */
int clt_conv_direct_max_cb(const clt_conv_plan *plan)
{
    if (plan->direct.vw == 8) return 1;
    return plan->g.co < CLT_CONV_DIRECT_MAX_CB ? plan->g.co : CLT_CONV_DIRECT_MAX_CB;
}

int clt_conv_direct_use_cb(const clt_device *dev, clt_conv_plan *plan, int cb)
{
    if (cb < 1 || cb > CLT_CONV_DIRECT_MAX_CB || cb > plan->g.co) return 0;
    /* Where the chunks' partial sums do not fit, one chunk needs none
     * (fewer work-items, but a budget is met, and a fused pooling,
     * which only these kernels run, keeps running). */
    clt_conv_direct_params d = plan->direct;
    weights_split(dev, &plan->g, 0, cb, &d);
    if (!clt_conv_fits(dev, (d.xp_elems + d.part_elems) * sizeof(float))) weights_split(dev, &plan->g, 1, cb, &d);
    if (!clt_conv_fits(dev, (d.xp_elems + d.part_elems) * sizeof(float))) return 0;
    plan->direct = d;
    return 1;
}

static int direct_plan(const clt_device *dev, clt_conv_plan *plan, unsigned passes)
{
    clt_conv_direct_params *d = &plan->direct;
    d->vw = direct_vw(dev);
    input_rows(&plan->g, d);
    if (passes & CLT_CONV_PASS(CLT_CONV_FWD)) {
        forward_split(dev, &plan->g, d);
        if (!clt_conv_fits(dev, d->xp_elems * sizeof(float))) return 0;
    }
    if (passes & CLT_CONV_PASS(CLT_CONV_BWD_WEIGHTS)) {
        if (!clt_conv_direct_use_cb(dev, plan, clt_conv_direct_max_cb(plan))) return 0;
    }
    return 1;
}

/* The kernels' input: the padded copy in `scratch` at offset 0, or x. */
static clt_status direct_input(clt_device *dev, const clt_conv_plan *plan, const char *spec, cl_mem x,
                               cl_mem scratch, cl_mem *in, cl_ulong *in_off)
{
    const clt_conv_geom *g = &plan->g;
    const clt_conv_direct_params *d = &plan->direct;
    *in = d->copy ? scratch : x;
    *in_off = 0;
    if (!d->copy) return CLT_OK;
    int rows = g->n * g->c * d->hp;
    return clt_launch_1d(dev, spec, "conv_direct_pad_rows", (size_t)rows,
                         CLT_ARGS(CLT_ARG(g->h), CLT_ARG(g->w), CLT_ARG(g->pad), CLT_ARG(d->hp),
                                  CLT_ARG(d->wpp), CLT_ARG(rows), CLT_ARG(x), CLT_ARG(scratch),
                                  CLT_ARG(*in_off)));
}

static clt_status direct_forward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                                 cl_mem b, const clt_epilogue *epi, cl_mem y)
{
    const clt_conv_geom *g = &plan->g;
    const clt_conv_direct_params *d = &plan->direct;
    cl_mem scratch = NULL, in;
    cl_ulong in_off;
    if (d->copy) CLT_TRY(clt_device_scratch(dev, d->xp_elems * sizeof(float), &scratch));
    char spec[64];
    clt_conv_direct_program(g, d, 1, epi, spec, sizeof spec);
    CLT_TRY(direct_input(dev, plan, spec, x, scratch, &in, &in_off));
    size_t blocks = ((size_t)g->co + (size_t)d->rm - 1) / (size_t)d->rm;
    int has_bias = b != NULL, relu = clt_epi_relu(epi);
    cl_mem bias = b ? b : w; /* any valid buffer when there is no bias */
    cl_mem argmax = clt_epi_cells(epi) ? epi->argmax : y; /* else unused */
    return clt_launch_2d(dev, spec, "conv_direct_fwd", blocks, d->items, clt_conv_group_x(dev, blocks), 1,
                         CLT_ARGS(CLT_ARG(g->n), CLT_ARG(g->c), CLT_ARG(g->co), CLT_ARG(g->k),
                                  CLT_ARG(d->hp), CLT_ARG(d->wpp), CLT_ARG(g->oh), CLT_ARG(g->ow),
                                  CLT_ARG(d->rows), CLT_ARG(in), CLT_ARG(in_off), CLT_ARG(w),
                                  CLT_ARG(bias), CLT_ARG(has_bias), CLT_ARG(relu), CLT_ARG(y),
                                  CLT_ARG(argmax)));
}

/* dw, and db too when it is not NULL (the kernel sums dy on the way). */
static clt_status direct_backward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                                  cl_mem dy, const clt_epilogue *epi, cl_mem dx, cl_mem dw, cl_mem db)
{
    (void)w;
    const clt_conv_geom *g = &plan->g;
    const clt_conv_direct_params *d = &plan->direct;
    if (dx || !dw)
        return clt_fail(CLT_ERR_INTERNAL, "conv2d backward: the direct algorithm computes dw only");
    int ckk = g->c * g->k * g->k, chunks = d->chunks;
    cl_mem scratch = NULL, in;
    cl_ulong in_off;
    if (d->xp_elems + d->part_elems > 0)
        CLT_TRY(clt_device_scratch(dev, (d->xp_elems + d->part_elems) * sizeof(float), &scratch));
    cl_ulong part_off = d->xp_elems;
    cl_ulong dbpart_off = part_off + clt_conv_round_up((size_t)chunks * g->co * (size_t)ckk, ALIGN);
    char spec[64];
    clt_conv_direct_program(g, d, 0, epi, spec, sizeof spec);
    CLT_TRY(direct_input(dev, plan, spec, x, scratch, &in, &in_off));
    cl_mem part = chunks > 1 ? scratch : dw;
    cl_ulong poff = chunks > 1 ? part_off : 0;
    int has_db = db != NULL, relu = clt_epi_relu(epi);
    cl_mem ym = clt_epi_mask(epi, dy);
    cl_mem argmax = clt_epi_cells(epi) ? epi->argmax : dy; /* else unused */
    cl_mem dbpart = chunks > 1 ? scratch : db ? db : dw;
    cl_ulong dboff = chunks > 1 ? dbpart_off : 0;
    CLT_TRY(clt_launch_2d(dev, spec, "conv_direct_bwd_weights", (size_t)d->groups, (size_t)chunks, 1, 1,
                          CLT_ARGS(CLT_ARG(g->n), CLT_ARG(g->c), CLT_ARG(g->co),
                                   CLT_ARG(d->hp), CLT_ARG(d->wpp), CLT_ARG(g->oh), CLT_ARG(g->ow),
                                   CLT_ARG(d->imgs), CLT_ARG(d->groups), CLT_ARG(chunks), CLT_ARG(in),
                                   CLT_ARG(in_off), CLT_ARG(dy), CLT_ARG(relu), CLT_ARG(ym), CLT_ARG(argmax),
                                   CLT_ARG(part),
                                   CLT_ARG(poff),
                                   CLT_ARG(has_db), CLT_ARG(dbpart), CLT_ARG(dboff))));
    if (chunks == 1) return CLT_OK;
    CLT_TRY(clt_conv_sum_chunks(dev, g->co * ckk, chunks, scratch, part_off, dw));
    if (!db) return CLT_OK;
    return clt_conv_sum_chunks(dev, g->co, chunks, scratch, dbpart_off, db);
}

static void direct_describe(const clt_conv_plan *plan, int pass, char *buf, size_t cap)
{
    const clt_conv_direct_params *d = &plan->direct;
    if (pass == CLT_CONV_FWD)
        snprintf(buf, cap, "vw%d rm%d%s%s", d->vw, d->rm, d->kc ? " kc" : "", d->fwd_tuned ? " tuned" : "");
    else snprintf(buf, cap, "vw%d cb%d%s", d->vw, d->cb, d->bwdw_tuned ? " tuned" : "");
}

/* The kernels pool (any kind) where the layer's forward and weight
 * gradient both run here, with even output rows and columns, at least 16
 * columns and no padding: no padded copy then (rows of at least VW <= 16),
 * and the weight gradient falls back to one chunk without partial sums
 * under any budget, so no work buffer stands in the way. */
static int direct_pools(const clt_conv_geom *g, int kind)
{
    (void)kind;
    unsigned both = CLT_CONV_PASS(CLT_CONV_FWD) | CLT_CONV_PASS(CLT_CONV_BWD_WEIGHTS);
    return direct_supports(g, both) == both && g->pad == 0 && g->oh % 2 == 0 && g->ow % 2 == 0 && g->ow >= 16;
}

const clt_conv_algo clt_conv_direct = {
    .name = "direct",
    .supports = direct_supports,
    .plan = direct_plan,
    .forward = direct_forward,
    .backward = direct_backward,
    .describe = direct_describe,
    .tune = clt_conv_direct_tune,
    .pools = direct_pools,
};
