/* The "lanes" convolution (CPU devices): the batch is the SIMD lane.
 * Activations are copied to a (C, H, W, N') layout (kernels/conv_layout.cl)
 * and each work-item keeps an RM channels x 16*NV images register block in
 * float16 accumulators (kernels/conv_lanes.cl), so every weight is one
 * broadcast and every input one vector load, whatever the shape. Forward
 * and backward-data visit only the taps that land inside the input;
 * backward-weights keeps WA x WB channels of one tap and sums partials over
 * chunks of rows x lanes in a fixed order. A 1x1 layer with stride (a
 * ResNet projection) copies only the pixels it reads and runs as a stride-1
 * layer on them. Storing results straight into NCHW (a scalar scatter) was
 * 1.5-6x slower than vector stores plus the transposing copy; a work-group
 * holding all channel blocks of one pixel ran the forward 1.6-2x faster
 * than one block per group. */
#include <stdio.h>
#include <string.h>

#include "ops/conv_algo.h"
#include "runtime/launch.h"

#define LANES CLT_CONV_LANES
#define ALIGN CLT_CONV_ALIGN_FLOATS

static size_t up(size_t v, size_t m) { return clt_conv_round_up(v, m); }

/* ------------------------------------------------------------------ */
/* Plan                                                                */
/* ------------------------------------------------------------------ */

/* Backward-weights register blocks (conv_lanes_bwd_weights_<WA>_<WB>): WA
 * output x WB input channels of one tap, WA*WB accumulators fed by WA + WB
 * vector loads. The choice minimises the padded work times (1 + loads per
 * FMA), which picks 5 x 5 for LeNet conv2 (50 x 20 channels: 4 x 6
 * computed 52 x 24) and for the ResNet widths (64 x 64 pads to 65 x 65,
 * but 4 x 4 needs 25% more loads per FMA), and 6 x 4 or 4 x 6 where they
 * fit much better (3 input channels). Measured on the 2-core EPYC, ms (4x4
 * / 4x6 / 6x4 / 5x5): LeNet conv2 4.45 / 4.54 / 4.12 / 3.73, R18 128 14x14
 * 50.5 / 43.8 / 45.1 / 42.9, 512 4x4 52.2 / 46.0 / 46.9 / 44.7. The
 * device settings (CLTRAIN_CONV_BWDW) may force one; the tests run each. */
static const int bwdw_blocks[][2] = CLT_CONV_BWDW_BLOCKS;

static void pick_bwdw_block(const clt_device *dev, int c, int co, int *wa, int *wb)
{
    if (dev->settings.conv_bwdw_a > 0) {
        *wa = dev->settings.conv_bwdw_a;
        *wb = dev->settings.conv_bwdw_b;
        return;
    }
    double best_cost = 0;
    for (size_t i = 0; i < sizeof bwdw_blocks / sizeof bwdw_blocks[0]; i++) {
        int a = bwdw_blocks[i][0], b = bwdw_blocks[i][1];
        double work = (double)up((size_t)co, (size_t)a) * (double)up((size_t)c, (size_t)b);
        double cost = work * (1.0 + (double)(a + b) / (double)(a * b));
        if (i == 0 || cost < best_cost) {
            *wa = a;
            *wb = b;
            best_cost = cost;
        }
    }
}

/* Backward-weights chunking: a chunk is `rows` output rows x `vecs` 16-lane
 * vectors. A work-group (the k*k taps of one WA x WB block) streams WB input
 * channels and WA dy channels of its chunk; keep that within ~512 KiB (half
 * an L2 here; 256 KiB ran R18 64 28x28 40% slower: more, smaller chunks)
 * so it is read from memory once and then from cache, and keep enough
 * work-items to fill every compute unit. */
