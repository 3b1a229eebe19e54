/* The "implicit" convolution (GPUs): each pass is one tiled matrix product
 * whose operands are gathered from the NCHW tensors as its tiles load
 * (kernels/conv_implicit.cl). Against gemm (im2col + CLBlast) it moves no
 * im2col matrix (231 MB per call for ResNet-18's 64x28x28 layers at batch
 * 128) and transposes nothing, and the forward stores NCHW with the bias
 * and a fused ReLU. The backward-weights product splits its long K (images
 * x pixels) into slices with partial matrices, as gemm's split-K does. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ops/conv_algo.h"
#include "runtime/launch.h"

/* Every index the kernels form must fit an int, with room for a tile's
 * overhang past the end and a slice's end past K. */
static int fits_int(const clt_conv_geom *g)
{
    int64_t n = g->n, in = n * g->c * g->h * g->w, out = n * g->co * g->oh * g->ow;
    int64_t wts = (int64_t)g->co * g->c * g->k * g->k;
    return in < INT32_MAX / 2 && out < INT32_MAX / 2 && wts < INT32_MAX / 2;
}

/* Where gemm (CLBlast's tuned SGEMM over an im2col matrix) was faster on
 * an H100, at every ResNet-18 and LeNet shape (bench/README.md), gemm
 * keeps the pass by rule: backward-data of a strided layer, measured
 * when the gather visited K*K*CO taps per input pixel and 1 in stride^2
 * landed (well below gemm's speed). Its products per stride phase, which
 * visit only the taps that land, are not yet timed on a GPU: the GPU
 * tuner (conv_gpu_tune.c) times them against gemm. (Before the tiles
 * loaded ahead, 0.6, gemm also kept the forward from 256 output channels
 * and the layers with 4x4 outputs.) */
static unsigned implicit_supports(const clt_conv_geom *g, unsigned open)
{
    if (!fits_int(g)) return 0;
    if (g->stride > 1 && g->k > 1) open &= ~CLT_CONV_PASS(CLT_CONV_BWD_DATA);
    return open;
}

/* Pixels along one dimension of `size` in the stride phase that starts at
 * `first`. */
static int64_t phase_pixels(int size, int first, int stride)
{
    return first < size ? (size - first + stride - 1) / stride : 0;
}

/* The product of a pass: M rows, N columns, K long (backward-data: its
 * widest stride phase's, the first; kernels/conv_implicit.cl). */
static void pass_dims(const clt_conv_geom *g, int pass, int64_t *m, int64_t *n, int64_t *k)
{
    int64_t kk = (int64_t)g->k * g->k, p = (int64_t)g->oh * g->ow;
    int64_t taps = (g->k + g->stride - 1) / g->stride; /* per column and row, at most */
    if (pass == CLT_CONV_FWD) *m = g->co, *n = g->n * p, *k = g->c * kk;
    else if (pass == CLT_CONV_BWD_DATA)
        *m = g->c, *n = g->n * phase_pixels(g->h, 0, g->stride) * phase_pixels(g->w, 0, g->stride),
        *k = g->co * taps * taps;
    else *m = g->co, *n = g->c * kk, *k = g->n * p;
}

/* The tiles, 256 work-items each but the narrow one (128). (8x8 blocks
 * with K steps of 16 in 128x128, 128x64 and 64x128 tiles, timed by the
 * tuner on every ResNet-18 pass on an H100, won one pass, narrowly: not
 * worth their tuning time.) */
enum { TILE_BIG, TILE_TALL, TILE_WIDE, TILE_SQUARE, TILE_NARROW, N_TILES };
static const clt_conv_implicit_cfg tiles[N_TILES] = {
    [TILE_BIG] = {128, 128, 8, 8, 8},   [TILE_TALL] = {128, 64, 8, 4, 16}, [TILE_WIDE] = {64, 128, 4, 8, 16},
    [TILE_SQUARE] = {64, 64, 4, 4, 16}, [TILE_NARROW] = {32, 64, 4, 4, 16},
};

/* The TF32 tiles (kernels/conv_implicit.cl's TC): the fp32 tiles' shapes
 * whose warps divide them (TM/RM a multiple of 8, TN/RN of 4, TK of 8),
 * and the big one with K steps of 32, which halves its barriers; a warp
 * holds (RM/2) x (RN/2) products of 16x8. Offered to the tuner only, never
 * by the rule, and only where clt_device_tf32_kernels allows. */
