/* Optimizers behind one small table: one file each (sgd.c, adam.c), each
 * with a settings check, the state slots it keeps per parameter, and one
 * update launcher over a span of flat parameter, gradient and state
 * buffers (floats [offset, offset + count) of each), so an update can run
 * per gradient bucket as soon as its reduced gradients are on the device. */
#ifndef CLT_OPTIM_OPTIM_H
#define CLT_OPTIM_OPTIM_H

#include "runtime/device.h"
#include "runtime/launch.h"

/* Most state slots an optimizer keeps (Adam: m and v). */
#define CLT_OPTIM_SLOTS 2
/* Most replicas' gradient buffers an update sums itself (clt_grads). */
#define CLT_GRADS_MAX 8

/* The gradients an update reads: buf[0] as they are (n == 1), or the sum
 * of n replicas' buffers in order, times scale, summed by the update's
 * kernel with the host sum's roundings (parallel/reduce.c), so that
 * replicas reading each other's gradients need no sum written anywhere
 * (parallel/peers.c). Every buffer is in the updating device's context. */
typedef struct clt_grads {
    const cl_mem *buf;
    int n; /* 1 .. CLT_GRADS_MAX */
    float scale;
} clt_grads;

/* An optimizer and its settings (PyTorch's names and meanings). */
typedef struct clt_optim_settings {
    clt_optimizer kind;
    float lr, momentum, weight_decay; /* momentum: SGD only */
    int nesterov;                     /* SGD only */
    float beta1, beta2, eps;          /* Adam, AdamW */
} clt_optim_settings;

typedef struct clt_optim_ops {
    const char *name; /* as --optimizer spells it */
    /* Checkpoint key prefix of each state slot ("momentum/", "adam/m/"). */
    const char *slot_prefix[CLT_OPTIM_SLOTS];
    /* State slots these settings use (SGD without momentum: none). */
    int (*slots)(const clt_optim_settings *s);
    /* CLT_ERR_INVALID_ARG naming `op` and the bad setting. */
    clt_status (*check)(const clt_optim_settings *s, const char *op);
    /* Update number `step` (1 for the first) of floats [offset, offset +
     * count) of w, with gradients g and the slots' buffers. */
    clt_status (*update)(clt_device *dev, const clt_optim_settings *s, int64_t step, size_t offset, size_t count,
                         cl_mem w, const clt_grads *g, const cl_mem *slots);
} clt_optim_ops;

/* The table entry of kind; NULL for an unknown kind. */
const clt_optim_ops *clt_optim_find(clt_optimizer kind);
/* The kind a name ("sgd", "adam", "adamw") names; -1 if none. */
int clt_optim_named(const char *name);
/* Checks the kind and its settings. */
clt_status clt_optim_check(const clt_optim_settings *s, const char *op);
/* Launches elementwise `kernel` of `program` (kernels/sgd.cl, adam.cl)
 * over count floats with arguments w, the gradients g (GRADS in
 * kernels/prelude.h: its n buffers, and its scale when n > 1), then the
 * nargs of args. */
clt_status clt_optim_launch(clt_device *dev, const char *program, const char *kernel, size_t count, cl_mem w,
                            const clt_grads *g, int nargs, const clt_arg *args);

#endif
