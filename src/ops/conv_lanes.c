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
 * 1.5-6x slower than vector stores plus the transposing copy; a work-group
 * holding all channel blocks of one pixel ran the forward 1.6-2x faster
 * than one block per group. A 2x2 pooling after the layer (and its ReLU)
 * runs in those copies: the forward's copy back stores the pooled output
 * and a byte per window (an average's cells > 0, a max's argmax), the
 * backward's copies spread the pooling's dy through them, so neither the
 * convolution's output nor its dy is ever written in NCHW (LeNet's conv2).
 * The bias gradient sums the channel-major copy of dy, in cache, instead
 * of dy and the ReLU's output. */
#include <stdio.h>
#include <string.h>

#include "ops/conv_lanes.h"
#include "runtime/launch.h"

#define LANES CLT_CONV_LANES
#define ALIGN CLT_CONV_ALIGN_FLOATS

static size_t up(size_t v, size_t m) { return clt_conv_round_up(v, m); }

/* ------------------------------------------------------------------ */
/* Kernel configurations: the rule, the candidates the tuner times      */
/* ------------------------------------------------------------------ */

/* Backward-weights blocks WA x WB: the ones settings may force and the
 * rule and the tuner choose among. */
static const int bwdw_blocks[][2] = CLT_CONV_BWDW_BLOCKS;
#define N_BWDW_BLOCKS (sizeof bwdw_blocks / sizeof bwdw_blocks[0])
/* Forward and backward-data register block heights. */
static const int rm_set[] = {2, 3, 4, 5, 6, 8, 10};
#define N_RM (sizeof rm_set / sizeof rm_set[0])

/* Vector registers the accumulators may take: x86 has 32 with AVX-512 and
 * 16 below it; 4 stay for the loads and the broadcast. Over budget the
 * accumulators spill (float16 blocks of 2 x 10 ran at 29% of the FMA peak
 * on AVX2, where a float16 is two registers). */
static int acc_budget(int native) { return (native >= 16 ? 32 : 16) - 4; }

/* Registers one vector of c's width takes (a float16 is two on AVX2). */
static int vector_regs(const clt_conv_lanes_cfg *c, int native) { return c->vw > native ? c->vw / native : 1; }

static int acc_regs(const clt_conv_lanes_cfg *c, int native)
{
    return c->a * c->b * (c->tr ? c->tr : 1) * vector_regs(c, native);
}

/* Whether c's accumulators fit the budget and, for the weight gradient,
 * also its WA dy vectors and one x vector, which stay live beside them
 * (AVX2, PoCL: 4 x 3, 6 x 2 and rows of 4 x 1 took 1.4-1.8x longer than
 * 3 x 4 and rows of 2 x 2, which fit). */
static int fits_registers(const clt_conv_lanes_cfg *c, int pass, int native)
{
    int acc = acc_regs(c, native), live = acc + (c->a + 1) * vector_regs(c, native);
    return acc <= acc_budget(native) && (pass != CLT_CONV_BWD_WEIGHTS || live <= acc_budget(native) + 4);
}

int clt_conv_lanes_can_phase(const clt_conv_lanes_params *lp) { return lp->gk.stride == 2 && lp->gk.k > 1; }

/* Whether lp's weight gradient may hold a row of taps per work-item (cfg.tr). */
static int can_tap_row(const clt_conv_lanes_params *lp) { return lp->gk.k > 1; }

int clt_conv_lanes_cfg_ok(const clt_conv_lanes_params *lp, int pass, const clt_conv_lanes_cfg *c)
{
    if (c->vw != 4 && c->vw != 8 && c->vw != 16) return 0;
    if (c->px != 0 && (c->px != 1 || pass == CLT_CONV_BWD_WEIGHTS)) return 0;
    if (c->ck != 0) {
        static const int kib[] = CLT_CONV_LANES_CHUNK_KIB;
        int known = 0;
        for (size_t i = 0; i < sizeof kib / sizeof kib[0]; i++) known |= c->ck == kib[i];
        if (!known || pass != CLT_CONV_BWD_WEIGHTS) return 0;
    }
    if (c->ph != 0 && (c->ph != 1 || pass != CLT_CONV_BWD_WEIGHTS || !clt_conv_lanes_can_phase(lp))) return 0;
    if (c->tr != 0 && (c->tr != lp->gk.k || pass != CLT_CONV_BWD_WEIGHTS || !can_tap_row(lp))) return 0;
    if (pass == CLT_CONV_BWD_WEIGHTS) return c->a >= 1 && c->a <= 8 && c->b >= 1 && c->b <= 8 && lp->nl % c->vw == 0;
    return c->a >= 1 && c->a <= 16 && c->b >= 1 && c->b <= 8 && lp->nl % (c->vw * c->b) == 0;
}

