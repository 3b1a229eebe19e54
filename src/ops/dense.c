/* Fully connected layer: y = x w^T + b through CLBlast SGEMM (on GPUs; CPU
 * devices run kernels/dense_cpu.cl, see ops/dense_cpu.c). The bias is
 * broadcast into y first and the GEMM accumulates onto it (beta = 1), so y
 * is written once by the broadcast and read/written once by the GEMM. The
 * bias gradient is a deterministic column sum. The two small kernels live in
 * kernels/dense.cl. */
#include "ops/dense.h"

#include <limits.h>

#include "ops/conv.h"
#include "ops/dense_cpu.h"
#include "runtime/gemm.h"
#include "runtime/launch.h"
#include "tensor/tensor.h"

static clt_status dense_geom(const char *op, int n, int in, int out)
{
    if (n < 1 || in < 1 || out < 1)
        return clt_fail(CLT_ERR_SHAPE, "%s: batch %d, inputs %d, outputs %d must be >= 1", op, n, in, out);
    if ((int64_t)n * out > INT_MAX || (int64_t)n * in > INT_MAX || (int64_t)out * in > INT_MAX)
        return clt_fail(CLT_ERR_UNSUPPORTED, "%s: batch %d, inputs %d, outputs %d: a matrix has more than %d elements",
                        op, n, in, out, INT_MAX);
    return CLT_OK;
}

/* Where the convolution runs its lanes kernels (CPU devices), dense layers
 * run ops/dense_cpu.c's, which beat CLBlast's untuned SGEMM by far there
 * (800->128 at batch 256 on PoCL, 2 cores, as a 1x1 convolution of lanes
 * kernels, forward and backward). */
static clt_status on_cpu(const clt_device *dev, int *yes) { return clt_conv_uses_lanes(dev, yes); }

int clt_dense_fuses(const clt_device *dev)
{
    int cpu = 0;
    return on_cpu(dev, &cpu) == CLT_OK && cpu;
}

static clt_status check_epi(const clt_epilogue *epi, int cpu, const char *op)
{
    CLT_TRY(clt_epi_check(epi, 0, op));
    if (clt_epi_relu(epi) && !cpu)
        return clt_fail(CLT_ERR_INTERNAL, "%s: a fused ReLU on a device whose dense layers run CLBlast's GEMM", op);
    return CLT_OK;
}

clt_status clt_dense_forward_raw(clt_device *dev, int n, int in, int out, cl_mem x, cl_mem w,
                                 cl_mem b, const clt_epilogue *epi, cl_mem y)
{
    CLT_TRY(dense_geom("dense forward", n, in, out));
    int cpu;
    CLT_TRY(on_cpu(dev, &cpu));
    CLT_TRY(check_epi(epi, cpu, "dense forward"));
    if (cpu) return clt_dense_cpu_forward(dev, n, in, out, x, w, b, epi, y);
    float beta = 0.0f;
    if (b) {
        int total = n * out;
        CLT_TRY(clt_launch_1d(dev, "dense", "dense_bias_rows", (size_t)total,
                              CLT_ARGS(CLT_ARG(b), CLT_ARG(y), CLT_ARG(out), CLT_ARG(total))));
        beta = 1.0f;
    }
    /* y (n, out) = x (n, in) * w^T (in, out) [+ y] */
    return clt_gemm(dev, false, true, (size_t)n, (size_t)out, (size_t)in, 1.0f, x, 0, (size_t)in, w, 0,
                    (size_t)in, beta, y, 0, (size_t)out);
}

