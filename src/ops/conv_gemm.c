/* The "gemm" convolution (GPUs, accelerators): im2col of a chunk of images
 * (the whole shard when it fits the budget) into a (c*k*k, images*oh*ow)
 * matrix, one CLBlast SGEMM per chunk and pass, and a gather col2im that
 * writes every dx element once (kernels/conv_gemm.cl). Float16-per-item
 * register blocks like the lanes kernels' would spill and defeat
 * coalescing on a GPU, while CLBlast is tuned for GPUs. It runs any shape:
 * it is also the fallback when another algorithm's work buffer does not fit. */
#include <stdio.h>

#include "ops/conv_algo.h"
#include "runtime/gemm.h"
#include "runtime/launch.h"

static unsigned gemm_supports(const clt_conv_geom *g, unsigned open)
{
    (void)g;
    return open;
}

/* The weight gradient is a co x ckk matrix, often a few GEMM tiles, summed
 * over a K of images*p (100k for ResNet-18's 28x28 layers at batch 128):
 * one GEMM keeps a handful of a GPU's units busy (it ran far below cuDNN's
 * speed on an H100). Split-K: slices of K, each at least 256 long, run as a
 * strided batch into partial matrices, summed in a fixed order; about four
 * 32x32 tiles per compute unit. Chosen by shape and unit count, so CPUs
 * (few units) split only the smallest outputs, LeNet's conv1 say. */
static int gemm_splits(const clt_device *dev, const clt_conv_geom *g, size_t q)
{
    size_t ckk = (size_t)g->c * g->k * g->k;
    return (int)clt_conv_k_slices(dev, (((size_t)g->co + 31) / 32) * ((ckk + 31) / 32), q);
}

/* Floats of the (co, images*p) matrix of a chunk. */
static size_t gemm_mat_elems(const clt_conv_plan *plan)
{
    const clt_conv_geom *g = &plan->g;
    return clt_conv_round_up((size_t)g->co * g->oh * g->ow * (size_t)plan->gemm.nb,
                             CLT_CONV_ALIGN_FLOATS);
}

/* Images per chunk: the im2col matrix and the (co, images*p) result of a
 * chunk fit the work-buffer budget: the device's settings, else its largest
 * allocation, at most 512 MiB. */
static int gemm_plan(const clt_device *dev, clt_conv_plan *plan, unsigned passes)
{
    (void)passes;
    const clt_conv_geom *g = &plan->g;
    size_t budget = clt_conv_budget(dev, (size_t)512 << 20);
    size_t p = (size_t)g->oh * g->ow, ckk = (size_t)g->c * g->k * g->k;
    size_t per_image = (ckk + (size_t)g->co) * p, floats = budget / sizeof(float);
    size_t nb = per_image ? floats / per_image : (size_t)g->n;
    if (nb < 1) nb = 1;
    if (nb > (size_t)g->n) nb = (size_t)g->n;
    plan->gemm.nb = (int)nb;
    plan->gemm.col_elems = clt_conv_round_up(ckk * p * nb, CLT_CONV_ALIGN_FLOATS);
    /* the partial matrices share the budget: fewer slices where it is tight */
    size_t used = plan->gemm.col_elems + gemm_mat_elems(plan), dw_elems = (size_t)g->co * ckk;
    size_t splits = (size_t)gemm_splits(dev, g, p * nb), room = floats > used ? floats - used : 0;
    if (splits * dw_elems > room) splits = room / dw_elems;
    plan->gemm.splits = splits > 1 ? (int)splits : 1;
    return 1;
}

/* The work buffer: the im2col matrix, the (co, images*p) matrix, then (split
 * weight gradient) the partial co x ckk matrices. */
static clt_status gemm_scratch(clt_device *dev, const clt_conv_plan *plan, int with_parts,
                               cl_mem *scratch)
{
    const clt_conv_geom *g = &plan->g;
    size_t parts = with_parts && plan->gemm.splits > 1
                       ? (size_t)plan->gemm.splits * g->co * g->c * g->k * g->k
                       : 0;
    return clt_device_scratch(dev, (plan->gemm.col_elems + gemm_mat_elems(plan) + parts) * sizeof(float),
                              scratch);
}