/* The channels a pass blocks by its first parameter, and the other ones. */
static int pass_channels(const clt_conv_geom *g, int pass) { return pass == CLT_CONV_BWD_DATA ? g->c : g->co; }

/* A model of a configuration's time, for ranking candidates: padded
 * work times (1 + loads per FMA). A row of k taps loads WA + k * WB
 * vectors per k * WA * WB FMAs; most of its x loads hit L1, which the
 * model leaves to the timing. */
static double cfg_cost(const clt_conv_lanes_params *lp, int pass, const clt_conv_lanes_cfg *c)
{
    const clt_conv_geom *g = &lp->gk;
    double work = pass == CLT_CONV_BWD_WEIGHTS
                      ? (double)up((size_t)g->co, (size_t)c->a) * (double)up((size_t)g->c, (size_t)c->b)
                      : (double)up((size_t)pass_channels(g, pass), (size_t)c->a);
    double taps = c->tr ? c->tr : 1, loads = (c->a + taps * c->b) / (taps * c->a * c->b);
    return work * (1.0 + loads) * (c->px ? 1.001 : 1.0);
}

/* The rule-based choice (CLTRAIN_TUNE=0, and the tuner's first candidate).
 * The native vector width; forward and backward-data: 32 lanes per item
 * (16 for batches up to 16) in as few vectors as fit, and the block height
 * from {4, 5, 6, 8, 10} that fits and pads the fewest channels (8 on a
 * tie, else the largest); backward-weights: the fitting block of least
 * modelled cost. At native width 16 (AVX-512) it is the choice the kernels
 * were first tuned with, unchanged: heights 4, 8, 10 (clt_conv_pick_rm)
 * and the first six backward-weights blocks. */
static clt_conv_lanes_cfg rule_cfg(const clt_device *dev, const clt_conv_lanes_params *lp, int pass, int native)
{
    clt_conv_lanes_cfg c = {native, 0, 0, 0, 0, 0, 0}, t;
    int budget = acc_budget(native);
    if (pass == CLT_CONV_BWD_WEIGHTS) {
        if (dev->settings.conv_bwdw_a > 0) return (clt_conv_lanes_cfg){native, dev->settings.conv_bwdw_a,
                                                                        dev->settings.conv_bwdw_b, 0, 0, 0, 0};
        double best = 0;
        /* at native 16 the first six, the blocks the kernels were tuned with */
        for (size_t i = 0; i < (native == 16 ? 6 : N_BWDW_BLOCKS); i++) {
            t = (clt_conv_lanes_cfg){native, bwdw_blocks[i][0], bwdw_blocks[i][1], 0, 0, 0, 0};
            if (acc_regs(&t, native) > budget) continue; /* the rule as tuned; fits_registers for candidates */
            double cost = cfg_cost(lp, pass, &t);
            if (c.a == 0 || cost < best) {
                c = t;
                best = cost;
            }
        }
        if (c.a == 0) c.a = c.b = 1; /* no block within the budget (none today): the smallest */
        return c;
    }
    int nv = (lp->nl % 32 == 0 ? 32 : 16) / native;
    while (nv > 1 && budget / nv < 4) nv /= 2;
    c.b = nv;
    if (native == 16) { /* the kernels' first, AVX-512 rule exactly */
        c.a = clt_conv_pick_rm(pass_channels(&lp->gk, pass));
        return c;
    }
    size_t ch = (size_t)pass_channels(&lp->gk, pass), best = 0;
    for (size_t i = 2; i < N_RM; i++) { /* from 4 */
        t = (clt_conv_lanes_cfg){native, rm_set[i], nv, 0, 0, 0, 0};
        if (acc_regs(&t, native) > budget) continue;
        size_t padded = up(ch, (size_t)t.a);
        if (c.a == 0 || padded < best || (padded == best && c.a != 8)) {
            c.a = t.a;
            best = padded;
        }
    }
    if (c.a == 0) c.a = 4;
    return c;
}

