/* res:C[:S] — the basic residual block of ResNet (the Gluon/D2L "Residual"):
 *   y = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))
 * conv1 3x3 stride S pad 1, conv2 3x3 pad 1, both C channels; the shortcut
 * is the identity, or a 1x1 convolution with stride S when the shape
 * changes. Parameters: <name>.conv1.*, .bn1.*, .conv2.*, .bn2.*, .shortcut.*
 * The parts are ordinary layers of their kinds, run in sequence here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/layer.h"
#include "ops/activation.h"
#include "ops/elementwise.h"
#include "runtime/queue.h"

enum { CONV1, BN1, CONV2, BN2, SHORTCUT };
enum { T1, T2, T4, T5, T6, DB, DXM, N_BATCH_BUFFERS };

static int projected(const clt_layer *l) { return l->n_subs > SHORTCUT; }

static clt_status add_part(clt_layer *l, int i, const clt_layer_kind *kind, const char *token, const char *name,
                           const int *args, int nargs, clt_shape in)
{
    clt_layer *s = &l->subs[i];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->token = token;
    s->index = l->index;
    snprintf(s->prefix, sizeof s->prefix, "%.30s.%s", l->prefix, name);
    if (nargs) memcpy(s->args, args, (size_t)nargs * sizeof *args);
    s->nargs = nargs;
    s->in = in;
    CLT_TRY(kind->configure(s));
    CLT_TRY(clt_layer_check_sizes(s));
    for (int p = 0; p < s->n_params; p++) l->params[l->n_params++] = s->params[p];
    l->sync_rounds += s->sync_rounds;
    if (s->sync_floats > l->sync_floats) l->sync_floats = s->sync_floats;
    l->n_subs = i + 1;
    return CLT_OK;
}

static clt_status configure(clt_layer *l)
{
    char buf[64];
    if (l->nargs < 1 || l->nargs > 2 || l->args[0] < 1 || (l->nargs > 1 && l->args[1] < 1))
        return clt_layer_fail(l, CLT_ERR_SPEC, "expected res:C[:S] with C >= 1 channels and stride S >= 1");
    if (l->in.ndim != 3)
        return clt_layer_fail(l, CLT_ERR_SPEC, "needs an image input (C, H, W), got %s",
                              clt_shape_fmt(&l->in, buf, sizeof buf));
    int c = l->args[0], s = l->nargs > 1 ? l->args[1] : 1;
    l->subs = calloc(5, sizeof *l->subs);
    if (!l->subs) return clt_fail(CLT_ERR_NO_MEMORY, "residual block");
    CLT_TRY(add_part(l, CONV1, &clt_layer_conv, "conv", "conv1", (int[]){c, 3, s, 1}, 4, l->in));
    clt_shape mid = l->subs[CONV1].out;
    CLT_TRY(add_part(l, BN1, &clt_layer_bn, "bn", "bn1", NULL, 0, mid));
    CLT_TRY(add_part(l, CONV2, &clt_layer_conv, "conv", "conv2", (int[]){c, 3, 1, 1}, 4, mid));
    CLT_TRY(add_part(l, BN2, &clt_layer_bn, "bn", "bn2", NULL, 0, mid));
    if (s != 1 || l->in.d[0] != c)
        CLT_TRY(add_part(l, SHORTCUT, &clt_layer_conv, "conv", "shortcut", (int[]){c, 1, s, 0}, 4, l->in));
    l->out = mid;
    return CLT_OK;
}

/* The parts' parameters are copies of the block's: take the device views
 * the net gave the block. */
static void share_params(clt_layer *l)
{
    int at = 0;
    for (int i = 0; i < l->n_subs; i++)
        for (int p = 0; p < l->subs[i].n_params; p++, at++) {
            l->subs[i].params[p].w = l->params[at].w;
            l->subs[i].params[p].g = l->params[at].g;
        }
}

static clt_status batch_buffers(clt_layer *l, clt_device *dev, int n)
{
    if (n > l->priv_cap) {
        for (int i = 0; i < N_BATCH_BUFFERS; i++) {
            clt_buffer_release(l->priv[i]);
            l->priv[i] = NULL;
        }
        l->priv_cap = 0;
    }
    size_t out = (size_t)n * (size_t)clt_shape_numel(&l->out) * sizeof(float);
    size_t in = (size_t)n * (size_t)clt_shape_numel(&l->in) * sizeof(float);
    for (int i = 0; i < N_BATCH_BUFFERS; i++) {
        if (i == T6 && !projected(l)) continue;
        CLT_TRY(clt_layer_priv(l, dev, i, i == DXM ? in : out));
    }
    l->priv_cap = n > l->priv_cap ? n : l->priv_cap;
    return CLT_OK;
}

static clt_status run_fwd(clt_layer *l, int i, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y)
{
    return l->subs[i].kind->forward(&l->subs[i], dev, pass, n, x, y);
}

