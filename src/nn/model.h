/* A model: the parsed, shape-checked layer list of a spec. Host only; a
 * net (net.h) instantiates it on a device. */
#ifndef CLT_NN_MODEL_H
#define CLT_NN_MODEL_H

#include "nn/layer.h"

#define CLT_MAX_LAYERS 256

typedef struct clt_model {
    clt_layer *layers;
    int n_layers;
    clt_shape in;
    int classes;          /* outputs of the last layer */
    char *spec;           /* expanded spec text */
} clt_model;

/* Parses `spec` (a builtin name or a comma-separated layer list) for inputs
 * of shape (c, h, w) and infers every shape; errors name the layer index,
 * the token and the shapes. */
clt_status clt_model_parse(const char *spec, int c, int h, int w, clt_model *out);
void clt_model_free(clt_model *m);
/* Folds every relu that directly follows a layer whose kind can run it in
 * its store on dev into that layer (src/nn/fuse.c); nothing when the
 * device's settings say not to fuse (CLTRAIN_FUSE=0). */
void clt_model_fuse(clt_model *m, const clt_device *dev);
/* The index of the first layer with a trainable parameter (n_layers: none):
 * its backward computes no dx. */
int clt_model_first_trainable(const clt_model *m);
/* The index of the pooling that layer i may run in its store where the
 * device allows (src/nn/fuse.c: a 2x2 stride-2 pooling right after it, or
 * after a relu after it; the layer's kind has fuses_pool); -1: none. */
int clt_model_fusable_pool(const clt_model *m, int i);
/* Whether layer l has no pass of its own: its output is its input's
 * buffer and its gradient passes through (flatten, a fused relu). */
int clt_layer_passes_through(const clt_layer *l);
/* The spec a builtin name stands for, or NULL. */
const char *clt_model_builtin(const char *name);

#endif