/* The configurations the tuner times for `pass`, rule first: at the
 * native vector width and twice it (and half of 16), every register block
 * that uses between half and all of the register budget and fits the
 * registers (fits_registers), for the weight gradient with one tap and
 * with a row of taps, the `max` - 1 of least modelled cost. Returns the
 * count. */
int clt_conv_lanes_candidates(const clt_device *dev, const clt_conv_lanes_params *lp, int pass,
                              clt_conv_lanes_cfg *out, int max)
{
    int native = clt_device_vector_width(dev), budget = acc_budget(native), n = 0;
    if (max < 1) return 0;
    out[n++] = rule_cfg(dev, lp, pass, native);
    if (pass == CLT_CONV_BWD_WEIGHTS && dev->settings.conv_bwdw_a > 0) return n;
    clt_conv_lanes_cfg all[256];
    int na = 0;
    for (int vw = 4; vw <= 16; vw *= 2) {
        if (vw > 2 * native || (vw < native && !(native == 16 && vw == 8))) continue;
        for (int a = 1; a <= 12; a++) {
            for (int b = 1; b <= 8; b++) {
                if (pass != CLT_CONV_BWD_WEIGHTS && ((b & (b - 1)) || vw * b < 8 || vw * b > 32)) continue;
                /* alt: the same block with work-groups along the pixels,
                 * or for the weight gradient a row of taps per item */
                for (int alt = 0; alt <= 1; alt++) {
                    clt_conv_lanes_cfg c = {vw, a, b, pass != CLT_CONV_BWD_WEIGHTS && alt, 0, 0,
                                            pass == CLT_CONV_BWD_WEIGHTS && alt ? lp->gk.k : 0};
                    int regs = acc_regs(&c, native);
                    if (!fits_registers(&c, pass, native) || 2 * regs < budget || !clt_conv_lanes_cfg_ok(lp, pass, &c) ||
                        na >= 255)
                        continue;
                    all[na++] = c;
                }
            }
        }
    }
    while (n < max) { /* selection by cost: few candidates, no sort needed */
        int pick = -1;
        for (int i = 0; i < na; i++) {
            int dup = 0;
            for (int k = 0; k < n; k++)
                dup |= out[k].vw == all[i].vw && out[k].a == all[i].a && out[k].b == all[i].b &&
                       out[k].px == all[i].px && out[k].tr == all[i].tr;
            if (dup) continue;
            if (pick < 0 || cfg_cost(lp, pass, &all[i]) < cfg_cost(lp, pass, &all[pick])) pick = i;
        }
        if (pick < 0) break;
        out[n++] = all[pick];
    }
    return n;
}

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
 * shape and batch (AVX2, 512 KiB L2, PoCL, ResNet-18 at batch 128: 128 KiB
 * ran 128->256 k3 s2 1.23x faster, but LeNet's conv2 at batch 256 1.33x
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
     * vectors 48 ms, of 8 vectors 66 ms). */
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
 * conv2 and ResNet-18's 7x7 layer at batch 256: 1.1-1.4x faster on PoCL
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
    int native = clt_device_vector_width(dev);
    for (int p = 0; p < CLT_CONV_PASSES; p++)
        if (passes & CLT_CONV_PASS(p)) lp->cfg[p] = rule_cfg(dev, lp, p, native);
    return clt_conv_lanes_derive(dev, lp, passes);
}

/* ------------------------------------------------------------------ */
/* Layout copies (kernels/conv_layout.cl)                              */
/* ------------------------------------------------------------------ */

/* The copies transpose in blocks of the native width's registers
 * (kernels/conv_layout.cl, TQ): 8 x 8 below AVX-512, where a 16 x 16
 * block spills (ResNet-18's largest copy into the lanes layout, batch 128:
 * 0.90-0.93x the time on PoCL, 0.93-1.0x on Intel's runtime; the copies
 * back measured the same). */
