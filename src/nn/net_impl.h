/* The net's insides, for nn/ only (other rooms use net.h): a model on one
 * device with flat parameter, gradient, optimizer state and batch-norm state buffers (layout
 * in net.h), activation buffers sized on demand, and host memory for
 * transfers. */
#ifndef CLT_NN_NET_IMPL_H
#define CLT_NN_NET_IMPL_H

#include "nn/model.h"
#include "nn/net.h"

struct clt_net {
    clt_device *dev;
    clt_model model;
    size_t flat;          /* floats in the parameter, gradient and slot buffers */
    size_t flat_state;    /* floats in the state buffer */
    cl_mem params, grads, state;
    cl_mem slot[CLT_OPTIM_SLOTS]; /* optimizer state, NULL until made */
    int cap;              /* batch capacity of the buffers below */
    cl_mem input;         /* cap x input sample */
    cl_mem *act;          /* layer outputs (aliases for flatten) */
    cl_mem dbuf[2];       /* ping-pong input gradients */
    cl_mem labels;        /* int32, cap */
    cl_mem stats;         /* 2 x cap floats: loss, correct */
    float *host_stats;
    clt_layer_mark_fn mark; /* clt_net_set_layer_mark */
    void *mark_user;
    int last_n;           /* batch size of the last forward */
    int first_param_layer;/* layers before it need no input gradient */
    int last_training;    /* mode of the last forward */
    float label_smoothing;/* of the training loss (clt_net_set_label_smoothing) */
    clt_rng_key rng;      /* clt_net_set_rng */
    int sync_rounds;      /* see clt_net_sync_plan */
    int sync_floats;
    float *sync_host;     /* sync_floats: a round's values on the host */
    int sync_done;        /* rounds made since the last forward began */
    cl_mem staging_buf;   /* see clt_net_staging */
    float *staging;       /* its mapped pointer */
    clt_net_share share;  /* what is on memory shared with the host (the device allowing) */
    float *params_host, *grads_host; /* their memory where shared (runtime/svm.h), else NULL */
    float *slot_host[CLT_OPTIM_SLOTS];
    float *norm;          /* NULL, or the inputs' means[channels] then stds[channels] (net_info.c) */
    char **class_names;   /* NULL, or one name per class */
};

/* A device buffer of `bytes` (at least 4); a failure names `what`, its
 * size and the device (net_layout.c). */
clt_status clt_net_make_buffer(clt_device *dev, size_t bytes, const char *what, cl_mem *out);
/* Lays the model's parameters out in the flat buffers, made here, with
 * their views (net_layout.c; align_bytes and share as for
 * clt_net_create_aligned). */
clt_status clt_net_layout_params(clt_net *net, size_t align_bytes, clt_net_share share);
/* Makes the buffers hold n samples (grows, never shrinks). */
clt_status clt_net_reserve(clt_net *net, int n);
/* Loss only (labels set): enqueues the stats kernel. */
clt_status clt_net_loss_device(clt_net *net);
/* Releases the pinned staging (net destruction). */
void clt_net_release_staging(clt_net *net);
/* Parameter lookup by name; NULL if none. */
const clt_param *clt_net_find_param(const clt_net *net, const char *name);
/* i-th parameter in spec order. */
const clt_param *clt_net_param_at(const clt_net *net, int i);

#endif
