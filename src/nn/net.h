/* The net: a model on one device with flat parameter, gradient and velocity
 * buffers (parameters laid out last layer first, so gradients become ready
 * in buffer order during backward) and activation buffers sized on demand. */
#ifndef CLT_NN_NET_H
#define CLT_NN_NET_H

#include "nn/model.h"

struct clt_net {
    clt_device *dev;
    clt_model model;
    size_t flat;          /* floats in the parameter, gradient and momentum buffers */
    size_t flat_state;    /* floats in the state buffer */
    cl_mem params, grads, vel, state;
    int cap;              /* batch capacity of the buffers below */
    cl_mem input;         /* cap x input sample */
    cl_mem *act;          /* layer outputs (aliases for flatten) */
    cl_mem dbuf[2];       /* ping-pong input gradients */
    cl_mem labels;        /* int32, cap */
    cl_mem stats;         /* 2 x cap floats: loss, correct */
    float *host_stats;
    int last_n;           /* batch size of the last forward */
    int first_param_layer;/* layers before it need no input gradient */
};

/* Makes the buffers hold n samples (grows, never shrinks). */
clt_status clt_net_reserve(clt_net *net, int n);
/* Forward of n samples already in net->input. */
clt_status clt_net_forward_device(clt_net *net, const clt_pass *pass, int n);
/* Called after a layer's parameter gradients are enqueued (in-order queue:
 * work enqueued afterwards sees them). */
typedef clt_status (*clt_grads_ready_fn)(void *user, clt_net *net, int layer);
/* Loss and backward of the last forward with labels already in net->labels;
 * enqueues everything, reads nothing. */
clt_status clt_net_backward_device(clt_net *net, const clt_pass *pass, float scale, clt_grads_ready_fn ready,
                                   void *user);
/* Loss only (labels in net->labels): enqueues the stats kernel. */
clt_status clt_net_loss_device(clt_net *net);
/* Reads the stats of the last loss: sum of losses, correct count; a NaN or
 * infinite loss gives CLT_ERR_NUMERIC, a bad label CLT_ERR_INVALID_ARG. */
clt_status clt_net_read_stats(clt_net *net, double *loss_sum, int64_t *correct);
/* Uploads n labels into net->labels after range checks. */
clt_status clt_net_set_labels(clt_net *net, const int32_t *labels, int n);
/* Allocates the zeroed momentum buffer if there is none yet. */
clt_status clt_net_ensure_velocity(clt_net *net);
/* CLT_ERR_INVALID_ARG naming op and the first label outside 0..classes-1. */
clt_status clt_labels_check(const int32_t *labels, int64_t n, int classes, const char *op);
/* The dataset's samples have the net's input shape and its labels fit the
 * net's classes; at least one and at most INT32_MAX samples. */
clt_status clt_net_check_dataset(const clt_net *net, const clt_dataset *ds, const char *op);
/* Summed loss and correct count of inference on samples [off, off + n) of a
 * checked dataset, in batches of batch_size. */
clt_status clt_net_evaluate_range(clt_net *net, const clt_dataset *ds, int64_t off, int64_t n, int batch_size,
                                  double *loss_sum, int64_t *correct);
/* Parameter lookup by name; NULL if none. */
const clt_param *clt_net_find_param(const clt_net *net, const char *name);
/* i-th parameter in spec order. */
const clt_param *clt_net_param_at(const clt_net *net, int i);

#endif