static clt_status layout_2d_in(clt_device *dev, int stream, const char *kernel, size_t gx, size_t gy, size_t lx,
                               int nargs, const clt_arg *args)
{
    int tq = clt_device_vector_width(dev) >= 16 ? 16 : 8;
    char spec[48];
    snprintf(spec, sizeof spec, "conv_layout%s%s", tq == 8 ? " -DTQ=8" : "",
             stream && dev->base_align >= (size_t)tq * sizeof(float) ? " -DNT=1" : "");
    return clt_launch_2d(dev, spec, kernel, gx, gy, lx, 1, nargs, args);
}

static clt_status layout_2d(clt_device *dev, const char *kernel, size_t gx, size_t gy, size_t lx,
                            int nargs, const clt_arg *args)
{
    return layout_2d_in(dev, 0, kernel, gx, gy, lx, nargs, args);
}

/* Copies into a lanes layout this large store past the cache (-DNT=1,
 * where the device's buffers start aligned for a block's row): a full line
 * each, so no line is read for ownership first. ResNet-18 at batch 128 on
 * PoCL (AVX2, 32 MiB L3): its 26 and 13 MB copies 0.80-0.85x the time, 6.4
 * MB ones the same at best, the kernels reading them after unchanged; but
 * LeNet's copies of 3.5-4 MB at batch 256 come back from memory instead of
 * the L3 (training 0.95x as fast). Copies back to NCHW so ran 1.3-2.5x
 * slower: their reader is a memory-bound op. */
#define STREAM_MIN_BYTES ((size_t)8 << 20)

/* Where a lanes layout keeps pixel p of channel c: row p * ps + c * cs
 * (p in stride-phase order in the weight gradient's x where cfg.ph),
 * rows rs floats apart (clt_conv_lanes_row_stride). The forward's layout
 * is pixel-major, the backward's channel-major (kernels/conv_lanes.cl says
 * why). Pixel-major rows have the gap of lanes_stride: the forward's and
 * backward-data's inner loop reads a vector of each channel, a row apart.
 * The weight gradient walks the channel-major rows one after the other,
 * and a gap there measured no faster (up to 1.1x slower at batch 128 and
 * 256, 1.4x at 32, in noisy rounds). */
typedef struct lanes_rows {
    int ps, cs, rs;
} lanes_rows;

static lanes_rows lanes_layout(const clt_conv_lanes_params *lp, int pixel_major, int channels, int pixels)
{
    int rs = clt_conv_lanes_row_stride(lp, pixel_major);
    return pixel_major ? (lanes_rows){channels, 1, rs} : (lanes_rows){1, pixels, rs};
}

/* An NCHW tensor into a lanes layout at `off` floats: a transpose of (N,
 * C*H*W) in 16 x 16 blocks; phased: each channel's pixels in stride
 * phases (the weight gradient's x, cfg.ph). With a fused pooling (epi)
 * src is the pooling's dy (N, C, H/2, W/2), spread to the h x w pixels,
 * and cm_off (else NULL) asks for the channel-major layout at *cm_off too,
 * from the same spread. Only a pooling's copy takes cm_off: without one,
 * a transposing copy into both layouts measured no faster than two
 * copies (ResNet-18's dy at batch 128, PoCL: 237-241 ms per step either
 * way; its stores cost, not its loads). */
