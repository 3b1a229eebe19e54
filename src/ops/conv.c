/* 2-D convolution: geometry, the algorithms, and the tensor API.
 *
 * Semantics (DESIGN.md): cross-correlation, zero padding, weight (co, c, k, k),
 * bias per output channel, oh = (h + 2 pad - k) / stride + 1. The backward
 * gives gradient SUMS over the batch and overwrites dx, dw, db.
 *
 * Algorithms (kernels/conv.cl has the kernel-level details):
 *
 *  CONV_LANES  (CPU devices) the batch is the SIMD lane: activations are
 *              copied to a (C, H, W, N') layout and each work-item keeps an
 *              RM channels x 16*NV images register block in float16
 *              accumulators (rank-1 updates: RM broadcast weights times NV
 *              vector loads). Forward and backward-data visit only the taps
 *              that land inside the input (backward-data only those of the
 *              pixel's stride phase: no zero dilation, no padded copies);
 *              backward-weights keeps WA x WB channels of one tap (the
 *              block that pads the channels least, see pick_bwdw_block) and
 *              sums partials over chunks of rows x lanes in a fixed order.
 *              The copies into and out of the layout are 16 x 16 in-register
 *              transposes (2x the old per-element gathers); a 1x1 layer with
 *              stride (a ResNet projection) copies only the pixels it reads
 *              and runs as a stride-1 layer on them. Layers with stride 1
 *              and a tiny reduction (a first layer: c*k*k <= 27 forward, <= 9
 *              backward-weights) use direct NCHW kernels instead (see
 *              direct_fwd_ok), which read x in place unless it needs padding
 *              and sum db on the way.
 *  CONV_GEMM   (GPUs, accelerators) im2col of a chunk of images (the whole
 *              shard when it fits 512 MiB) into a (c*k*k, images*oh*ow)
 *              matrix, one CLBlast SGEMM per chunk and pass, gather col2im
 *              (every dx element written once). Float16-per-work-item
 *              register blocks would spill and defeat coalescing on a GPU,
 *              while CLBlast is tuned for GPUs.
 * CLTRAIN_CONV_ALGO=lanes|gemm overrides the choice (the tests run both).
 *
 * Measured with bench/bench_conv.c on PoCL 3.1 (LLVM 15), one "pthread"
 * device on both cores of an AMD EPYC (Zen 5, AVX-512; `cltrain bench ops`
 * measures its float16 FMA peak at ~468 GFLOP/s), batch 256: GFLOP/s, % of
 * that peak and in brackets the previous kernels' GFLOP/s, measured in the
 * same rounds (the two libraries alternating, shape by shape; best of 6
 * rounds of 7 runs on a shared, busy machine). Each pass is timed whole
 * (layout copies, weight transposes, im2col included; backward-weights
 * includes db). Differences under ~10% are noise: interleaved in one
 * process, R18 256->512 k3 s2 forward and the 7x7 / 4x4 backward-data
 * (unchanged kernels) measured the same for both. The gemm figures are
 * from an earlier run (that path did not change).
 *
 *                            lanes (+direct)                               gemm (CLBlast)
 *   shape                    fwd           bwd-d         bwd-w            fwd  bwd-d bwd-w
 *   LeNet 1->20 k3 28x28     108 23% (40)   20  4% (14)   86 18% (37)      1.9   1.8   2.3
 *   LeNet 20->50 k5 13x13    308 66%(253)  292 62%(229)  276 59%(166)      8.6  11.1   7.9
 *   R18 stem 1->64 k3 p1 28   77 16% (41)   20  4% (16)   64 14% (33)
 *   R18 64->64 k3 p1 28x28   288 62%(266)  283 60%(263)  298 64%(194)     12.2  13.0   8.1
 *   R18 64->128 k3 s2 p1 28  270 58%(225)  267 57%(229)  228 49%(162)      8.7  16.6  10.9
 *   R18 64->128 k1 s2 28x28   96 21% (59)   92 20% (47)   90 19% (54)      7.0   7.4   9.7
 *   R18 128->128 k3 p1 14    279 60%(263)  283 60%(263)  338 72%(226)      8.5  16.7   9.2
 *   R18 128->256 k3 s2 p1 14 264 56%(244)  367 78%(326)  264 56%(216)
 *   R18 128->256 k1 s2 14x14 178 38% (97)  138 29% (92)  136 29% (85)
 *   R18 256->256 k3 p1 7x7   297 63%(299)  286 61%(299)  370 79%(348)     19.1   6.8   5.3
 *   R18 256->512 k3 s2 p1 7  316 68%(367)  306 65%(308)  341 73%(311)
 *   R18 256->512 k1 s2 7x7   215 46%(185)  148 32%(153)  165 35%(135)
 *   R18 512->512 k3 p1 4x4   315 67%(294)  303 65%(320)  408 87%(403)     15.3  12.3  13.4
 *
 * (First layers never need backward-data: dx would be the net's input.)
 * The first layers are bound by memory, not FMAs: LeNet conv1 writes (and
 * its backward reads) 13.8 MB of y / dy for 62 MFLOP, the stem 51 MB for
 * 231 MFLOP. The 1x1 projections move 51 MB of x or dx for 0.8 GFLOP
 * (28x28); a kernel over NCHW pixels without the lanes copies is the next
 * step for them.
 * Along the way: without "#pragma unroll" on the register-block loops PoCL
 * kept the accumulators in memory (3-6x slower); storing results straight
 * into NCHW from the lanes kernels (a scalar scatter) was 1.5-6x slower than
 * vector stores plus the transposing copy; a work-group holding all channel
 * blocks of one pixel ran the forward 1.6-2x faster than one block per group;
 * copy kernels whose neighbouring work-items touched 16 different images
 * (pages) each ran 2-2.5x slower than ones walking along the same images. */
#include "ops/conv.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/gemm.h"
#include "runtime/launch.h"
#include "tensor/tensor.h"

#define LANES 16
/* Work-group width of the copy and reduction kernels: fixed, so PoCL (which
 * compiles a kernel once per work-group size) builds each of them once. */
#define COPY_LX 8
/* Scratch regions start on 256-byte boundaries. */
#define ALIGN_FLOATS 64

typedef enum conv_algo { CONV_LANES, CONV_GEMM } conv_algo;

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

static size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