enum { N_TC_TILES = 5 };
static const clt_conv_implicit_cfg tc_tiles[N_TC_TILES] = {
    {128, 128, 8, 8, 16, 1}, {128, 128, 8, 8, 32, 1}, {128, 64, 8, 4, 16, 1},
    {64, 128, 4, 8, 16, 1},  {64, 64, 4, 4, 16, 1},
};

_Static_assert(N_TILES + N_TC_TILES <= CLT_CONV_IMPLICIT_TILES,
               "conv_algo.h promises at most CLT_CONV_IMPLICIT_TILES tiles");

static int cfg_fits(const clt_device *dev, const clt_conv_implicit_cfg *c)
{
    int64_t items = (int64_t)(c->tm / c->rm) * (c->tn / c->rn);
    int pad = c->tc ? 16 : 8; /* the kernel's AS and BS */
    int64_t local = (int64_t)c->tk * (c->tm + c->tn + pad) * (int64_t)sizeof(float);
    const clt_device_info *in = clt_device_get_info(dev);
    return items <= in->max_work_group_size && local <= in->local_mem_bytes;
}

/* The rule, from every tile timed on every ResNet-18 pass at batch 128 on
 * an H100 (bench/README.md): rows padded to the tile cost their share, so
 * the tile's height follows M (32, 64, or 128 and up); the forward and
 * backward-data take the longer tile while it gives at least half of the
 * compute units a work-group, else the square one; backward-weights
 * (whose K slices give the units their work-groups) runs the big 8x8
 * blocks from 128 rows. Tiles a device cannot run are skipped. */
static clt_conv_implicit_cfg pick_cfg(const clt_device *dev, const clt_conv_geom *g, int pass)
{
    int64_t m, n, k;
    pass_dims(g, pass, &m, &n, &k);
    int64_t units = (int64_t)clt_conv_units(dev);
    int order[3], count = 0;
    if (m <= 32) order[count++] = TILE_NARROW;
    else if (pass == CLT_CONV_BWD_WEIGHTS)
        order[count++] = m >= 128 ? TILE_BIG : TILE_WIDE;
    else {
        int t = m <= 64 ? TILE_WIDE : TILE_TALL;
        if (((m + tiles[t].tm - 1) / tiles[t].tm) * ((n + tiles[t].tn - 1) / tiles[t].tn) * 2 >= units)
            order[count++] = t;
    }
    order[count++] = TILE_SQUARE;
    order[count++] = TILE_NARROW;
    for (int i = 0; i < count; i++)
        if (cfg_fits(dev, &tiles[order[i]])) return tiles[order[i]];
    return (clt_conv_implicit_cfg){0};
}

/* Backward-weights slices of K (clt_conv_k_slices), each a multiple of TK long. */
static void plan_slices(const clt_device *dev, clt_conv_plan *plan)
{
    clt_conv_implicit_params *ip = &plan->implicit;
    const clt_conv_implicit_cfg *c = &ip->cfg[CLT_CONV_BWD_WEIGHTS];
    int64_t m, n, k;
    pass_dims(&plan->g, CLT_CONV_BWD_WEIGHTS, &m, &n, &k);
    int64_t tiles_mn = ((m + c->tm - 1) / c->tm) * ((n + c->tn - 1) / c->tn);
    int64_t want = (int64_t)clt_conv_k_slices(dev, (size_t)tiles_mn, (size_t)k);
    int64_t len = (k + want - 1) / want;
    len = (len + c->tk - 1) / c->tk * c->tk;
    ip->kslice = (int)len;
    ip->slices = (int)((k + len - 1) / len);
    ip->part_elems = ip->slices > 1 ? (size_t)ip->slices * (size_t)(m * n) : 0;
}

/* c for pass into plan, with the backward-weights slices; 0 when it does not fit. */
static int use_cfg(const clt_device *dev, clt_conv_plan *plan, int pass, const clt_conv_implicit_cfg *c)
{
    if (!c->tm || !cfg_fits(dev, c)) return 0;
    plan->implicit.cfg[pass] = *c;
    if (pass != CLT_CONV_BWD_WEIGHTS) return 1;
    plan_slices(dev, plan);
    return !plan->implicit.part_elems || clt_conv_fits(dev, plan->implicit.part_elems * sizeof(float));
}

static int implicit_plan(const clt_device *dev, clt_conv_plan *plan, unsigned passes)
{
    for (int p = 0; p < CLT_CONV_PASSES; p++) {
        clt_conv_implicit_cfg c = pick_cfg(dev, &plan->g, p);
        if ((passes & CLT_CONV_PASS(p)) && !use_cfg(dev, plan, p, &c)) return 0;
    }
    return 1;
}