/* The weight gradient of one chunk: dw (co x ckk) (+)= dyt (co x q) col^T
 * directly, or (split) into the partial matrices at part_off, slice s of K
 * into partial s; a remainder of K joins the last slice. */
static clt_status gemm_dw_chunk(clt_device *dev, const clt_conv_plan *plan, size_t q, int first,
                                cl_mem scratch, cl_ulong col_off, cl_ulong dyt_off, cl_mem dw,
                                cl_ulong part_off)
{
    const clt_conv_geom *g = &plan->g;
    size_t ckk = (size_t)g->c * g->k * g->k, co = (size_t)g->co, S = (size_t)plan->gemm.splits;
    float beta = first ? 0.0f : 1.0f;
    if (S == 1)
        return clt_gemm(dev, false, true, co, ckk, q, 1.0f, scratch, dyt_off, q, scratch, col_off,
                        q, beta, dw, 0, ckk);
    size_t ks = q / S, done = ks * S;
    if (ks > 0)
        CLT_TRY(clt_gemm_batched(dev, false, true, co, ckk, ks, 1.0f, scratch, dyt_off, q, ks,
                                 scratch, col_off, q, ks, beta, scratch, part_off, ckk, co * ckk, S));
    if (done == q) return CLT_OK;
    /* the first chunk is at least 256 * S long, so ks > 0 there: beta 1 */
    return clt_gemm(dev, false, true, co, ckk, q - done, 1.0f, scratch, dyt_off + done, q, scratch,
                    col_off + done, q, 1.0f, scratch, part_off + (S - 1) * co * ckk, ckk);
}

static clt_status im2col(clt_device *dev, const clt_conv_geom *g, cl_mem x, int n0, int nb,
                         cl_mem col, cl_ulong col_off)
{
    size_t q = (size_t)nb * g->oh * g->ow, rows = (size_t)g->c * g->k * g->k;
    return clt_launch_2d(dev, "conv_gemm", "conv_gemm_im2col", q, rows, clt_conv_group_x(dev, 64), 1,
                         CLT_ARGS(CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w), CLT_ARG(g->k),
                                  CLT_ARG(g->stride), CLT_ARG(g->pad), CLT_ARG(g->oh),
                                  CLT_ARG(g->ow), CLT_ARG(n0), CLT_ARG(nb), CLT_ARG(x),
                                  CLT_ARG(col), CLT_ARG(col_off)));
}

static clt_status gemm_forward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                               cl_mem b, const clt_epilogue *epi, cl_mem y)
{
    const clt_conv_geom *g = &plan->g;
    size_t p = (size_t)g->oh * g->ow, ckk = (size_t)g->c * g->k * g->k;
    int nb = plan->gemm.nb, P = (int)p;
    cl_mem scratch;
    CLT_TRY(gemm_scratch(dev, plan, 0, &scratch));
    cl_ulong col_off = 0, yt_off = plan->gemm.col_elems;
    int has_bias = b != NULL, relu = clt_epi_relu(epi);
    cl_mem bias = b ? b : w; /* any valid buffer when there is no bias */
    for (int n0 = 0; n0 < g->n; n0 += nb) {
        int cnt = g->n - n0 < nb ? g->n - n0 : nb;
        size_t q = (size_t)cnt * p;
        CLT_TRY(im2col(dev, g, x, n0, cnt, scratch, col_off));
        CLT_TRY(clt_gemm(dev, false, false, (size_t)g->co, q, ckk, 1.0f, w, 0, ckk, scratch,
                         col_off, q, 0.0f, scratch, yt_off, q));
        CLT_TRY(clt_launch_2d(dev, "conv_gemm", "conv_gemm_cq_to_nchw", q, (size_t)g->co, 0, 0,
                              CLT_ARGS(CLT_ARG(g->co), CLT_ARG(P), CLT_ARG(n0), CLT_ARG(cnt),
                                       CLT_ARG(scratch), CLT_ARG(yt_off), CLT_ARG(bias),
                                       CLT_ARG(has_bias), CLT_ARG(relu), CLT_ARG(y))));
    }
    return CLT_OK;
}

