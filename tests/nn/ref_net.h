/* A plain-C, double-precision reference of a whole net (the layers of a
 * parsed clt_model), forward and backward, for checking the device path. */
#ifndef CLT_TESTS_REF_NET_H
#define CLT_TESTS_REF_NET_H

#include "nn/model.h"

typedef struct ref_net {
    const clt_model *model;
    int n;
    double **params;   /* per spec-order parameter */
    double **grads;
    double **act;      /* act[0] input, act[i+1] output of layer i */
    double **dact;
    int n_params;
} ref_net;

/* Builds the reference for n samples with parameters copied from host
 * float arrays (spec order). */
void ref_net_init(ref_net *r, const clt_model *m, int n, float *const *params);
void ref_net_free(ref_net *r);
/* Forward from float images; returns the summed loss, sets correct count. */
double ref_net_forward(ref_net *r, const float *images, const int32_t *labels, int *correct);
/* Backward of the summed loss scaled by `scale` into r->grads. */
void ref_net_backward(ref_net *r, const int32_t *labels, double scale);

#endif