clt_status clt_dense_backward_raw(clt_device *dev, int n, int in, int out, cl_mem x, cl_mem w,
                                  cl_mem dy, const clt_epilogue *epi, cl_mem dx, cl_mem dw, cl_mem db)
{
    CLT_TRY(dense_geom("dense backward", n, in, out));
    int cpu;
    CLT_TRY(on_cpu(dev, &cpu));
    CLT_TRY(check_epi(epi, cpu, "dense backward"));
    if (cpu) return clt_dense_cpu_backward(dev, n, in, out, x, w, dy, epi, dx, dw, db);
    /* dx (n, in) = dy (n, out) * w (out, in) */
    if (dx)
        CLT_TRY(clt_gemm(dev, false, false, (size_t)n, (size_t)in, (size_t)out, 1.0f, dy, 0, (size_t)out, w,
                         0, (size_t)in, 0.0f, dx, 0, (size_t)in));
    /* dw (out, in) = dy^T (out, n) * x (n, in) */
    if (dw)
        CLT_TRY(clt_gemm(dev, true, false, (size_t)out, (size_t)in, (size_t)n, 1.0f, dy, 0, (size_t)out, x,
                         0, (size_t)in, 0.0f, dw, 0, (size_t)in));
    if (db)
        CLT_TRY(clt_launch_1d(dev, "dense", "dense_bias_cols_sum", (size_t)out,
                              CLT_ARGS(CLT_ARG(dy), CLT_ARG(db), CLT_ARG(n), CLT_ARG(out))));
    return CLT_OK;
}

/* x (n, in) and w (out, in): the sizes every dense call shares. */
static clt_status check_xw(const char *op, const clt_tensor *x, const clt_tensor *w, int64_t *n,
                           int64_t *in, int64_t *out)
{
    const int64_t any2[2] = {-1, -1};
    CLT_TRY(clt_tensor_expect(x, op, "x", CLT_DTYPE_FLOAT32, 2, any2));
    const int64_t wshape[2] = {-1, x->shape[1]};
    CLT_TRY(clt_tensor_expect(w, op, "w", CLT_DTYPE_FLOAT32, 2, wshape));
    *n = x->shape[0];
    *in = x->shape[1];
    *out = w->shape[0];
    if (*n > INT_MAX || *in > INT_MAX || *out > INT_MAX || *n * *out > INT_MAX || *n * *in > INT_MAX ||
        *out * *in > INT_MAX)
        return clt_fail(CLT_ERR_UNSUPPORTED, "%s: batch %lld, inputs %lld, outputs %lld: a matrix has more than %d elements",
                        op, (long long)*n, (long long)*in, (long long)*out, INT_MAX);
    return CLT_OK;
}

clt_status clt_dense_forward(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                             clt_tensor *y)
{
    const char *op = "clt_dense_forward";
    int64_t n, in, out;
    CLT_TRY(check_xw(op, x, w, &n, &in, &out));
    if (b) {
        const int64_t bshape[1] = {out};
        CLT_TRY(clt_tensor_expect(b, op, "b", CLT_DTYPE_FLOAT32, 1, bshape));
    }
    const int64_t yshape[2] = {n, out};
    CLT_TRY(clt_tensor_expect(y, op, "y", CLT_DTYPE_FLOAT32, 2, yshape));
    const clt_tensor *others[] = {w, b, y};
    CLT_TRY(clt_tensor_same_device(op, x, 3, others));
    return clt_dense_forward_raw(x->dev, (int)n, (int)in, (int)out, x->buf, w->buf, b ? b->buf : NULL, NULL,
                                 y->buf);
}

clt_status clt_dense_backward(const clt_tensor *x, const clt_tensor *w, const clt_tensor *dy,
                              clt_tensor *dx, clt_tensor *dw, clt_tensor *db)
{
    const char *op = "clt_dense_backward";
    int64_t n, in, out;
    CLT_TRY(check_xw(op, x, w, &n, &in, &out));
    const int64_t yshape[2] = {n, out};
    CLT_TRY(clt_tensor_expect(dy, op, "dy", CLT_DTYPE_FLOAT32, 2, yshape));
    if (dx) CLT_TRY(clt_tensor_expect(dx, op, "dx", CLT_DTYPE_FLOAT32, 2, x->shape));
    if (dw) CLT_TRY(clt_tensor_expect(dw, op, "dw", CLT_DTYPE_FLOAT32, 2, w->shape));
    if (db) {
        const int64_t bshape[1] = {out};
        CLT_TRY(clt_tensor_expect(db, op, "db", CLT_DTYPE_FLOAT32, 1, bshape));
    }
    const clt_tensor *others[] = {w, dy, dx, dw, db};
    CLT_TRY(clt_tensor_same_device(op, x, 5, others));
    return clt_dense_backward_raw(x->dev, (int)n, (int)in, (int)out, x->buf, w->buf, dy->buf, NULL,
                                  dx ? dx->buf : NULL, dw ? dw->buf : NULL, db ? db->buf : NULL);
}