/* dy is transposed once per chunk for both passes. */
static clt_status gemm_backward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                                cl_mem dy, const clt_epilogue *epi, cl_mem dx, cl_mem dw, cl_mem db)
{
    const clt_conv_geom *g = &plan->g;
    if (db) CLT_TRY(clt_conv_bias_grad(dev, g, dy, epi, db));
    int relu = clt_epi_relu(epi);
    cl_mem ym = clt_epi_mask(epi, dy);
    if (!dx && !dw) return CLT_OK;
    size_t p = (size_t)g->oh * g->ow, ckk = (size_t)g->c * g->k * g->k;
    int nb = plan->gemm.nb, P = (int)p;
    cl_mem scratch;
    CLT_TRY(gemm_scratch(dev, plan, dw != NULL, &scratch));
    cl_ulong col_off = 0, dyt_off = plan->gemm.col_elems;
    cl_ulong part_off = dyt_off + gemm_mat_elems(plan);
    for (int n0 = 0; n0 < g->n; n0 += nb) {
        int cnt = g->n - n0 < nb ? g->n - n0 : nb;
        size_t q = (size_t)cnt * p;
        CLT_TRY(clt_launch_2d(dev, "conv_gemm", "conv_gemm_nchw_to_cq", q, (size_t)g->co, 0, 0,
                              CLT_ARGS(CLT_ARG(g->co), CLT_ARG(P), CLT_ARG(n0), CLT_ARG(cnt),
                                       CLT_ARG(dy), CLT_ARG(relu), CLT_ARG(ym), CLT_ARG(scratch),
                                       CLT_ARG(dyt_off))));
        if (dw) {
            /* chunks add in order */
            CLT_TRY(im2col(dev, g, x, n0, cnt, scratch, col_off));
            CLT_TRY(gemm_dw_chunk(dev, plan, q, n0 == 0, scratch, col_off, dyt_off, dw, part_off));
        }
        if (dx) {
            /* dcol (ckk x q) = w^T dyt, then the gather col2im. */
            CLT_TRY(clt_gemm(dev, true, false, ckk, q, (size_t)g->co, 1.0f, w, 0, ckk, scratch,
                             dyt_off, q, 0.0f, scratch, col_off, q));
            size_t rows = (size_t)cnt * g->c * g->h;
            CLT_TRY(clt_launch_2d(dev, "conv_gemm", "conv_gemm_col2im", (size_t)g->w, rows, 0, 0,
                                  CLT_ARGS(CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w),
                                           CLT_ARG(g->k), CLT_ARG(g->stride), CLT_ARG(g->pad),
                                           CLT_ARG(g->oh), CLT_ARG(g->ow), CLT_ARG(n0),
                                           CLT_ARG(cnt), CLT_ARG(scratch), CLT_ARG(col_off),
                                           CLT_ARG(dx))));
        }
    }
    if (dw && plan->gemm.splits > 1)
        return clt_conv_sum_chunks(dev, g->co * (int)ckk, plan->gemm.splits, scratch, part_off, dw);
    return CLT_OK;
}

/* "tuned" where the GPU tuner chose gemm for the pass. */
static void gemm_describe(const clt_conv_plan *plan, int pass, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", plan->gpu_tuned[pass] ? "tuned" : "");
}

/* No tuner of its own: implicit's (conv_gpu_tune.c) times gemm against
 * its tiles and may give a pass to either. */
const clt_conv_algo clt_conv_gemm = {
    .name = "gemm",
    .supports = gemm_supports,
    .plan = gemm_plan,
    .forward = gemm_forward,
    .backward = gemm_backward,
    .describe = gemm_describe,
};
