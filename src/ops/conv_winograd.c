/* The "winograd" convolution: 3x3 stride-1 layers by minimal filtering
 * F(2x2,3x3) or F(4x4,3x3) (kernels/conv_winograd.cl): 16 or 36
 * multiplies per tile of 4 or 16 outputs and channel pair instead of 36
 * or 144, at the cost of the transforms and some accuracy (the bounds:
 * docs/ARCHITECTURE.md, numerics). The backward-data is the same forward
 * run on dy with the flipped, transposed filter and padding 2 - pad; the
 * backward-weights the adjoint of the forward's tile arithmetic. The batch
 * runs in groups of 16 images, the vector lanes: a group's input (and the
 * output) interleaved once, so a tile's pixel is one vector, then chunks
 * of tile positions whose transformed tensors stay near the cache (the
 * tuner picks the chunk), or, forward and backward-data on CPU devices,
 * fused: one kernel per image group whose work-items each transform,
 * multiply and transform back a few tile positions in local memory (V and
 * M never reach global memory, the chunks' cost). The weight gradient sums
 * over the tiles, so its lanes are 16 channels instead: x and dy in NHWC,
 * chunks of one or more image groups (as many as fill the chunk where an
 * image has few tiles). Never
 * chosen by rule: CLTRAIN_CONV_ALGO=winograd forces it, else its tuner
 * (conv_winograd_tune.c) gives it the passes where it measured faster
 * than the tuned choice. */
#include <stdio.h>

#include "ops/conv_algo.h"
#include "runtime/launch.h"

#define LANES 16     /* images per tile position; the weight gradient's channels per vector (kernels/conv_winograd.cl, LN) */
#define PRODUCT_RM 8 /* forward product: output channels x vectors of 16 tiles per work-item */
#define PRODUCT_NV 2
#define BLOCK_TILES (PRODUCT_NV * LANES) /* BW: tiles per block of the transformed layouts */
#define WPROD_WR 8                       /* weight product: dy's channels x vectors of 16 of x's per work-item */
#define WPROD_WV 2
#define GROUP_X 8 /* work-groups along dimension 0 */

/* One convolution as the forward kernels see it: the forward itself, or
 * the backward-data (dy in, dx out). */
typedef struct fwd_shape {
    int n, k, h, w; /* input: images, channels, size */
    int r, oh, ow;  /* output channels and size */
    int pad;
} fwd_shape;

static fwd_shape shape_of(const clt_conv_geom *g, int pass)
{
    if (pass == CLT_CONV_BWD_DATA) return (fwd_shape){g->n, g->co, g->oh, g->ow, g->c, g->h, g->w, 2 - g->pad};
    return (fwd_shape){g->n, g->c, g->h, g->w, g->co, g->oh, g->ow, g->pad};
}

/* A pass's sizes: tile columns and positions of an image, and the floats
 * of U (or dU), of a chunk's V and M (or D) at cp positions, and of an
 * image group's interleaved input and output (the weight gradient: x and
 * dy in NHWC, kp and rp channels). */
typedef struct chunk_sizes {
    int tw, positions;
    int rp; /* the product's rows padded: the output channels to RM (the weight gradient: dy's to whole vectors) */
    int kp; /* the weight gradient's channels of x padded to whole product blocks */
    size_t u, v, m, xt, dyt;
} chunk_sizes;

static size_t align(size_t v) { return clt_conv_round_up(v, CLT_CONV_ALIGN_FLOATS); }

/* cp of the fused kernel (conv_winograd_fused): a chunk is an image
 * group's every position, V and M live in local memory. */
#define FUSED_CP 0
static int fused(int cp) { return cp == FUSED_CP; }

static int tile_blocks(int cp) { return (cp * LANES + BLOCK_TILES - 1) / BLOCK_TILES; }

