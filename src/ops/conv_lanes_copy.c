/* The copies into and out of the lanes layouts (kernels/conv_layout.cl,
 * and conv_layout_pool.cl for a fused pooling): an NCHW tensor into a
 * lanes layout (x, and dy through a fused ReLU's derivative or spread from
 * a fused pooling's dy), the weights into the order the kernels broadcast
 * them in, a lanes layout back to NCHW (y with the bias, a fused ReLU and
 * a fused pooling; dx), and the bias gradient summed from dy's copy.
 * conv_lanes.c runs the passes between them. */
#include <stdio.h>

#include "ops/conv_lanes.h"
#include "runtime/launch.h"

#define LANES CLT_CONV_LANES

/* The copies transpose in blocks of the native width's registers
 * (kernels/conv_layout.cl, TQ): 8 x 8 below AVX-512, where a 16 x 16
 * block spills (ResNet-18's largest copy into the lanes layout, batch
 * 128, measured faster with 8 x 8 on PoCL, no slower on Intel's runtime;
 * the copies back measured the same). */
static clt_status layout_2d_in(clt_device *dev, int stream, const char *kernel, size_t gx, size_t gy, size_t lx,
                               int nargs, const clt_arg *args)
{
    int tq = clt_device_vector_width(dev) >= 16 ? 16 : 8;
    char spec[48];
    snprintf(spec, sizeof spec, "conv_layout%s%s", tq == 8 ? " -DTQ=8" : "",
             stream && clt_device_base_align(dev) >= (size_t)tq * sizeof(float) ? " -DNT=1" : "");
    return clt_launch_2d(dev, spec, kernel, gx, gy, lx, 1, nargs, args);
}

static clt_status layout_2d(clt_device *dev, const char *kernel, size_t gx, size_t gy, size_t lx,
                            int nargs, const clt_arg *args)
{
    return layout_2d_in(dev, 0, kernel, gx, gy, lx, nargs, args);
}

/* The fused pooling's copies (kernels/conv_layout_pool.cl): one program
 * for every device. */
static clt_status pool_2d(clt_device *dev, const char *kernel, size_t gx, size_t gy, size_t lx, int nargs,
                          const clt_arg *args)
{
    return clt_launch_2d(dev, "conv_layout_pool", kernel, gx, gy, lx, 1, nargs, args);
}

/* Copies into a lanes layout this large store past the cache (-DNT=1,
 * where the device's buffers start aligned for a block's row): a full line
 * each, so no line is read for ownership first. ResNet-18 at batch 128 on
 * PoCL (AVX2, 32 MiB L3): its 26 and 13 MB copies measured faster, 6.4 MB
 * ones no faster, the kernels reading them after unchanged; but LeNet's
 * copies of 3.5-4 MB at batch 256 come back from memory instead of the L3
 * (training measured slower). Copies back to NCHW so ran slower: their
 * reader is a memory-bound op. */
#define STREAM_MIN_BYTES ((size_t)8 << 20)

