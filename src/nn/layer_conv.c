/* conv:C:K[:S[:P]] — 2-D convolution with bias. */
#include "nn/layer.h"
#include "ops/conv.h"

static clt_status geom(const clt_layer *l, int n, clt_conv_geom *g)
{
    return clt_conv_geom_init(g, n, l->in.d[0], l->in.d[1], l->in.d[2], l->args[0], l->args[1],
                              l->nargs > 2 ? l->args[2] : 1, l->nargs > 3 ? l->args[3] : 0);
}

static clt_status configure(clt_layer *l)
{
    char buf[64];
    if (l->nargs < 2)
        return clt_layer_fail(l, CLT_ERR_SPEC, "expected conv:C:K[:S[:P]] (channels and kernel size)");
    if (l->args[0] < 1 || l->args[1] < 1 || (l->nargs > 2 && l->args[2] < 1) ||
        (l->nargs > 3 && l->args[3] < 0))
        return clt_layer_fail(l, CLT_ERR_SPEC, "channels, kernel and stride must be >= 1, padding >= 0");
    if (l->in.ndim != 3)
        return clt_layer_fail(l, CLT_ERR_SPEC, "needs an image input (C, H, W), got %s",
                              clt_shape_fmt(&l->in, buf, sizeof buf));
    int k = l->args[1], s = l->nargs > 2 ? l->args[2] : 1, p = l->nargs > 3 ? l->args[3] : 0;
    int oh = l->in.d[1] + 2 * p - k, ow = l->in.d[2] + 2 * p - k;
    if (oh < 0 || ow < 0)
        return clt_layer_fail(l, CLT_ERR_SPEC, "kernel %dx%d is larger than the padded input %s", k, k,
                              clt_shape_fmt(&l->in, buf, sizeof buf));
    l->out = (clt_shape){3, {l->args[0], oh / s + 1, ow / s + 1}};
    int64_t cin = l->in.d[0], co = l->args[0];
    clt_layer_add_param(l, "weight", 4, (int64_t[]){co, cin, k, k}, cin * k * k, co * k * k, 0);
    clt_layer_add_param(l, "bias", 1, (int64_t[]){co}, cin * k * k, co * k * k, 1);
    return CLT_OK;
}

/* The layer's plan for n samples on dev. */
static clt_status plan(clt_layer *l, clt_device *dev, int n, unsigned passes, clt_conv_plan **out)
{
    clt_conv_geom g;
    CLT_TRY(geom(l, n, &g));
    return clt_layer_conv_plan(l, dev, &g, passes, out);
}

unsigned clt_layer_backward_passes(const clt_layer *l, cl_mem dx)
{
    return (dx ? CLT_CONV_PASS(CLT_CONV_BWD_DATA) : 0) | (l->params[0].g ? CLT_CONV_PASS(CLT_CONV_BWD_WEIGHTS) : 0);
}

clt_status clt_layer_conv_plan(clt_layer *l, clt_device *dev, const clt_conv_geom *g, unsigned passes,
                               clt_conv_plan **out)
{
    clt_conv_plan *p = l->kind_state;
    clt_status s = clt_conv_plan_ensure_passes(dev, g, passes, &p);
    l->kind_state = p;
    *out = p;
    return s;
}

void clt_layer_release_conv_plan(clt_layer *l)
{
    clt_conv_plan_destroy(l->kind_state);
    l->kind_state = NULL;
}

/* What runs in the store: a fused relu and pooling, with y the forward's
 * output for the relu's derivative and a fused pooling's window bytes in
 * aux (ops/epilogue.h). */
static clt_epilogue epilogue(const clt_layer *l, cl_mem y)
{
    clt_epilogue e = {.relu = l->relu_epilogue, .y = y, .pool = l->pool_epilogue};
    if (clt_epi_cells(&e)) e.argmax = l->aux;
    return e;
}

static clt_status forward(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y)
{
    (void)pass;
    clt_conv_plan *p;
    CLT_TRY(plan(l, dev, n, CLT_CONV_PASS(CLT_CONV_FWD), &p));
    clt_epilogue e = epilogue(l, NULL);
    return clt_conv_plan_forward(dev, p, x, l->params[0].w, l->params[1].w, &e, y);
}

static clt_status backward(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y,
                           cl_mem dy, cl_mem dx)
{
    (void)pass;
    clt_conv_plan *p;
    CLT_TRY(plan(l, dev, n, clt_layer_backward_passes(l, dx), &p));
    clt_epilogue e = epilogue(l, y);
    return clt_conv_plan_backward(dev, p, x, l->params[0].w, dy, &e, dx, l->params[0].g, l->params[1].g);
}

static int fuses_pool(const clt_layer *l, const clt_device *dev, int kind, int first)
{
    clt_conv_geom g;
    return geom(l, 1, &g) == CLT_OK && clt_conv_fuses_pool(dev, &g, kind, first);
}

/* A fused pooling's state from forward to backward (ops/epilogue.h): a
 * byte per pooled output, after a relu or of a max pooling. */
static size_t aux_bytes(const clt_layer *l)
{
    clt_epilogue e = epilogue(l, NULL);
    return clt_epi_cells(&e) ? (size_t)clt_shape_numel(&l->pooled) : 0;
}

static double work_bytes(const clt_layer *l, const clt_device *dev)
{
    clt_conv_geom g;
    return geom(l, 1, &g) == CLT_OK ? clt_conv_work_bytes(dev, &g) : 0;
}

/* Every algorithm stores through the epilogue. */
const clt_layer_kind clt_layer_conv = {
    .name = "conv",
    .configure = configure,
    .forward = forward,
    .backward = backward,
    .aux_bytes = aux_bytes,
    .release = clt_layer_release_conv_plan,
    .fuses_relu = clt_layer_fuses_always,
    .fuses_pool = fuses_pool,
    .work_bytes = work_bytes,
};