static clt_status to_lanes(clt_device *dev, cl_mem src, const clt_epilogue *epi, int n, int c, int h, int w,
                           int pixel_major, int phased, const clt_conv_lanes_params *lp, cl_mem dst, cl_ulong off,
                           const cl_ulong *cm_off)
{
    int p = h * w, m = c * p, relu = clt_epi_relu(epi), sw = phased ? w : 0;
    lanes_rows r = lanes_layout(lp, pixel_major, c, p);
    size_t blocks = (size_t)lp->nl / LANES;
    cl_mem ym = clt_epi_mask(epi, src); /* with a max pooling, its output */
    if (epi && epi->pool) {
        cl_mem cells = clt_epi_cells(epi) ? epi->argmax : src;
        int max = epi->pool == CLT_EPI_POOL_MAX;
        size_t windows = (size_t)c * (size_t)(h / 2) * (size_t)(w / 2);
        lanes_rows r2 = cm_off ? lanes_layout(lp, 0, c, p) : (lanes_rows){0, 0, 0};
        cl_ulong off2 = cm_off ? *cm_off : 0;
        return layout_2d(dev, "conv_layout_to_lanes_pool", (windows + LANES - 1) / LANES, blocks,
                         clt_conv_group_x(dev, CLT_CONV_COPY_LX),
                         CLT_ARGS(CLT_ARG(n), CLT_ARG(c), CLT_ARG(h), CLT_ARG(w), CLT_ARG(r.ps), CLT_ARG(r.cs),
                                  CLT_ARG(r.rs), CLT_ARG(src), CLT_ARG(relu), CLT_ARG(max), CLT_ARG(cells),
                                  CLT_ARG(ym), CLT_ARG(dst), CLT_ARG(off), CLT_ARG(r2.ps), CLT_ARG(r2.cs),
                                  CLT_ARG(r2.rs), CLT_ARG(off2)));
    }
    if (cm_off) return clt_fail(CLT_ERR_INTERNAL, "lanes copy: a second layout without a fused pooling");
    size_t mblocks = ((size_t)m + LANES - 1) / LANES;
    int stream = (size_t)r.rs * (size_t)m * sizeof(float) >= STREAM_MIN_BYTES;
    return layout_2d_in(dev, stream, "conv_layout_to_lanes_t", mblocks, blocks,
                        clt_conv_group_x(dev, CLT_CONV_COPY_LX),
                        CLT_ARGS(CLT_ARG(n), CLT_ARG(m), CLT_ARG(p), CLT_ARG(r.ps), CLT_ARG(r.cs), CLT_ARG(r.rs),
                                 CLT_ARG(sw), CLT_ARG(src), CLT_ARG(relu), CLT_ARG(ym), CLT_ARG(dst), CLT_ARG(off)));
}

/* A lanes layout of (ch, p) at `off` back to NCHW (n, ch, p), plus bias and
 * a fused ReLU (relu).
 * Images under 16 pixels transpose over ch*p instead (dense layers as 1x1
 * convolutions: 0.24 -> 0.03 ms for 800 x 256). */
static clt_status from_lanes(clt_device *dev, cl_mem src, cl_ulong off, int n, int ch, int p, int pixel_major,
                             const clt_conv_lanes_params *lp, cl_mem bias, int has_bias, int relu, cl_mem dst)
{
    lanes_rows r = lanes_layout(lp, pixel_major, ch, p);
    size_t blocks = (size_t)r.rs / LANES, lx = clt_conv_group_x(dev, CLT_CONV_COPY_LX);
    if (p < LANES) {
        int m = ch * p;
        size_t mblocks = ((size_t)m + LANES - 1) / LANES;
        return layout_2d(dev, "conv_layout_from_lanes_flat", mblocks, blocks, lx,
                         CLT_ARGS(CLT_ARG(n), CLT_ARG(m), CLT_ARG(p), CLT_ARG(r.ps), CLT_ARG(r.cs), CLT_ARG(r.rs),
                                  CLT_ARG(src), CLT_ARG(off), CLT_ARG(bias), CLT_ARG(has_bias), CLT_ARG(relu),
                                  CLT_ARG(dst)));
    }
    size_t pblocks = ((size_t)p + LANES - 1) / LANES, rows = (size_t)ch * blocks;
    return layout_2d(dev, "conv_layout_from_lanes", pblocks, rows, lx,
                     CLT_ARGS(CLT_ARG(n), CLT_ARG(ch), CLT_ARG(p), CLT_ARG(r.ps), CLT_ARG(r.cs), CLT_ARG(r.rs),
                              CLT_ARG(src), CLT_ARG(off), CLT_ARG(bias), CLT_ARG(has_bias), CLT_ARG(relu),
                              CLT_ARG(dst)));
}

/* x into a lanes layout of the kernels' geometry: a strided 1x1 layer
 * copies only the pixels it reads (a quarter of x at stride 2). */