/* y: the part's output where its backward reads it (a fused ReLU), else NULL. */
static clt_status run_bwd(clt_layer *l, int i, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y,
                          cl_mem dy, cl_mem dx)
{
    return l->subs[i].kind->backward(&l->subs[i], dev, pass, n, x, y, dy, dx);
}

/* The ReLU after bn1 runs in bn1's store and backward (src/nn/fuse.c);
 * the add and the ReLU at the end run in bn2's store (the block's
 * relu_epilogue; bn2's add_relu): the block's output is written once, not
 * as bn2's output, the sum, then the ReLU (ResNet-18 at batch 128: four
 * passes over each block's output fewer per step). */
static void fuse_parts(clt_layer *l, const clt_device *dev)
{
    clt_layer *bn1 = &l->subs[BN1], *bn2 = &l->subs[BN2];
    bn1->relu_epilogue = bn1->kind->fuses_relu && bn1->kind->fuses_relu(bn1, dev);
    l->relu_epilogue = bn2->kind->fuses_relu && bn2->kind->fuses_relu(bn2, dev);
}

static clt_status forward(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y)
{
    share_params(l);
    CLT_TRY(batch_buffers(l, dev, n));
    cl_mem *b = l->priv;
    size_t count = (size_t)n * (size_t)clt_shape_numel(&l->out);
    CLT_TRY(run_fwd(l, CONV1, dev, pass, n, x, b[T1]));
    CLT_TRY(run_fwd(l, BN1, dev, pass, n, b[T1], b[T2]));
    if (!l->subs[BN1].relu_epilogue) CLT_TRY(clt_act_forward_raw(dev, CLT_ACT_RELU, count, b[T2], b[T2]));
    CLT_TRY(run_fwd(l, CONV2, dev, pass, n, b[T2], b[T4]));
    cl_mem shortcut = x;
    if (projected(l)) {
        CLT_TRY(run_fwd(l, SHORTCUT, dev, pass, n, x, b[T6]));
        shortcut = b[T6];
    }
    if (l->relu_epilogue) {
        l->subs[BN2].add_relu = shortcut;
        clt_status s = run_fwd(l, BN2, dev, pass, n, b[T4], y);
        l->subs[BN2].add_relu = NULL;
        return s;
    }
    CLT_TRY(run_fwd(l, BN2, dev, pass, n, b[T4], b[T5]));
    CLT_TRY(clt_add_raw(dev, count, b[T5], shortcut, y));
    return clt_act_forward_raw(dev, CLT_ACT_RELU, count, y, y);
}

static clt_status backward(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y,
                           cl_mem dy, cl_mem dx)
{
    share_params(l);
    cl_mem *b = l->priv;
    size_t count = (size_t)n * (size_t)clt_shape_numel(&l->out);
    cl_mem dsum = b[T5]; /* bn2's output is no longer needed */
    CLT_TRY(clt_act_backward_raw(dev, CLT_ACT_RELU, count, y, dy, dsum));
    CLT_TRY(run_bwd(l, BN2, dev, pass, n, b[T4], NULL, dsum, b[DB]));
    CLT_TRY(run_bwd(l, CONV2, dev, pass, n, b[T2], NULL, b[DB], b[T4]));
    if (!l->subs[BN1].relu_epilogue) CLT_TRY(clt_act_backward_raw(dev, CLT_ACT_RELU, count, b[T2], b[T4], b[T4]));
    CLT_TRY(run_bwd(l, BN1, dev, pass, n, b[T1], b[T2], b[T4], b[DB]));
    if (projected(l)) {
        CLT_TRY(run_bwd(l, SHORTCUT, dev, pass, n, x, NULL, dsum, dx));
        CLT_TRY(run_bwd(l, CONV1, dev, pass, n, x, NULL, b[DB], dx ? b[DXM] : NULL));
        if (dx) CLT_TRY(clt_add_raw(dev, (size_t)n * (size_t)clt_shape_numel(&l->in), dx, b[DXM], dx));
        return CLT_OK;
    }
    CLT_TRY(run_bwd(l, CONV1, dev, pass, n, x, NULL, b[DB], dx));
    if (dx) CLT_TRY(clt_add_raw(dev, count, dx, dsum, dx)); /* the identity path */
    return CLT_OK;
}

static void release(clt_layer *l)
{
    for (int i = 0; i < l->n_subs; i++) clt_layer_release(&l->subs[i]);
}

static double batch_bytes(const clt_layer *l)
{
    double out = (double)clt_shape_numel(&l->out), in = (double)clt_shape_numel(&l->in);
    return sizeof(float) * ((N_BATCH_BUFFERS - 1 - !projected(l)) * out + in); /* batch_buffers */
}

const clt_layer_kind clt_layer_res = {
    .name = "res",
    .configure = configure,
    .forward = forward,
    .backward = backward,
    .release = release,
    .fuse_parts = fuse_parts,
    .batch_bytes = batch_bytes,
};