int clt_conv_implicit_candidates(const clt_device *dev, const clt_conv_geom *g, int pass,
                                 clt_conv_implicit_cfg *out, int max)
{
    int n = 0;
    if (!fits_int(g)) return 0;
    for (int i = 0; i < N_TILES && n < max; i++)
        if (cfg_fits(dev, &tiles[i])) out[n++] = tiles[i];
    for (int i = 0; clt_device_tf32_kernels(dev) && i < N_TC_TILES && n < max; i++)
        if (cfg_fits(dev, &tc_tiles[i])) out[n++] = tc_tiles[i];
    (void)pass;
    return n;
}

int clt_conv_implicit_use(const clt_device *dev, clt_conv_plan *plan, int pass, const clt_conv_implicit_cfg *c)
{
    clt_conv_implicit_cfg cand[CLT_CONV_IMPLICIT_TILES];
    int n = clt_conv_implicit_candidates(dev, &plan->g, pass, cand, CLT_CONV_IMPLICIT_TILES);
    for (int i = 0; i < n; i++)
        if (!memcmp(&cand[i], c, sizeof *c)) return use_cfg(dev, plan, pass, c);
    return 0;
}

/* Launches pass with its configuration over its m rows and n columns
 * (backward-data: of stride phase (y0, x0)): a, b the operands' tensors, aux the bias or a
 * fused ReLU's output, out the result (or the partials). GPUs build the
 * geometry in (constant divisors), and a phase that taps dy at stride 2
 * or less: a strided layer builds a program per phase, 4 at stride 2,
 * where a stride of 16 would build 256; the phases beyond, and those no
 * tap reaches (their zeros), share one program of run-time phases. CPUs
 * pass it all (see kernels/conv_implicit.cl). */
static clt_status launch_one(clt_device *dev, const clt_conv_plan *plan, int pass, int y0, int x0, int64_t m,
                             int64_t n, cl_mem a, cl_mem b, cl_mem aux, int flags, cl_mem out)
{
    const clt_conv_geom *g = &plan->g;
    const clt_conv_implicit_cfg *c = &plan->implicit.cfg[pass];
    char prog[320], geom[160] = "", phase[48] = "", tc[16] = "";
    int tapped = (y0 + g->pad) % g->stride < g->k && (x0 + g->pad) % g->stride < g->k;
    int data = pass == CLT_CONV_BWD_DATA;
    if (clt_device_get_info(dev)->type != CLT_DEVICE_CPU && (!data || (g->stride <= 2 && tapped))) {
        snprintf(geom, sizeof geom, " -DGC=%d -DGH=%d -DGW=%d -DGCO=%d -DGK=%d -DGS=%d -DGPAD=%d -DGOH=%d -DGOW=%d",
                 g->c, g->h, g->w, g->co, g->k, g->stride, g->pad, g->oh, g->ow);
        if (data) snprintf(phase, sizeof phase, " -DGPY=%d -DGPX=%d", y0, x0);
    }
    if (c->tc) snprintf(tc, sizeof tc, " -DTC=%d", clt_device_tf32_kernels(dev));
    snprintf(prog, sizeof prog, "conv_implicit -DPASS=%d -DTM=%d -DTN=%d -DTK=%d -DRM=%d -DRN=%d%s%s%s", pass, c->tm,
             c->tn, c->tk, c->rm, c->rn, tc, geom, phase);
    cl_int16 gv = {{g->c, g->h, g->w, g->co, g->k, g->stride, g->pad, g->oh, g->ow, y0, x0}};
    size_t lx = (size_t)(c->tn / c->rn), ly = (size_t)(c->tm / c->rm);
    size_t gx = (size_t)((n + c->tn - 1) / c->tn) * lx, gy = (size_t)((m + c->tm - 1) / c->tm) * ly;
    int nimg = g->n, kslice = 0;
    cl_ulong out_off = 0;
    if (pass == CLT_CONV_BWD_WEIGHTS) {
        gy *= (size_t)plan->implicit.slices;
        kslice = plan->implicit.kslice;
    }
    return clt_launch_2d(dev, prog, "conv_implicit", gx, gy, lx, ly,
                         CLT_ARGS(CLT_ARG(gv), CLT_ARG(nimg), CLT_ARG(kslice), CLT_ARG(a), CLT_ARG(b), CLT_ARG(aux),
                                  CLT_ARG(flags), CLT_ARG(out), CLT_ARG(out_off)));
}

/* Launches pass: backward-data as one product per stride phase with
 * pixels (a phase no tap reaches writes its zeros). */
