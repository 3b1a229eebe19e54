/* gap — global average pooling, (C, H, W) to (C). */
#include "nn/layer.h"
#include "ops/pool.h"

static clt_status configure(clt_layer *l)
{
    char buf[64];
    if (l->nargs) return clt_layer_fail(l, CLT_ERR_SPEC, "gap takes no arguments");
    if (l->in.ndim != 3)
        return clt_layer_fail(l, CLT_ERR_SPEC, "needs an image input (C, H, W), got %s",
                              clt_shape_fmt(&l->in, buf, sizeof buf));
    l->out = (clt_shape){1, {l->in.d[0], 0, 0}};
    return CLT_OK;
}

static clt_status forward(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y)
{
    return clt_gap_forward_raw(dev, n * l->in.d[0], l->in.d[1] * l->in.d[2], x, y);
}

static clt_status backward(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y,
                           cl_mem dy, cl_mem dx)
{
    (void)x;
    (void)y;
    if (!dx) return CLT_OK;
    return clt_gap_backward_raw(dev, n * l->in.d[0], l->in.d[1] * l->in.d[2], dy, dx);
}

const clt_layer_kind clt_layer_gap = {
    .name = "gap",
    .configure = configure,
    .forward = forward,
    .backward = backward,
};
