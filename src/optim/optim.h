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
/* Most replicas an update reads gradients from and writes results to
 * (clt_optim_io). */
#define CLT_GRADS_MAX 8

/* The gradients an update reads: buf[0] as they are (n == 1), or the sum
 * of n replicas' buffers in order, times scale, summed by the update's
 * kernel with the host sum's roundings (parallel/reduce.c), so that
 * replicas reading each other's gradients need no sum written anywhere
 * (parallel/peers.c). */
typedef struct clt_grads {
    const cl_mem *buf;
    int n; /* 1 .. CLT_GRADS_MAX */
    float scale;
} clt_grads;

/* The buffers of an update, all of the updating device's context: it
 * reads w[0] and slot[i][0] and writes its results to all n_out of each
 * (other replicas' copies: each device then updates a share of the
 * parameters for every replica). */
typedef struct clt_optim_io {
    const cl_mem *w;
    const cl_mem *slot[CLT_OPTIM_SLOTS]; /* those the settings use */
    int n_out;                           /* 1 .. CLT_GRADS_MAX */
    clt_grads g;
} clt_optim_io;

/* An optimizer and its settings (PyTorch's names and meanings). */
typedef struct clt_optim_settings {
    clt_optimizer kind;
    float lr, momentum, weight_decay; /* momentum: SGD only */
    int nesterov;                     /* SGD only */
    float beta1, beta2, eps;          /* Adam, AdamW */
} clt_optim_settings;

typedef struct clt_optim_ops {
    const char *name;    /* as --optimizer spells it */
    const char *program; /* its kernels' source (kernels/NAME.cl) and one of its kernels */
    const char *kernel;
    /* Checkpoint key prefix of each state slot ("momentum/", "adam/m/"). */
    const char *slot_prefix[CLT_OPTIM_SLOTS];
    /* State slots these settings use (SGD without momentum: none). */
    int (*slots)(const clt_optim_settings *s);
    /* CLT_ERR_INVALID_ARG naming `op` and the bad setting. */
    clt_status (*check)(const clt_optim_settings *s, const char *op);
    /* Update number `step` (1 for the first) of floats [offset, offset +
     * count) of the buffers io names. */
    clt_status (*update)(clt_device *dev, const clt_optim_settings *s, int64_t step, size_t offset, size_t count,
                         const clt_optim_io *io);
} clt_optim_ops;

/* The table entry of kind; NULL for an unknown kind. */
const clt_optim_ops *clt_optim_find(clt_optimizer kind);
/* The kind a name ("sgd", "adam", "adamw") names; -1 if none. */
int clt_optim_named(const char *name);
/* Checks the kind and its settings. */
clt_status clt_optim_check(const clt_optim_settings *s, const char *op);
/* Builds ops' kernels for updates from n_grads gradient buffers into
 * n_out replicas (clt_optim_io) on dev ahead of their first use. */
clt_status clt_optim_build(clt_device *dev, const clt_optim_ops *ops, int n_grads, int n_out);
/* Launches elementwise `kernel` of `program` (kernels/sgd.cl, adam.cl)
 * over count floats: arguments io->w[0], the gradients (GRADS in
 * kernels/prelude.h: io->g's buffers, and its scale when there are
 * several), the nargs of args, then the companions (COPIES) of w and of
 * the first `slots` state slots, which the kernel writes. */
clt_status clt_optim_launch(clt_device *dev, const char *program, const char *kernel, size_t count,
                            const clt_optim_io *io, int slots, int nargs, const clt_arg *args);

#endif
