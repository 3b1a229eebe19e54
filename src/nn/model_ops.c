/* The op cases of parsed models (model_ops.h): each layer kind says which
 * ops it runs, in forward order; equal shapes merge into one case. */
#include "nn/model_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "nn/model.h"

typedef struct builder {
    clt_op_cases *out;
    int cap;
    int spec; /* the model whose layers are being listed */
    const clt_model *model; /* that model */
    int n;
} builder;

/* Equal ops: everything but the bookkeeping fields. */
static int same_op(const clt_op_case *a, const clt_op_case *b)
{
    return a->kind == b->kind && a->c == b->c && a->h == b->h && a->w == b->w && a->co == b->co &&
           a->k == b->k && a->stride == b->stride && a->pad == b->pad && a->pool == b->pool &&
           a->act == b->act && a->params == b->params;
}

static clt_status add_case(builder *b, clt_op_case c)
{
    clt_op_cases *l = b->out;
    for (int i = 0; i < l->count; i++)
        if (same_op(&l->cases[i], &c)) {
            l->cases[i].uses += l->cases[i].spec == b->spec;
            return CLT_OK;
        }
    if (l->count == b->cap) {
        int cap = b->cap ? 2 * b->cap : 32;
        clt_op_case *grown = realloc(l->cases, (size_t)cap * sizeof *grown);
        if (!grown) return clt_fail(CLT_ERR_NO_MEMORY, "op cases: %d entries", cap);
        l->cases = grown;
        b->cap = cap;
    }
    c.spec = b->spec;
    c.uses = 1;
    c.n = b->n;
    l->cases[l->count++] = c;
    return CLT_OK;
}

/* A case of `kind` on the per-sample input shape s. */
static clt_op_case on_shape(clt_op_kind kind, const clt_shape *s)
{
    clt_op_case c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.fused_into = CLT_OP_ACT;
    c.c = s->d[0];
    c.h = s->ndim == 3 ? s->d[1] : 1;
    c.w = s->ndim == 3 ? s->d[2] : 1;
    return c;
}

/* A case of a windowed op (conv, pool): window k, stride, output plane. */
static clt_op_case windowed(clt_op_kind kind, const clt_layer *l, int k, int stride)
{
    clt_op_case c = on_shape(kind, &l->in);
    c.k = k;
    c.stride = stride;
    c.oh = l->out.d[1];
    c.ow = l->out.d[2];
    return c;
}

static clt_status emit_conv(builder *b, const clt_layer *l)
{
    clt_op_case c = windowed(CLT_OP_CONV, l, l->args[1], l->nargs > 2 ? l->args[2] : 1);
    c.co = l->args[0];
    c.pad = l->nargs > 3 ? l->args[3] : 0;
    return add_case(b, c);
}

static clt_status emit_pool(builder *b, const clt_layer *l)
{
    clt_op_case c = windowed(CLT_OP_POOL, l, l->args[0], l->nargs > 1 ? l->args[1] : l->args[0]);
    c.pool = (clt_pool_kind)l->variant;
    /* a 2x2 pooling after a conv (and its relu) on CPU devices, where the
     * conv's shape allows (src/nn/fuse.c) */
    for (int i = l->index - 2; i < l->index; i++)
        if (clt_model_fusable_pool(b->model, i) == l->index) c.fused_into = CLT_OP_CONV;
    return add_case(b, c);
}

static clt_status emit_act(builder *b, const clt_layer *l)
{
    clt_op_case c = on_shape(CLT_OP_ACT, &l->in);
    c.act = (clt_activation)l->variant;
    const clt_layer *before = l->index > 0 ? l - 1 : NULL; /* a model's layers are one array */
    if (c.act == CLT_ACT_RELU && before && before->kind == &clt_layer_conv) c.fused_into = CLT_OP_CONV;
    if (c.act == CLT_ACT_RELU && before && before->kind == &clt_layer_dense) c.fused_into = CLT_OP_DENSE;
    if (c.act == CLT_ACT_RELU && before && before->kind == &clt_layer_bn) c.fused_into = CLT_OP_BN;
    return add_case(b, c);
}

static clt_status emit_dense(builder *b, const clt_layer *l)
{
    clt_op_case c = on_shape(CLT_OP_DENSE, &l->in);
    c.co = l->out.d[0];
    return add_case(b, c);
}

static clt_status emit_gap(builder *b, const clt_layer *l) { return add_case(b, on_shape(CLT_OP_GAP, &l->in)); }

static clt_status emit_bn(builder *b, const clt_layer *l) { return add_case(b, on_shape(CLT_OP_BN, &l->in)); }

static clt_status emit_none(builder *b, const clt_layer *l)
{
    (void)b, (void)l;
    return CLT_OK;
}

/* The residual block (layer_res.c) runs its parts conv1, bn1, conv2, bn2
 * and the optional projection shortcut, with a ReLU after bn1 and the add
 * and a ReLU at the end; in training the ReLU runs in bn1, the add and the
 * last ReLU in bn2 (layer_res.c). */
