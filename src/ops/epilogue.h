/* An activation fused into the op before it (a convolution or a dense
 * layer followed by relu in a spec; src/nn/fuse.c decides): the op applies
 * it in the store of its output, and its backward applies the derivative
 * while it reads dy, from the fused forward's output. That saves the
 * activation's own passes over memory (read x, write y; read y and dy,
 * write dx). Only ReLU fuses: its derivative needs the output alone and
 * is exact, so a fused net computes what the separate layers do, bit for
 * bit (kernels/prelude.h has the expressions both use). */
#ifndef CLT_OPS_EPILOGUE_H
#define CLT_OPS_EPILOGUE_H

#include "core/error.h"
#include "runtime/cl.h"

/* A 2x2 stride-2 pooling fused after a convolution (clt_conv_fuses_pool). */
enum { CLT_EPI_POOL_NONE, CLT_EPI_POOL_AVG, CLT_EPI_POOL_MAX };

typedef struct clt_epilogue {
    int relu;     /* 1: a ReLU follows the op; 0: nothing fused */
    cl_mem y;     /* backward: the fused forward's output (after the ReLU; see pool) */
    /* CLT_EPI_POOL_*: a pooling follows (after the ReLU): the forward
     * stores the pooled output and the backward reads the pooling's dy,
     * so the pooling has no passes of its own and the convolution's dy is
     * never written. Average with a ReLU: y is the ReLU's output at the
     * convolution's size, which the forward writes too (the derivative
     * needs it). Max: y is the pooled output (the ReLU's derivative at the
     * window's maximum), and argmax the window's position of that maximum,
     * one byte per pooled output (0-3 in raster order; the forward writes
     * it). */
    int pool;
    cl_mem argmax;
} clt_epilogue;

/* The kernels' `relu` argument; NULL means no epilogue. */
static inline int clt_epi_relu(const clt_epilogue *e) { return e && e->relu; }
/* The kernels' `ym` argument: the forward's output, or `any` (a valid
 * buffer the kernel does not read) without a ReLU. */
static inline cl_mem clt_epi_mask(const clt_epilogue *e, cl_mem any) { return clt_epi_relu(e) ? e->y : any; }
/* A backward's check: a fused ReLU needs the forward's output (op names
 * the caller in the error). */
static inline clt_status clt_epi_check_backward(const clt_epilogue *e, const char *op)
{
    if (e && e->pool == CLT_EPI_POOL_MAX && !e->argmax)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: a fused max pooling needs the forward's argmax", op);
    if (clt_epi_relu(e) && !e->y)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: a fused ReLU needs the forward's output", op);
    return CLT_OK;
}

#endif
