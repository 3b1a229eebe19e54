/* The tensor handle and the checks every op shares. */
#ifndef CLT_TENSOR_TENSOR_H
#define CLT_TENSOR_TENSOR_H

#include "runtime/device.h"

struct clt_tensor {
    clt_device *dev;
    clt_dtype dtype;
    int ndim;
    int64_t shape[CLT_MAX_DIMS];
    int64_t numel;
    cl_mem buf;
};

/* "(2, 3, 28, 28)" into buf. */
const char *clt_shape_str(int ndim, const int64_t *shape, char *buf, size_t cap);
/* CLT_ERR_INVALID_ARG naming `op` and `what` when t is NULL. */
clt_status clt_tensor_need(const clt_tensor *t, const char *op, const char *what);
/* Checks that t has dtype, ndim and (where want[i] >= 0) the given sizes;
 * the error names op, the argument and both shapes. */
clt_status clt_tensor_expect(const clt_tensor *t, const char *op, const char *what, clt_dtype dtype,
                             int ndim, const int64_t *want);
/* All non-NULL tensors on the same device as `ref`. */
clt_status clt_tensor_same_device(const char *op, const clt_tensor *ref, int n,
                                  const clt_tensor *const *others);
/* Element count as size_t bytes. */
size_t clt_tensor_bytes(const clt_tensor *t);

#endif
