/* Fully connected layer launchers: y = x w^T + b (GEMM through CLBlast). */
#ifndef CLT_OPS_DENSE_H
#define CLT_OPS_DENSE_H

#include "runtime/device.h"

/* x (n, in), w (out, in), b (out) or NULL, y (n, out). */
clt_status clt_dense_forward_raw(clt_device *dev, int n, int in, int out, cl_mem x, cl_mem w,
                                 cl_mem b, cl_mem y);
/* dx (n, in), dw (out, in), db (out): sums over the batch, overwritten;
 * each may be NULL. */
clt_status clt_dense_backward_raw(clt_device *dev, int n, int in, int out, cl_mem x, cl_mem w,
                                  cl_mem dy, cl_mem dx, cl_mem dw, cl_mem db);

#endif
