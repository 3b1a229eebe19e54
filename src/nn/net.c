#include "nn/net_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "ops/loss.h"
#include "runtime/launch.h"
#include "runtime/svm.h"

static clt_status make_buffer(clt_device *dev, size_t bytes, const char *what, cl_mem *out)
{
    cl_int err;
    *out = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, &err);
    if (!*out) {
        clt_cl_fail(err, "clCreateBuffer");
        return clt_fail_context(err == CL_SUCCESS ? CLT_ERR_OPENCL : CLT_ERR_DEVICE_MEMORY,
                                "%s (%zu bytes) on device %d (%s)", what, bytes, dev->info.index,
                                dev->info.name);
    }
    return CLT_OK;
}

/* A buffer of the parameters' size on memory shared with the host where
 * the net shares at least `level` (clt_net_share; *host: that memory),
 * else a plain one (*host NULL). A failed shared allocation falls back to
 * a plain buffer: copies work wherever plain buffers do. */
static clt_status make_shared(clt_net *net, clt_net_share level, size_t bytes, const char *what, cl_mem *out, float **host)
{
    *host = NULL;
    void *p = NULL;
    int want = net->share >= level;
    if (want && clt_svm_buffer(net->dev, bytes, what, out, &p) == CLT_OK) {
        *host = p;
        return CLT_OK;
    }
    if (want)
        clt_device_log(net->dev, 2, "device %d (%s): %s; a buffer of its own instead", net->dev->info.index,
                       net->dev->info.name, clt_last_error());
    return make_buffer(net->dev, bytes, what, out);
}

static clt_status sub_buffer(cl_mem parent, size_t offset_floats, int64_t numel, cl_mem *out)
{
    cl_buffer_region r = {offset_floats * sizeof(float), (size_t)numel * sizeof(float)};
    cl_int err;
    *out = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    if (!*out) return clt_cl_fail(err, "clCreateSubBuffer (parameter view)");
    return CLT_OK;
}

static clt_status zero(clt_device *dev, cl_mem m, size_t bytes)
{
    return clt_device_zero(dev, m, 0, bytes, "clEnqueueFillBuffer");
}

size_t clt_net_base_align(const clt_device *dev)
{
    size_t bytes = dev->base_align ? dev->base_align : 128; /* 1024 bits where the device does not say */
    return bytes >= sizeof(float) ? bytes : sizeof(float);
}

/* Lays parameters out last layer first (gradients become ready in buffer
 * order during backward) at offsets aligned for sub-buffers (align_bytes,
 * a multiple of the device's: every replica of a trainer shares one
 * layout); state buffers (running statistics) go to a flat buffer of their
 * own. */
static clt_status layout_params(clt_net *net, size_t align_bytes, clt_net_share share)
{
    size_t own = clt_net_base_align(net->dev);
    if (align_bytes == 0) align_bytes = own;
    if (align_bytes % own != 0 || align_bytes % sizeof(float) != 0)
        return clt_fail(CLT_ERR_INVALID_ARG, "net: parameter alignment of %zu bytes is not a multiple of device %d's %zu",
                        align_bytes, net->dev->info.index, own);
    size_t align = align_bytes / sizeof(float);
    size_t at[2] = {0, 0}; /* parameters, state */
    net->first_param_layer = clt_model_first_trainable(&net->model);
    for (int i = net->model.n_layers - 1; i >= 0; i--) {
        clt_layer *l = &net->model.layers[i];
        for (int p = 0; p < l->n_params; p++) {
            clt_param *q = &l->params[p];
            q->offset = at[q->is_buffer];
            at[q->is_buffer] += ((size_t)q->numel + align - 1) / align * align;
        }
    }
    net->flat = at[0] ? at[0] : 1;
    net->flat_state = at[1] ? at[1] : 1;
    size_t bytes = net->flat * sizeof(float), sbytes = net->flat_state * sizeof(float);
    net->share = clt_svm_shared(net->dev) ? share : CLT_SHARE_NONE;
    CLT_TRY(make_shared(net, CLT_SHARE_ALL, bytes, "parameters shared with the host", &net->params, &net->params_host));
    CLT_TRY(make_shared(net, CLT_SHARE_GRADS, bytes, "gradients shared with the host", &net->grads, &net->grads_host));
    CLT_TRY(make_buffer(net->dev, sbytes, "layer state", &net->state));
    CLT_TRY(zero(net->dev, net->params, bytes));
    CLT_TRY(zero(net->dev, net->grads, bytes));
    CLT_TRY(zero(net->dev, net->state, sbytes));
    for (int i = 0; i < net->model.n_layers; i++) {
        clt_layer *l = &net->model.layers[i];
        for (int p = 0; p < l->n_params; p++) {
            clt_param *q = &l->params[p];
            CLT_TRY(sub_buffer(q->is_buffer ? net->state : net->params, q->offset, q->numel, &q->w));
            if (!q->is_buffer) CLT_TRY(sub_buffer(net->grads, q->offset, q->numel, &q->g));
        }
    }
    return CLT_OK;
}

