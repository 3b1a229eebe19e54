/* clt_net_export_onnx: a net's inference graph as an ONNX model (opset
 * 17, batch dimension "N"), written through protobuf-c straight into an
 * atomic file. The graph: input (N, C, H, W), the normalisation as Sub and
 * Div nodes where the net has one, then each layer's nodes
 * (onnx_layers.c), output "logits" (N, classes). */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "nn/net_impl.h"
#include "nn/onnx_layers.h"
#include "nn/onnx_model.h"

/* Protocol buffers hold at most 2 GiB; room is left for the graph. */
#define ONNX_MAX_BYTES ((int64_t)INT32_MAX - (16 << 20))

/* What can be refused is refused before any work: a layer without an ONNX
 * form, parameters beyond a protocol buffer's size. */
static clt_status check(const clt_net *net)
{
    int64_t floats = 0;
    for (int i = 0; i < net->model.n_layers; i++) {
        const clt_layer *l = &net->model.layers[i];
        if (!clt_onnx_emitter(l->kind)) return clt_layer_fail(l, CLT_ERR_UNSUPPORTED, "has no ONNX form");
        for (int p = 0; p < l->n_params; p++) floats += l->params[p].numel;
    }
    if (floats > ONNX_MAX_BYTES / 4)
        return clt_fail(CLT_ERR_UNSUPPORTED, "the net's %lld parameters take %lld MiB; an ONNX file holds at most "
                        "2 GiB", (long long)floats, (long long)(floats >> 18));
    return CLT_OK;
}

/* (x - mean) / std per channel, as the dataset applies it, where the net
 * has a normalisation: nodes in front of the first layer computing the
 * same float operations (exact, where folding into the first layer's
 * weights would round differently). *x becomes their output. */
static clt_status normalization(clt_onnx_graph *g, const clt_net *net, int c, const char **x)
{
    float *values = NULL;
    CLT_TRY(clt_calloc((void **)&values, 2 * (size_t)c, sizeof *values, "the input normalisation"));
    if (clt_net_normalization(net, values, values + c)) {
        float *mean = clt_onnx_initializer(g, "input_mean", 4, (int64_t[]){1, c, 1, 1});
        float *std = clt_onnx_initializer(g, "input_std", 4, (int64_t[]){1, c, 1, 1});
        if (mean && std) {
            memcpy(mean, values, (size_t)c * sizeof *mean);
            memcpy(std, values + c, (size_t)c * sizeof *std);
        }
        clt_onnx_node(g, "Sub", "input/centred", 2, (const char *[]){*x, "input_mean"});
        clt_onnx_node(g, "Div", "input/normalized", 2, (const char *[]){"input/centred", "input_std"});
        *x = "input/normalized";
    }
    free(values);
    return clt_onnx_graph_status(g);
}

static clt_status build(clt_onnx_graph *g, const clt_net *net)
{
    int c, h, w;
    clt_net_input_shape(net, &c, &h, &w);
    clt_onnx_graph_io(g, 0, "input", 3, (int64_t[]){c, h, w});
    const char *x = "input";
    CLT_TRY(normalization(g, net, c, &x));
    int last = net->model.n_layers - 1;
    for (int i = 0; i <= last; i++) {
        const clt_layer *l = &net->model.layers[i];
        const char *y = i == last ? "logits" : clt_onnx_str(g, "%s/%s", l->prefix, l->token);
        CLT_TRY(clt_onnx_emitter(l->kind)(g, net, l, x, y));
        x = y;
    }
    clt_onnx_graph_io(g, 1, "logits", 1, (int64_t[]){net->model.classes});
    return clt_onnx_graph_status(g);
}

clt_status clt_net_export_onnx(const clt_net *net, const char *path)
{
    if (!net || !path) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_export_onnx: NULL argument");
    char target[CLT_PATH_CAP];
    CLT_TRY(check(net));
    CLT_TRY(clt_atomic_target(path, target, NULL)); /* a path that cannot be written, before the work */
    clt_onnx_graph *g = clt_onnx_graph_create();
    if (!g) return CLT_ERR_NO_MEMORY;
    clt_status s = build(g, net);
    if (s == CLT_OK) s = clt_onnx_model_write(g, net, path);
    clt_onnx_graph_destroy(g);
    return s;
}