static size_t max_wg(const clt_device *dev)
{
    return dev->info.max_work_group_size > 0 ? (size_t)dev->info.max_work_group_size : 1;
}

/* ------------------------------------------------------------------ */
/* Algorithm choice                                                    */
/* ------------------------------------------------------------------ */

static clt_status pick_algo(const clt_device *dev, conv_algo *out)
{
    const char *e = getenv("CLTRAIN_CONV_ALGO");
    if (e && e[0]) {
        if (strcmp(e, "lanes") == 0) *out = CONV_LANES;
        else if (strcmp(e, "gemm") == 0) *out = CONV_GEMM;
        else
            return clt_fail(CLT_ERR_INVALID_ARG, "CLTRAIN_CONV_ALGO=\"%s\": expected lanes or gemm", e);
        return CLT_OK;
    }
    *out = dev->info.type == CLT_DEVICE_CPU ? CONV_LANES : CONV_GEMM;
    return CLT_OK;
}

clt_status clt_conv_uses_lanes(const clt_device *dev, int *yes)
{
    conv_algo a = CONV_GEMM;
    CLT_TRY(pick_algo(dev, &a));
    *yes = a == CONV_LANES;
    return CLT_OK;
}

/* CLTRAIN_CONV_BUDGET (bytes, a diagnostic knob the tests use to reach the
 * chunked and fallback paths with small shapes): 0 when unset. */
static size_t env_budget(void)
{
    const char *e = getenv("CLTRAIN_CONV_BUDGET");
    if (!e || !e[0]) return 0;
    char *end;
    unsigned long long v = strtoull(e, &end, 10);
    return *end == 0 && v > 0 ? (size_t)v : 0;
}

/* Work-buffer budget of the gemm algorithm, which chunks the batch to fit:
 * the device's largest allocation, at most 512 MiB. */
static size_t gemm_budget(const clt_device *dev)
{
    size_t cap = env_budget();
    if (cap) return cap;
    cap = (size_t)512 << 20;
    if (dev->info.max_alloc_bytes > 0 && (size_t)dev->info.max_alloc_bytes < cap)
        cap = (size_t)dev->info.max_alloc_bytes;
    return cap;
}

/* Whether the lanes algorithm's one scratch buffer of `bytes` can exist on
 * the device; it falls back to the chunked gemm algorithm when not. */
static int fits(const clt_device *dev, size_t bytes)
{
    size_t cap = env_budget();
    if (cap) return bytes <= cap;
    return dev->info.max_alloc_bytes <= 0 || bytes <= (size_t)dev->info.max_alloc_bytes;
}

/* ------------------------------------------------------------------ */
/* CONV_LANES                                                          */
/* ------------------------------------------------------------------ */

typedef struct lanes_plan {
    int np; /* batch padded: a multiple of 16 (of 32 when nv == 2) */
    int nv; /* float16 vectors per work-item: 1 or 2 */
} lanes_plan;

static void lanes_plan_init(const clt_conv_geom *g, lanes_plan *pl)
{
    /* 32 lanes per item when the batch has more than 16 images (two vector
     * loads per broadcast weight), 16 for small batches. */
    pl->nv = g->n > LANES ? 2 : 1;
    pl->np = (int)round_up((size_t)g->n, (size_t)(LANES * pl->nv));
}

/* Register block height for `ch` output channels: the variant (4, 8, 10)
 * that wastes the fewest padded channels, 8 on a tie. */
static int pick_rm(int ch)
{
    if (ch <= 4) return 4;
    size_t c8 = round_up((size_t)ch, 8), c10 = round_up((size_t)ch, 10);
    return c10 < c8 ? 10 : 8;
}

/* Work-group shape of the forward and backward-data kernels: all channel
 * blocks of one pixel, which share the input window in cache. */
static size_t group_x(const clt_device *dev, size_t blocks)
{
    return blocks < max_wg(dev) ? blocks : max_wg(dev);
}

/* Forward scratch: xT (C, H, W, NP), the transposed weights, yT (CO, P, NP). */
static void lanes_forward_sizes(const clt_conv_geom *g, const lanes_plan *pl, size_t *x_elems,
                                size_t *wf_elems, size_t *y_elems)
{
    size_t cop = round_up((size_t)g->co, (size_t)pick_rm(g->co));
    *x_elems = round_up((size_t)g->c * g->h * g->w * pl->np, ALIGN_FLOATS);
    *wf_elems = round_up((size_t)g->k * g->k * g->c * cop, ALIGN_FLOATS);
    *y_elems = (size_t)g->co * g->oh * g->ow * pl->np;
}

/* Copies an NCHW tensor into the lanes layout (C, H, W, NP) at `off`
 * floats: a transpose of (N, C*H*W) in 16 x 16 blocks. */
static clt_status to_lanes(clt_device *dev, cl_mem src, int n, int c, int h, int w, int np,
                           cl_mem dst, cl_ulong off)
{
    int m = c * h * w;
    size_t blocks = (size_t)np / LANES, mblocks = ((size_t)m + LANES - 1) / LANES;
    return clt_launch_2d(dev, "conv", "conv_to_lanes_t", mblocks, blocks, group_x(dev, COPY_LX), 1,
                         CLT_ARGS(CLT_ARG(n), CLT_ARG(m), CLT_ARG(np), CLT_ARG(src), CLT_ARG(dst),
                                  CLT_ARG(off)));
}

/* The lanes layout (ch, p, NP) at `off` back to NCHW (n, ch, p), plus bias.
 * Images under 16 pixels transpose over ch*p instead (dense layers as 1x1
 * convolutions: 0.24 -> 0.03 ms for 800 x 256). */
static clt_status from_lanes(clt_device *dev, cl_mem src, cl_ulong off, int n, int ch, int p,
                             int np, cl_mem bias, int has_bias, cl_mem dst)
{
    size_t blocks = (size_t)np / LANES;
    if (p < LANES) {
        int m = ch * p;
        size_t mblocks = ((size_t)m + LANES - 1) / LANES;
        return clt_launch_2d(dev, "conv", "conv_from_lanes_flat", mblocks, blocks,
                             group_x(dev, COPY_LX), 1,
                             CLT_ARGS(CLT_ARG(n), CLT_ARG(m), CLT_ARG(p), CLT_ARG(np), CLT_ARG(src),
                                      CLT_ARG(off), CLT_ARG(bias), CLT_ARG(has_bias),
                                      CLT_ARG(dst)));
    }
    size_t pblocks = ((size_t)p + LANES - 1) / LANES, rows = (size_t)ch * blocks;
    return clt_launch_2d(dev, "conv", "conv_from_lanes", pblocks, rows, group_x(dev, COPY_LX), 1,
                         CLT_ARGS(CLT_ARG(n), CLT_ARG(ch), CLT_ARG(p), CLT_ARG(np), CLT_ARG(src),
                                  CLT_ARG(off), CLT_ARG(bias), CLT_ARG(has_bias), CLT_ARG(dst)));
}

