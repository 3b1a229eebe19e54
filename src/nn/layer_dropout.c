/* dropout:P — inverted dropout (PyTorch's nn.Dropout(P)): in training each
 * element is zeroed with probability P and the rest scaled by 1 / (1 - P);
 * at evaluation the identity. The mask comes from the pass's generator key
 * (ops/dropout.h), so it does not depend on the split over devices. */
#include "nn/layer.h"
#include "ops/dropout.h"

static clt_status configure(clt_layer *l)
{
    if (l->nargs != 1) return clt_layer_fail(l, CLT_ERR_SPEC, "dropout takes one argument, the probability P");
    if (!(l->fargs[0] >= 0.0f && l->fargs[0] < 1.0f))
        return clt_layer_fail(l, CLT_ERR_SPEC, "dropout probability %g must lie in [0, 1)", l->fargs[0]);
    l->out = l->in;
    return CLT_OK;
}

static clt_status forward(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y)
{
    return clt_dropout_raw(dev, (size_t)clt_shape_numel(&l->in), n, x, y, pass->training ? l->fargs[0] : 0.0f,
                           pass->rng);
}

static clt_status backward(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y,
                           cl_mem dy, cl_mem dx)
{
    (void)x;
    (void)y;
    if (!dx) return CLT_OK;
    return clt_dropout_raw(dev, (size_t)clt_shape_numel(&l->in), n, dy, dx, l->fargs[0], pass->rng);
}

const clt_layer_kind clt_layer_dropout = {
    .name = "dropout",
    .configure = configure,
    .forward = forward,
    .backward = backward,
};