static void bwd_weights_chunks(const clt_device *dev, clt_conv_lanes_params *lp)
{
    const clt_conv_geom *g = &lp->gk;
    const size_t target = (size_t)512 << 10;
    pick_bwdw_block(dev, g->c, g->co, &lp->bw_wa, &lp->bw_wb);
    size_t wa = (size_t)lp->bw_wa, wb = (size_t)lp->bw_wb;
    int nvec = lp->np / LANES;
    size_t vbytes = LANES * sizeof(float);
    /* bytes per output row per vector: WA dy pixels + WB input pixels */
    size_t per_row = (wa * g->ow + wb * g->w * g->stride) * vbytes;
    size_t x_fixed = wb * g->w * (g->k > g->stride ? g->k - g->stride : 0) * vbytes;
    int vecs = nvec, rows = g->oh;
    while (rows > 1 && (per_row * rows + x_fixed) * vecs > target) rows = (rows + 1) / 2;
    /* Fewer vectors per chunk shortens the innermost loop, which cost more
     * than going up to twice the target (R18 64 28x28, 5 x 5: one row of 16
     * vectors 48 ms, of 8 vectors 66 ms). */
    while (vecs > 1 && (per_row * rows + x_fixed) * vecs > 2 * target) vecs = (vecs + 1) / 2;
    size_t items = (size_t)g->k * g->k * (((size_t)g->c + wb - 1) / wb) * (((size_t)g->co + wa - 1) / wa);
    size_t want = clt_conv_items_wanted(dev);
    size_t vchunks = (size_t)((nvec + vecs - 1) / vecs);
    while (rows > 1 && items * (size_t)((g->oh + rows - 1) / rows) * vchunks < want) rows = (rows + 1) / 2;
    lp->bw_rows = rows;
    lp->bw_vecs = vecs;
    lp->bw_vchunks = (nvec + vecs - 1) / vecs;
    lp->bw_chunks = (g->oh + rows - 1) / rows * lp->bw_vchunks;
}

/* Forward scratch: xT (C, H, W, NP), the transposed weights, yT (CO, P, NP). */
static size_t forward_floats(const clt_conv_lanes_params *lp, size_t *x_elems, size_t *wf_elems)
{
    const clt_conv_geom *g = &lp->gk;
    *x_elems = up((size_t)g->c * g->h * g->w * lp->np, ALIGN);
    *wf_elems = up((size_t)g->k * g->k * g->c * lp->cop, ALIGN);
    return *x_elems + *wf_elems + (size_t)g->co * g->oh * g->ow * lp->np;
}

/* Backward scratch regions, floats; only those of the outputs wanted. */
typedef struct bwd_layout {
    size_t dy_off, x_off, wb_off, dx_off, part_off, total;
} bwd_layout;

static void backward_layout(const clt_conv_lanes_params *lp, int want_dx, int want_dw, bwd_layout *L)
{
    const clt_conv_geom *g = &lp->gk;
    size_t kk = (size_t)g->k * g->k, xt = up((size_t)g->c * g->h * g->w * lp->np, ALIGN);
    size_t part = want_dw && lp->bw_chunks > 1 ? (size_t)lp->bw_chunks * g->co * g->c * kk : 0;
    L->dy_off = 0;
    L->x_off = up((size_t)g->co * g->oh * g->ow * lp->np, ALIGN);
    L->wb_off = L->x_off + (want_dw ? xt : 0);
    L->dx_off = L->wb_off + (want_dx ? up(kk * g->co * lp->cip, ALIGN) : 0);
    L->part_off = L->dx_off + (want_dx ? xt : 0);
    L->total = L->part_off + part;
}

static unsigned lanes_supports(const clt_conv_geom *g, unsigned open)
{
    (void)g;
    return open;
}

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
    /* 32 lanes per item when the batch has more than 16 images (two vector
     * loads per broadcast weight), 16 for small batches. */
    lp->nv = g->n > LANES ? 2 : 1;
    lp->np = (int)up((size_t)g->n, (size_t)(LANES * lp->nv));
    lp->rm_fwd = clt_conv_pick_rm(g->co);
    lp->cop = (int)up((size_t)g->co, (size_t)lp->rm_fwd);
    lp->rm_bwd = clt_conv_pick_rm(g->c);
    lp->cip = (int)up((size_t)g->c, (size_t)lp->rm_bwd);
    int want_dx = (passes & CLT_CONV_PASS(CLT_CONV_BWD_DATA)) != 0;
    int want_dw = (passes & CLT_CONV_PASS(CLT_CONV_BWD_WEIGHTS)) != 0;
    if (want_dw) bwd_weights_chunks(dev, lp);
    size_t xe, we, fwd_bytes = forward_floats(lp, &xe, &we) * sizeof(float);
    if ((passes & CLT_CONV_PASS(CLT_CONV_FWD)) && !clt_conv_fits(dev, fwd_bytes)) return 0;
    bwd_layout L;
    backward_layout(lp, want_dx, want_dw, &L);
    return !(want_dx || want_dw) || clt_conv_fits(dev, L.total * sizeof(float));
}