/* The rounds and floats of a synchronised step: what the layers declare. */
static clt_status plan_sync(clt_net *net)
{
    for (int i = 0; i < net->model.n_layers; i++) {
        const clt_layer *l = &net->model.layers[i];
        net->sync_rounds += l->sync_rounds;
        if (l->sync_floats > net->sync_floats) net->sync_floats = l->sync_floats;
    }
    if (!net->sync_floats) return CLT_OK;
    return clt_calloc((void **)&net->sync_host, (size_t)net->sync_floats, sizeof(float), "synchronisation");
}

clt_status clt_net_create(clt_device *dev, const char *spec, int channels, int height, int width,
                          clt_net **out)
{
    return clt_net_create_aligned(dev, spec, channels, height, width, 0, CLT_SHARE_NONE, out);
}

int clt_net_grads_shared(const clt_net *net) { return net && net->grads_host; }

float *clt_net_shared(const clt_net *net, clt_net_buffer b)
{
    if (b == CLT_NET_PARAMS) return net->params_host;
    if (b == CLT_NET_GRADS) return net->grads_host;
    int i = (int)b - (int)CLT_NET_SLOT0;
    return i >= 0 && i < CLT_OPTIM_SLOTS ? net->slot_host[i] : NULL;
}

clt_status clt_net_create_aligned(clt_device *dev, const char *spec, int channels, int height, int width,
                                  size_t align_bytes, clt_net_share share, clt_net **out)
{
    if (!out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_create: out is NULL");
    *out = NULL;
    if (!dev) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_create: device is NULL");
    clt_net *net = calloc(1, sizeof *net);
    if (!net) return clt_fail(CLT_ERR_NO_MEMORY, "net handle");
    net->dev = dev;
    clt_device_retain(dev); /* released by clt_net_destroy */
    clt_status s = clt_model_parse(spec, channels, height, width, &net->model);
    if (s == CLT_OK) clt_model_fuse(&net->model, dev);
    if (s == CLT_OK)
        s = clt_calloc((void **)&net->act, (size_t)net->model.n_layers, sizeof *net->act, "net buffers");
    if (s == CLT_OK) s = layout_params(net, align_bytes, share);
    if (s == CLT_OK) s = plan_sync(net);
    if (s != CLT_OK) {
        clt_net_destroy(net);
        return s;
    }
    *out = net;
    return CLT_OK;
}

static void release(cl_mem *m)
{
    if (*m) clReleaseMemObject(*m);
    *m = NULL;
}

static void release_batch_buffers(clt_net *net)
{
    release(&net->input);
    for (int i = 0; i < net->model.n_layers; i++) {
        if (!clt_layer_passes_through(&net->model.layers[i])) release(&net->act[i]);
        net->act[i] = NULL;
        release(&net->model.layers[i].aux);
    }
    release(&net->dbuf[0]);
    release(&net->dbuf[1]);
    release(&net->labels);
    release(&net->stats);
    free(net->host_stats);
    net->host_stats = NULL;
    net->cap = 0;
}

void clt_net_destroy(clt_net *net)
{
    if (!net) return;
    if (net->dev) clFinish(net->dev->queue);
    clt_net_release_staging(net);
    if (net->act) release_batch_buffers(net);
    for (int i = 0; i < net->model.n_layers; i++) {
        clt_layer *l = &net->model.layers[i];
        clt_layer_release(l);
        for (int p = 0; p < l->n_params; p++) {
            release(&l->params[p].w);
            release(&l->params[p].g);
        }
    }
    release(&net->params);
    release(&net->grads);
    release(&net->state);
    for (int i = 0; i < CLT_OPTIM_SLOTS; i++) release(&net->slot[i]);
    /* their buffers are gone; the queue finished above */
    clt_svm_free(net->dev, net->params_host);
    clt_svm_free(net->dev, net->grads_host);
    for (int i = 0; i < CLT_OPTIM_SLOTS; i++) clt_svm_free(net->dev, net->slot_host[i]);
    free(net->act);
    free(net->sync_host);
    clt_model_free(&net->model);
    clt_device_release(net->dev);
    free(net);
}

clt_status clt_net_reserve(clt_net *net, int n)
{
    if (n <= net->cap) return CLT_OK;
    release_batch_buffers(net);
    clt_device *dev = net->dev;
    size_t N = (size_t)n;
    int64_t widest = clt_shape_numel(&net->model.in);
    CLT_TRY(make_buffer(dev, N * (size_t)widest * sizeof(float), "input batch", &net->input));
    cl_mem prev = net->input;
    for (int i = 0; i < net->model.n_layers; i++) {
        clt_layer *l = &net->model.layers[i];
        if (clt_layer_passes_through(l)) {
            net->act[i] = prev; /* an alias stores nothing */
        } else {
            int64_t numel = clt_shape_numel(clt_layer_stored(l));
            if (numel > widest) widest = numel;
            CLT_TRY(make_buffer(dev, N * (size_t)numel * sizeof(float), "activations", &net->act[i]));
        }
        prev = net->act[i];
        size_t aux = l->kind->aux_bytes ? l->kind->aux_bytes(l) : 0;
        if (aux) CLT_TRY(make_buffer(dev, N * aux, "layer state", &l->aux));
    }
    for (int k = 0; k < 2; k++)
        CLT_TRY(make_buffer(dev, N * (size_t)widest * sizeof(float), "gradient buffer", &net->dbuf[k]));
    CLT_TRY(make_buffer(dev, N * sizeof(int32_t), "labels", &net->labels));
    CLT_TRY(make_buffer(dev, 2 * N * sizeof(float), "loss statistics", &net->stats));
    CLT_TRY(clt_calloc((void **)&net->host_stats, 2 * N, sizeof(float), "loss statistics"));
    net->cap = n;
    return CLT_OK;
}

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
    CLT_CL(clEnqueueWriteBuffer(net->dev->queue, net->input, CL_FALSE, 0, bytes, images, 0, NULL, done),
           "upload input samples");
    return CLT_OK;
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

int clt_net_slots(const clt_net *net)
{
    int n = 0;
    while (n < CLT_OPTIM_SLOTS && net->slot[n]) n++;
    return n;
}

clt_status clt_net_ensure_slots(clt_net *net, int n)
{
    if (n > CLT_OPTIM_SLOTS)
        return clt_fail(CLT_ERR_INTERNAL, "%d optimizer state slots (at most %d)", n, CLT_OPTIM_SLOTS);
    size_t bytes = net->flat * sizeof(float);
    for (int i = clt_net_slots(net); i < n; i++) {
        CLT_TRY(make_shared(net, CLT_SHARE_ALL, bytes, "optimizer state shared with the host", &net->slot[i],
                            &net->slot_host[i]));
        CLT_TRY(zero(net->dev, net->slot[i], bytes));
    }
    return CLT_OK;
}

clt_status clt_net_reset_slots(clt_net *net)
{
    for (int i = 0; i < clt_net_slots(net); i++) CLT_TRY(zero(net->dev, net->slot[i], net->flat * sizeof(float)));
    return CLT_OK;
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