/* A 1x1 convolution with stride > 1 and no padding reads every stride-th
 * row and column only: the lanes kernels then run the stride-1 geometry of
 * that subsampled input (*gk: h = oh, w = ow), which conv_to_lanes_sub
 * copies (a quarter of x at stride 2) and conv_from_lanes_sub spreads back
 * into dx with zeros between. Returns whether it applies; *gk = *g when
 * not. */
static int lanes_subsample(const clt_conv_geom *g, clt_conv_geom *gk)
{
    *gk = *g;
    if (g->k != 1 || g->pad != 0 || g->stride == 1) return 0;
    gk->h = g->oh;
    gk->w = g->ow;
    gk->stride = 1;
    return 1;
}

/* x (geometry g) into the lanes layout of the kernel geometry. */
static clt_status x_to_lanes(clt_device *dev, const clt_conv_geom *g, cl_mem x, int np, cl_mem dst,
                             cl_ulong off)
{
    clt_conv_geom gk;
    if (!lanes_subsample(g, &gk)) return to_lanes(dev, x, g->n, g->c, g->h, g->w, np, dst, off);
    size_t rows = (size_t)g->c * g->oh, blocks = (size_t)np / LANES;
    return clt_launch_2d(dev, "conv", "conv_to_lanes_sub", rows, blocks, group_x(dev, COPY_LX), 1,
                         CLT_ARGS(CLT_ARG(g->n), CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w),
                                  CLT_ARG(g->stride), CLT_ARG(g->oh), CLT_ARG(g->ow), CLT_ARG(np),
                                  CLT_ARG(x), CLT_ARG(dst), CLT_ARG(off)));
}

/* dx from the lanes layout of the kernel geometry. */
static clt_status dx_from_lanes(clt_device *dev, const clt_conv_geom *g, cl_mem src, cl_ulong off,
                                int np, cl_mem dx)
{
    clt_conv_geom gk;
    if (!lanes_subsample(g, &gk))
        return from_lanes(dev, src, off, g->n, g->c, g->h * g->w, np, dx, 0, dx);
    size_t blocks = (size_t)np / LANES;
    return clt_launch_2d(dev, "conv", "conv_from_lanes_sub", (size_t)g->c, blocks, 1, 1,
                         CLT_ARGS(CLT_ARG(g->n), CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w),
                                  CLT_ARG(g->stride), CLT_ARG(g->oh), CLT_ARG(g->ow), CLT_ARG(np),
                                  CLT_ARG(src), CLT_ARG(off), CLT_ARG(dx)));
}

static clt_status lanes_forward(clt_device *dev, const clt_conv_geom *g0, cl_mem x, cl_mem w,
                                cl_mem b, cl_mem y)
{
    clt_conv_geom gk;
    lanes_subsample(g0, &gk);
    const clt_conv_geom *g = &gk;
    lanes_plan pl;
    lanes_plan_init(g, &pl);
    int rm = pick_rm(g->co);
    int cop = (int)round_up((size_t)g->co, (size_t)rm);
    size_t x_elems, wf_elems, y_elems;
    lanes_forward_sizes(g, &pl, &x_elems, &wf_elems, &y_elems);
    cl_mem scratch;
    CLT_TRY(clt_device_scratch(dev, (x_elems + wf_elems + y_elems) * sizeof(float), &scratch));
    cl_ulong x_off = 0, wf_off = x_elems, y_off = x_elems + wf_elems;
    CLT_TRY(x_to_lanes(dev, g0, x, pl.np, scratch, x_off));
    size_t wblocks = ((size_t)cop + LANES - 1) / LANES;
    CLT_TRY(clt_launch_2d(dev, "conv", "conv_weights_fwd", wblocks, (size_t)g->c,
                          group_x(dev, COPY_LX), 1,
                          CLT_ARGS(CLT_ARG(g->co), CLT_ARG(g->c), CLT_ARG(g->k), CLT_ARG(cop),
                                   CLT_ARG(w), CLT_ARG(scratch), CLT_ARG(wf_off))));
    char name[32];
    snprintf(name, sizeof name, "conv_fwd_%d_%d", rm, pl.nv);
    size_t blocks = (size_t)cop / (size_t)rm;
    size_t items = (size_t)g->oh * g->ow * (size_t)(pl.np / (LANES * pl.nv));
    CLT_TRY(clt_launch_2d(dev, "conv", name, blocks, items, group_x(dev, blocks), 1,
                          CLT_ARGS(CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w), CLT_ARG(pl.np),
                                   CLT_ARG(g->co), CLT_ARG(cop), CLT_ARG(g->k),
                                   CLT_ARG(g->stride), CLT_ARG(g->pad), CLT_ARG(g->oh),
                                   CLT_ARG(g->ow), CLT_ARG(scratch), CLT_ARG(x_off),
                                   CLT_ARG(scratch), CLT_ARG(wf_off), CLT_ARG(scratch),
                                   CLT_ARG(y_off))));
    int has_bias = b != NULL;
    cl_mem bias = b ? b : w; /* any valid buffer when there is no bias */
    return from_lanes(dev, scratch, y_off, g->n, g->co, g->oh * g->ow, pl.np, bias, has_bias, y);
}

/* Backward-weights register block of conv_bwd_weights_<WA>_<WB>
 * (kernels/conv.cl): WA output x WB input channels of one tap, WA*WB
 * accumulators fed by WA + WB vector loads. The choice minimises the padded
 * work times (1 + loads per FMA), which picks 5 x 5 for LeNet conv2 (50 x 20
 * channels: 4 x 6 computed 52 x 24) and for the ResNet widths (64 x 64
 * pads to 65 x 65, but 4 x 4 needs 25% more loads per FMA), and 6 x 4 or
 * 4 x 6 where they fit much better (3 input channels). Measured on the
 * 2-core EPYC, ms (4x4 / 4x6 / 6x4 / 5x5): LeNet conv2 4.45 / 4.54 / 4.12 /
 * 3.73, R18 128 14x14 50.5 / 43.8 / 45.1 / 42.9, 512 4x4 52.2 / 46.0 / 46.9 /
 * 44.7. CLTRAIN_CONV_BWDW=AxB forces a variant (the tests run each). */
