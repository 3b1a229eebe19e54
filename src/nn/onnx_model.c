/* The ONNX model around the graph (onnx_model.h): the opset it binds to,
 * the producer, the metadata, and the write, packed by protobuf-c straight
 * into the atomic file (no copy of the parameters in memory). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "nn/onnx_model.h"

/* s as a JSON string into out (when not NULL); returns its length. */
static size_t json_string(char *out, const char *s)
{
    size_t n = 1;
    if (out) out[0] = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char piece[8];
        if (*p == '"' || *p == '\\')
            snprintf(piece, sizeof piece, "\\%c", *p);
        else if (*p < 0x20)
            snprintf(piece, sizeof piece, "\\u%04x", *p);
        else
            piece[0] = (char)*p, piece[1] = 0;
        size_t len = strlen(piece);
        if (out) memcpy(out + n, piece, len);
        n += len;
    }
    if (out) out[n] = '"';
    return n + 1;
}

/* ["name0", "name1", ...] into out (when not NULL); returns its length. */
static size_t json_names(char *out, const clt_net *net, int classes)
{
    size_t n = 0;
    for (int k = 0; k < classes; k++) {
        if (out) memcpy(out + n, k ? ", " : "[", k ? 2 : 1);
        n += k ? 2 : 1;
        n += json_string(out ? out + n : NULL, clt_net_class_name(net, k));
    }
    if (out) memcpy(out + n, "]", 2);
    return n + 1;
}

/* The class names as a JSON list, in the graph's arena; NULL where the
 * net has none. */
static const char *class_names(clt_onnx_graph *g, const clt_net *net)
{
    int classes = clt_net_classes(net);
    for (int k = 0; k < classes; k++)
        if (!clt_net_class_name(net, k)) return NULL;
    size_t len = json_names(NULL, net, classes);
    char *text = (char *)clt_onnx_str(g, "%*s", (int)(len < INT32_MAX ? len : 0), "");
    if (text && len < INT32_MAX) json_names(text, net, classes);
    return text;
}

typedef struct sink {
    ProtobufCBuffer base;
    clt_atomic_file af;
    clt_status s;
} sink;

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    sink *k = (sink *)b;
    if (k->s == CLT_OK) k->s = clt_atomic_write(&k->af, data, len);
}

static clt_status write_model(const Onnx__ModelProto *m, const char *path)
{
    sink k = {.base = {.append = sink_append}};
    CLT_TRY(clt_atomic_open(&k.af, path));
    protobuf_c_message_pack_to_buffer(&m->base, &k.base);
    if (k.s != CLT_OK) {
        clt_atomic_abort(&k.af);
        return k.s;
    }
    return clt_atomic_commit(&k.af);
}

clt_status clt_onnx_model_write(clt_onnx_graph *g, const clt_net *net, const char *path)
{
    const char *version = clt_version(NULL, NULL, NULL), *names = class_names(g, net);
    Onnx__StringStringEntryProto meta[3] = {ONNX__STRING_STRING_ENTRY_PROTO__INIT,
                                            ONNX__STRING_STRING_ENTRY_PROTO__INIT,
                                            ONNX__STRING_STRING_ENTRY_PROTO__INIT};
    Onnx__StringStringEntryProto *metap[3] = {&meta[0], &meta[1], &meta[2]};
    meta[0].key = "cltrain_version", meta[0].value = (char *)version;
    meta[1].key = "cltrain_spec", meta[1].value = (char *)clt_net_spec(net);
    meta[2].key = "class_names", meta[2].value = (char *)names;
    Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT, *opsetp = &opset;
    opset.domain = "";
    opset.has_version = 1, opset.version = CLT_ONNX_OPSET;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.has_ir_version = 1, m.ir_version = CLT_ONNX_IR_VERSION;
    m.n_opset_import = 1, m.opset_import = &opsetp;
    m.producer_name = "cltrain", m.producer_version = (char *)version;
    m.graph = clt_onnx_graph_proto(g);
    m.n_metadata_props = names ? 3 : 2, m.metadata_props = metap;
    CLT_TRY(clt_onnx_graph_status(g));
    if (protobuf_c_message_get_packed_size(&m.base) > (size_t)INT32_MAX)
        return clt_fail(CLT_ERR_UNSUPPORTED, "%s: the model takes more than the 2 GiB an ONNX file holds", path);
    return write_model(&m, path);
}
