/* The "lanes" convolution (CPU devices): the batch is the SIMD lane.
 * Activations are copied to a lanes layout (kernels/conv_layout.cl):
 * (H, W, C, N') for forward and backward-data, (C, H, W, N') for the
 * weight gradient; each work-item keeps a register block of RM channels x
 * NV vectors of images in accumulators (kernels/conv_lanes.cl), so every
 * weight is one broadcast and every input one vector load, whatever the
 * shape. Forward
 * and backward-data visit only the taps that land inside the input;
 * backward-weights keeps WA x WB channels of one tap (or of a row of k
 * taps: cfg.tr) and sums partials over chunks of rows x lanes
 * in a fixed order. A 1x1 layer with stride (a
 * ResNet projection) copies only the pixels it reads and runs as a stride-1
 * layer on them. Storing results straight into NCHW (a scalar scatter) was
 * slower than vector stores plus the transposing copy; a work-group
 * holding all channel blocks of one pixel ran the forward faster
 * than one block per group. A 2x2 pooling after the layer (and its ReLU)
 * runs in those copies: the forward's copy back stores the pooled output
 * and a byte per window (an average's cells > 0, a max's argmax), the
 * backward's copies spread the pooling's dy through them, so neither the
 * convolution's output nor its dy is ever written in NCHW (LeNet's conv2).
 * The bias gradient sums the channel-major copy of dy, in cache, instead
 * of dy and the ReLU's output.
 *
 * This file plans and runs the passes; the kernels' configuration space is
 * conv_lanes_cfg.c, the copies into and out of the layouts
 * conv_lanes_copy.c, the tuner conv_tune.c. */
#include <stdio.h>

#include "ops/conv_lanes.h"
#include "runtime/launch.h"

#define LANES CLT_CONV_LANES
#define ALIGN CLT_CONV_ALIGN_FLOATS

static size_t up(size_t v, size_t m) { return clt_conv_round_up(v, m); }

/* ------------------------------------------------------------------ */
/* Plan                                                                */
/* ------------------------------------------------------------------ */

/* Backward-weights chunking: a chunk is `rows` output rows x `vecs` vw-lane
 * vectors. A work-group (the k*k taps, or k rows of taps, of one WA x WB
 * block) streams WB input channels and WA dy channels of its chunk; keep
 * that within a target so it is read from memory once and then from
 * cache, and keep enough work-items to fill every compute unit. The
 * rule's target is 512 KiB (half an L2 of the machine it was set on); the
 * best one depends on the
 * shape and batch (AVX2, 512 KiB L2, PoCL: 128 KiB ran ResNet-18's
 * 128->256 k3 s2 at batch 128 faster, but LeNet's conv2 at batch 256
 * slower), so the tuner times 256 and 128 too (cfg.ck). */
static void bwd_weights_chunks(const clt_device *dev, clt_conv_lanes_params *lp)
{
    const clt_conv_geom *g = &lp->gk;
    const clt_conv_lanes_cfg *c = &lp->cfg[CLT_CONV_BWD_WEIGHTS];
    const size_t target = (size_t)(c->ck ? c->ck : CLT_CONV_LANES_CHUNK_KIB_RULE) << 10;
    size_t wa = (size_t)c->a, wb = (size_t)c->b;
    int nvec = lp->nl / c->vw;
    size_t vbytes = (size_t)c->vw * sizeof(float);
    /* bytes per output row per vector: WA dy pixels + WB input pixels */
    size_t per_row = (wa * g->ow + wb * g->w * g->stride) * vbytes;
    size_t x_fixed = wb * g->w * (g->k > g->stride ? g->k - g->stride : 0) * vbytes;
    int vecs = nvec, rows = g->oh;
    while (rows > 1 && (per_row * rows + x_fixed) * vecs > target) rows = (rows + 1) / 2;
    /* Fewer vectors per chunk shortens the innermost loop, which cost more
     * than going up to twice the target (R18 64 28x28, 5 x 5: one row of 16
     * vectors measured faster than of 8 vectors). */
    while (vecs > 1 && (per_row * rows + x_fixed) * vecs > 2 * target) vecs = (vecs + 1) / 2;
    size_t items = (size_t)g->k * (c->tr ? 1 : (size_t)g->k) * (((size_t)g->c + wb - 1) / wb) *
                   (((size_t)g->co + wa - 1) / wa);
    size_t want = clt_conv_items_wanted(dev);
    size_t vchunks = (size_t)((nvec + vecs - 1) / vecs);
    while (rows > 1 && items * (size_t)((g->oh + rows - 1) / rows) * vchunks < want) rows = (rows + 1) / 2;
    lp->bw_rows = rows;
    lp->bw_vecs = vecs;
    lp->bw_vchunks = (nvec + vecs - 1) / vecs;
    lp->bw_chunks = (g->oh + rows - 1) / rows * lp->bw_vchunks;
}

