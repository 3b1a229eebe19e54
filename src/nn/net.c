/* A net's life cycle: creation (the model parsed and fused, its memory
 * laid out: net_layout.c), the batch-sized buffers made for a batch size,
 * and destruction. The passes are net_pass.c's. */
#include "nn/net_impl.h"
#include "nn/net_info.h"

#include <stdlib.h>

#include "core/alloc.h"
#include "runtime/svm.h"
#include "runtime/queue.h"

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
    if (s == CLT_OK) s = clt_net_layout_params(net, align_bytes, share);
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
    clt_buffer_release(*m);
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
    if (net->dev) clt_queue_drain(clt_device_queue(net->dev));
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
    clt_net_info_free(net);
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
    CLT_TRY(clt_net_make_buffer(dev, N * (size_t)widest * sizeof(float), "input batch", &net->input));
    cl_mem prev = net->input;
    for (int i = 0; i < net->model.n_layers; i++) {
        clt_layer *l = &net->model.layers[i];
        if (clt_layer_passes_through(l)) {
            net->act[i] = prev; /* an alias stores nothing */
        } else {
            int64_t numel = clt_shape_numel(clt_layer_stored(l));
            if (numel > widest) widest = numel;
            CLT_TRY(clt_net_make_buffer(dev, N * (size_t)numel * sizeof(float), "activations", &net->act[i]));
        }
        prev = net->act[i];
        size_t aux = l->kind->aux_bytes ? l->kind->aux_bytes(l) : 0;
        if (aux) CLT_TRY(clt_net_make_buffer(dev, N * aux, "layer state", &l->aux));
    }
    for (int k = 0; k < 2; k++)
        CLT_TRY(clt_net_make_buffer(dev, N * (size_t)widest * sizeof(float), "gradient buffer", &net->dbuf[k]));
    CLT_TRY(clt_net_make_buffer(dev, N * sizeof(int32_t), "labels", &net->labels));
    CLT_TRY(clt_net_make_buffer(dev, 2 * N * sizeof(float), "loss statistics", &net->stats));
    CLT_TRY(clt_calloc((void **)&net->host_stats, 2 * N, sizeof(float), "loss statistics"));
    net->cap = n;
    return CLT_OK;
}
