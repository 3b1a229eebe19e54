/* dense:N — fully connected, y = x W^T + b on flat features (ops/dense.c
 * chooses the kernels per device). */
#include "nn/layer.h"
#include "ops/dense.h"

static clt_status configure(clt_layer *l)
{
    char buf[64];
    if (l->nargs != 1 || l->args[0] < 1)
        return clt_layer_fail(l, CLT_ERR_SPEC, "expected dense:N with N >= 1 outputs");
    if (l->in.ndim != 1)
        return clt_layer_fail(l, CLT_ERR_SPEC, "input %s is not flat; put flatten (or gap) before it",
                              clt_shape_fmt(&l->in, buf, sizeof buf));
    int64_t in = l->in.d[0], out = l->args[0];
    l->out = (clt_shape){1, {l->args[0], 0, 0}};
    clt_layer_add_param(l, "weight", 2, (int64_t[]){out, in}, in, out, 0);
    clt_layer_add_param(l, "bias", 1, (int64_t[]){out}, in, out, 1);
    return CLT_OK;
}

static clt_status forward(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y)
{
    (void)pass;
    clt_epilogue e = {.relu = l->relu_epilogue};
    return clt_dense_forward_raw(dev, n, l->in.d[0], l->out.d[0], x, l->params[0].w, l->params[1].w, &e, y);
}

static clt_status backward(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y,
                           cl_mem dy, cl_mem dx)
{
    (void)pass;
    clt_epilogue e = {.relu = l->relu_epilogue, .y = y};
    return clt_dense_backward_raw(dev, n, l->in.d[0], l->out.d[0], x, l->params[0].w, dy, &e, dx,
                                  l->params[0].g, l->params[1].g);
}

static int fuses_relu(const clt_layer *l, const clt_device *dev)
{
    (void)l;
    return clt_dense_fuses(dev);
}

/* dy transposed and through the ReLU's derivative (ops/dense_cpu.c) */
static double work_bytes(const clt_layer *l, const clt_device *dev)
{
    (void)dev;
    return 2.0 * sizeof(float) * (double)l->out.d[0];
}

const clt_layer_kind clt_layer_dense = {
    .name = "dense",
    .configure = configure,
    .forward = forward,
    .backward = backward,
    .fuses_relu = fuses_relu,
    .work_bytes = work_bytes,
};