/* cp positions of ni images (the weight gradient; else LANES) a chunk */
static chunk_sizes sizes(const clt_conv_geom *g, int pass, int wm, int cp, int ni)
{
    fwd_shape f = shape_of(g, pass);
    chunk_sizes s;
    size_t e = (size_t)(wm + 2) * (wm + 2), tp = (size_t)tile_blocks(cp) * BLOCK_TILES;
    s.tw = (f.ow + wm - 1) / wm;
    s.positions = (f.oh + wm - 1) / wm * s.tw;
    if (pass == CLT_CONV_BWD_WEIGHTS) { /* dU, V of x, D of dy, x and dy in NHWC */
        size_t tiles = (size_t)cp * ni;
        s.kp = (int)clt_conv_round_up((size_t)g->c, WPROD_WV * LANES);
        s.rp = (int)clt_conv_round_up((size_t)g->co, LANES);
        s.u = align(e * g->co * s.kp);
        s.v = align(e * s.kp * tiles);
        s.m = align(e * s.rp * tiles);
        s.xt = align((size_t)s.kp * f.h * f.w * ni);
        s.dyt = align((size_t)s.rp * f.oh * f.ow * ni);
        return s;
    }
    /* U, V of the input, M, the input interleaved and the output before it goes in place */
    s.kp = 0;
    s.rp = (int)clt_conv_round_up((size_t)f.r, PRODUCT_RM);
    s.u = align(e * f.k * s.rp);
    s.v = fused(cp) ? 0 : align(e * f.k * tp);
    s.m = fused(cp) ? 0 : align(e * s.rp * tp);
    s.xt = align((size_t)f.k * f.h * f.w * LANES);
    s.dyt = align((size_t)f.r * f.oh * f.ow * LANES);
    return s;
}

/* The work buffer: U, V, M, then the interleaved input and the output (the
 * weight gradient: dU, V, D, x and dy in NHWC). */
static size_t scratch_floats(const chunk_sizes *s) { return s->u + s->v + s->m + s->xt + s->dyt; }

static unsigned winograd_supports(const clt_conv_geom *g, unsigned open)
{
    /* backward-data pads dy by 2 - pad */
    return g->k == 3 && g->stride == 1 && g->pad <= 2 ? open : 0;
}

/* Bytes of local memory the fused kernel's tile block takes for the e
 * elements of ch channels: V (ch = its input channels), M (ch = RM). */
static size_t fused_local(int e, int ch) { return (size_t)e * ch * BLOCK_TILES * sizeof(float); }

/* Whether dev runs pass fused: a CPU device (a work-group is one item)
 * whose local memory holds a tile block's V and M; not the weight
 * gradient, whose sum runs over every tile. */
static int fused_fits(const clt_device *dev, const clt_conv_geom *g, int pass, int wm)
{
    const clt_device_info *in = clt_device_get_info(dev);
    int e = (wm + 2) * (wm + 2);
    return pass != CLT_CONV_BWD_WEIGHTS && in->type == CLT_DEVICE_CPU && in->local_mem_bytes > 0 &&
           fused_local(e, shape_of(g, pass).k) + fused_local(e, PRODUCT_RM) <= (size_t)in->local_mem_bytes;
}

int clt_conv_winograd_use(const clt_device *dev, clt_conv_plan *plan, int pass, int wm, int kib)
{
    const clt_conv_geom *g = &plan->g;
    if ((wm != 2 && wm != 4) || kib < 0 || !winograd_supports(g, CLT_CONV_PASS(pass))) return 0;
    int cp = FUSED_CP, ni = LANES;
    if (kib != CLT_CONV_WINOGRAD_FUSED) {
        chunk_sizes two = sizes(g, pass, wm, 2, LANES); /* one block of positions */
        size_t per_block = (two.v + two.m) * sizeof(float), target = (size_t)kib << 10;
        cp = 2 * (int)(target / per_block);
        if (cp < 2) cp = 2;
        if (cp > two.positions) {
            /* the weight gradient's sum over tiles takes several image
             * groups a chunk where they fit: few tiles an image (conv10's
             * one) would leave its products short sums, stored each chunk */
            int groups = cp / two.positions;
            if (pass == CLT_CONV_BWD_WEIGHTS) ni = LANES * groups < g->n ? LANES * groups : g->n;
            cp = two.positions;
        }
    } else if (!fused_fits(dev, g, pass, wm)) {
        return 0;
    }
    chunk_sizes s = sizes(g, pass, wm, cp, ni);
    if (!clt_conv_fits(dev, scratch_floats(&s) * sizeof(float))) return 0;
    plan->winograd.cfg[pass] = (clt_conv_winograd_cfg){wm, cp, kib, ni};
    plan->winograd.tuned[pass] = 0;
    plan->algo[pass] = &clt_conv_winograd;
    return 1;
}

static int winograd_plan(const clt_device *dev, clt_conv_plan *plan, unsigned passes)
{
    clt_conv_plan t = *plan;
    for (int p = 0; p < CLT_CONV_PASSES; p++)
        if ((passes & CLT_CONV_PASS(p)) &&
            !clt_conv_winograd_use(dev, &t, p, CLT_CONV_WINOGRAD_RULE_WM,
                                   p == CLT_CONV_BWD_WEIGHTS ? CLT_CONV_WINOGRAD_RULE_KIB_BWDW
                                                             : CLT_CONV_WINOGRAD_RULE_KIB))
            return 0;
    *plan = t;
    return 1;
}

