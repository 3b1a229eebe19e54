/* SGD, PyTorch semantics (torch.optim.SGD): the update launcher the net and
 * the tensor call share, and the one check of its settings. An optimizer is
 * a file of its own here (sgd.c; others beside it), each with a settings
 * check and a launcher over flat parameter, gradient and state buffers. */
#ifndef CLT_OPTIM_SGD_H
#define CLT_OPTIM_SGD_H

#include "runtime/device.h"

/* CLT_ERR_INVALID_ARG naming `op` unless lr, momentum and weight decay are
 * finite with lr >= 0, 0 <= momentum < 1 and weight decay >= 0. */
clt_status clt_sgd_check(const char *op, float lr, float momentum, float weight_decay);

/* g' = g + wd w; v = m v + g' (no v when m == 0: v may be NULL); w -= lr v. */
clt_status clt_sgd_raw(clt_device *dev, size_t count, cl_mem w, cl_mem g, cl_mem v, float lr,
                       float momentum, float weight_decay);

#endif
