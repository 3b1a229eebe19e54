/* A net's memory on its device, estimated from its shapes before the
 * buffers of a batch exist (clt_net_reserve makes them): what a memory
 * check compares with the device's and the process's limits. */
#include "nn/layer.h"
#include "nn/net_impl.h"

/* Partial sums that grow with a layer, not the batch (ops/dense_cpu.c
 * caps them at 32 MB), and the programs' own buffers. */
#define FIXED_WORK_BYTES (48.0 * 1024 * 1024)

/* A layer's share; a composite's parts (owned = 0) add only their work
 * buffers: their outputs are the composite's own batch buffers. */
static void layer_memory(const clt_layer *l, const clt_device *dev, int owned, clt_net_memory *m, int64_t *widest)
{
    if (owned && !clt_layer_passes_through(l)) {
        int64_t numel = clt_shape_numel(clt_layer_stored(l));
        m->per_sample += sizeof(float) * (double)numel;
        if (numel > *widest) *widest = numel;
    }
    if (owned && l->kind->aux_bytes) m->per_sample += (double)l->kind->aux_bytes(l);
    if (owned && l->kind->batch_bytes) m->per_sample += l->kind->batch_bytes(l);
    if (l->kind->work_bytes) {
        double w = l->kind->work_bytes(l, dev);
        if (w > m->work) m->work = w;
    }
    for (int i = 0; i < l->n_subs; i++) layer_memory(&l->subs[i], dev, 0, m, widest);
}

int clt_net_batch_capacity(const clt_net *net) { return net->cap; }

void clt_net_memory_estimate(const clt_net *net, int optimizer_slots, clt_net_memory *m)
{
    /* parameters, gradients, their host staging and the optimizer's state */
    m->fixed = sizeof(float) * ((double)net->flat * (3 + optimizer_slots) + (double)net->flat_state) + FIXED_WORK_BYTES;
    m->work = 0;
    int64_t widest = clt_shape_numel(&net->model.in);
    m->per_sample = sizeof(float) * (double)widest + sizeof(int32_t) + 2 * sizeof(float); /* input, label, loss */
    for (int i = 0; i < net->model.n_layers; i++) layer_memory(&net->model.layers[i], net->dev, 1, m, &widest);
    m->per_sample += 2 * sizeof(float) * (double)widest; /* the ping-pong input gradients */
}