typedef struct bwdw_block {
    int wa, wb;
} bwdw_block;

static const bwdw_block bwdw_blocks[] = {{5, 5}, {4, 6}, {6, 4}, {5, 4}, {4, 5}, {4, 4}};

#define N_BWDW_BLOCKS (sizeof bwdw_blocks / sizeof bwdw_blocks[0])

/* The variant CLTRAIN_CONV_BWDW names: its index, -1 when unset or empty,
 * -2 when it names none. */
static int env_bwdw_block(void)
{
    const char *e = getenv("CLTRAIN_CONV_BWDW");
    if (!e || !e[0]) return -1;
    for (size_t i = 0; i < N_BWDW_BLOCKS; i++) {
        char name[8];
        snprintf(name, sizeof name, "%dx%d", bwdw_blocks[i].wa, bwdw_blocks[i].wb);
        if (strcmp(e, name) == 0) return (int)i;
    }
    return -2;
}

static clt_status check_bwdw_env(void)
{
    if (env_bwdw_block() != -2) return CLT_OK;
    return clt_fail(CLT_ERR_INVALID_ARG,
                    "CLTRAIN_CONV_BWDW=\"%s\": expected 5x5, 4x6, 6x4, 5x4, 4x5 or 4x4",
                    getenv("CLTRAIN_CONV_BWDW"));
}

static bwdw_block pick_bwdw_block(int c, int co)
{
    const size_t nblk = N_BWDW_BLOCKS;
    int forced = env_bwdw_block();
    if (forced >= 0) return bwdw_blocks[forced];
    bwdw_block best = bwdw_blocks[0];
    double best_cost = 0;
    for (size_t i = 0; i < nblk; i++) {
        bwdw_block b = bwdw_blocks[i];
        double work = (double)round_up((size_t)co, (size_t)b.wa) * (double)round_up((size_t)c, (size_t)b.wb);
        double cost = work * (1.0 + (double)(b.wa + b.wb) / (double)(b.wa * b.wb));
        if (i == 0 || cost < best_cost) {
            best = b;
            best_cost = cost;
        }
    }
    return best;
}

/* Backward-weights chunking: a chunk is `rows` output rows x `vecs` 16-lane
 * vectors. A work-group (the k*k taps of one WA x WB block) streams WB input
 * channels and WA dy channels of its chunk; keep that within ~512 KiB (half
 * an L2 here; 256 KiB ran R18 64 28x28 40% slower: more, smaller chunks)
 * so it is read from memory once and then from cache, and keep enough
 * work-items to fill every compute unit. */
typedef struct bwdw_chunks {
    int rows, vecs, vchunks, chunks;
    bwdw_block blk;
} bwdw_chunks;

static void bwd_weights_chunks(const clt_device *dev, const clt_conv_geom *g, const lanes_plan *pl,
                               bwdw_chunks *ck)
{
    const size_t target = (size_t)512 << 10;
    bwdw_block blk = pick_bwdw_block(g->c, g->co);
    size_t wa = (size_t)blk.wa, wb = (size_t)blk.wb;
    int nvec = pl->np / LANES;
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
    size_t want = (size_t)(dev->info.compute_units > 0 ? dev->info.compute_units : 1) * 16;
    while (rows > 1 && items * (size_t)((g->oh + rows - 1) / rows) * (size_t)((nvec + vecs - 1) / vecs) < want)
        rows = (rows + 1) / 2;
    ck->rows = rows;
    ck->vecs = vecs;
    ck->vchunks = (nvec + vecs - 1) / vecs;
    ck->chunks = (g->oh + rows - 1) / rows * ck->vchunks;
    ck->blk = blk;
}

typedef struct lanes_bwd_layout {
    int rm, cip;      /* backward-data register block, padded input channels */
    bwdw_chunks ck;   /* backward-weights chunks */
    size_t dy_off, x_off, wb_off, dx_off, part_off, total; /* scratch regions, floats */
} lanes_bwd_layout;

static void lanes_backward_layout(const clt_device *dev, const clt_conv_geom *g,
                                  const lanes_plan *pl, int want_dx, int want_dw,
                                  lanes_bwd_layout *L)
{
    L->rm = pick_rm(g->c);
    L->cip = (int)round_up((size_t)g->c, (size_t)L->rm);
    memset(&L->ck, 0, sizeof L->ck);
    if (want_dw) bwd_weights_chunks(dev, g, pl, &L->ck);
    size_t kk = (size_t)g->k * g->k;
    size_t dy_elems = round_up((size_t)g->co * g->oh * g->ow * pl->np, ALIGN_FLOATS);
    size_t x_elems = want_dw ? round_up((size_t)g->c * g->h * g->w * pl->np, ALIGN_FLOATS) : 0;
    size_t wb_elems = want_dx ? round_up(kk * g->co * L->cip, ALIGN_FLOATS) : 0;
    size_t dx_elems = want_dx ? round_up((size_t)g->c * g->h * g->w * pl->np, ALIGN_FLOATS) : 0;
    size_t part_elems = want_dw && L->ck.chunks > 1 ? (size_t)L->ck.chunks * g->co * g->c * kk : 0;
    L->dy_off = 0;
    L->x_off = dy_elems;
    L->wb_off = L->x_off + x_elems;
    L->dx_off = L->wb_off + wb_elems;
    L->part_off = L->dx_off + dx_elems;
    L->total = L->part_off + part_elems;
}

