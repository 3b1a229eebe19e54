/* Inverted dropout (kernels/dropout.cl) keyed by (seed, step, sample index
 * in the batch, element): the mask does not depend on how a batch is split
 * over devices. */
#ifndef CLT_OPS_DROPOUT_H
#define CLT_OPS_DROPOUT_H

#include <stdint.h>

#include "runtime/device.h"

/* The generator's key for a pass: the run's seed, the optimizer step, and
 * the batch index of the pass's first sample. */
typedef struct clt_rng_key {
    uint64_t seed, step, first_sample;
} clt_rng_key;

/* y = mask * x / (1 - p) for n samples of per_sample floats, p in [0, 1);
 * y may be x. The backward is the same call on the output gradient. */
clt_status clt_dropout_raw(clt_device *dev, size_t per_sample, int n, cl_mem x, cl_mem y, float p, clt_rng_key key);

#endif
