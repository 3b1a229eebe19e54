/* The "gemm" convolution (GPUs, accelerators): im2col of a chunk of images
 * (the whole shard when it fits the budget) into a (c*k*k, images*oh*ow)
 * matrix, one CLBlast SGEMM per chunk and pass, and a gather col2im that
 * writes every dx element once (kernels/conv_gemm.cl). Float16-per-item
 * register blocks like the lanes kernels' would spill and defeat
 * coalescing on a GPU, while CLBlast is tuned for GPUs. It runs any shape:
 * it is also the fallback when another algorithm's work buffer does not fit. */
#include "ops/conv_algo.h"
#include "runtime/gemm.h"
#include "runtime/launch.h"

static unsigned gemm_supports(const clt_conv_geom *g, unsigned open)
{
    (void)g;
    return open;
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
    return 1;
}

/* The work buffer: the im2col matrix, then a (co, images*p) matrix. */
static clt_status gemm_scratch(clt_device *dev, const clt_conv_plan *plan, cl_mem *scratch)
{
    const clt_conv_geom *g = &plan->g;
    size_t mat = (size_t)g->co * g->oh * g->ow * (size_t)plan->gemm.nb;
    return clt_device_scratch(dev, (plan->gemm.col_elems + mat) * sizeof(float), scratch);
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
                               cl_mem b, cl_mem y)
{
    const clt_conv_geom *g = &plan->g;
    size_t p = (size_t)g->oh * g->ow, ckk = (size_t)g->c * g->k * g->k;
    int nb = plan->gemm.nb, P = (int)p;
    cl_mem scratch;
    CLT_TRY(gemm_scratch(dev, plan, &scratch));
    cl_ulong col_off = 0, yt_off = plan->gemm.col_elems;
    int has_bias = b != NULL;
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
                                       CLT_ARG(has_bias), CLT_ARG(y))));
    }
    return CLT_OK;
}

/* dy is transposed once per chunk for both passes. */
static clt_status gemm_backward(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                                cl_mem dy, cl_mem dx, cl_mem dw, cl_mem db)
{
    const clt_conv_geom *g = &plan->g;
    if (db) CLT_TRY(clt_conv_bias_grad(dev, g, dy, db));
    if (!dx && !dw) return CLT_OK;
    size_t p = (size_t)g->oh * g->ow, ckk = (size_t)g->c * g->k * g->k;
    int nb = plan->gemm.nb, P = (int)p;
    cl_mem scratch;
    CLT_TRY(gemm_scratch(dev, plan, &scratch));
    cl_ulong col_off = 0, dyt_off = plan->gemm.col_elems;
    for (int n0 = 0; n0 < g->n; n0 += nb) {
        int cnt = g->n - n0 < nb ? g->n - n0 : nb;
        size_t q = (size_t)cnt * p;
        CLT_TRY(clt_launch_2d(dev, "conv_gemm", "conv_gemm_nchw_to_cq", q, (size_t)g->co, 0, 0,
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
            CLT_TRY(clt_launch_2d(dev, "conv_gemm", "conv_gemm_col2im", (size_t)g->w, rows, 0, 0,
                                  CLT_ARGS(CLT_ARG(g->c), CLT_ARG(g->h), CLT_ARG(g->w),
                                           CLT_ARG(g->k), CLT_ARG(g->stride), CLT_ARG(g->pad),
                                           CLT_ARG(g->oh), CLT_ARG(g->ow), CLT_ARG(n0),
                                           CLT_ARG(cnt), CLT_ARG(scratch), CLT_ARG(col_off),
                                           CLT_ARG(dx))));
        }
    }
    return CLT_OK;
}

const clt_conv_algo clt_conv_gemm = {"gemm", gemm_supports, gemm_plan, gemm_forward, gemm_backward};