static clt_status lanes_backward(clt_device *dev, const clt_conv_geom *g0, cl_mem x, cl_mem w,
                                 cl_mem dy, cl_mem dx, cl_mem dw)
{
    clt_conv_geom gk;
    lanes_subsample(g0, &gk);
    const clt_conv_geom *g = &gk;
    lanes_plan pl;
    lanes_plan_init(g, &pl);
    lanes_bwd_layout L;
    lanes_backward_layout(dev, g, &pl, dx != NULL, dw != NULL, &L);
    int kk = g->k * g->k;
    cl_mem scratch;
    CLT_TRY(clt_device_scratch(dev, L.total * sizeof(float), &scratch));
    cl_ulong dy_off = L.dy_off, x_off = L.x_off, wb_off = L.wb_off, dx_off = L.dx_off,
             part_off = L.part_off;
    CLT_TRY(to_lanes(dev, dy, g->n, g->co, g->oh, g->ow, pl.np, scratch, dy_off));
    if (dx) {
        size_t wblocks = ((size_t)L.cip + LANES - 1) / LANES;
        CLT_TRY(clt_launch_2d(dev, "conv", "conv_weights_bwd", wblocks, (size_t)g->co,
                              group_x(dev, COPY_LX), 1,
                              CLT_ARGS(CLT_ARG(g->co), CLT_ARG(g->c), CLT_ARG(g->k), CLT_ARG(L.cip),
                                       CLT_ARG(w), CLT_ARG(scratch), CLT_ARG(wb_off))));
        char name[40];
        snprintf(name, sizeof name, "conv_bwd_data_%d_%d", L.rm, pl.nv);
        size_t blocks = (size_t)L.cip / (size_t)L.rm;
        size_t items = (size_t)g->h * g->w * (size_t)(pl.np / (LANES * pl.nv));
        CLT_TRY(clt_launch_2d(dev, "conv", name, blocks, items, group_x(dev, blocks), 1,
                              CLT_ARGS(CLT_ARG(g->c), CLT_ARG(L.cip), CLT_ARG(g->h), CLT_ARG(g->w),
                                       CLT_ARG(pl.np), CLT_ARG(g->co), CLT_ARG(g->oh),
                                       CLT_ARG(g->ow), CLT_ARG(g->k), CLT_ARG(g->stride),
                                       CLT_ARG(g->pad), CLT_ARG(scratch), CLT_ARG(dy_off),
                                       CLT_ARG(scratch), CLT_ARG(wb_off), CLT_ARG(scratch),
                                       CLT_ARG(dx_off))));
        CLT_TRY(dx_from_lanes(dev, g0, scratch, dx_off, pl.np, dx));
    }
    if (dw) {
        CLT_TRY(x_to_lanes(dev, g0, x, pl.np, scratch, x_off));
        const bwdw_chunks *ck = &L.ck;
        int wa = ck->blk.wa, wb = ck->blk.wb;
        size_t g1 = (size_t)((g->co + wa - 1) / wa) * (size_t)((g->c + wb - 1) / wb) *
                    (size_t)ck->chunks;
        char name[40];
        snprintf(name, sizeof name, "conv_bwd_weights_%d_%d", wa, wb);
        cl_mem part = ck->chunks > 1 ? scratch : dw;
        cl_ulong poff = ck->chunks > 1 ? part_off : 0;
        CLT_TRY(clt_launch_2d(dev, "conv", name, (size_t)kk, g1,
                              group_x(dev, (size_t)kk), 1,
                              CLT_ARGS(CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w), CLT_ARG(pl.np),
                                       CLT_ARG(g->co), CLT_ARG(g->oh), CLT_ARG(g->ow),
                                       CLT_ARG(g->k), CLT_ARG(g->stride), CLT_ARG(g->pad),
                                       CLT_ARG(ck->rows), CLT_ARG(ck->vecs), CLT_ARG(ck->vchunks),
                                       CLT_ARG(ck->chunks), CLT_ARG(scratch), CLT_ARG(x_off),
                                       CLT_ARG(scratch), CLT_ARG(dy_off), CLT_ARG(part),
                                       CLT_ARG(poff))));
        if (ck->chunks > 1) {
            int n = (int)((size_t)g->co * g->c * (size_t)kk);
            CLT_TRY(clt_launch_1d(dev, "conv", "conv_sum_chunks", ((size_t)n + LANES - 1) / LANES,
                                  CLT_ARGS(CLT_ARG(n), CLT_ARG(ck->chunks), CLT_ARG(scratch),
                                           CLT_ARG(part_off), CLT_ARG(dw))));
        }
    }
    return CLT_OK;
}

/* ------------------------------------------------------------------ */
/* Direct NCHW kernels (stride 1, small c*k*k: first layers)           */
/* ------------------------------------------------------------------ */

/* Taps per work-item of conv_bwd_weights_direct (kernels/conv.cl). */
#define TG 9

/* When the NCHW-direct kernels beat the lanes algorithm: stride 1 and a
 * small reduction, where the layout copies (whole output / dy tensors)
 * cost more than the arithmetic. Measured on both cores, lanes / direct,
 * batch 256, ms (forward; backward-weights + bias):
 *   1->20 k3 28x28 (LeNet conv1)    2.20 / 0.91   3.16 / 1.25
 *   1->64 k3 p1 28x28 (ResNet stem) 10.8 / 2.53   12.5 / 4.45
 *   3->32 k3 p1 28x28               4.66 / 1.66   (c*k*k 27: lanes)
 * The backward-weights kernel reads dy once per group of TG taps, so it
 * is only used with a single group. */
static int direct_fwd_ok(const clt_conv_geom *g)
{
    return g->stride == 1 && g->k > 1 && (size_t)g->c * g->k * g->k <= 27;
}

static int direct_bwdw_ok(const clt_conv_geom *g)
{
    return g->stride == 1 && (size_t)g->c * g->k * g->k <= TG;
}

typedef struct direct_plan {
    int hp, wpp;     /* rows and row length of the kernels' input */
    int copy;        /* whether that input is a padded copy (else x itself) */
    size_t xp_elems; /* floats of the copy (0 without one) */
} direct_plan;

/* The kernels read 32 output pixels of a row as two vectors that slide
 * back to end at OW, so with OW >= 16 they stay inside a row of
 * W + 2*PAD: without padding they read x itself. Shorter rows read 16 + K - 1
 * floats and need a copy that wide. */
static void direct_plan_init(const clt_conv_geom *g, direct_plan *d)
{
    d->hp = g->h + 2 * g->pad;
    d->wpp = g->w + 2 * g->pad;
    d->copy = g->pad > 0 || g->ow < LANES;
    if (g->ow < LANES && d->wpp < LANES + g->k - 1) d->wpp = LANES + g->k - 1;
    d->xp_elems = d->copy ? round_up((size_t)g->n * g->c * d->hp * d->wpp, ALIGN_FLOATS) : 0;
}