static clt_status x_to_lanes(clt_device *dev, const clt_conv_plan *plan, cl_mem x, int pixel_major, cl_mem dst,
                             cl_ulong off)
{
    const clt_conv_geom *g = &plan->g;
    if (!plan->lanes.subsampled)
        return to_lanes(dev, x, NULL, g->n, g->c, g->h, g->w, pixel_major,
                        !pixel_major && plan->lanes.cfg[CLT_CONV_BWD_WEIGHTS].ph, &plan->lanes, dst, off, NULL);
    lanes_rows r = lanes_layout(&plan->lanes, pixel_major, g->c, g->oh * g->ow);
    size_t rows = (size_t)g->c * g->oh, blocks = (size_t)plan->lanes.nl / LANES;
    return layout_2d(dev, "conv_layout_to_lanes_sub", rows, blocks, clt_conv_group_x(dev, CLT_CONV_COPY_LX),
                     CLT_ARGS(CLT_ARG(g->n), CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w),
                              CLT_ARG(g->stride), CLT_ARG(g->oh), CLT_ARG(g->ow), CLT_ARG(r.ps), CLT_ARG(r.cs),
                              CLT_ARG(r.rs), CLT_ARG(x), CLT_ARG(dst), CLT_ARG(off)));
}

/* dx from the channel-major lanes layout of the kernels' geometry (a
 * strided 1x1 layer: zeros between the pixels it read). */
static clt_status dx_from_lanes(clt_device *dev, const clt_conv_plan *plan, cl_mem src,
                                cl_ulong off, cl_mem dx)
{
    const clt_conv_geom *g = &plan->g;
    int rs = clt_conv_lanes_row_stride(&plan->lanes, 0);
    if (!plan->lanes.subsampled)
        return from_lanes(dev, src, off, g->n, g->c, g->h * g->w, 0, &plan->lanes, dx, 0, 0, dx);
    return layout_2d(dev, "conv_layout_from_lanes_sub", (size_t)g->c * g->oh, (size_t)rs / LANES,
                     clt_conv_group_x(dev, CLT_CONV_COPY_LX),
                     CLT_ARGS(CLT_ARG(g->n), CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w),
                              CLT_ARG(g->stride), CLT_ARG(g->oh), CLT_ARG(g->ow), CLT_ARG(rs),
                              CLT_ARG(src), CLT_ARG(off), CLT_ARG(dx)));
}

/* Weights w (q, r, k, k) in blocks of qb (the pass's register block) of q,
 * q padded to qp: the forward passes (co, c), backward-data (c, co) with
 * swapped strides. */