/* Where a lanes layout keeps pixel p of channel c: row p * ps + c * cs
 * (p in stride-phase order in the weight gradient's x where cfg.ph),
 * rows rs floats apart (clt_conv_lanes_row_stride). The forward's layout
 * is pixel-major, the backward's channel-major (kernels/conv_lanes.cl says
 * why). Pixel-major rows have the gap of conv_lanes.c's lanes_stride: the
 * forward's and backward-data's inner loop reads a vector of each channel,
 * a row apart. The weight gradient walks the channel-major rows one after
 * the other, and a gap there measured no faster (slower at batch 32, 128
 * and 256, in noisy rounds). */
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
 * copies (ResNet-18's dy at batch 128, PoCL: the same step time either
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
        return pool_2d(dev, "conv_layout_pool_to_lanes", (windows + LANES - 1) / LANES, blocks,
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
 * convolutions: measured far faster for 800 x 256). */
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

/* y from the forward's pixel-major lanes layout; a fused pooling's
 * output and its window bytes where epi has one. */
clt_status clt_conv_lanes_y_from(clt_device *dev, const clt_conv_lanes_params *lp, cl_mem src, cl_ulong off, cl_mem b,
                                 cl_mem w, const clt_epilogue *epi, cl_mem y)
{
    const clt_conv_geom *g = &lp->gk;
    int has_bias = b != NULL, relu = clt_epi_relu(epi);
    cl_mem bias = b ? b : w; /* any valid buffer when there is no bias */
    if (!epi || !epi->pool)
        return from_lanes(dev, src, off, g->n, g->co, g->oh * g->ow, 1, lp, bias, has_bias, relu, y);
    lanes_rows r = lanes_layout(lp, 1, g->co, g->oh * g->ow);
    cl_mem cells = clt_epi_cells(epi) ? epi->argmax : y;
    int max = epi->pool == CLT_EPI_POOL_MAX;
    size_t windows = (size_t)(g->oh / 2) * (size_t)(g->ow / 2);
    return pool_2d(dev, "conv_layout_pool_from_lanes", (windows + LANES - 1) / LANES,
                     (size_t)g->co * (size_t)(r.rs / LANES), clt_conv_group_x(dev, CLT_CONV_COPY_LX),
                     CLT_ARGS(CLT_ARG(g->n), CLT_ARG(g->co), CLT_ARG(g->oh), CLT_ARG(g->ow), CLT_ARG(r.rs),
                              CLT_ARG(src), CLT_ARG(off), CLT_ARG(bias), CLT_ARG(has_bias), CLT_ARG(relu),
                              CLT_ARG(max), CLT_ARG(y), CLT_ARG(cells)));
}

/* x into a lanes layout of the kernels' geometry: a strided 1x1 layer
 * copies only the pixels it reads (a quarter of x at stride 2). */
clt_status clt_conv_lanes_x_to(clt_device *dev, const clt_conv_plan *plan, cl_mem x, int pixel_major, cl_mem dst,
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

clt_status clt_conv_lanes_dy_to(clt_device *dev, const clt_conv_lanes_params *lp, cl_mem dy, const clt_epilogue *epi,
                                int pixel_major, cl_mem dst, cl_ulong off, const cl_ulong *cm_off)
{
    const clt_conv_geom *g = &lp->gk;
    return to_lanes(dev, dy, epi, g->n, g->co, g->oh, g->ow, pixel_major, 0, lp, dst, off, cm_off);
}

/* dx from the channel-major lanes layout of the kernels' geometry (a
 * strided 1x1 layer: zeros between the pixels it read). */
clt_status clt_conv_lanes_dx_from(clt_device *dev, const clt_conv_plan *plan, cl_mem src, cl_ulong off, cl_mem dx)
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
clt_status clt_conv_lanes_weights_to(clt_device *dev, const clt_conv_geom *g, int fwd, int qp, int qb, cl_mem w,
                                     cl_mem dst, cl_ulong off)
{
    int kk = g->k * g->k, q = fwd ? g->co : g->c, r = fwd ? g->c : g->co;
    int qs = fwd ? g->c * kk : kk, rs = fwd ? kk : g->c * kk;
    return layout_2d(dev, "conv_layout_weights", (size_t)(qp / qb), ((size_t)r + LANES - 1) / LANES,
                     clt_conv_group_x(dev, CLT_CONV_COPY_LX),
                     CLT_ARGS(CLT_ARG(q), CLT_ARG(qp), CLT_ARG(qb), CLT_ARG(r), CLT_ARG(kk), CLT_ARG(qs),
                              CLT_ARG(rs), CLT_ARG(w), CLT_ARG(dst), CLT_ARG(off)));
}

/* db from dy's channel-major lanes copy at dy_off (conv_layout.cl). */
clt_status clt_conv_lanes_bias_from(clt_device *dev, const clt_conv_plan *plan, cl_mem scratch, cl_ulong dy_off,
                                  cl_mem db)
{
    const clt_conv_geom *g = &plan->g;
    int p = g->oh * g->ow, rs = clt_conv_lanes_row_stride(&plan->lanes, 0);
    return layout_2d(dev, "conv_bias_grad_lanes", (size_t)g->co, 1, clt_conv_group_x(dev, CLT_CONV_COPY_LX),
                     CLT_ARGS(CLT_ARG(g->co), CLT_ARG(p), CLT_ARG(plan->lanes.nl), CLT_ARG(rs), CLT_ARG(scratch),
                              CLT_ARG(dy_off), CLT_ARG(db)));
}