/* The kernels' input: the padded copy in `scratch` at `off` floats, or x. */
static clt_status direct_input(clt_device *dev, const clt_conv_geom *g, const direct_plan *d,
                               cl_mem x, cl_mem scratch, cl_ulong off, cl_mem *in, cl_ulong *in_off)
{
    if (!d->copy) {
        *in = x;
        *in_off = 0;
        return CLT_OK;
    }
    *in = scratch;
    *in_off = off;
    int rows = g->n * g->c * d->hp;
    return clt_launch_1d(dev, "conv", "conv_pad_rows", (size_t)rows,
                         CLT_ARGS(CLT_ARG(g->h), CLT_ARG(g->w), CLT_ARG(g->pad), CLT_ARG(d->hp),
                                  CLT_ARG(d->wpp), CLT_ARG(rows), CLT_ARG(x), CLT_ARG(scratch),
                                  CLT_ARG(off)));
}

static clt_status direct_forward(clt_device *dev, const clt_conv_geom *g, cl_mem x, cl_mem w,
                                 cl_mem b, cl_mem y)
{
    direct_plan d;
    direct_plan_init(g, &d);
    cl_mem scratch = NULL, in;
    cl_ulong in_off;
    if (d.copy) CLT_TRY(clt_device_scratch(dev, d.xp_elems * sizeof(float), &scratch));
    CLT_TRY(direct_input(dev, g, &d, x, scratch, 0, &in, &in_off));
    int rm = pick_rm(g->co);
    char name[32];
    snprintf(name, sizeof name, "conv_fwd_direct_%d", rm);
    size_t blocks = ((size_t)g->co + (size_t)rm - 1) / (size_t)rm;
    /* rows per work-item: a whole image unless that leaves too few items */
    size_t want = (size_t)(dev->info.compute_units > 0 ? dev->info.compute_units : 1) * 16;
    size_t per = blocks * (size_t)g->n, rgroups = per >= want ? 1 : (want + per - 1) / per;
    if (rgroups > (size_t)g->oh) rgroups = (size_t)g->oh;
    int rows = (int)(((size_t)g->oh + rgroups - 1) / rgroups);
    rgroups = ((size_t)g->oh + (size_t)rows - 1) / (size_t)rows;
    size_t items = (size_t)g->n * rgroups;
    int has_bias = b != NULL;
    cl_mem bias = b ? b : w;
    return clt_launch_2d(dev, "conv", name, blocks, items, group_x(dev, blocks), 1,
                         CLT_ARGS(CLT_ARG(g->n), CLT_ARG(g->c), CLT_ARG(g->co), CLT_ARG(g->k),
                                  CLT_ARG(d.hp), CLT_ARG(d.wpp), CLT_ARG(g->oh), CLT_ARG(g->ow),
                                  CLT_ARG(rows), CLT_ARG(in), CLT_ARG(in_off), CLT_ARG(w), CLT_ARG(bias),
                                  CLT_ARG(has_bias), CLT_ARG(y)));
}

/* Output channels per work-item of conv_bwd_weights_direct_<CB>: each x
 * vector load feeds CB channels (3 x 9 accumulators). LeNet conv1
 * backward-weights, ms, CB = 1 / 2 / 3: 1.23 / 0.98 / 0.90; the ResNet stem
 * 9.1 / 7.1 / 6.5 (it streams 51 MB of dy). */
static int direct_bwd_cb(const clt_conv_geom *g) { return g->co < 3 ? g->co : 3; }

/* Backward-weights work split: CB channels x groups of TG taps x chunks of
 * images, enough work-items for every compute unit. Returns the
 * partial-sum floats needed (dw's and db's partials). */
static size_t direct_bwd_chunks(const clt_device *dev, const clt_conv_geom *g, int *groups,
                                int *chunks, int *imgs)
{
    int ckk = g->c * g->k * g->k, cb = direct_bwd_cb(g);
    *groups = (ckk + TG - 1) / TG;
    size_t want = (size_t)(dev->info.compute_units > 0 ? dev->info.compute_units : 1) * 16;
    size_t per = ((size_t)g->co + (size_t)cb - 1) / (size_t)cb * (size_t)*groups;
    size_t ch = per >= want ? 1 : (want + per - 1) / per;
    if (ch > (size_t)g->n) ch = (size_t)g->n;
    *imgs = (int)(((size_t)g->n + ch - 1) / ch);
    *chunks = (g->n + *imgs - 1) / *imgs;
    return *chunks > 1 ? round_up((size_t)*chunks * g->co * (size_t)ckk, ALIGN_FLOATS) +
                             (size_t)*chunks * g->co
                       : 0;
}

/* dw, and db too when it is not NULL (the kernel sums dy on the way). */
static clt_status direct_bwd_weights(clt_device *dev, const clt_conv_geom *g, cl_mem x, cl_mem dy,
                                     cl_mem dw, cl_mem db)
{
    direct_plan d;
    direct_plan_init(g, &d);
    int ckk = g->c * g->k * g->k, groups, chunks, imgs;
    size_t part_elems = direct_bwd_chunks(dev, g, &groups, &chunks, &imgs);
    cl_mem scratch = NULL, in;
    cl_ulong in_off;
    if (d.xp_elems + part_elems > 0)
        CLT_TRY(clt_device_scratch(dev, (d.xp_elems + part_elems) * sizeof(float), &scratch));
    cl_ulong part_off = d.xp_elems;
    cl_ulong dbpart_off = part_off + round_up((size_t)chunks * g->co * (size_t)ckk, ALIGN_FLOATS);
    CLT_TRY(direct_input(dev, g, &d, x, scratch, 0, &in, &in_off));
    cl_mem part = chunks > 1 ? scratch : dw;
    cl_ulong poff = chunks > 1 ? part_off : 0;
    int has_db = db != NULL;
    cl_mem dbpart = chunks > 1 ? scratch : db ? db : dw;
    cl_ulong dboff = chunks > 1 ? dbpart_off : 0;
    int cb = direct_bwd_cb(g);
    char name[40];
    snprintf(name, sizeof name, "conv_bwd_weights_direct_%d", cb);
    CLT_TRY(clt_launch_2d(dev, "conv", name, ((size_t)g->co + (size_t)cb - 1) / (size_t)cb,
                          (size_t)groups * (size_t)chunks, 1, 1,
                          CLT_ARGS(CLT_ARG(g->n), CLT_ARG(g->c), CLT_ARG(g->co), CLT_ARG(g->k),
                                   CLT_ARG(d.hp), CLT_ARG(d.wpp), CLT_ARG(g->oh), CLT_ARG(g->ow),
                                   CLT_ARG(imgs), CLT_ARG(groups), CLT_ARG(chunks), CLT_ARG(in),
                                   CLT_ARG(in_off), CLT_ARG(dy), CLT_ARG(part), CLT_ARG(poff),
                                   CLT_ARG(has_db), CLT_ARG(dbpart), CLT_ARG(dboff))));
    if (chunks == 1) return CLT_OK;
    int n = g->co * ckk;
    CLT_TRY(clt_launch_1d(dev, "conv", "conv_sum_chunks", ((size_t)n + LANES - 1) / LANES,
                          CLT_ARGS(CLT_ARG(n), CLT_ARG(chunks), CLT_ARG(scratch),
                                   CLT_ARG(part_off), CLT_ARG(dw))));
    if (!db) return CLT_OK;
    n = g->co;
    return clt_launch_1d(dev, "conv", "conv_sum_chunks", ((size_t)n + LANES - 1) / LANES,
                         CLT_ARGS(CLT_ARG(n), CLT_ARG(chunks), CLT_ARG(scratch),
                                  CLT_ARG(dbpart_off), CLT_ARG(db)));
}