/* ------------------------------------------------------------------ */
/* Layout copies (kernels/conv_layout.cl)                              */
/* ------------------------------------------------------------------ */

static clt_status layout_2d(clt_device *dev, const char *kernel, size_t gx, size_t gy, size_t lx,
                            int nargs, const clt_arg *args)
{
    return clt_launch_2d(dev, "conv_layout", kernel, gx, gy, lx, 1, nargs, args);
}

/* An NCHW tensor into the lanes layout (C, H, W, NP) at `off` floats: a
 * transpose of (N, C*H*W) in 16 x 16 blocks. */
static clt_status to_lanes(clt_device *dev, cl_mem src, int n, int c, int h, int w, int np,
                           cl_mem dst, cl_ulong off)
{
    int m = c * h * w;
    size_t blocks = (size_t)np / LANES, mblocks = ((size_t)m + LANES - 1) / LANES;
    return layout_2d(dev, "conv_layout_to_lanes_t", mblocks, blocks, clt_conv_group_x(dev, CLT_CONV_COPY_LX),
                     CLT_ARGS(CLT_ARG(n), CLT_ARG(m), CLT_ARG(np), CLT_ARG(src), CLT_ARG(dst),
                              CLT_ARG(off)));
}

/* The lanes layout (ch, p, NP) at `off` back to NCHW (n, ch, p), plus bias.
 * Images under 16 pixels transpose over ch*p instead (dense layers as 1x1
 * convolutions: 0.24 -> 0.03 ms for 800 x 256). */
static clt_status from_lanes(clt_device *dev, cl_mem src, cl_ulong off, int n, int ch, int p,
                             int np, cl_mem bias, int has_bias, cl_mem dst)
{
    size_t blocks = (size_t)np / LANES, lx = clt_conv_group_x(dev, CLT_CONV_COPY_LX);
    if (p < LANES) {
        int m = ch * p;
        size_t mblocks = ((size_t)m + LANES - 1) / LANES;
        return layout_2d(dev, "conv_layout_from_lanes_flat", mblocks, blocks, lx,
                         CLT_ARGS(CLT_ARG(n), CLT_ARG(m), CLT_ARG(p), CLT_ARG(np), CLT_ARG(src),
                                  CLT_ARG(off), CLT_ARG(bias), CLT_ARG(has_bias), CLT_ARG(dst)));
    }
    size_t pblocks = ((size_t)p + LANES - 1) / LANES, rows = (size_t)ch * blocks;
    return layout_2d(dev, "conv_layout_from_lanes", pblocks, rows, lx,
                     CLT_ARGS(CLT_ARG(n), CLT_ARG(ch), CLT_ARG(p), CLT_ARG(np), CLT_ARG(src),
                              CLT_ARG(off), CLT_ARG(bias), CLT_ARG(has_bias), CLT_ARG(dst)));
}

/* x into the lanes layout of the kernels' geometry: a strided 1x1 layer
 * copies only the pixels it reads (a quarter of x at stride 2). */
static clt_status x_to_lanes(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem dst,
                             cl_ulong off)
{
    const clt_conv_geom *g = &plan->g;
    int np = plan->lanes.np;
    if (!plan->lanes.subsampled) return to_lanes(dev, x, g->n, g->c, g->h, g->w, np, dst, off);
    size_t rows = (size_t)g->c * g->oh, blocks = (size_t)np / LANES;
    return layout_2d(dev, "conv_layout_to_lanes_sub", rows, blocks, clt_conv_group_x(dev, CLT_CONV_COPY_LX),
                     CLT_ARGS(CLT_ARG(g->n), CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w),
                              CLT_ARG(g->stride), CLT_ARG(g->oh), CLT_ARG(g->ow), CLT_ARG(np),
                              CLT_ARG(x), CLT_ARG(dst), CLT_ARG(off)));
}

