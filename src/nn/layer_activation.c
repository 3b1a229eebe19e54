/* relu, sigmoid, tanh — elementwise; backward from the output. */
#include "nn/layer.h"
#include "ops/activation.h"

static clt_status configure(clt_layer *l)
{
    if (l->nargs) return clt_layer_fail(l, CLT_ERR_SPEC, "%s takes no arguments", l->token);
    l->out = l->in;
    return CLT_OK;
}

static clt_status forward(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y)
{
    return clt_act_forward_raw(dev, (clt_activation)l->variant,
                               (size_t)n * (size_t)clt_shape_numel(&l->in), x, y);
}

static clt_status backward(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y,
                           cl_mem dy, cl_mem dx)
{
    (void)x;
    if (!dx) return CLT_OK;
    return clt_act_backward_raw(dev, (clt_activation)l->variant,
                                (size_t)n * (size_t)clt_shape_numel(&l->in), y, dy, dx);
}

const clt_layer_kind clt_layer_activation = {
    .name = "activation",
    .configure = configure,
    .forward = forward,
    .backward = backward,
};