/* Forward scratch: xT (H, W, C, NP), the weights in register blocks, yT (OH*OW, CO, NP). */
static size_t forward_floats(const clt_conv_lanes_params *lp, size_t *x_elems, size_t *wf_elems)
{
    const clt_conv_geom *g = &lp->gk;
    size_t rs = (size_t)clt_conv_lanes_row_stride(lp, 1);
    *x_elems = up((size_t)g->c * g->h * g->w * rs, ALIGN);
    *wf_elems = up((size_t)g->k * g->k * g->c * lp->cop, ALIGN);
    return *x_elems + *wf_elems + (size_t)g->co * g->oh * g->ow * rs;
}

/* Backward scratch regions, floats; only those of the outputs wanted: dy
 * channel-major for the weight gradient (dy_off), pixel-major for dx
 * (dyp_off; kernels/conv_lanes.cl says why each); x and dx channel-major. */
typedef struct bwd_layout {
    size_t dy_off, dyp_off, x_off, wb_off, dx_off, part_off, total;
} bwd_layout;

static void backward_layout(const clt_conv_lanes_params *lp, int want_dx, int want_dw, bwd_layout *L)
{
    const clt_conv_geom *g = &lp->gk;
    size_t cm = (size_t)clt_conv_lanes_row_stride(lp, 0), pm = (size_t)clt_conv_lanes_row_stride(lp, 1);
    size_t kk = (size_t)g->k * g->k, xt = up((size_t)g->c * g->h * g->w * cm, ALIGN);
    size_t part = want_dw && lp->bw_chunks > 1 ? (size_t)lp->bw_chunks * g->co * g->c * kk : 0;
    size_t dyp = (size_t)g->co * g->oh * g->ow;
    L->dy_off = 0;
    L->dyp_off = want_dw ? up(dyp * cm, ALIGN) : 0;
    L->x_off = L->dyp_off + (want_dx ? up(dyp * pm, ALIGN) : 0);
    L->wb_off = L->x_off + (want_dw ? xt : 0);
    L->dx_off = L->wb_off + (want_dx ? up(kk * g->co * lp->cip, ALIGN) : 0);
    L->part_off = L->dx_off + (want_dx ? xt : 0);
    L->total = L->part_off + part;
}

double clt_conv_work_bytes(const clt_device *dev, const clt_conv_geom *g)
{
    int lanes = 0;
    if (clt_conv_uses_lanes(dev, &lanes) != CLT_OK || !lanes) return 0;
    /* the backward's copies of x, dx, and dy in two layouts (conv_lanes.c,
     * backward_layout), the forward's of x and y being fewer */
    double in = (double)g->c * g->h * g->w, out = (double)g->co * g->oh * g->ow;
    return 2.0 * sizeof(float) * (in + out) / g->n;
}

static unsigned lanes_supports(const clt_conv_geom *g, unsigned open)
{
    (void)g;
    return open;
}