/* dx from the lanes layout of the kernels' geometry (a strided 1x1 layer:
 * zeros between the pixels it read). */
static clt_status dx_from_lanes(clt_device *dev, const clt_conv_plan *plan, cl_mem src,
                                cl_ulong off, cl_mem dx)
{
    const clt_conv_geom *g = &plan->g;
    int np = plan->lanes.np;
    if (!plan->lanes.subsampled) return from_lanes(dev, src, off, g->n, g->c, g->h * g->w, np, dx, 0, dx);
    return layout_2d(dev, "conv_layout_from_lanes_sub", (size_t)g->c, (size_t)np / LANES, 1,
                     CLT_ARGS(CLT_ARG(g->n), CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w),
                              CLT_ARG(g->stride), CLT_ARG(g->oh), CLT_ARG(g->ow), CLT_ARG(np),
                              CLT_ARG(src), CLT_ARG(off), CLT_ARG(dx)));
}

/* Weights w (q, r, k, k) as 16-vectors of q per (tap, r), q padded to qp:
 * the forward passes (co, c), backward-data (c, co) with swapped strides. */
static clt_status weights_to_lanes(clt_device *dev, const clt_conv_geom *g, int fwd, int qp,
                                   cl_mem w, cl_mem dst, cl_ulong off)
{
    int kk = g->k * g->k, q = fwd ? g->co : g->c, r = fwd ? g->c : g->co;
    int qs = fwd ? g->c * kk : kk, rs = fwd ? kk : g->c * kk;
    return layout_2d(dev, "conv_layout_weights", ((size_t)qp + LANES - 1) / LANES, ((size_t)r + LANES - 1) / LANES,
                     clt_conv_group_x(dev, CLT_CONV_COPY_LX),
                     CLT_ARGS(CLT_ARG(q), CLT_ARG(qp), CLT_ARG(r), CLT_ARG(kk), CLT_ARG(qs),
                              CLT_ARG(rs), CLT_ARG(w), CLT_ARG(dst), CLT_ARG(off)));
}

/* ------------------------------------------------------------------ */
/* Passes (kernels/conv_lanes.cl)                                      */
/* ------------------------------------------------------------------ */

/* Forward (fwd = 1: x -> y, blocks of output channels) or backward-data
 * (fwd = 0: dy -> dx, blocks of input channels) in the lanes layout in
 * scratch: the weights into their layout, then the register-blocked kernel
 * over channel blocks x the pixels' lane vectors. */
static clt_status rank1_pass(clt_device *dev, const clt_conv_lanes_params *lp, int fwd, cl_mem w,
                             cl_mem scratch, cl_ulong in_off, cl_ulong wt_off, cl_ulong out_off)
{
    const clt_conv_geom *g = &lp->gk;
    int rm = fwd ? lp->rm_fwd : lp->rm_bwd, padded = fwd ? lp->cop : lp->cip;
    CLT_TRY(weights_to_lanes(dev, g, fwd, padded, w, scratch, wt_off));
    char name[40];
    snprintf(name, sizeof name, "conv_lanes_%s_%d_%d", fwd ? "fwd" : "bwd_data", rm, lp->nv);
    size_t blocks = (size_t)padded / (size_t)rm;
    size_t pixels = fwd ? (size_t)g->oh * g->ow : (size_t)g->h * g->w;
    size_t items = pixels * (size_t)(lp->np / (LANES * lp->nv));
    return clt_launch_2d(dev, "conv_lanes", name, blocks, items, clt_conv_group_x(dev, blocks), 1,
                         CLT_ARGS(CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w), CLT_ARG(lp->np),
                                  CLT_ARG(g->co), CLT_ARG(g->oh), CLT_ARG(g->ow), CLT_ARG(g->k),
                                  CLT_ARG(g->stride), CLT_ARG(g->pad), CLT_ARG(padded),
                                  CLT_ARG(scratch), CLT_ARG(in_off), CLT_ARG(scratch),
                                  CLT_ARG(wt_off), CLT_ARG(scratch), CLT_ARG(out_off)));
}

