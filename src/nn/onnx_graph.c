/* The ONNX graph under construction (onnx_graph.h): protobuf-c messages
 * whose every part lives in one arena, so a graph of any size is freed in
 * one walk and a failure anywhere needs no unwinding. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "nn/onnx_graph.h"

typedef union block {
    union block *next;
    max_align_t align; /* what follows suits any type */
} block;

struct clt_onnx_graph {
    block *blocks;
    int failed;
    Onnx__GraphProto graph;
};

clt_onnx_graph *clt_onnx_graph_create(void)
{
    clt_onnx_graph *g = NULL;
    if (clt_calloc((void **)&g, 1, sizeof *g, "ONNX graph") != CLT_OK) return NULL;
    onnx__graph_proto__init(&g->graph);
    g->graph.name = "cltrain";
    return g;
}

void clt_onnx_graph_destroy(clt_onnx_graph *g)
{
    if (!g) return;
    for (block *b = g->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(g);
}

clt_status clt_onnx_graph_status(const clt_onnx_graph *g)
{
    return g->failed ? clt_fail(CLT_ERR_NO_MEMORY, "out of memory building the ONNX graph") : CLT_OK;
}

Onnx__GraphProto *clt_onnx_graph_proto(clt_onnx_graph *g) { return &g->graph; }

/* count items of size bytes, zeroed, owned by the graph; NULL after a failure. */
static void *arena(clt_onnx_graph *g, size_t count, size_t size)
{
    size_t bytes;
    if (g->failed || !clt_mul_size(count, size, &bytes) || bytes > SIZE_MAX - sizeof(block)) {
        g->failed = 1;
        return NULL;
    }
    block *b = calloc(1, sizeof *b + bytes);
    if (!b) {
        g->failed = 1;
        return NULL;
    }
    b->next = g->blocks;
    g->blocks = b;
    return b + 1;
}

/* Appends item to the table of pointers at `field` (a T **) holding *n.
 * The capacity is implicit: the next power of two from 4, so a full table
 * is one of size 0, 4, 8, 16, ... Pointers move by memcpy: the tables
 * have protobuf-c's element types, not void *. */
static void push(clt_onnx_graph *g, void *field, size_t *n, void *item)
{
    if (!item) return; /* its allocation failed: g->failed is set */
    char *items;
    memcpy(&items, field, sizeof items);
    if (*n == 0 || (*n >= 4 && (*n & (*n - 1)) == 0)) {
        char *grown = arena(g, *n ? 2 * *n : 4, sizeof item);
        if (!grown) return;
        if (*n) memcpy(grown, items, *n * sizeof item);
        items = grown;
        memcpy(field, &items, sizeof items);
    }
    memcpy(items + (*n)++ * sizeof item, &item, sizeof item);
}

const char *clt_onnx_str(clt_onnx_graph *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = len < 0 ? NULL : arena(g, (size_t)len + 1, 1);
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)len + 1, fmt, ap);
    va_end(ap);
    return s;
}

Onnx__NodeProto *clt_onnx_node(clt_onnx_graph *g, const char *op, const char *out, int n_in, const char *const *in)
{
    Onnx__NodeProto *n = arena(g, 1, sizeof *n);
    char **ins = arena(g, (size_t)n_in, sizeof *ins);
    char **outs = arena(g, 1, sizeof *outs);
    if (!n || !ins || !outs || !out) return NULL;
    onnx__node_proto__init(n);
    for (int i = 0; i < n_in; i++) {
        if (!in[i]) return NULL; /* a name that failed */
        ins[i] = (char *)in[i];
    }
    outs[0] = (char *)out;
    n->n_input = (size_t)n_in;
    n->input = ins;
    n->n_output = 1;
    n->output = outs;
    n->op_type = (char *)op;
    n->name = (char *)out;
    push(g, &g->graph.node, &g->graph.n_node, n);
    return n;
}