/* Whether the passes' work buffers fit, with the padding and chunks that
 * follow from the configurations in lp->cfg. */
int clt_conv_lanes_derive(const clt_device *dev, clt_conv_lanes_params *lp, unsigned passes)
{
    const clt_conv_geom *g = &lp->gk;
    lp->cop = lp->cfg[CLT_CONV_FWD].a ? (int)up((size_t)g->co, (size_t)lp->cfg[CLT_CONV_FWD].a) : g->co;
    lp->cip = lp->cfg[CLT_CONV_BWD_DATA].a ? (int)up((size_t)g->c, (size_t)lp->cfg[CLT_CONV_BWD_DATA].a) : g->c;
    int want_dx = (passes & CLT_CONV_PASS(CLT_CONV_BWD_DATA)) != 0;
    int want_dw = (passes & CLT_CONV_PASS(CLT_CONV_BWD_WEIGHTS)) != 0;
    if (want_dw) bwd_weights_chunks(dev, lp);
    size_t xe, we, fwd_bytes = forward_floats(lp, &xe, &we) * sizeof(float);
    if ((passes & CLT_CONV_PASS(CLT_CONV_FWD)) && !clt_conv_fits(dev, fwd_bytes)) return 0;
    bwd_layout L;
    backward_layout(lp, want_dx, want_dw, &L);
    return !(want_dx || want_dw) || clt_conv_fits(dev, L.total * sizeof(float));
}

/* The row stride of the pixel-major lanes layouts for nl lanes. Rows a
 * multiple of 512 bytes apart (nl a multiple of 128) share 8 or fewer of
 * the 64 sets of a 32 KiB L1 cache (1 KiB rows at batch 256: 4), and the
 * forward's and backward-data's inner loop reads one vector of each
 * channel, a row apart: those loads evicted each other and came from L2.
 * A gap of 64 bytes after each row spreads them over every set (LeNet's
 * conv2 and ResNet-18's 7x7 layer at batch 256 measured faster on PoCL
 * and Intel's runtime). At batch 32 and 64 it measured no faster, so rows
 * of 32 or 64 lanes keep no gap. Its 16 lanes are never computed, copied
 * or read. */
static int lanes_stride(int nl) { return nl % 128 == 0 ? nl + LANES : nl; }

static int lanes_plan(const clt_device *dev, clt_conv_plan *plan, unsigned passes)
{
    clt_conv_lanes_params *lp = &plan->lanes;
    const clt_conv_geom *g = &plan->g;
    /* A 1x1 convolution with stride > 1 and no padding reads every
     * stride-th row and column only: the kernels run the stride-1 geometry
     * of that subsampled input (h = oh, w = ow). */
    lp->gk = *g;
    lp->subsampled = g->k == 1 && g->pad == 0 && g->stride > 1;
    if (lp->subsampled) {
        lp->gk.h = g->oh;
        lp->gk.w = g->ow;
        lp->gk.stride = 1;
    }
    /* Lanes padded to 16 (the copies' unit) for small batches, to 32 (one
     * or more vectors per item) otherwise. */
    lp->nl = (int)up((size_t)g->n, g->n > LANES ? 2 * LANES : LANES);
    lp->np = lanes_stride(lp->nl);
    for (int p = 0; p < CLT_CONV_PASSES; p++)
        if (passes & CLT_CONV_PASS(p)) lp->cfg[p] = clt_conv_lanes_rule(dev, lp, p);
    return clt_conv_lanes_derive(dev, lp, passes);
}

/* ------------------------------------------------------------------ */
/* Passes (kernels/conv_lanes.cl)                                      */
/* ------------------------------------------------------------------ */

