/* Fully connected layer launchers: y = x w^T + b (CLBlast's GEMM on GPUs,
 * ops/dense_cpu.c on CPU devices). */
#ifndef CLT_OPS_DENSE_H
#define CLT_OPS_DENSE_H

#include "ops/conv.h"
#include "ops/epilogue.h"
#include "runtime/device.h"

/* Whether dense layers on dev can fuse a ReLU (ops/epilogue.h): where they
 * run ops/dense_cpu.c's kernels; CLBlast's GEMM has no epilogue. */
int clt_dense_fuses(const clt_device *dev);
/* x (n, in), w (out, in), b (out) or NULL, y (n, out); epi NULL or a ReLU
 * fused into the store (only where clt_dense_fuses). */
clt_status clt_dense_forward_raw(clt_device *dev, int n, int in, int out, cl_mem x, cl_mem w,
                                 cl_mem b, const clt_epilogue *epi, cl_mem y);
/* dx (n, in), dw (out, in), db (out): sums over the batch, overwritten;
 * each may be NULL. epi: the forward's, with its output. */
clt_status clt_dense_backward_raw(clt_device *dev, int n, int in, int out, cl_mem x, cl_mem w,
                                  cl_mem dy, const clt_epilogue *epi, cl_mem dx, cl_mem dw, cl_mem db);

#endif
