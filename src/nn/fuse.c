/* Fusion: a relu straight after a convolution, batch norm or dense layer
 * runs in that layer's store and its derivative in that layer's read of dy
 * (ops/epilogue.h), so the activation costs no passes over memory of its
 * own (LeNet's relu1 alone read and wrote 14 MB per batch of 256 each
 * way). The net then treats the relu like flatten: it aliases the layer's
 * output and passes the gradient on. Parameter names and indices do not
 * change (a relu has none). */
#include "nn/model.h"

#include "ops/activation.h"

int clt_layer_passes_through(const clt_layer *l) { return l->kind->alias || l->fused; }

void clt_model_fuse(clt_model *m, const clt_device *dev)
{
    if (!m || !dev || dev->settings.no_fuse) return;
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
}
