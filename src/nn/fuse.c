/* Fusion: a relu straight after a convolution, batch norm or dense layer
 * runs in that layer's store and its derivative in that layer's read of dy
 * (ops/epilogue.h), so the activation costs no passes over memory of its
 * own (LeNet's relu1 alone read and wrote 14 MB per batch of 256 each
 * way). The net then treats the relu like flatten: it aliases the layer's
 * output and passes the gradient on; the same for a pooling fused into
 * a first layer (below). Parameter names and indices do not change (a
 * relu or pooling has none). */
#include "nn/model.h"

#include "ops/activation.h"
#include "ops/pool.h"

int clt_model_first_trainable(const clt_model *m)
{
    for (int i = 0; i < m->n_layers; i++)
        for (int p = 0; p < m->layers[i].n_params; p++)
            if (!m->layers[i].params[p].is_buffer) return i;
    return m->n_layers;
}

int clt_layer_passes_through(const clt_layer *l) { return l->kind->alias || l->fused; }

int clt_model_fusable_pool(const clt_model *m, int i)
{
    if (i < 0 || i >= m->n_layers || !m->layers[i].kind->fuses_pool) return -1;
    int p = i + 1;
    if (p < m->n_layers && m->layers[p].kind == &clt_layer_activation && m->layers[p].variant == CLT_ACT_RELU) p++;
    if (p >= m->n_layers) return -1;
    const clt_layer *pool = &m->layers[p];
    int stride = pool->nargs > 1 ? pool->args[1] : pool->args[0];
    return pool->kind == &clt_layer_pool && pool->args[0] == 2 && stride == 2 ? p : -1;
}

/* A 2x2 stride-2 pooling after a layer (and its fused relu) runs in that
 * layer's store too, where the layer's kind says it can (LeNet's conv1,
 * relu, avgpool: the pooling's passes go, and the convolution's 14 MB dy
 * at batch 256 is never written or read, nor is its output; conv2's the
 * same in the lanes copies). */
static void fuse_pool(clt_model *m, const clt_device *dev)
{
    int first = clt_model_first_trainable(m);
    for (int i = 0; i < m->n_layers; i++) {
        int p = clt_model_fusable_pool(m, i);
        if (p < 0) continue;
        clt_layer *l = &m->layers[i], *pool = &m->layers[p];
        int kind = pool->variant == CLT_POOL_MAX ? CLT_EPI_POOL_MAX : CLT_EPI_POOL_AVG;
        if (pool - l == 2 && !l->relu_epilogue) continue; /* a relu between runs on its own */
        if (!l->kind->fuses_pool(l, dev, kind, i == first)) continue;
        l->pool_epilogue = kind;
        l->pooled = pool->out;
        pool->fused = 1;
    }
}

void clt_model_fuse(clt_model *m, const clt_device *dev)
{
    if (!m || !dev || clt_device_get_settings(dev)->no_fuse) return;
    for (int i = 0; i + 1 < m->n_layers; i++) {
        clt_layer *l = &m->layers[i], *next = &m->layers[i + 1];
        if (next->kind != &clt_layer_activation || next->variant != CLT_ACT_RELU) continue;
        if (!l->kind->fuses_relu || !l->kind->fuses_relu(l, dev)) continue;
        l->relu_epilogue = 1;
        next->fused = 1;
        i++; /* the relu is spoken for */
    }
    for (int i = 0; i < m->n_layers; i++)
        if (m->layers[i].kind->fuse_parts) m->layers[i].kind->fuse_parts(&m->layers[i], dev);
    fuse_pool(m, dev);
}