static void program(const clt_conv_winograd_cfg *c, int pass, char *spec, size_t cap)
{
    if (pass == CLT_CONV_BWD_WEIGHTS)
        snprintf(spec, cap, "conv_winograd -DWM=%d -DWR=%d -DWV=%d", c->wm, WPROD_WR, WPROD_WV);
    else
        snprintf(spec, cap, "conv_winograd -DWM=%d -DRM=%d -DNV=%d", c->wm, PRODUCT_RM, PRODUCT_NV);
}

/* One chunk: ni images from g0, tile positions p0 to p0 + cp, in tb blocks. */
typedef struct chunk {
    int g0, p0, cp, tb;
} chunk;

/* The chunks in order (images, then positions): 0 after the last. */
static int next_chunk(const fwd_shape *f, const chunk_sizes *s, int cp, int ni, chunk *c, int first)
{
    if (fused(cp)) cp = s->positions;
    if (first) c->g0 = c->p0 = 0;
    else if ((c->p0 += cp) >= s->positions && (c->p0 = 0, (c->g0 += ni) >= f->n))
        return 0;
    c->cp = s->positions - c->p0 < cp ? s->positions - c->p0 : cp;
    c->tb = tile_blocks(c->cp);
    return 1;
}

/* An image group's k channels of hw pixels from in (through the ReLU's
 * derivative where relu), interleaved at off. */
static clt_status interleave(clt_device *dev, const char *spec, int k, int hw, int n, int g0, cl_mem in, int relu,
                             cl_mem ym, cl_mem scratch, cl_ulong off)
{
    return clt_launch_2d(dev, spec, "conv_winograd_interleave", (size_t)(hw + LANES - 1) / LANES, (size_t)k,
                         clt_conv_group_x(dev, GROUP_X), 1,
                         CLT_ARGS(CLT_ARG(k), CLT_ARG(hw), CLT_ARG(n), CLT_ARG(g0), CLT_ARG(in), CLT_ARG(relu),
                                  CLT_ARG(ym), CLT_ARG(scratch), CLT_ARG(off)));
}

/* A transform of a chunk's tiles (kernels/conv_winograd.cl's
 * DEFINE_TILE_TRANSFORM): V of an interleaved input of k channels, h x w,
 * at in_off, to off. */
static clt_status tile_transform(clt_device *dev, const char *spec, const char *kernel, int k, int h, int w, int pad,
                                 const chunk_sizes *s, const chunk *c, cl_mem scratch, cl_ulong in_off, cl_ulong off)
{
    int bw = BLOCK_TILES;
    return clt_launch_2d(dev, spec, kernel, (size_t)c->tb * bw / LANES, (size_t)k, clt_conv_group_x(dev, GROUP_X), 1,
                         CLT_ARGS(CLT_ARG(k), CLT_ARG(h), CLT_ARG(w), CLT_ARG(pad), CLT_ARG(s->tw), CLT_ARG(c->p0),
                                  CLT_ARG(c->cp), CLT_ARG(c->tb), CLT_ARG(bw), CLT_ARG(scratch), CLT_ARG(in_off),
                                  CLT_ARG(scratch), CLT_ARG(off)));
}

/* A forward's state (the layer's forward, or its backward-data): its
 * kernels' program, sizes, work buffer and offsets in it, the output's
 * bias and ReLU. */
typedef struct fwd_run {
    clt_device *dev;
    char spec[64];
    fwd_shape f;
    chunk_sizes s;
    cl_mem scratch, bias;
    cl_ulong u_off, v_off, m_off, xt_off, yt_off;
    int e, has_bias, relu;
} fwd_run;

/* One chunk of the interleaved input as three kernels: V of its tiles,
 * the products, the output transforms. */