static clt_status launch(clt_device *dev, const clt_conv_plan *plan, int pass, cl_mem a, cl_mem b, cl_mem aux,
                         int flags, cl_mem out)
{
    const clt_conv_geom *g = &plan->g;
    int64_t m, n, k;
    pass_dims(g, pass, &m, &n, &k);
    if (pass != CLT_CONV_BWD_DATA) return launch_one(dev, plan, pass, 0, 0, m, n, a, b, aux, flags, out);
    for (int y0 = 0; y0 < g->stride && y0 < g->h; y0++)
        for (int x0 = 0; x0 < g->stride && x0 < g->w; x0++) {
            int64_t pixels = phase_pixels(g->h, y0, g->stride) * phase_pixels(g->w, x0, g->stride);
            CLT_TRY(launch_one(dev, plan, pass, y0, x0, m, (int64_t)g->n * pixels, a, b, aux, flags, out));
        }
    return CLT_OK;
}

static clt_status implicit_forward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                                   cl_mem b, const clt_epilogue *epi, cl_mem y)
{
    int flags = (b ? 1 : 0) | (clt_epi_relu(epi) ? 2 : 0);
    return launch(dev, plan, CLT_CONV_FWD, w, x, b ? b : w, flags, y);
}

static clt_status implicit_backward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                                    cl_mem dy, const clt_epilogue *epi, cl_mem dx, cl_mem dw, cl_mem db)
{
    if (db) CLT_TRY(clt_conv_bias_grad(dev, &plan->g, dy, epi, db));
    int flags = clt_epi_relu(epi) ? 2 : 0;
    cl_mem ym = clt_epi_mask(epi, dy);
    if (dw) {
        const clt_conv_implicit_params *ip = &plan->implicit;
        if (!ip->part_elems) CLT_TRY(launch(dev, plan, CLT_CONV_BWD_WEIGHTS, dy, x, ym, flags, dw));
        else {
            cl_mem scratch;
            CLT_TRY(clt_device_scratch(dev, ip->part_elems * sizeof(float), &scratch));
            CLT_TRY(launch(dev, plan, CLT_CONV_BWD_WEIGHTS, dy, x, ym, flags, scratch));
            int64_t m, n, k;
            pass_dims(&plan->g, CLT_CONV_BWD_WEIGHTS, &m, &n, &k);
            CLT_TRY(clt_conv_sum_chunks(dev, (int)(m * n), ip->slices, scratch, 0, dw));
        }
    }
    if (dx) CLT_TRY(launch(dev, plan, CLT_CONV_BWD_DATA, w, dy, ym, flags, dx));
    return CLT_OK;
}

void clt_conv_implicit_format(const clt_conv_implicit_cfg *c, char *buf, size_t cap)
{
    snprintf(buf, cap, "%dx%dx%d r%dx%d%s", c->tm, c->tn, c->tk, c->rm, c->rn, c->tc ? " tf32" : "");
}

int clt_conv_implicit_parse(const char *text, clt_conv_implicit_cfg *c)
{
    char back[64];
    int used = 0;
    memset(c, 0, sizeof *c);
    if (sscanf(text, "%dx%dx%d r%dx%d%n", &c->tm, &c->tn, &c->tk, &c->rm, &c->rn, &used) != 5) return 0;
    if (!strcmp(text + used, " tf32")) c->tc = 1;
    else if (text[used]) return 0;
    clt_conv_implicit_format(c, back, sizeof back);
    return strcmp(back, text) == 0; /* no signs, zeros or spaces of its own */
}

/* The tile ("64x64x16 r4x4", with "k/S" for S backward-weights slices),
 * and "tuned" where the GPU tuner chose it. */
static void implicit_describe(const clt_conv_plan *plan, int pass, char *buf, size_t cap)
{
    char c[64];
    clt_conv_implicit_format(&plan->implicit.cfg[pass], c, sizeof c);
    const char *tuned = plan->gpu_tuned[pass] ? " tuned" : "";
    if (pass == CLT_CONV_BWD_WEIGHTS && plan->implicit.slices > 1)
        snprintf(buf, cap, "%s k/%d%s", c, plan->implicit.slices, tuned);
    else snprintf(buf, cap, "%s%s", c, tuned);
}

const clt_conv_algo clt_conv_implicit = {
    .name = "implicit",
    .supports = implicit_supports,
    .plan = implicit_plan,
    .forward = implicit_forward,
    .backward = implicit_backward,
    .describe = implicit_describe,
    .tune = clt_conv_gpu_tune, /* which times gemm against the tiles too */
};