static clt_status lanes_forward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                                cl_mem b, cl_mem y)
{
    const clt_conv_lanes_params *lp = &plan->lanes;
    const clt_conv_geom *g = &lp->gk;
    size_t x_elems, wf_elems, total = forward_floats(lp, &x_elems, &wf_elems);
    cl_mem scratch;
    CLT_TRY(clt_device_scratch(dev, total * sizeof(float), &scratch));
    cl_ulong x_off = 0, wf_off = x_elems, y_off = x_elems + wf_elems;
    CLT_TRY(x_to_lanes(dev, plan, x, scratch, x_off));
    CLT_TRY(rank1_pass(dev, lp, 1, w, scratch, x_off, wf_off, y_off));
    int has_bias = b != NULL;
    cl_mem bias = b ? b : w; /* any valid buffer when there is no bias */
    return from_lanes(dev, scratch, y_off, g->n, g->co, g->oh * g->ow, lp->np, bias, has_bias, y);
}

static clt_status backward_weights(clt_device *dev, const clt_conv_plan *plan, cl_mem x,
                                   cl_mem scratch, const bwd_layout *L, cl_mem dw)
{
    const clt_conv_lanes_params *lp = &plan->lanes;
    const clt_conv_geom *g = &lp->gk;
    cl_ulong x_off = L->x_off, dy_off = L->dy_off, part_off = L->part_off;
    CLT_TRY(x_to_lanes(dev, plan, x, scratch, x_off));
    int wa = lp->bw_wa, wb = lp->bw_wb, kk = g->k * g->k, chunks = lp->bw_chunks;
    size_t g1 = (size_t)((g->co + wa - 1) / wa) * (size_t)((g->c + wb - 1) / wb) * (size_t)chunks;
    char name[40];
    snprintf(name, sizeof name, "conv_lanes_bwd_weights_%d_%d", wa, wb);
    cl_mem part = chunks > 1 ? scratch : dw;
    cl_ulong poff = chunks > 1 ? part_off : 0;
    CLT_TRY(clt_launch_2d(dev, "conv_lanes", name, (size_t)kk, g1, clt_conv_group_x(dev, (size_t)kk), 1,
                          CLT_ARGS(CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w), CLT_ARG(lp->np),
                                   CLT_ARG(g->co), CLT_ARG(g->oh), CLT_ARG(g->ow), CLT_ARG(g->k),
                                   CLT_ARG(g->stride), CLT_ARG(g->pad), CLT_ARG(lp->bw_rows),
                                   CLT_ARG(lp->bw_vecs), CLT_ARG(lp->bw_vchunks), CLT_ARG(chunks),
                                   CLT_ARG(scratch), CLT_ARG(x_off), CLT_ARG(scratch),
                                   CLT_ARG(dy_off), CLT_ARG(part), CLT_ARG(poff))));
    if (chunks == 1) return CLT_OK;
    return clt_conv_sum_chunks(dev, (int)((size_t)g->co * g->c * (size_t)kk), chunks, scratch, part_off, dw);
}

/* dy goes into the lanes layout once for both passes. */
static clt_status lanes_backward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                                 cl_mem dy, cl_mem dx, cl_mem dw, cl_mem db)
{
    const clt_conv_lanes_params *lp = &plan->lanes;
    const clt_conv_geom *g = &lp->gk;
    if (db) CLT_TRY(clt_conv_bias_grad(dev, &plan->g, dy, db));
    if (!dx && !dw) return CLT_OK;
    bwd_layout L;
    backward_layout(lp, dx != NULL, dw != NULL, &L);
    cl_mem scratch;
    CLT_TRY(clt_device_scratch(dev, L.total * sizeof(float), &scratch));
    CLT_TRY(to_lanes(dev, dy, g->n, g->co, g->oh, g->ow, lp->np, scratch, L.dy_off));
    if (dx) {
        CLT_TRY(rank1_pass(dev, lp, 0, w, scratch, L.dy_off, L.wb_off, L.dx_off));
        CLT_TRY(dx_from_lanes(dev, plan, scratch, L.dx_off, dx));
    }
    if (dw) CLT_TRY(backward_weights(dev, plan, x, scratch, &L, dw));
    return CLT_OK;
}

const clt_conv_algo clt_conv_lanes = {"lanes", lanes_supports, lanes_plan, lanes_forward, lanes_backward};