static clt_status split_chunk(fwd_run *r, const chunk *k)
{
    const fwd_shape *f = &r->f;
    int tp = k->tb * BLOCK_TILES;
    CLT_TRY(tile_transform(r->dev, r->spec, "conv_winograd_input", f->k, f->h, f->w, f->pad, &r->s, k, r->scratch,
                           r->xt_off, r->v_off));
    CLT_TRY(clt_launch_2d(r->dev, r->spec, "conv_winograd_product", (size_t)r->e * (r->s.rp / PRODUCT_RM),
                          (size_t)k->tb, clt_conv_group_x(r->dev, GROUP_X), 1,
                          CLT_ARGS(CLT_ARG(f->k), CLT_ARG(r->s.rp), CLT_ARG(k->tb), CLT_ARG(r->scratch),
                                   CLT_ARG(r->u_off), CLT_ARG(r->scratch), CLT_ARG(r->v_off), CLT_ARG(r->scratch),
                                   CLT_ARG(r->m_off))));
    return clt_launch_2d(r->dev, r->spec, "conv_winograd_output", (size_t)k->cp, (size_t)f->r,
                         clt_conv_group_x(r->dev, GROUP_X), 1,
                         CLT_ARGS(CLT_ARG(f->r), CLT_ARG(r->s.rp), CLT_ARG(f->oh), CLT_ARG(f->ow), CLT_ARG(r->s.tw),
                                  CLT_ARG(k->p0), CLT_ARG(k->cp), CLT_ARG(tp), CLT_ARG(r->scratch), CLT_ARG(r->m_off),
                                  CLT_ARG(r->bias), CLT_ARG(r->has_bias), CLT_ARG(r->relu), CLT_ARG(r->scratch),
                                  CLT_ARG(r->yt_off)));
}

/* An image group's every tile in one kernel (conv_winograd_fused), its V
 * and M in local memory. */
static clt_status fused_group(fwd_run *r)
{
    const fwd_shape *f = &r->f;
    size_t vl = fused_local(r->e, f->k), ml = fused_local(r->e, PRODUCT_RM);
    size_t items = (size_t)(r->s.positions + PRODUCT_NV - 1) / PRODUCT_NV;
    return clt_launch_2d(r->dev, r->spec, "conv_winograd_fused", items, 1, 1, 1,
                         CLT_ARGS(CLT_ARG(f->k), CLT_ARG(f->h), CLT_ARG(f->w), CLT_ARG(f->pad), CLT_ARG(f->r),
                                  CLT_ARG(r->s.rp), CLT_ARG(f->oh), CLT_ARG(f->ow), CLT_ARG(r->s.tw),
                                  CLT_ARG(r->s.positions), CLT_ARG(r->scratch), CLT_ARG(r->xt_off),
                                  CLT_ARG(r->scratch), CLT_ARG(r->u_off), CLT_ARG(r->bias), CLT_ARG(r->has_bias),
                                  CLT_ARG(r->relu), CLT_ARG(r->scratch), CLT_ARG(r->yt_off), CLT_LOCAL(vl),
                                  CLT_LOCAL(ml)));
}

/* The forward of pass's shape (the layer's forward, or its backward-data):
 * out = conv(in, w) + b, ReLU where relu_out; in read through the ReLU's
 * derivative (ym) where relu_in. */
static clt_status run_forward(clt_device *dev, const clt_conv_plan *plan, int pass, cl_mem in, int relu_in,
                              cl_mem ym, cl_mem w, cl_mem b, int relu_out, cl_mem out)
{
    const clt_conv_winograd_cfg *c = &plan->winograd.cfg[pass];
    fwd_run r = {.dev = dev, .f = shape_of(&plan->g, pass), .bias = b ? b : w /* any buffer without a bias */,
                 .has_bias = b != NULL, .relu = relu_out, .e = (c->wm + 2) * (c->wm + 2)};
    const fwd_shape *f = &r.f;
    r.s = sizes(&plan->g, pass, c->wm, c->cp, LANES);
    program(c, pass, r.spec, sizeof r.spec);
    CLT_TRY(clt_device_scratch(dev, scratch_floats(&r.s) * sizeof(float), &r.scratch));
    r.v_off = r.s.u;
    r.m_off = r.v_off + r.s.v;
    r.xt_off = r.m_off + r.s.m;
    r.yt_off = r.xt_off + r.s.xt;
    int flip = pass == CLT_CONV_BWD_DATA;
    CLT_TRY(clt_launch_2d(dev, r.spec, "conv_winograd_filter", (size_t)f->k, (size_t)(r.s.rp / PRODUCT_RM), 0, 0,
                          CLT_ARGS(CLT_ARG(f->r), CLT_ARG(f->k), CLT_ARG(r.s.rp), CLT_ARG(flip), CLT_ARG(w),
                                   CLT_ARG(r.scratch), CLT_ARG(r.u_off))));
    chunk k;
    for (int more = next_chunk(f, &r.s, c->cp, LANES, &k, 1); more;
         more = next_chunk(f, &r.s, c->cp, LANES, &k, 0)) {
        if (k.p0 == 0)
            CLT_TRY(interleave(dev, r.spec, f->k, f->h * f->w, f->n, k.g0, in, relu_in, ym, r.scratch, r.xt_off));
        CLT_TRY(fused(c->cp) ? fused_group(&r) : split_chunk(&r, &k));
        if (k.p0 + k.cp < r.s.positions) continue;
        /* the group's last chunk: its outputs in place */
        int hw = f->oh * f->ow;
        CLT_TRY(clt_launch_2d(dev, r.spec, "conv_winograd_deinterleave", (size_t)(hw + LANES - 1) / LANES,
                              (size_t)f->r, clt_conv_group_x(dev, GROUP_X), 1,
                              CLT_ARGS(CLT_ARG(f->r), CLT_ARG(hw), CLT_ARG(f->n), CLT_ARG(k.g0), CLT_ARG(r.scratch),
                                       CLT_ARG(r.yt_off), CLT_ARG(out))));
    }
    return CLT_OK;
}