static clt_status emit_res(builder *b, const clt_layer *l)
{
    clt_op_case relu = on_shape(CLT_OP_ACT, &l->out), add = on_shape(CLT_OP_ADD, &l->out);
    relu.act = CLT_ACT_RELU;
    relu.fused_into = add.fused_into = CLT_OP_BN;
    clt_op_case relu_bn1 = relu;
    CLT_TRY(emit_conv(b, &l->subs[0]));
    CLT_TRY(emit_bn(b, &l->subs[1]));
    CLT_TRY(add_case(b, relu_bn1));
    CLT_TRY(emit_conv(b, &l->subs[2]));
    CLT_TRY(emit_bn(b, &l->subs[3]));
    if (l->n_subs > 4) CLT_TRY(emit_conv(b, &l->subs[4]));
    CLT_TRY(add_case(b, add));
    return add_case(b, relu);
}

static const struct {
    const clt_layer_kind *kind;
    clt_status (*emit)(builder *b, const clt_layer *l);
} emitters[] = {
    {&clt_layer_conv, emit_conv}, {&clt_layer_pool, emit_pool},   {&clt_layer_activation, emit_act},
    {&clt_layer_dense, emit_dense}, {&clt_layer_gap, emit_gap},   {&clt_layer_bn, emit_bn},
    {&clt_layer_res, emit_res},   {&clt_layer_flatten, emit_none},
};

static clt_status emit_layer(builder *b, const clt_layer *l)
{
    for (size_t i = 0; i < sizeof emitters / sizeof emitters[0]; i++)
        if (emitters[i].kind == l->kind) return emitters[i].emit(b, l);
    return clt_fail(CLT_ERR_UNSUPPORTED, "op cases: layer %d (%s) has no op cases", l->index, l->kind->name);
}

static int64_t trainable_params(const clt_model *m)
{
    int64_t n = 0;
    for (int i = 0; i < m->n_layers; i++)
        for (int p = 0; p < m->layers[i].n_params; p++)
            if (!m->layers[i].params[p].is_buffer) n += m->layers[i].params[p].numel;
    return n;
}

static const char *case_name(const clt_op_case *c)
{
    static const char *const kinds[] = {"conv", "pool", "gap", "act", "bn", "add", "dense", "xent", "sgd"};
    static const char *const acts[] = {"relu", "sigmoid", "tanh"};
    if (c->kind == CLT_OP_POOL) return c->pool == CLT_POOL_MAX ? "maxpool" : "avgpool";
    if (c->kind == CLT_OP_ACT) return acts[c->act];
    return kinds[c->kind];
}

/* "conv" alone, or "conv1", "conv2", ... where the list has several. */
static void name_cases(clt_op_cases *l)
{
    for (int i = 0; i < l->count; i++) {
        const char *name = case_name(&l->cases[i]);
        int before = 0, total = 0;
        for (int j = 0; j < l->count; j++)
            if (strcmp(case_name(&l->cases[j]), name) == 0) total++, before += j < i;
        char ordinal[12] = "";
        if (total > 1) snprintf(ordinal, sizeof ordinal, "%d", before + 1);
        snprintf(l->cases[i].name, sizeof l->cases[i].name, "%.7s%s", name, ordinal);
    }
}

static clt_status build(clt_model *models, int n_models, int batch, clt_op_cases *out)
{
    builder b = {out, 0, 0, NULL, batch};
    int most = 0;
    for (int m = 0; m < n_models; m++) most = models[m].n_layers > most ? models[m].n_layers : most;
    for (int i = 0; i < most; i++)
        for (b.spec = 0; b.spec < n_models; b.spec++) {
            b.model = &models[b.spec];
            if (i < b.model->n_layers) CLT_TRY(emit_layer(&b, &b.model->layers[i]));
        }
    for (b.spec = 0; b.spec < n_models; b.spec++) {
        const clt_shape logits = {1, {models[b.spec].classes}};
        CLT_TRY(add_case(&b, on_shape(CLT_OP_XENT, &logits)));
    }
    out->params = trainable_params(&models[0]);
    const clt_shape none = {1, {1}};
    clt_op_case sgd = on_shape(CLT_OP_SGD, &none);
    sgd.params = out->params;
    b.spec = 0;
    CLT_TRY(add_case(&b, sgd));
    name_cases(out);
    return CLT_OK;
}

clt_status clt_op_cases_build(const char *const *specs, int n_specs, int c, int h, int w, int batch,
                              clt_op_cases *out)
{
    if (!out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_op_cases_build: out is NULL");
    memset(out, 0, sizeof *out);
    if (!specs || n_specs < 1 || batch < 1)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_op_cases_build: %d models at batch %d (need >= 1 of each)",
                        n_specs, batch);
    clt_model *models;
    CLT_TRY(clt_calloc((void **)&models, (size_t)n_specs, sizeof *models, "op cases: models"));
    clt_status s = CLT_OK;
    for (int m = 0; s == CLT_OK && m < n_specs; m++) s = clt_model_parse(specs[m], c, h, w, &models[m]);
    if (s == CLT_OK) s = build(models, n_specs, batch, out);
    for (int m = 0; m < n_specs; m++) clt_model_free(&models[m]);
    free(models);
    if (s != CLT_OK) clt_op_cases_free(out);
    return s;
}

void clt_op_cases_free(clt_op_cases *l)
{
    if (!l) return;
    free(l->cases);
    memset(l, 0, sizeof *l);
}
