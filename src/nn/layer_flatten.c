/* flatten — NCHW to (N, C*H*W); the data do not move. */
#include "nn/layer.h"

static clt_status configure(clt_layer *l)
{
    if (l->nargs) return clt_layer_fail(l, CLT_ERR_SPEC, "flatten takes no arguments");
    l->out = (clt_shape){1, {(int)clt_shape_numel(&l->in), 0, 0}};
    return CLT_OK;
}

const clt_layer_kind clt_layer_flatten = {
    .name = "flatten",
    .configure = configure,
    .alias = 1,
};