void clt_conv_lanes_program(int pass, const clt_conv_lanes_cfg *c, char *spec, size_t cap)
{
    if (pass == CLT_CONV_BWD_WEIGHTS)
        snprintf(spec, cap, "conv_lanes -DVW=%d -DWA=%d -DWB=%d -DTR=%d", c->vw, c->a, c->b, c->tr);
    else
        snprintf(spec, cap, "conv_lanes -DVW=%d -DRM=%d -DNV=%d", c->vw, c->a, c->b); /* px: an argument */
}

/* Forward (fwd = 1: x -> y, blocks of output channels) or backward-data
 * (fwd = 0: dy -> dx, blocks of input channels) in the lanes layout in
 * scratch: the weights into their layout, then the register-blocked kernel
 * over channel blocks x the pixels' lane vectors. */
static clt_status rank1_kernel(clt_device *dev, const clt_conv_lanes_params *lp, int fwd, cl_mem scratch,
                               cl_ulong in_off, cl_ulong wt_off, cl_ulong out_off)
{
    const clt_conv_geom *g = &lp->gk;
    const clt_conv_lanes_cfg *c = &lp->cfg[fwd ? CLT_CONV_FWD : CLT_CONV_BWD_DATA];
    int padded = fwd ? lp->cop : lp->cip;
    char spec[64];
    clt_conv_lanes_program(CLT_CONV_FWD, c, spec, sizeof spec);
    size_t blocks = (size_t)padded / (size_t)c->a;
    size_t pixels = fwd ? (size_t)g->oh * g->ow : (size_t)g->h * g->w;
    size_t lane_blocks = (size_t)(lp->nl / (c->vw * c->b)), items = pixels * lane_blocks;
    /* px: dimension 0 walks the pixels (work-groups of up to 64), dimension
     * 1 the channel blocks, then the lane blocks, so consecutive
     * work-groups read the same lanes of the input with the next weights
     * (the pixel-major order before ran the 512-channel 4x4 layer
     * longer at batch 128, its input re-read from L3 per channel block) */
    size_t gx = c->px ? pixels : blocks, gy = c->px ? blocks * lane_blocks : items;
    /* px groups of fewer than 64 pixels take several channel blocks, so a
     * dense layer (1 pixel) does not run one work-item per group */
    size_t lx = c->px ? clt_conv_group_x(dev, pixels < 64 ? pixels : 64) : clt_conv_group_x(dev, blocks);
    size_t ly = c->px ? clt_conv_group_x(dev, 64) / lx : 1;
    if (ly > blocks) ly = blocks;
    return clt_launch_2d(dev, spec, fwd ? "conv_lanes_fwd" : "conv_lanes_bwd_data", gx, gy, lx, ly,
                         CLT_ARGS(CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w), CLT_ARG(lp->np), CLT_ARG(lp->nl),
                                  CLT_ARG(g->co), CLT_ARG(g->oh), CLT_ARG(g->ow), CLT_ARG(g->k),
                                  CLT_ARG(g->stride), CLT_ARG(g->pad), CLT_ARG(c->px), CLT_ARG(scratch), CLT_ARG(in_off),
                                  CLT_ARG(scratch),
                                  CLT_ARG(wt_off), CLT_ARG(scratch), CLT_ARG(out_off)));
}

static clt_status rank1_pass(clt_device *dev, const clt_conv_lanes_params *lp, int fwd, cl_mem w,
                             cl_mem scratch, cl_ulong in_off, cl_ulong wt_off, cl_ulong out_off)
{
    CLT_TRY(clt_conv_lanes_weights_to(dev, &lp->gk, fwd, fwd ? lp->cop : lp->cip, lp->cfg[fwd ? CLT_CONV_FWD : CLT_CONV_BWD_DATA].a,
                             w, scratch, wt_off));
    return rank1_kernel(dev, lp, fwd, scratch, in_off, wt_off, out_off);
}

