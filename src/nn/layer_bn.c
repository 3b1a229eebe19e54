/* bn — batch normalisation over channels (C, H, W) or features (F), with
 * learnable scale and shift and running statistics (PyTorch semantics,
 * momentum 0.1, eps 1e-5). With a sync hook in the pass, the statistics of
 * the whole multi-device batch are used (synchronised batch norm). */
#include "nn/layer.h"
#include "ops/bn.h"
#include "ops/elementwise.h"
#include "runtime/queue.h"

enum { SHIFT, STATS, MEAN_INVSTD, BSTATS };
/* The synchronisation rounds of a training forward + backward, in order. */
enum { ROUND_SHIFT, ROUND_STATS, ROUND_BACKWARD, N_ROUNDS };

static int channels(const clt_layer *l) { return l->in.d[0]; }
static int plane(const clt_layer *l) { return l->in.ndim == 3 ? l->in.d[1] * l->in.d[2] : 1; }

static clt_status configure(clt_layer *l)
{
    if (l->nargs) return clt_layer_fail(l, CLT_ERR_SPEC, "bn takes no arguments");
    l->out = l->in;
    int64_t c = channels(l);
    clt_layer_add_param(l, "weight", 1, &c, 0, 0, 0)->init_value = 1.0f;
    clt_layer_add_param(l, "bias", 1, &c, 0, 0, 1);
    clt_layer_add_buffer(l, "running_mean", c, 0.0f);
    clt_layer_add_buffer(l, "running_var", c, 1.0f);
    l->sync_rounds = N_ROUNDS;
    l->sync_floats = 2 * channels(l);
    return CLT_OK;
}

static clt_status buffers(clt_layer *l, clt_device *dev)
{
    size_t c = (size_t)channels(l);
    CLT_TRY(clt_layer_priv(l, dev, SHIFT, c * sizeof(float)));
    CLT_TRY(clt_layer_priv(l, dev, STATS, 2 * c * sizeof(float)));
    CLT_TRY(clt_layer_priv(l, dev, MEAN_INVSTD, 2 * c * sizeof(float)));
    return clt_layer_priv(l, dev, BSTATS, 2 * c * sizeof(float));
}

static clt_status forward(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y)
{
    int c = channels(l), hw = plane(l);
    cl_mem gamma = l->params[0].w, beta = l->params[1].w, rmean = l->params[2].w, rvar = l->params[3].w;
    clt_epilogue epi = {.relu = l->relu_epilogue || l->add_relu, .add = l->add_relu};
    CLT_TRY(buffers(l, dev));
    l->last_training = pass->training;
    if (!pass->training)
        return clt_bn_infer_raw(dev, n, c, hw, x, rmean, rvar, CLT_BN_EPS, gamma, beta, l->priv[MEAN_INVSTD], &epi, y);
    double count = (double)n * hw;
    /* Sums are taken about a shift near the mean, against cancellation in
     * the variance: the first sample of the shard; across devices, the mean
     * of the devices' first samples, so that every device uses the same. */
    cl_mem shift = l->priv[SHIFT];
    CLT_TRY(clt_bn_shift_raw(dev, n, c, hw, x, shift));
    if (pass->sync.fn) { /* ROUND_SHIFT */
        double devices = 1;
        CLT_TRY(clt_pass_sync(pass, dev, shift, c, &devices));
        float inv = (float)(1.0 / devices);
        CLT_TRY(clt_scale_raw(dev, shift, 0, (size_t)c, inv));
    }
    CLT_TRY(clt_bn_stats_raw(dev, n, c, hw, x, shift, l->priv[STATS]));
    if (pass->sync.fn) CLT_TRY(clt_pass_sync(pass, dev, l->priv[STATS], 2 * c, &count)); /* ROUND_STATS */
    if (count < 2)
        return clt_layer_fail(l, CLT_ERR_INVALID_ARG,
                              "training batch norm needs more than one value per channel (batch %d x %d)", n, hw);
    CLT_TRY(clt_bn_finalize_raw(dev, c, count, l->priv[STATS], shift, CLT_BN_MOMENTUM, CLT_BN_EPS, rmean, rvar,
                                l->priv[MEAN_INVSTD]));
    return clt_bn_apply_raw(dev, n, c, hw, x, l->priv[MEAN_INVSTD], gamma, beta, &epi, y);
}

static clt_status backward(clt_layer *l, clt_device *dev, const clt_pass *pass, int n, cl_mem x, cl_mem y,
                           cl_mem dy, cl_mem dx)
{
    int c = channels(l), hw = plane(l);
    cl_mem gamma = l->params[0].w;
    clt_epilogue epi = {.relu = l->relu_epilogue, .y = y};
    CLT_TRY(clt_bn_backward_stats_raw(dev, n, c, hw, x, dy, &epi, l->priv[MEAN_INVSTD], l->priv[BSTATS]));
    /* [sum dy | sum dy*xhat] of this shard are dbeta and dgamma: the usual
     * gradient reduction adds them over devices. */
    size_t bytes = (size_t)c * sizeof(float);
    cl_command_queue q = clt_device_queue(dev);
    CLT_TRY(clt_queue_copy(q, l->priv[BSTATS], 0, l->params[1].g, 0, bytes, "batch norm: bias gradient"));
    CLT_TRY(clt_queue_copy(q, l->priv[BSTATS], bytes, l->params[0].g, 0, bytes, "batch norm: weight gradient"));
    if (!l->last_training)
        return dx ? clt_bn_backward_infer_raw(dev, n, c, hw, dy, &epi, l->priv[MEAN_INVSTD], gamma, dx) : CLT_OK;
    /* Every device takes part in each round, wanted or not. */
    double count = (double)n * hw;
    if (pass->sync.fn) CLT_TRY(clt_pass_sync(pass, dev, l->priv[BSTATS], 2 * c, &count)); /* ROUND_BACKWARD */
    if (!dx) return CLT_OK;
    return clt_bn_backward_apply_raw(dev, n, c, hw, x, dy, &epi, l->priv[MEAN_INVSTD], gamma, l->priv[BSTATS], count,
                                     dx);
}

const clt_layer_kind clt_layer_bn = {
    .name = "bn",
    .configure = configure,
    .forward = forward,
    .backward = backward,
    .fuses_relu = clt_layer_fuses_always,
};