static clt_status winograd_forward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w, cl_mem b,
                                   const clt_epilogue *epi, cl_mem y)
{
    return run_forward(dev, plan, CLT_CONV_FWD, x, 0, x, w, b, clt_epi_relu(epi), y);
}

/* An image group's k channels of hw pixels from in (through the ReLU's
 * derivative where relu) in NHWC, kp channels, at off. */
static clt_status nhwc(clt_device *dev, const char *spec, int k, int kp, int hw, int g0, int nl, cl_mem in, int relu,
                       cl_mem ym, cl_mem scratch, cl_ulong off)
{
    return clt_launch_2d(dev, spec, "conv_winograd_nhwc", (size_t)(hw + LANES - 1) / LANES, (size_t)kp / LANES * nl,
                         clt_conv_group_x(dev, GROUP_X), 1,
                         CLT_ARGS(CLT_ARG(k), CLT_ARG(kp), CLT_ARG(hw), CLT_ARG(g0), CLT_ARG(nl), CLT_ARG(in),
                                  CLT_ARG(relu), CLT_ARG(ym), CLT_ARG(scratch), CLT_ARG(off)));
}

/* A transform of a chunk's tc tiles (kernels/conv_winograd.cl's
 * DEFINE_CHANNEL_TRANSFORM) from an image group in NHWC (kp channels, h x
 * w) at in_off to off. */
static clt_status channel_transform(clt_device *dev, const char *spec, const char *kernel, int kp, int h, int w,
                                    int pad, const chunk_sizes *s, const chunk *c, int nl, cl_mem scratch,
                                    cl_ulong in_off, cl_ulong off)
{
    int tc = c->cp * nl;
    return clt_launch_2d(dev, spec, kernel, (size_t)tc, (size_t)kp / LANES, clt_conv_group_x(dev, GROUP_X), 1,
                         CLT_ARGS(CLT_ARG(kp), CLT_ARG(h), CLT_ARG(w), CLT_ARG(pad), CLT_ARG(s->tw), CLT_ARG(c->p0),
                                  CLT_ARG(nl), CLT_ARG(tc), CLT_ARG(scratch), CLT_ARG(in_off), CLT_ARG(scratch),
                                  CLT_ARG(off)));
}

/* dw: per chunk, V of x and D of dy (the group's images only), their
 * products added to dU in chunk order; then dw = G^T dU G. */
