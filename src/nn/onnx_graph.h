/* An ONNX graph under construction (protobuf-c messages of
 * src/proto/onnx.proto): nodes, float initializers, inputs and outputs,
 * all in one arena freed with the graph. A failed allocation makes the
 * graph refuse every later call quietly (NULL, no-op) and
 * clt_onnx_graph_status report it once, so the layers' emitters need no
 * check after each node. Build-time only with protobuf-c. */
#ifndef CLT_NN_ONNX_GRAPH_H
#define CLT_NN_ONNX_GRAPH_H

#include <stdint.h>

#include "cltrain.h"
#include "core/error.h"
#include "proto/onnx.pb-c.h"

typedef struct clt_onnx_graph clt_onnx_graph;

/* NULL when out of memory (detail set). */
clt_onnx_graph *clt_onnx_graph_create(void);
void clt_onnx_graph_destroy(clt_onnx_graph *g); /* NULL-safe */
/* CLT_OK, or CLT_ERR_NO_MEMORY after a failed allocation. */
clt_status clt_onnx_graph_status(const clt_onnx_graph *g);
/* The message itself (its parts belong to the graph). */
Onnx__GraphProto *clt_onnx_graph_proto(clt_onnx_graph *g);

/* A printf-formatted string in the arena (value and node names). */
const char *clt_onnx_str(clt_onnx_graph *g, const char *fmt, ...) CLT_PRINTF(2, 3);
/* Appends node `op`(in[0..n_in)) -> out, named after its output; the
 * node takes attributes below. */
Onnx__NodeProto *clt_onnx_node(clt_onnx_graph *g, const char *op, const char *out, int n_in, const char *const *in);
void clt_onnx_attr_int(clt_onnx_graph *g, Onnx__NodeProto *n, const char *name, int64_t v);
void clt_onnx_attr_float(clt_onnx_graph *g, Onnx__NodeProto *n, const char *name, float v);
void clt_onnx_attr_ints(clt_onnx_graph *g, Onnx__NodeProto *n, const char *name, int count, const int64_t *v);
/* A float initializer `name` of the shape; returns its numel floats to
 * fill (NULL after a failure). */
float *clt_onnx_initializer(clt_onnx_graph *g, const char *name, int ndim, const int64_t *dims);
/* A graph input (output = 0) or output (1) of float32 (N, dims...): the
 * batch dimension is symbolic, named "N". */
void clt_onnx_graph_io(clt_onnx_graph *g, int output, const char *name, int ndim, const int64_t *dims);

#endif
