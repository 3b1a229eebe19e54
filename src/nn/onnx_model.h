/* The ONNX model around a built graph: opset, producer and the metadata
 * keys (README, "Export to ONNX"), written atomically to `path`. */
#ifndef CLT_NN_ONNX_MODEL_H
#define CLT_NN_ONNX_MODEL_H

#include "nn/onnx_graph.h"

#define CLT_ONNX_OPSET 17
#define CLT_ONNX_IR_VERSION 8 /* the IR version opset 17 came with */

clt_status clt_onnx_model_write(clt_onnx_graph *g, const clt_net *net, const char *path);

#endif
