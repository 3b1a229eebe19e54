/* Each layer kind's ONNX form: a function per kind that appends the nodes
 * computing the layer's inference output y from x, with its parameters as
 * initializers named as in the state_dict ("0.weight"). The math is the
 * spec's, not the fused kernels' (src/nn/fuse.c changes how layers run,
 * never what they compute). */
#ifndef CLT_NN_ONNX_LAYERS_H
#define CLT_NN_ONNX_LAYERS_H

#include "nn/layer.h"
#include "nn/onnx_graph.h"

typedef clt_status (*clt_onnx_emit_fn)(clt_onnx_graph *g, const clt_net *net, const clt_layer *l, const char *x,
                                       const char *y);

/* The kind's emitter; NULL for a kind ONNX cannot express. */
clt_onnx_emit_fn clt_onnx_emitter(const clt_layer_kind *kind);

#endif