/* ------------------------------------------------------------------ */
/* CONV_GEMM                                                           */
/* ------------------------------------------------------------------ */

/* Images per chunk so that `per_image` floats times the chunk fit. */
static int gemm_chunk(const clt_device *dev, const clt_conv_geom *g, size_t per_image)
{
    size_t budget = gemm_budget(dev) / sizeof(float);
    size_t nb = per_image ? budget / per_image : (size_t)g->n;
    if (nb < 1) nb = 1;
    if (nb > (size_t)g->n) nb = (size_t)g->n;
    return (int)nb;
}

static clt_status im2col(clt_device *dev, const clt_conv_geom *g, cl_mem x, int n0, int nb,
                         cl_mem col, cl_ulong col_off)
{
    size_t q = (size_t)nb * g->oh * g->ow, rows = (size_t)g->c * g->k * g->k;
    return clt_launch_2d(dev, "conv", "conv_im2col", q, rows, 64 < max_wg(dev) ? 64 : max_wg(dev), 1,
                         CLT_ARGS(CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w), CLT_ARG(g->k),
                                  CLT_ARG(g->stride), CLT_ARG(g->pad), CLT_ARG(g->oh),
                                  CLT_ARG(g->ow), CLT_ARG(n0), CLT_ARG(nb), CLT_ARG(x),
                                  CLT_ARG(col), CLT_ARG(col_off)));
}

static clt_status gemm_forward(clt_device *dev, const clt_conv_geom *g, cl_mem x, cl_mem w,
                               cl_mem b, cl_mem y)
{
    size_t p = (size_t)g->oh * g->ow, ckk = (size_t)g->c * g->k * g->k;
    int nb = gemm_chunk(dev, g, (ckk + (size_t)g->co) * p);
    size_t col_elems = round_up(ckk * p * (size_t)nb, ALIGN_FLOATS);
    cl_mem scratch;
    CLT_TRY(clt_device_scratch(dev, (col_elems + (size_t)g->co * p * nb) * sizeof(float), &scratch));
    cl_ulong col_off = 0, yt_off = col_elems;
    int has_bias = b != NULL;
    cl_mem bias = b ? b : w;
    int P = (int)p;
    for (int n0 = 0; n0 < g->n; n0 += nb) {
        int cnt = g->n - n0 < nb ? g->n - n0 : nb;
        size_t q = (size_t)cnt * p;
        CLT_TRY(im2col(dev, g, x, n0, cnt, scratch, col_off));
        CLT_TRY(clt_gemm(dev, false, false, (size_t)g->co, q, ckk, 1.0f, w, 0, ckk, scratch,
                         col_off, q, 0.0f, scratch, yt_off, q));
        CLT_TRY(clt_launch_2d(dev, "conv", "conv_cq_to_nchw", q, (size_t)g->co, 0, 0,
                              CLT_ARGS(CLT_ARG(g->co), CLT_ARG(P), CLT_ARG(n0), CLT_ARG(cnt),
                                       CLT_ARG(scratch), CLT_ARG(yt_off), CLT_ARG(bias),
                                       CLT_ARG(has_bias), CLT_ARG(y))));
    }
    return CLT_OK;
}

static clt_status gemm_backward(clt_device *dev, const clt_conv_geom *g, cl_mem x, cl_mem w,
                                cl_mem dy, cl_mem dx, cl_mem dw)
{
    size_t p = (size_t)g->oh * g->ow, ckk = (size_t)g->c * g->k * g->k;
    int nb = gemm_chunk(dev, g, (ckk + (size_t)g->co) * p);
    size_t col_elems = round_up(ckk * p * (size_t)nb, ALIGN_FLOATS);
    cl_mem scratch;
    CLT_TRY(clt_device_scratch(dev, (col_elems + (size_t)g->co * p * nb) * sizeof(float), &scratch));
    cl_ulong col_off = 0, dyt_off = col_elems;
    int P = (int)p;
    for (int n0 = 0; n0 < g->n; n0 += nb) {
        int cnt = g->n - n0 < nb ? g->n - n0 : nb;
        size_t q = (size_t)cnt * p;
        CLT_TRY(clt_launch_2d(dev, "conv", "conv_nchw_to_cq", q, (size_t)g->co, 0, 0,
                              CLT_ARGS(CLT_ARG(g->co), CLT_ARG(P), CLT_ARG(n0), CLT_ARG(cnt),
                                       CLT_ARG(dy), CLT_ARG(scratch), CLT_ARG(dyt_off))));
        if (dw) {
            /* dw (co x ckk) (+)= dyt (co x q) col^T; chunks add in order. */
            CLT_TRY(im2col(dev, g, x, n0, cnt, scratch, col_off));
            CLT_TRY(clt_gemm(dev, false, true, (size_t)g->co, ckk, q, 1.0f, scratch, dyt_off, q,
                             scratch, col_off, q, n0 == 0 ? 0.0f : 1.0f, dw, 0, ckk));
        }
        if (dx) {
            /* dcol (ckk x q) = w^T dyt, then the gather col2im. */
            CLT_TRY(clt_gemm(dev, true, false, ckk, q, (size_t)g->co, 1.0f, w, 0, ckk, scratch,
                             dyt_off, q, 0.0f, scratch, col_off, q));
            size_t rows = (size_t)cnt * g->c * g->h;
            CLT_TRY(clt_launch_2d(dev, "conv", "conv_col2im", (size_t)g->w, rows, 0, 0,
                                  CLT_ARGS(CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w),
                                           CLT_ARG(g->k), CLT_ARG(g->stride), CLT_ARG(g->pad),
                                           CLT_ARG(g->oh), CLT_ARG(g->ow), CLT_ARG(n0),
                                           CLT_ARG(cnt), CLT_ARG(scratch), CLT_ARG(col_off),
                                           CLT_ARG(dx))));
        }
    }
    return CLT_OK;
}