static clt_status lanes_forward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                                cl_mem b, const clt_epilogue *epi, cl_mem y)
{
    const clt_conv_lanes_params *lp = &plan->lanes;
    size_t x_elems, wf_elems, total = forward_floats(lp, &x_elems, &wf_elems);
    cl_mem scratch;
    CLT_TRY(clt_device_scratch(dev, total * sizeof(float), &scratch));
    cl_ulong x_off = 0, wf_off = x_elems, y_off = x_elems + wf_elems;
    CLT_TRY(clt_conv_lanes_x_to(dev, plan, x, 1, scratch, x_off));
    CLT_TRY(rank1_pass(dev, lp, 1, w, scratch, x_off, wf_off, y_off));
    return clt_conv_lanes_y_from(dev, lp, scratch, y_off, b, w, epi, y);
}

/* The backward-weights kernel into part (chunks > 1) or dw. */
static clt_status bwdw_kernel(clt_device *dev, const clt_conv_lanes_params *lp, cl_mem scratch, cl_ulong x_off,
                              cl_ulong dy_off, cl_mem part, cl_ulong poff)
{
    const clt_conv_geom *g = &lp->gk;
    const clt_conv_lanes_cfg *c = &lp->cfg[CLT_CONV_BWD_WEIGHTS];
    int items = c->tr ? g->k : g->k * g->k, chunks = lp->bw_chunks; /* per block: its taps, or rows of taps */
    size_t g1 = (size_t)((g->co + c->a - 1) / c->a) * (size_t)((g->c + c->b - 1) / c->b) * (size_t)chunks;
    char spec[64];
    clt_conv_lanes_program(CLT_CONV_BWD_WEIGHTS, c, spec, sizeof spec);
    return clt_launch_2d(dev, spec, "conv_lanes_bwd_weights", (size_t)items, g1, clt_conv_group_x(dev, (size_t)items), 1,
                         CLT_ARGS(CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w), CLT_ARG(lp->nl),
                                  CLT_ARG(g->co), CLT_ARG(g->oh), CLT_ARG(g->ow), CLT_ARG(g->k),
                                  CLT_ARG(g->stride), CLT_ARG(g->pad), CLT_ARG(c->ph), CLT_ARG(lp->bw_rows),
                                  CLT_ARG(lp->bw_vecs), CLT_ARG(lp->bw_vchunks), CLT_ARG(chunks),
                                  CLT_ARG(scratch), CLT_ARG(x_off), CLT_ARG(scratch),
                                  CLT_ARG(dy_off), CLT_ARG(part), CLT_ARG(poff)));
}

static clt_status backward_weights(clt_device *dev, const clt_conv_plan *plan, cl_mem x,
                                   cl_mem scratch, const bwd_layout *L, cl_mem dw)
{
    const clt_conv_lanes_params *lp = &plan->lanes;
    const clt_conv_geom *g = &lp->gk;
    CLT_TRY(clt_conv_lanes_x_to(dev, plan, x, 0, scratch, L->x_off));
    int chunks = lp->bw_chunks;
    cl_mem part = chunks > 1 ? scratch : dw;
    CLT_TRY(bwdw_kernel(dev, lp, scratch, L->x_off, L->dy_off, part, chunks > 1 ? L->part_off : 0));
    if (chunks == 1) return CLT_OK;
    return clt_conv_sum_chunks(dev, (int)((size_t)g->co * g->c * (size_t)(g->k * g->k)), chunks, scratch,
                               L->part_off, dw);
}

/* One pass's arithmetic alone on a work buffer of the plan's layout (for
 * the tuner: the copies around it are not timed; they do not depend on
 * the configuration, but for the weight gradient's x copy in stride
 * phases, which only sends its rows elsewhere).
 * *bytes: the buffer it needs; with scratch NULL only that is filled. */
