/* Optimizers behind one small table: one file each (sgd.c, adam.c), each
 * with a settings check, the state slots it keeps per parameter, and one
 * update launcher over a span of flat parameter, gradient and state
 * buffers (floats [offset, offset + count) of each), so an update can run
 * per gradient bucket as soon as its reduced gradients are on the device. */
#ifndef CLT_OPTIM_OPTIM_H
#define CLT_OPTIM_OPTIM_H

#include "runtime/device.h"

/* Most state slots an optimizer keeps (Adam: m and v). */
#define CLT_OPTIM_SLOTS 2

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
                         cl_mem w, cl_mem g, const cl_mem *slots);
} clt_optim_ops;

/* The table entry of kind; NULL for an unknown kind. */
const clt_optim_ops *clt_optim_find(clt_optimizer kind);
/* The kind a name ("sgd", "adam", "adamw") names; -1 if none. */
int clt_optim_named(const char *name);
/* Checks the kind and its settings. */
clt_status clt_optim_check(const clt_optim_settings *s, const char *op);

#endif