/* db = sum of dy over images and pixels: partial sums over chunks of
 * images (enough work-items for a GPU), then a fixed-order sum. */
static clt_status bias_grad(clt_device *dev, const clt_conv_geom *g, cl_mem dy, cl_mem db)
{
    int p = g->oh * g->ow;
    /* about 4096 pixels per work-item, at most 64 chunks */
    int imgs = (int)(((size_t)4096 + (size_t)p - 1) / (size_t)p);
    int chunks = (g->n + imgs - 1) / imgs;
    if (chunks > 64) {
        chunks = 64;
        imgs = (g->n + chunks - 1) / chunks;
        chunks = (g->n + imgs - 1) / imgs;
    }
    cl_mem part = db;
    cl_ulong off = 0;
    if (chunks > 1) CLT_TRY(clt_device_scratch(dev, (size_t)chunks * g->co * sizeof(float), &part));
    CLT_TRY(clt_launch_2d(dev, "conv", "conv_bias_grad", (size_t)g->co, (size_t)chunks,
                          group_x(dev, COPY_LX), 1,
                          CLT_ARGS(CLT_ARG(g->n), CLT_ARG(g->co), CLT_ARG(p), CLT_ARG(imgs),
                                   CLT_ARG(dy), CLT_ARG(part), CLT_ARG(off))));
    if (chunks == 1) return CLT_OK;
    int n = g->co;
    return clt_launch_1d(dev, "conv", "conv_sum_chunks", ((size_t)n + LANES - 1) / LANES,
                         CLT_ARGS(CLT_ARG(n), CLT_ARG(chunks), CLT_ARG(part), CLT_ARG(off),
                                  CLT_ARG(db)));
}

/* ------------------------------------------------------------------ */
/* Raw launchers                                                       */
/* ------------------------------------------------------------------ */

/* The geometry must be what clt_conv_geom_init makes of its sizes (the
 * kernels trust oh and ow). */
static clt_status check_raw(clt_device *dev, const clt_conv_geom *g, const char *op)
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

clt_status clt_conv_forward_raw(clt_device *dev, const clt_conv_geom *g, cl_mem x, cl_mem w,
                                cl_mem b, cl_mem y)
{
    CLT_TRY(check_raw(dev, g, "conv2d forward"));
    if (!x || !w || !y) return clt_fail(CLT_ERR_INVALID_ARG, "conv2d forward: x, w or y is NULL");
    conv_algo algo = CONV_GEMM;
    CLT_TRY(pick_algo(dev, &algo));
    if (algo == CONV_LANES && direct_fwd_ok(g)) {
        direct_plan d;
        direct_plan_init(g, &d);
        if (fits(dev, d.xp_elems * sizeof(float))) return direct_forward(dev, g, x, w, b, y);
    } else if (algo == CONV_LANES) {
        lanes_plan pl;
        clt_conv_geom gk;
        size_t xe, we, ye;
        lanes_subsample(g, &gk);
        lanes_plan_init(&gk, &pl);
        lanes_forward_sizes(&gk, &pl, &xe, &we, &ye);
        if (fits(dev, (xe + we + ye) * sizeof(float))) return lanes_forward(dev, g, x, w, b, y);
    }
    return gemm_forward(dev, g, x, w, b, y);
}

clt_status clt_conv_backward_raw(clt_device *dev, const clt_conv_geom *g, cl_mem x, cl_mem w,
                                 cl_mem dy, cl_mem dx, cl_mem dw, cl_mem db)
{
    CLT_TRY(check_raw(dev, g, "conv2d backward"));
    if (!dy) return clt_fail(CLT_ERR_INVALID_ARG, "conv2d backward: dy is NULL");
    if ((dw && !x) || (dx && !w))
        return clt_fail(CLT_ERR_INVALID_ARG, "conv2d backward: dw needs x and dx needs w");
    conv_algo algo = CONV_GEMM;
    CLT_TRY(pick_algo(dev, &algo));
    CLT_TRY(check_bwdw_env());
    if (algo == CONV_LANES && dw && direct_bwdw_ok(g)) {
        direct_plan d;
        direct_plan_init(g, &d);
        int groups, chunks, imgs;
        size_t part = direct_bwd_chunks(dev, g, &groups, &chunks, &imgs);
        if (fits(dev, (d.xp_elems + part) * sizeof(float))) {
            /* the direct kernel sums db on the way */
            CLT_TRY(direct_bwd_weights(dev, g, x, dy, dw, db));
            dw = db = NULL;
            if (!dx) return CLT_OK;
        }
    }
    if (db) CLT_TRY(bias_grad(dev, g, dy, db));
    if (!dx && !dw) return CLT_OK;
    if (algo == CONV_LANES) {
        lanes_plan pl;
        lanes_bwd_layout L;
        clt_conv_geom gk;
        lanes_subsample(g, &gk);
        lanes_plan_init(&gk, &pl);
        lanes_backward_layout(dev, &gk, &pl, dx != NULL, dw != NULL, &L);
        if (fits(dev, L.total * sizeof(float))) return lanes_backward(dev, g, x, w, dy, dx, dw);
    }
    return gemm_backward(dev, g, x, w, dy, dx, dw);
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
    return clt_conv_forward_raw(x->dev, &g, x->buf, w->buf, b ? b->buf : NULL, y->buf);
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
    return clt_conv_backward_raw(x->dev, &g, x->buf, w->buf, dy->buf, dx ? dx->buf : NULL,
                                 dw ? dw->buf : NULL, db ? db->buf : NULL);
}