clt_status clt_conv_lanes_time_pass(clt_device *dev, const clt_conv_lanes_params *lp, int pass, cl_mem scratch,
                                    size_t *bytes)
{
    if (pass == CLT_CONV_FWD) {
        size_t xe, we, total = forward_floats(lp, &xe, &we);
        *bytes = total * sizeof(float);
        return scratch ? rank1_kernel(dev, lp, 1, scratch, 0, xe, xe + we) : CLT_OK;
    }
    bwd_layout L;
    int dw = pass == CLT_CONV_BWD_WEIGHTS, chunks = lp->bw_chunks;
    backward_layout(lp, !dw, dw, &L);
    /* one chunk: the kernel writes dw itself, here after the layout */
    const clt_conv_geom *g = &lp->gk;
    size_t dw_elems = dw && chunks == 1 ? (size_t)g->co * g->c * g->k * g->k : 0;
    *bytes = (L.total + dw_elems) * sizeof(float);
    if (!scratch) return CLT_OK;
    if (!dw) return rank1_kernel(dev, lp, 0, scratch, L.dyp_off, L.wb_off, L.dx_off);
    return bwdw_kernel(dev, lp, scratch, L.x_off, L.dy_off, scratch, chunks > 1 ? L.part_off : L.total);
}

/* dy goes into the lanes layout of each pass that runs: a second copy of
 * dy costs less than backward-data gains from its pixel-major layout
 * (ResNet-18 training steps at batch 128 on PoCL measured faster than
 * with one channel-major copy for both), and less than the weight
 * gradient loses on pixel-major x and dy (its kernel measured slower on
 * ResNet-18's 3x3 layers, batch 128, PoCL). */
static clt_status lanes_backward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                                 cl_mem dy, const clt_epilogue *epi, cl_mem dx, cl_mem dw, cl_mem db)
{
    const clt_conv_lanes_params *lp = &plan->lanes;
    if (db && !dw) CLT_TRY(clt_conv_bias_grad(dev, &plan->g, dy, epi, db));
    if (!dx && !dw) return CLT_OK;
    bwd_layout L;
    backward_layout(lp, dx != NULL, dw != NULL, &L);
    cl_mem scratch;
    CLT_TRY(clt_device_scratch(dev, L.total * sizeof(float), &scratch));
    /* a fused pooling spreads its dy into both layouts in one pass */
    int both = dx && dw && epi && epi->pool;
    cl_ulong cm_off = L.dy_off;
    if (dx) {
        CLT_TRY(clt_conv_lanes_dy_to(dev, lp, dy, epi, 1, scratch, L.dyp_off, both ? &cm_off : NULL));
        CLT_TRY(rank1_pass(dev, lp, 0, w, scratch, L.dyp_off, L.wb_off, L.dx_off));
        CLT_TRY(clt_conv_lanes_dx_from(dev, plan, scratch, L.dx_off, dx));
    }
    if (dw) {
        if (!both) CLT_TRY(clt_conv_lanes_dy_to(dev, lp, dy, epi, 0, scratch, L.dy_off, NULL));
        if (db) CLT_TRY(clt_conv_lanes_bias_from(dev, plan, scratch, L.dy_off, db));
        CLT_TRY(backward_weights(dev, plan, x, scratch, &L, dw));
    }
    return CLT_OK;
}

/* The lanes copies pool where the direct kernels run no pass, so that
 * every pass runs the lanes kernels. */
static int lanes_pools(const clt_conv_geom *g, int kind)
{
    return (kind == CLT_EPI_POOL_AVG || kind == CLT_EPI_POOL_MAX) && g->oh >= 2 && g->ow >= 2 &&
           !clt_conv_direct.supports(g, (1u << CLT_CONV_PASSES) - 1);
}

const clt_conv_algo clt_conv_lanes = {
    .name = "lanes",
    .supports = lanes_supports,
    .plan = lanes_plan,
    .forward = lanes_forward,
    .backward = lanes_backward,
    .describe = clt_conv_lanes_describe,
    .tune = clt_conv_lanes_tune,
    .pools = lanes_pools,
    .pool_needs_room = 1, /* its layouts' copies */
};