static Onnx__AttributeProto *attr(clt_onnx_graph *g, Onnx__NodeProto *n, const char *name,
                                  Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = n ? arena(g, 1, sizeof *a) : NULL;
    if (!a) return NULL;
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = type;
    push(g, &n->attribute, &n->n_attribute, a);
    return a;
}

void clt_onnx_attr_int(clt_onnx_graph *g, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = attr(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) a->has_i = 1, a->i = v;
}

void clt_onnx_attr_float(clt_onnx_graph *g, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = attr(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) a->has_f = 1, a->f = v;
}

void clt_onnx_attr_ints(clt_onnx_graph *g, Onnx__NodeProto *n, const char *name, int count, const int64_t *v)
{
    Onnx__AttributeProto *a = attr(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *ints = arena(g, (size_t)count, sizeof *ints);
    if (!a || !ints) return;
    memcpy(ints, v, (size_t)count * sizeof *ints);
    a->n_ints = (size_t)count;
    a->ints = ints;
}

/* dims into the arena; numel gets their product (NULL on failure). */
static int64_t *copy_dims(clt_onnx_graph *g, int ndim, const int64_t *dims, size_t *numel)
{
    int64_t *d = arena(g, (size_t)ndim, sizeof *d);
    if (!d) return NULL;
    *numel = 1;
    for (int i = 0; i < ndim; i++) {
        d[i] = dims[i];
        if (dims[i] < 0 || !clt_mul_size(*numel, (size_t)dims[i], numel)) {
            g->failed = 1;
            return NULL;
        }
    }
    return d;
}

float *clt_onnx_initializer(clt_onnx_graph *g, const char *name, int ndim, const int64_t *dims)
{
    size_t numel = 0;
    Onnx__TensorProto *t = arena(g, 1, sizeof *t);
    int64_t *d = copy_dims(g, ndim, dims, &numel);
    float *data = d ? arena(g, numel ? numel : 1, sizeof *data) : NULL;
    if (!t || !data || !name) return NULL;
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->n_dims = (size_t)ndim;
    t->dims = d;
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t->n_float_data = numel;
    t->float_data = data;
    push(g, &g->graph.initializer, &g->graph.n_initializer, t);
    return data;
}

void clt_onnx_graph_io(clt_onnx_graph *g, int output, const char *name, int ndim, const int64_t *dims)
{
    Onnx__ValueInfoProto *v = arena(g, 1, sizeof *v);
    Onnx__TypeProto *type = arena(g, 1, sizeof *type);
    Onnx__TypeProto__Tensor *tensor = arena(g, 1, sizeof *tensor);
    Onnx__TensorShapeProto *shape = arena(g, 1, sizeof *shape);
    Onnx__TensorShapeProto__Dimension *d = arena(g, (size_t)ndim + 1, sizeof *d);
    Onnx__TensorShapeProto__Dimension **dp = arena(g, (size_t)ndim + 1, sizeof *dp);
    if (!v || !type || !tensor || !shape || !d || !dp || !name) return;
    for (int i = 0; i <= ndim; i++) {
        onnx__tensor_shape_proto__dimension__init(&d[i]);
        if (i == 0) {
            d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d[i].dim_param = "N";
        } else {
            d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d[i].dim_value = dims[i - 1];
        }
        dp[i] = &d[i];
    }
    onnx__tensor_shape_proto__init(shape);
    shape->n_dim = (size_t)ndim + 1;
    shape->dim = dp;
    onnx__type_proto__tensor__init(tensor);
    tensor->has_elem_type = 1;
    tensor->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tensor->shape = shape;
    onnx__type_proto__init(type);
    type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    type->tensor_type = tensor;
    onnx__value_info_proto__init(v);
    v->name = (char *)name;
    v->type = type;
    if (output)
        push(g, &g->graph.output, &g->graph.n_output, v);
    else
        push(g, &g->graph.input, &g->graph.n_input, v);
}
