/* Fused softmax cross-entropy. */
#ifndef CLT_OPS_LOSS_H
#define CLT_OPS_LOSS_H

#include "runtime/device.h"

/* For n rows of `classes` logits and int32 labels:
 *   stats[2*i] = loss of row i (log-sum-exp - logit[label]),
 *   stats[2*i+1] = 1.0f if argmax(row) == label else 0.0f (first max wins);
 *   dlogits (if not NULL) = scale * (softmax - onehot).
 * A label outside [0, classes) gives stats[2*i] = NaN (callers report it).
 * stats may be NULL when only dlogits is wanted. */
clt_status clt_xent_raw(clt_device *dev, int n, int classes, cl_mem logits, cl_mem labels,
                        float scale, cl_mem dlogits, cl_mem stats);
/* The same with label smoothing E in [0, 1) (PyTorch's definition):
 * loss = (1 - E) nll + E mean over classes of -log p; dlogits = scale *
 * (softmax - (1 - E) onehot - E / classes). E = 0 is clt_xent_raw. */
clt_status clt_xent_smooth_raw(clt_device *dev, int n, int classes, cl_mem logits, cl_mem labels, float smooth,
                               float scale, cl_mem dlogits, cl_mem stats);

#endif
