/* The op cases of models: every distinct op shape that one training step of
 * one or more models runs (convolution, pooling, activation, batch norm,
 * residual add, dense, gap, loss, optimizer step), at a batch size. One
 * list serves the op tests (each case against its reference) and the
 * benchmarks (cltrain bench ops, bench/bench_conv), as ggml's
 * test-backend-ops runs one list of cases in test and perf modes.
 *
 * Order: layer by layer; with several models, layer i of every model before
 * layer i + 1 of any, so a variant's op (lenet-max's max pooling) comes
 * right after the op it replaces. A shape that comes again is one case
 * (`uses` counts it), then the loss and the optimizer step. */
#ifndef CLT_NN_MODEL_OPS_H
#define CLT_NN_MODEL_OPS_H

#include "cltrain.h"

typedef enum clt_op_kind {
    CLT_OP_CONV,
    CLT_OP_POOL,
    CLT_OP_GAP,
    CLT_OP_ACT,
    CLT_OP_BN,    /* training mode: statistics, then apply */
    CLT_OP_ADD,   /* the residual add */
    CLT_OP_DENSE,
    CLT_OP_XENT,  /* softmax cross-entropy */
    CLT_OP_SGD,   /* the optimizer step over all parameters */
} clt_op_kind;

typedef struct clt_op_case {
    clt_op_kind kind;
    char name[16];          /* "conv", "maxpool", "relu", "bn", ... with an ordinal where the
                             * list has several of that name: "conv2", "relu3" */
    int spec;               /* index of the first model (spec) that runs it */
    int uses;               /* times that model runs it in one forward pass */
    int n;                  /* batch */
    int c, h, w;            /* per-sample input; flat features are (c, 1, 1); xent: c = classes */
    int co, k, stride, pad; /* conv: output channels, kernel, stride, padding; pool: k, stride;
                             * dense: co = outputs */
    int oh, ow;             /* conv and pool: output plane */
    clt_pool_kind pool;     /* pool */
    clt_activation act;     /* activation */
    clt_op_kind fused_into; /* a relu that nets run in the store of the conv, batch norm or
                             * dense layer before it (src/nn/fuse.c; dense: on CPU
                             * devices), a pooling in a conv (CPU devices, where its
                             * shape allows), or a residual block's add and last relu
                             * (in its bn2): that layer's kind; else CLT_OP_ACT */
    int64_t params;         /* sgd: trainable parameters of model 0 */
} clt_op_case;

typedef struct clt_op_cases {
    clt_op_case *cases;
    int count;
    int64_t params;         /* trainable parameters of model 0 (running statistics excluded) */
} clt_op_cases;

/* The cases of the models specs[0 .. n_specs) (builtin names or spec
 * strings, as clt_model_parse takes them) for inputs (c, h, w) at `batch`
 * samples. Free with clt_op_cases_free. */
clt_status clt_op_cases_build(const char *const *specs, int n_specs, int c, int h, int w, int batch,
                              clt_op_cases *out);
/* NULL-safe; leaves *l empty. */
void clt_op_cases_free(clt_op_cases *l);

#endif
