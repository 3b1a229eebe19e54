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
/* The spec a builtin name stands for, or NULL. */
const char *clt_model_builtin(const char *name);

#endif