static clt_status run_weights(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem dy, int relu, cl_mem ym,
                              cl_mem dw)
{
    const clt_conv_geom *g = &plan->g;
    const clt_conv_winograd_cfg *c = &plan->winograd.cfg[CLT_CONV_BWD_WEIGHTS];
    fwd_shape f = shape_of(g, CLT_CONV_FWD);
    chunk_sizes s = sizes(g, CLT_CONV_BWD_WEIGHTS, c->wm, c->cp, c->ni);
    char spec[64];
    program(c, CLT_CONV_BWD_WEIGHTS, spec, sizeof spec);
    cl_mem scratch;
    CLT_TRY(clt_device_scratch(dev, scratch_floats(&s) * sizeof(float), &scratch));
    cl_ulong u_off = 0, v_off = s.u, d_off = s.u + s.v, xt_off = d_off + s.m, dyt_off = xt_off + s.xt;
    int e = (c->wm + 2) * (c->wm + 2), acc = 0;
    chunk k;
    for (int more = next_chunk(&f, &s, c->cp, c->ni, &k, 1); more;
         more = next_chunk(&f, &s, c->cp, c->ni, &k, 0), acc = 1) {
        int nl = g->n - k.g0 < c->ni ? g->n - k.g0 : c->ni, tc = k.cp * nl;
        if (k.p0 == 0) {
            CLT_TRY(nhwc(dev, spec, g->c, s.kp, g->h * g->w, k.g0, nl, x, 0, x, scratch, xt_off));
            CLT_TRY(nhwc(dev, spec, g->co, s.rp, g->oh * g->ow, k.g0, nl, dy, relu, ym, scratch, dyt_off));
        }
        CLT_TRY(channel_transform(dev, spec, "conv_winograd_input_nhwc", s.kp, g->h, g->w, g->pad, &s, &k, nl, scratch,
                                  xt_off, v_off));
        CLT_TRY(channel_transform(dev, spec, "conv_winograd_dy_nhwc", s.rp, g->oh, g->ow, 0, &s, &k, nl, scratch,
                                  dyt_off, d_off));
        CLT_TRY(clt_launch_2d(dev, spec, "conv_winograd_wgemm", (size_t)s.kp / (WPROD_WV * LANES),
                              (size_t)e * (s.rp / WPROD_WR), 0, 0,
                              CLT_ARGS(CLT_ARG(g->co), CLT_ARG(s.rp), CLT_ARG(s.kp), CLT_ARG(tc), CLT_ARG(acc),
                                       CLT_ARG(scratch), CLT_ARG(d_off), CLT_ARG(scratch), CLT_ARG(v_off),
                                       CLT_ARG(scratch), CLT_ARG(u_off))));
    }
    return clt_launch_2d(dev, spec, "conv_winograd_filter_grad", ((size_t)g->c + LANES - 1) / LANES, (size_t)g->co,
                         0, 0,
                         CLT_ARGS(CLT_ARG(g->co), CLT_ARG(g->c), CLT_ARG(s.kp), CLT_ARG(scratch), CLT_ARG(u_off),
                                  CLT_ARG(dw)));
}

static clt_status winograd_backward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w, cl_mem dy,
                                    const clt_epilogue *epi, cl_mem dx, cl_mem dw, cl_mem db)
{
    if (db) CLT_TRY(clt_conv_bias_grad(dev, &plan->g, dy, epi, db));
    int relu = clt_epi_relu(epi);
    cl_mem ym = clt_epi_mask(epi, dy);
    if (dw) CLT_TRY(run_weights(dev, plan, x, dy, relu, ym, dw));
    if (dx) CLT_TRY(run_forward(dev, plan, CLT_CONV_BWD_DATA, dy, relu, ym, w, NULL, 0, dx));
    return CLT_OK;
}

void clt_conv_winograd_format(const clt_conv_winograd_cfg *c, char *buf, size_t cap)
{
    if (c->kib == CLT_CONV_WINOGRAD_FUSED) snprintf(buf, cap, "f%d fused", c->wm);
    else snprintf(buf, cap, "f%d ck%d", c->wm, c->kib);
}

int clt_conv_winograd_parse(const char *text, clt_conv_winograd_cfg *c)
{
    char tail;
    *c = (clt_conv_winograd_cfg){0};
    if (sscanf(text, "f%d fuse%c%c", &c->wm, &tail, &tail) == 2 && tail == 'd') return 1;
    return sscanf(text, "f%d ck%d%c", &c->wm, &c->kib, &tail) == 2 && c->kib > 0;
}

static void winograd_describe(const clt_conv_plan *plan, int pass, char *buf, size_t cap)
{
    char c[32];
    clt_conv_winograd_format(&plan->winograd.cfg[pass], c, sizeof c);
    int cp = plan->winograd.cfg[pass].cp, ni = plan->winograd.cfg[pass].ni;
    snprintf(buf, cap, "%s%s%.0d%s%.0d%s", c, cp ? " cp" : "", cp, ni > LANES ? " ni" : "", ni > LANES ? ni : 0,
             plan->winograd.tuned[pass] ? " tuned" : "");
}

const clt_conv_algo clt_conv_winograd = {
    .name = "winograd",
    .supports = winograd_supports,
    .plan = winograd_plan,
    .forward = winograd_forward,
    .backward = winograd_backward,
    .describe = winograd_describe,
    .tune = clt_conv_winograd_tune,
};
