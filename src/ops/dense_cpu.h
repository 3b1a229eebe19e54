/* Dense layers on CPU devices (kernels/dense_cpu.cl): the layer's three
 * products on its row-major tensors, no layout copies; src/ops/dense.c
 * calls them where the convolution runs its lanes kernels. */
#ifndef CLT_OPS_DENSE_CPU_H
#define CLT_OPS_DENSE_CPU_H

#include "ops/epilogue.h"
#include "runtime/device.h"

/* y (n, out) = x (n, in) w^T + b, b NULL or (out); epi NULL or a ReLU in
 * the store. */
clt_status clt_dense_cpu_forward(clt_device *dev, int n, int in, int out, cl_mem x, cl_mem w, cl_mem b,
                                 const clt_epilogue *epi, cl_mem y);
/* dx (n, in) = dy w, dw (out, in) = dy^T x, db (out): each overwritten, or
 * skipped where NULL; epi: the forward's, with its output. */
clt_status clt_dense_cpu_backward(clt_device *dev, int n, int in, int out, cl_mem x, cl_mem w, cl_mem dy,
                                  const clt_epilogue *epi, cl_mem dx, cl_mem dw, cl_mem db);
/* "vw8 ra3 rb4" (forward) or "vw8 rm6 nv2" (either backward product). */
void clt_dense_cpu_describe(const clt_device *dev, int pass, char *buf, size_t cap);

#endif
