/* maxpool:K[:S], avgpool:K[:S] — floor-mode pooling without padding. */
#include "nn/layer.h"
#include "ops/pool.h"

static int stride(const clt_layer *l) { return l->nargs > 1 ? l->args[1] : l->args[0]; }

static clt_status configure(clt_layer *l)
{
    char buf[64];
    if (l->nargs < 1) return clt_layer_fail(l, CLT_ERR_SPEC, "expected %s:K[:S] (window size)", l->token);
    if (l->args[0] < 1 || stride(l) < 1)
        return clt_layer_fail(l, CLT_ERR_SPEC, "window and stride must be >= 1");
    if (l->in.ndim != 3)
        return clt_layer_fail(l, CLT_ERR_SPEC, "needs an image input (C, H, W), got %s",
                              clt_shape_fmt(&l->in, buf, sizeof buf));
    int k = l->args[0];
    if (l->in.d[1] < k || l->in.d[2] < k)
        return clt_layer_fail(l, CLT_ERR_SPEC, "window %dx%d is larger than the input %s", k, k,
                              clt_shape_fmt(&l->in, buf, sizeof buf));
    l->out = (clt_shape){3, {l->in.d[0], (l->in.d[1] - k) / stride(l) + 1, (l->in.d[2] - k) / stride(l) + 1}};
    return CLT_OK;
}

/* An inference forward keeps no argmax (max pooling then writes what
 * average pooling does); a backward after one finds it again from x. The
 * argmax is the layer's own (aux), so the kernels may pack it; the format
 * follows the device's settings, so a backward after they changed finds
 * it again too. */
static clt_status forward(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y)
{
    l->last_training = pass->training;
    l->last_settings = clt_device_settings_version(dev);
    return clt_pool_forward_raw(dev, (clt_pool_kind)l->variant, n, l->in.d[0], l->in.d[1], l->in.d[2],
                                l->args[0], stride(l), x, y, pass->training ? l->aux : NULL,
                                CLT_POOL_ARGMAX_PRIVATE);
}

static clt_status backward(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y,
                           cl_mem dy, cl_mem dx)
{
    (void)pass;
    (void)y;
    if (!dx) return CLT_OK;
    if (l->variant == CLT_POOL_MAX && (!l->last_training || l->last_settings != clt_device_settings_version(dev))) {
        /* the values again into scratch (y may not be overwritten: the same
         * bits, but a caller may be reading it) */
        cl_mem values;
        CLT_TRY(clt_device_scratch(dev, (size_t)n * clt_shape_numel(&l->out) * sizeof(float), &values));
        CLT_TRY(clt_pool_forward_raw(dev, CLT_POOL_MAX, n, l->in.d[0], l->in.d[1], l->in.d[2], l->args[0],
                                     stride(l), x, values, l->aux, CLT_POOL_ARGMAX_PRIVATE));
        l->last_training = 1; /* the argmax is there now, in the current format */
        l->last_settings = clt_device_settings_version(dev);
    }
    return clt_pool_backward_raw(dev, (clt_pool_kind)l->variant, n, l->in.d[0], l->in.d[1], l->in.d[2],
                                 l->args[0], stride(l), dy, l->aux, CLT_POOL_ARGMAX_PRIVATE, dx);
}

static size_t aux_bytes(const clt_layer *l)
{
    return l->variant == CLT_POOL_MAX ? (size_t)clt_shape_numel(&l->out) * sizeof(int32_t) : 0;
}

const clt_layer_kind clt_layer_pool = {
    .name = "pool",
    .configure = configure,
    .forward = forward,
    .backward = backward,
    .aux_bytes = aux_bytes,
};