static clt_status weights_to_lanes(clt_device *dev, const clt_conv_geom *g, int fwd, int qp, int qb,
                                   cl_mem w, cl_mem dst, cl_ulong off)
{
    int kk = g->k * g->k, q = fwd ? g->co : g->c, r = fwd ? g->c : g->co;
    int qs = fwd ? g->c * kk : kk, rs = fwd ? kk : g->c * kk;
    return layout_2d(dev, "conv_layout_weights", (size_t)(qp / qb), ((size_t)r + LANES - 1) / LANES,
                     clt_conv_group_x(dev, CLT_CONV_COPY_LX),
                     CLT_ARGS(CLT_ARG(q), CLT_ARG(qp), CLT_ARG(qb), CLT_ARG(r), CLT_ARG(kk), CLT_ARG(qs),
                              CLT_ARG(rs), CLT_ARG(w), CLT_ARG(dst), CLT_ARG(off)));
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
     * (the pixel-major order before ran the 512-channel 4x4 layer 1.2x
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
    CLT_TRY(weights_to_lanes(dev, &lp->gk, fwd, fwd ? lp->cop : lp->cip, lp->cfg[fwd ? CLT_CONV_FWD : CLT_CONV_BWD_DATA].a,
                             w, scratch, wt_off));
    return rank1_kernel(dev, lp, fwd, scratch, in_off, wt_off, out_off);
}

static clt_status lanes_forward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                                cl_mem b, const clt_epilogue *epi, cl_mem y)
{
    const clt_conv_lanes_params *lp = &plan->lanes;
    const clt_conv_geom *g = &lp->gk;
    size_t x_elems, wf_elems, total = forward_floats(lp, &x_elems, &wf_elems);
    cl_mem scratch;
    CLT_TRY(clt_device_scratch(dev, total * sizeof(float), &scratch));
    cl_ulong x_off = 0, wf_off = x_elems, y_off = x_elems + wf_elems;
    CLT_TRY(x_to_lanes(dev, plan, x, 1, scratch, x_off));
    CLT_TRY(rank1_pass(dev, lp, 1, w, scratch, x_off, wf_off, y_off));
    int has_bias = b != NULL, relu = clt_epi_relu(epi);
    cl_mem bias = b ? b : w; /* any valid buffer when there is no bias */
    if (!epi || !epi->pool)
        return from_lanes(dev, scratch, y_off, g->n, g->co, g->oh * g->ow, 1, lp, bias, has_bias, relu, y);
    /* the fused pooling's output and its window bytes */
    lanes_rows r = lanes_layout(lp, 1, g->co, g->oh * g->ow);
    cl_mem cells = clt_epi_cells(epi) ? epi->argmax : y;
    int max = epi->pool == CLT_EPI_POOL_MAX;
    size_t windows = (size_t)(g->oh / 2) * (size_t)(g->ow / 2);
    return layout_2d(dev, "conv_layout_from_lanes_pool", (windows + LANES - 1) / LANES,
                     (size_t)g->co * (size_t)(r.rs / LANES), clt_conv_group_x(dev, CLT_CONV_COPY_LX),
                     CLT_ARGS(CLT_ARG(g->n), CLT_ARG(g->co), CLT_ARG(g->oh), CLT_ARG(g->ow), CLT_ARG(r.rs),
                              CLT_ARG(scratch), CLT_ARG(y_off), CLT_ARG(bias), CLT_ARG(has_bias), CLT_ARG(relu),
                              CLT_ARG(max), CLT_ARG(y), CLT_ARG(cells)));
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
    CLT_TRY(x_to_lanes(dev, plan, x, 0, scratch, L->x_off));
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

/* db from dy's channel-major lanes copy at dy_off (conv_layout.cl). */
static clt_status bias_from_lanes(clt_device *dev, const clt_conv_plan *plan, cl_mem scratch, cl_ulong dy_off,
                                  cl_mem db)
{
    const clt_conv_geom *g = &plan->g;
    int p = g->oh * g->ow, rs = clt_conv_lanes_row_stride(&plan->lanes, 0);
    return layout_2d(dev, "conv_bias_grad_lanes", (size_t)g->co, 1, clt_conv_group_x(dev, CLT_CONV_COPY_LX),
                     CLT_ARGS(CLT_ARG(g->co), CLT_ARG(p), CLT_ARG(plan->lanes.nl), CLT_ARG(rs), CLT_ARG(scratch),
                              CLT_ARG(dy_off), CLT_ARG(db)));
}

/* dy goes into the lanes layout of each pass that runs: a second copy of
 * dy costs less than backward-data gains from its pixel-major layout
 * (ResNet-18 training steps at batch 128 on PoCL: 1.05-1.16x faster than
 * with one channel-major copy for both), and less than the weight
 * gradient loses on pixel-major x and dy (its kernel 1.1-1.5x slower on
 * ResNet-18's 3x3 layers, batch 128, PoCL). */
static clt_status lanes_backward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                                 cl_mem dy, const clt_epilogue *epi, cl_mem dx, cl_mem dw, cl_mem db)
{
    const clt_conv_lanes_params *lp = &plan->lanes;
    const clt_conv_geom *g = &lp->gk;
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
        CLT_TRY(to_lanes(dev, dy, epi, g->n, g->co, g->oh, g->ow, 1, 0, lp, scratch, L.dyp_off, both ? &cm_off : NULL));
        CLT_TRY(rank1_pass(dev, lp, 0, w, scratch, L.dyp_off, L.wb_off, L.dx_off));
        CLT_TRY(dx_from_lanes(dev, plan, scratch, L.dx_off, dx));
    }
    if (dw) {
        if (!both) CLT_TRY(to_lanes(dev, dy, epi, g->n, g->co, g->oh, g->ow, 0, 0, lp, scratch, L.dy_off, NULL));
        if (db) CLT_TRY(bias_from_lanes(dev, plan, scratch, L.dy_off, db));
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
