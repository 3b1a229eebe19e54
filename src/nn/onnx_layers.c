/* The ONNX form of each layer kind (onnx_layers.h), opset 17: one emitter
 * per kind, found through a table keyed by kind. */
#include "nn/onnx_layers.h"
#include "ops/bn.h"

/* Parameter p of the layer as an initializer under its state_dict name,
 * read from the device. */
static clt_status param(clt_onnx_graph *g, const clt_net *net, const clt_param *p, const char **name)
{
    *name = p->name;
    float *data = clt_onnx_initializer(g, p->name, p->ndim, p->shape);
    if (!data) return clt_onnx_graph_status(g);
    return clt_net_param_get(net, p->name, data, p->numel);
}

/* node op(x, the layer's parameters) -> y. */
static Onnx__NodeProto *with_params(clt_onnx_graph *g, const clt_net *net, const clt_layer *l, const char *op,
                                    const char *x, const char *y, clt_status *s)
{
    const char *in[1 + CLT_LAYER_MAX_PARAMS] = {x};
    for (int p = 0; p < l->n_params; p++)
        if ((*s = param(g, net, &l->params[p], &in[1 + p])) != CLT_OK) return NULL;
    return clt_onnx_node(g, op, y, 1 + l->n_params, in);
}

static Onnx__NodeProto *unary(clt_onnx_graph *g, const char *op, const char *x, const char *y)
{
    return clt_onnx_node(g, op, y, 1, &x);
}

static void window(clt_onnx_graph *g, Onnx__NodeProto *n, int k, int stride)
{
    clt_onnx_attr_ints(g, n, "kernel_shape", 2, (int64_t[]){k, k});
    clt_onnx_attr_ints(g, n, "strides", 2, (int64_t[]){stride, stride});
}

static clt_status conv(clt_onnx_graph *g, const clt_net *net, const clt_layer *l, const char *x, const char *y)
{
    clt_status s = CLT_OK;
    Onnx__NodeProto *n = with_params(g, net, l, "Conv", x, y, &s);
    int pad = l->nargs > 3 ? l->args[3] : 0;
    window(g, n, l->args[1], l->nargs > 2 ? l->args[2] : 1);
    clt_onnx_attr_ints(g, n, "pads", 4, (int64_t[]){pad, pad, pad, pad});
    return s;
}

/* Inference uses the running statistics; ONNX's momentum weighs the old
 * running value (PyTorch's weighs the new batch). */
static clt_status bn(clt_onnx_graph *g, const clt_net *net, const clt_layer *l, const char *x, const char *y)
{
    clt_status s = CLT_OK;
    Onnx__NodeProto *n = with_params(g, net, l, "BatchNormalization", x, y, &s);
    clt_onnx_attr_float(g, n, "epsilon", CLT_BN_EPS);
    clt_onnx_attr_float(g, n, "momentum", 1.0f - CLT_BN_MOMENTUM);
    return s;
}

static clt_status dense(clt_onnx_graph *g, const clt_net *net, const clt_layer *l, const char *x, const char *y)
{
    clt_status s = CLT_OK;
    clt_onnx_attr_int(g, with_params(g, net, l, "Gemm", x, y, &s), "transB", 1); /* y = x W^T + b */
    return s;
}

static clt_status activation(clt_onnx_graph *g, const clt_net *net, const clt_layer *l, const char *x,
                             const char *y)
{
    static const char *const ops[] = {[CLT_ACT_RELU] = "Relu", [CLT_ACT_SIGMOID] = "Sigmoid", [CLT_ACT_TANH] = "Tanh"};
    unary(g, ops[l->variant], x, y);
    return CLT_OK;
}

/* Floor mode, no padding: ONNX's defaults (ceil_mode 0, pads 0), so
 * average pooling divides by the whole window as cltrain does. */
static clt_status pool(clt_onnx_graph *g, const clt_net *net, const clt_layer *l, const char *x, const char *y)
{
    static const char *const ops[] = {[CLT_POOL_MAX] = "MaxPool", [CLT_POOL_AVG] = "AveragePool"};
    window(g, unary(g, ops[l->variant], x, y), l->args[0], l->nargs > 1 ? l->args[1] : l->args[0]);
    return CLT_OK;
}

/* NCHW order, as cltrain's flatten keeps it. */
static clt_status flatten(clt_onnx_graph *g, const clt_net *net, const clt_layer *l, const char *x, const char *y)
{
    clt_onnx_attr_int(g, unary(g, "Flatten", x, y), "axis", 1);
    return CLT_OK;
}

/* cltrain's gap gives (C): ONNX's (C, 1, 1), flattened. */
static clt_status gap(clt_onnx_graph *g, const clt_net *net, const clt_layer *l, const char *x, const char *y)
{
    const char *pooled = clt_onnx_str(g, "%s/pooled", l->prefix);
    unary(g, "GlobalAveragePool", x, pooled);
    return flatten(g, net, l, pooled, y);
}

/* The identity at inference. */
static clt_status dropout(clt_onnx_graph *g, const clt_net *net, const clt_layer *l, const char *x, const char *y)
{
    unary(g, "Identity", x, y);
    return CLT_OK;
}

/* Part i of a composite layer; values are named PREFIX/TOKEN, apart from
 * the parameters' PREFIX.SUFFIX (a prefix has no '/'). */
static const char *part(clt_onnx_graph *g, const clt_net *net, const clt_layer *l, int i, const char *x,
                        clt_status *s)
{
    const clt_layer *sub = &l->subs[i];
    const char *y = clt_onnx_str(g, "%s/%s", sub->prefix, sub->token);
    if (*s == CLT_OK) *s = clt_onnx_emitter(sub->kind)(g, net, sub, x, y);
    return y;
}

/* relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), as layer_res.c:
 * parts conv1, bn1, conv2, bn2 and, where the shape changes, the 1x1
 * projection. */
static clt_status res(clt_onnx_graph *g, const clt_net *net, const clt_layer *l, const char *x, const char *y)
{
    clt_status s = CLT_OK;
    const char *t = part(g, net, l, 0, x, &s);
    t = part(g, net, l, 1, t, &s);
    const char *relu1 = clt_onnx_str(g, "%s/relu1", l->prefix);
    unary(g, "Relu", t, relu1);
    t = part(g, net, l, 2, relu1, &s);
    const char *sum[2] = {part(g, net, l, 3, t, &s), l->n_subs > 4 ? part(g, net, l, 4, x, &s) : x};
    const char *added = clt_onnx_str(g, "%s/add", l->prefix);
    clt_onnx_node(g, "Add", added, 2, sum);
    unary(g, "Relu", added, y);
    return s;
}

static const struct {
    const clt_layer_kind *kind;
    clt_onnx_emit_fn emit;
} emitters[] = {
    {&clt_layer_conv, conv},
    {&clt_layer_pool, pool},
    {&clt_layer_activation, activation},
    {&clt_layer_flatten, flatten},
    {&clt_layer_dense, dense},
    {&clt_layer_gap, gap},
    {&clt_layer_bn, bn},
    {&clt_layer_res, res},
    {&clt_layer_dropout, dropout},
};

clt_onnx_emit_fn clt_onnx_emitter(const clt_layer_kind *kind)
{
    for (size_t i = 0; i < sizeof emitters / sizeof emitters[0]; i++)
        if (emitters[i].kind == kind) return emitters[i].emit;
    return NULL;
}
