/* The model spec grammar (docs/ARCHITECTURE.md, "Model-spec grammar"):
 * kind[:arg[:arg]] separated by commas. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "nn/model.h"

typedef struct token_kind {
    const char *token;
    const clt_layer_kind *kind;
    int variant;
} token_kind;

static const token_kind token_kinds[] = {
    {"conv", &clt_layer_conv, 0},
    {"maxpool", &clt_layer_pool, CLT_POOL_MAX},
    {"avgpool", &clt_layer_pool, CLT_POOL_AVG},
    {"relu", &clt_layer_activation, CLT_ACT_RELU},
    {"sigmoid", &clt_layer_activation, CLT_ACT_SIGMOID},
    {"tanh", &clt_layer_activation, CLT_ACT_TANH},
    {"flatten", &clt_layer_flatten, 0},
    {"dense", &clt_layer_dense, 0},
    {"gap", &clt_layer_gap, 0},
    {"bn", &clt_layer_bn, 0},
    {"res", &clt_layer_res, 0},
    {"dropout", &clt_layer_dropout, 0},
};

static const struct {
    const char *name, *spec;
} builtins[] = {
    {"lenet", "conv:20:3,relu,avgpool:2,conv:50:5,relu,avgpool:2,flatten,dense:128,relu,dense:10"},
    {"lenet-max", "conv:20:3,relu,maxpool:2,conv:50:5,relu,maxpool:2,flatten,dense:128,relu,dense:10"},
    /* The Gluon tutorial's resnet18 for 28x28 inputs. */
    {"resnet18", "stem.0=conv:64:3:1:1,stem.1=bn,stem.2=relu,"
                 "stage1.0=res:64,stage1.1=res:64,stage2.0=res:128:2,stage2.1=res:128,"
                 "stage3.0=res:256:2,stage3.1=res:256,stage4.0=res:512:2,stage4.1=res:512,"
                 "head.0=gap,head.1=dense:10"},
};

const char *clt_model_builtin(const char *name)
{
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(builtins[i].name, name) == 0) return builtins[i].spec;
    return NULL;
}

/* Layer arguments are sizes and counts: far below int's range. */
#define ARG_MAX_ABS 1000000

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
    return s;
}

