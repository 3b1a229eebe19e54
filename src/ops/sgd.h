/* SGD update launcher (PyTorch semantics). */
#ifndef CLT_OPS_SGD_H
#define CLT_OPS_SGD_H

#include "runtime/device.h"

/* g' = g + wd w; v = m v + g' (no v when m == 0: v may be NULL); w -= lr v. */
clt_status clt_sgd_raw(clt_device *dev, size_t count, cl_mem w, cl_mem g, cl_mem v, float lr,
                       float momentum, float weight_decay);

#endif
