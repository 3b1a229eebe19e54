/* A net's passes: the forward, the loss and its statistics, the backward
 * (layer by layer, last first, with the hooks a trainer overlaps its
 * reduction with) and the optimizer's update of the flat buffers. */
#include "nn/net_impl.h"

#include <math.h>

#include "ops/loss.h"
#include "runtime/launch.h"
#include "runtime/queue.h"

static clt_status check_n(const clt_net *net, int n, const char *op)
{
    if (n < 1) return clt_fail(CLT_ERR_INVALID_ARG, "%s: batch of %d samples (at least 1)", op, n);
    (void)net;
    return CLT_OK;
}

static clt_pass make_pass(clt_net *net, int training, const clt_sync *sync)
{
    clt_pass pass = {training, {NULL, NULL}, net->sync_host, &net->sync_done, net->sync_rounds, net->rng};
    if (sync) pass.sync = *sync;
    return pass;
}

clt_status clt_net_forward_device(clt_net *net, int training, const clt_sync *sync, int n)
{
    clt_pass pass = make_pass(net, training, sync);
    cl_mem x = net->input;
    net->sync_done = 0;
    net->last_training = training;
    for (int i = 0; i < net->model.n_layers; i++) {
        clt_layer *l = &net->model.layers[i];
        if (!clt_layer_passes_through(l)) {
            clt_status s = l->kind->forward(l, net->dev, &pass, n, x, net->act[i]);
            if (s != CLT_OK) return clt_fail_context(s, "forward of layer %d (%s)", i, l->token);
            if (net->mark) CLT_TRY(net->mark(net->mark_user, i, 0));
        }
        x = net->act[i];
    }
    net->last_n = n;
    return CLT_OK;
}

clt_status clt_net_set_input(clt_net *net, const float *images, int n, cl_event *done)
{
    CLT_TRY(clt_net_reserve(net, n));
    size_t bytes = (size_t)n * (size_t)clt_shape_numel(&net->model.in) * sizeof(float);
    if (!done) return clt_device_write(net->dev, net->input, 0, bytes, images, "upload input samples");
    return clt_queue_write(clt_device_queue(net->dev), net->input, 0, 0, bytes, images, 0, NULL, done,
                           "upload input samples");
}

clt_status clt_net_forward(clt_net *net, const float *images, int n, int training)
{
    if (!net || !images) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_forward: NULL argument");
    CLT_TRY(check_n(net, n, "clt_net_forward"));
    CLT_TRY(clt_net_set_input(net, images, n, NULL));
    return clt_net_forward_device(net, training != 0, NULL, n);
}

clt_status clt_net_output(const clt_net *net, float *scores, int64_t count)
{
    if (!net || !scores) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_output: NULL argument");
    if (net->last_n == 0) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_output: no forward pass yet");
    int64_t want = (int64_t)net->last_n * net->model.classes;
    if (count != want)
        return clt_fail(CLT_ERR_SHAPE, "clt_net_output: %lld floats asked, the last forward gave %d x %d",
                        (long long)count, net->last_n, net->model.classes);
    return clt_device_read(net->dev, net->act[net->model.n_layers - 1], 0, (size_t)want * sizeof(float), scores,
                           "clt_net_output: download");
}

clt_status clt_net_set_labels(clt_net *net, const int32_t *labels, int n)
{
    CLT_TRY(clt_labels_check(labels, n, net->model.classes, "labels"));
    return clt_device_write(net->dev, net->labels, 0, (size_t)n * sizeof(int32_t), labels, "upload labels");
}

static cl_mem logits(const clt_net *net) { return net->act[net->model.n_layers - 1]; }

clt_status clt_net_loss_device(clt_net *net)
{
    return clt_xent_raw(net->dev, net->last_n, net->model.classes, logits(net), net->labels, 1.0f, NULL,
                        net->stats);
}

clt_status clt_net_backward_device(clt_net *net, const clt_sync *sync, float scale, clt_grads_ready_fn ready,
                                   void *user)
{
    clt_pass pass = make_pass(net, 1, sync);
    int n = net->last_n;
    cl_mem dy = net->dbuf[0];
    int cur = 0;
    CLT_TRY(clt_xent_smooth_raw(net->dev, n, net->model.classes, logits(net), net->labels, net->label_smoothing,
                                scale, dy, net->stats));
    for (int i = net->model.n_layers - 1; i >= 0; i--) {
        clt_layer *l = &net->model.layers[i];
        if (clt_layer_passes_through(l)) continue; /* the gradient passes through unchanged */
        cl_mem x = i ? net->act[i - 1] : net->input;
        cl_mem dx = i > net->first_param_layer ? net->dbuf[1 - cur] : NULL;
        clt_status s = l->kind->backward(l, net->dev, &pass, n, x, net->act[i], dy, dx);
        if (s != CLT_OK) return clt_fail_context(s, "backward of layer %d (%s)", i, l->token);
        if (net->mark) CLT_TRY(net->mark(net->mark_user, i, 1));
        if (ready && i >= net->first_param_layer) CLT_TRY(ready(user, net, i));
        if (dx) {
            cur = 1 - cur;
            dy = dx;
        }
    }
    /* Fewer rounds than declared would leave a device with an empty shard
     * waiting for the rest. */
    if (pass.sync.fn && net->last_training && net->sync_done != net->sync_rounds)
        return clt_fail(CLT_ERR_INTERNAL, "a training step made %d synchronisation rounds, its layers declare %d",
                        net->sync_done, net->sync_rounds);
    return CLT_OK;
}