static clt_status parse_token(char *tok, int index, clt_layer *l)
{
    memset(l, 0, sizeof *l);
    l->index = index;
    snprintf(l->prefix, sizeof l->prefix, "%d", index);
    char *eq = strchr(tok, '=');
    if (eq) { /* NAME=kind...: names the layer's parameters NAME.weight, ... */
        *eq = 0;
        char *name = trim(tok);
        size_t len = strlen(name);
        if (len == 0 || len >= sizeof l->prefix || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") != len)
            return clt_fail(CLT_ERR_SPEC, "layer %d: name \"%.40s%s\" must be 1..%zu letters, digits, '_' or '.'",
                            index, name, len > 40 ? "..." : "", sizeof l->prefix - 1);
        memcpy(l->prefix, name, len + 1);
        tok = eq + 1;
    }
    char *colon = strchr(tok, ':');
    if (colon) *colon = 0;
    char *kind = trim(tok);
    if (!kind[0]) return clt_fail(CLT_ERR_SPEC, "layer %d: empty layer (two commas in a row?)", index);
    if (strlen(kind) > 40) memcpy(kind + 37, "...", 4); /* no kind is that long: cut for the messages */
    const token_kind *tk = NULL;
    for (size_t i = 0; i < sizeof token_kinds / sizeof token_kinds[0]; i++)
        if (strcmp(token_kinds[i].token, kind) == 0) tk = &token_kinds[i];
    if (!tk) {
        return clt_fail(CLT_ERR_SPEC,
                        "layer %d: unknown layer kind \"%s\" (known: conv, maxpool, avgpool, relu, "
                        "sigmoid, tanh, flatten, dense, gap, bn, res, dropout; builtins: lenet, lenet-max, resnet18)",
                        index, kind);
    }
    l->kind = tk->kind;
    l->token = tk->token;
    l->variant = tk->variant;
    while (colon) {
        char *a = colon + 1;
        colon = strchr(a, ':');
        if (colon) *colon = 0;
        a = trim(a);
        char *end;
        errno = 0;
        if (l->kind == &clt_layer_dropout) { /* dropout:P, a real number */
            double d = strtod(a, &end);
            if (!a[0] || *end || errno || !isfinite(d))
                return clt_fail(CLT_ERR_SPEC, "layer %d (%s): argument \"%s\" is not a number", index, kind, a);
            if (l->nargs == CLT_LAYER_MAX_ARGS)
                return clt_fail(CLT_ERR_SPEC, "layer %d (%s): too many arguments", index, kind);
            l->fargs[l->nargs++] = (float)d;
            continue;
        }
        long v = strtol(a, &end, 10);
        if (!a[0] || *end)
            return clt_fail(CLT_ERR_SPEC, "layer %d (%s): argument \"%.40s%s\" is not an integer", index, kind, a,
                            strlen(a) > 40 ? "..." : "");
        if (errno || v < -ARG_MAX_ABS || v > ARG_MAX_ABS)
            return clt_fail(CLT_ERR_SPEC, "layer %d (%s): argument %.40s%s is out of range (%d .. %d)", index, kind, a,
                            strlen(a) > 40 ? "..." : "", -ARG_MAX_ABS, ARG_MAX_ABS);
        if (l->nargs == CLT_LAYER_MAX_ARGS)
            return clt_fail(CLT_ERR_SPEC, "layer %d (%s): too many arguments", index, kind);
        l->args[l->nargs++] = (int)v;
    }
    return CLT_OK;
}

/* A NAME= prefix can give a parameter the name another layer's parameter
 * has (a=res:4 makes a.conv1.weight, as a.conv1=conv:... does): the
 * state_dict would hold one of them only. */
static clt_status check_param_names(const clt_model *m, int i)
{
    const clt_layer *l = &m->layers[i];
    for (int p = 0; p < l->n_params; p++)
        for (int j = 0; j < i; j++)
            for (int q = 0; q < m->layers[j].n_params; q++)
                if (strcmp(l->params[p].name, m->layers[j].params[q].name) == 0)
                    return clt_fail(CLT_ERR_SPEC,
                                    "layer %d (%s=%s) and layer %d (%s=%s) both have a parameter named \"%s\": "
                                    "rename one (NAME=kind)",
                                    j, m->layers[j].prefix, m->layers[j].token, i, l->prefix, l->token,
                                    l->params[p].name);
    return CLT_OK;
}

clt_status clt_model_parse(const char *spec, int c, int h, int w, clt_model *out)
{
    memset(out, 0, sizeof *out);
    if (!spec) return clt_fail(CLT_ERR_INVALID_ARG, "model spec is NULL");
    if (c < 1 || h < 1 || w < 1)
        return clt_fail(CLT_ERR_SHAPE, "input shape (%d, %d, %d) has a dimension < 1", c, h, w);
    char *text; /* spaces around a builtin name, as around a layer token, do not count */
    CLT_TRY(clt_strdup(&text, spec));
    const char *builtin = clt_model_builtin(trim(text));
    clt_status s = clt_strdup(&out->spec, builtin ? builtin : spec);
    free(text);
    if (s == CLT_OK) s = clt_strdup(&text, out->spec);
    if (s != CLT_OK) {
        clt_model_free(out);
        return s;
    }
    int count = 1;
    for (const char *p = text; *p; p++) count += *p == ',';
    if (count > CLT_MAX_LAYERS) {
        free(text);
        clt_model_free(out);
        return clt_fail(CLT_ERR_SPEC, "model spec has %d layers (at most %d)", count, CLT_MAX_LAYERS);
    }
    s = clt_calloc((void **)&out->layers, (size_t)count, sizeof *out->layers, "model layers");
    clt_shape shape = {3, {c, h, w}};
    out->in = shape;
    char *cursor = text;
    for (int i = 0; s == CLT_OK && i < count; i++) {
        char *comma = strchr(cursor, ',');
        if (comma) *comma = 0;
        clt_layer *l = &out->layers[i];
        s = parse_token(cursor, i, l);
        for (int j = 0; s == CLT_OK && j < i; j++)
            if (strcmp(out->layers[j].prefix, l->prefix) == 0)
                s = clt_fail(CLT_ERR_SPEC, "layer %d: name \"%s\" is already used by layer %d", i, l->prefix, j);
        if (s == CLT_OK) {
            l->in = shape;
            s = l->kind->configure(l);
            if (s == CLT_OK) s = clt_layer_check_sizes(l);
            shape = l->out;
            out->n_layers = i + 1;
        }
        if (s == CLT_OK) s = check_param_names(out, i);
        cursor = comma ? comma + 1 : cursor + strlen(cursor);
    }
    free(text);
    if (s == CLT_OK && shape.ndim != 1) {
        char buf[64];
        s = clt_fail(CLT_ERR_SPEC,
                     "the last layer (%d) gives %s, but the loss needs flat class scores: end with "
                     "flatten,dense:N or gap",
                     out->n_layers - 1, clt_shape_fmt(&shape, buf, sizeof buf));
    }
    if (s == CLT_OK && shape.d[0] < 2)
        s = clt_fail(CLT_ERR_SPEC, "the last layer gives %d class score; the loss needs at least 2", shape.d[0]);
    if (s != CLT_OK) {
        clt_model_free(out);
        return s;
    }
    out->classes = shape.d[0];
    return CLT_OK;
}

void clt_model_free(clt_model *m)
{
    if (!m) return;
    for (int i = 0; m->layers && i < m->n_layers; i++) free(m->layers[i].subs);
    free(m->layers);
    free(m->spec);
    memset(m, 0, sizeof *m);
}
