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
     * never written. argmax, where clt_epi_cells says so, holds one byte
     * per pooled output that the forward writes and the backward reads,
     * the window's cells numbered 0-3 in raster order. Max: the position
     * of the window's maximum, and y the pooled output (the ReLU's
     * derivative at that maximum). Average after a ReLU: bit q set where
     * cell q's output is > 0 (the ReLU's derivative there); y is unused. */
    int pool;
    cl_mem argmax;
    /* Batch norm's forward only: a tensor shaped as the output, added
     * before the ReLU (a residual block's shortcut: y = relu(bn(x) + add),
     * the block's add and ReLU in bn2's store; the backward does not see
     * it, the block applies that ReLU's derivative). NULL: nothing. */
    cl_mem add;
} clt_epilogue;

/* The kernels' `relu` argument; NULL means no epilogue. */
static inline int clt_epi_relu(const clt_epilogue *e) { return e && e->relu; }
/* Whether the epilogue keeps a byte per pooled output in argmax. */
static inline int clt_epi_cells(const clt_epilogue *e)
{
    return e && (e->pool == CLT_EPI_POOL_MAX || (e->pool == CLT_EPI_POOL_AVG && e->relu));
}
/* The kernels' `ym` argument: the forward's output, or `any` (a valid
 * buffer the kernel does not read) without a ReLU or where the ReLU's
 * derivative comes from argmax. */
static inline cl_mem clt_epi_mask(const clt_epilogue *e, cl_mem any)
{
    return clt_epi_relu(e) && e->pool != CLT_EPI_POOL_AVG ? e->y : any;
}
/* The buffers an epilogue needs: the forward writes argmax and the
 * backward reads it where clt_epi_cells says so; a backward through a
 * ReLU reads the forward's output unless argmax has its derivative (op
 * names the caller in the error). */
static inline clt_status clt_epi_check(const clt_epilogue *e, int backward, const char *op)
{
    if (e && e->add) return clt_fail(CLT_ERR_INVALID_ARG, "%s: a fused add runs only in batch norm's forward", op);
    if (clt_epi_cells(e) && !e->argmax)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: a fused %s pooling%s needs a buffer for its window bytes (argmax)",
                        op, e->pool == CLT_EPI_POOL_MAX ? "max" : "average", e->relu ? " after a ReLU" : "");
    if (backward && clt_epi_relu(e) && e->pool != CLT_EPI_POOL_AVG && !e->y)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: a fused ReLU needs the forward's output", op);
    return CLT_OK;
}

#endif