clt_status clt_net_read_stats(clt_net *net, double *loss_sum, int64_t *correct)
{
    int n = net->last_n;
    CLT_TRY(clt_device_read(net->dev, net->stats, 0, 2 * (size_t)n * sizeof(float), net->host_stats,
                            "read loss statistics"));
    double sum = 0;
    int64_t ok = 0;
    for (int i = 0; i < n; i++) {
        sum += net->host_stats[2 * i];
        ok += net->host_stats[2 * i + 1] > 0.5f;
    }
    /* Loaded parameters are checked finite: a training loss that is not
     * diverged; an evaluation has no learning rate to blame. */
    if (!isfinite(sum) && net->last_training)
        return clt_fail(CLT_ERR_NUMERIC, "the loss is %s: training diverged (the optimizer's settings made the "
                        "parameters overflow float32)",
                        isnan(sum) ? "NaN" : "infinite");
    if (!isfinite(sum))
        return clt_fail(CLT_ERR_NUMERIC, "the evaluation loss is %s: the parameters or the inputs hold values too "
                        "large for float32", isnan(sum) ? "NaN" : "infinite");
    if (loss_sum) *loss_sum = sum;
    if (correct) *correct = ok;
    return CLT_OK;
}

static clt_status check_labels(clt_net *net, const int32_t *labels, const char *op)
{
    if (!net || !labels) return clt_fail(CLT_ERR_INVALID_ARG, "%s: NULL argument", op);
    if (net->last_n == 0) return clt_fail(CLT_ERR_INVALID_ARG, "%s: no forward pass yet", op);
    return clt_net_set_labels(net, labels, net->last_n);
}

clt_status clt_net_backward(clt_net *net, const int32_t *labels, float scale, double *loss_sum,
                            int64_t *correct)
{
    CLT_TRY(check_labels(net, labels, "clt_net_backward"));
    if (!isfinite(scale)) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_backward: scale %g", scale);
    CLT_TRY(clt_net_backward_device(net, NULL, scale, NULL, NULL));
    return clt_net_read_stats(net, loss_sum, correct);
}

clt_status clt_net_loss(clt_net *net, const int32_t *labels, double *loss_sum, int64_t *correct)
{
    CLT_TRY(check_labels(net, labels, "clt_net_loss"));
    CLT_TRY(clt_net_loss_device(net));
    return clt_net_read_stats(net, loss_sum, correct);
}

clt_status clt_net_optim_update(clt_net *net, const clt_optim_settings *s, int64_t step, clt_span span)
{
    return clt_net_optim_update_from(net, s, step, span, NULL);
}

clt_status clt_net_optim_update_from(clt_net *net, const clt_optim_settings *s, int64_t step, clt_span span,
                                     const clt_optim_io *io)
{
    const clt_optim_ops *ops = clt_optim_find(s->kind);
    if (!ops) return clt_optim_check(s, "clt_net_optim_update");
    if (span.offset > net->flat || span.count > net->flat - span.offset)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_optim_update: floats [%zu, +%zu) outside the %zu parameters",
                        span.offset, span.count, net->flat);
    CLT_TRY(clt_net_ensure_slots(net, ops->slots(s)));
    clt_optim_io own = {&net->params, {NULL}, 1, {&net->grads, 1, 1.0f}};
    for (int i = 0; i < CLT_OPTIM_SLOTS; i++) own.slot[i] = &net->slot[i];
    return ops->update(net->dev, s, step, span.offset, span.count, io ? io : &own);
}

clt_status clt_net_sgd_step(clt_net *net, float lr, float momentum, float weight_decay)
{
    if (!net) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_sgd_step: net is NULL");
    clt_optim_settings s = {.kind = CLT_OPTIMIZER_SGD, .lr = lr, .momentum = momentum, .weight_decay = weight_decay};
    CLT_TRY(clt_optim_check(&s, "clt_net_sgd_step"));
    return clt_net_optim_update(net, &s, 1, (clt_span){0, net->flat});
}
