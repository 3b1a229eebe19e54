/* Pooling launchers on raw device buffers. */
#ifndef CLT_OPS_POOL_H
#define CLT_OPS_POOL_H

#include "runtime/device.h"

/* What a max pooling's argmax holds (a buffer of n*c*oh*ow int32 either
 * way): CLT_POOL_ARGMAX_PLANE, each output's winning input index within
 * its plane (PyTorch's return_indices; the public API's); or
 * CLT_POOL_ARGMAX_PRIVATE, for a caller that only hands it back to the
 * backward (the layer): where the row kernels run (CPU devices, or the
 * lanes algorithm forced), 2 bits per output at the buffer's start
 * (kernels/pool.cl, POOL_PACKED), else PLANE. That depends on the
 * device's settings: the backward must read it under the settings the
 * forward wrote it with. */
typedef enum clt_pool_argmax { CLT_POOL_ARGMAX_PLANE, CLT_POOL_ARGMAX_PRIVATE } clt_pool_argmax;

/* Floor mode: oh = (h - k) / stride + 1 (requires h >= k, w >= k).
 * argmax is written for max pooling, unused for average; NULL for max
 * pooling: the values alone (inference, no backward after). */
clt_status clt_pool_forward_raw(clt_device *dev, clt_pool_kind kind, int n, int c, int h, int w,
                                int k, int stride, cl_mem x, cl_mem y, cl_mem argmax, clt_pool_argmax fmt);
/* The bytes of argmax the kernels write and read on dev (what moves; the
 * buffer is n*c*oh*ow int32 regardless). */
size_t clt_pool_argmax_bytes(const clt_device *dev, clt_pool_argmax fmt, int n, int c, int h, int w, int k,
                             int stride);
/* dx is overwritten (zeros where no window reads); argmax in the format
 * the forward wrote it. */
clt_status clt_pool_backward_raw(clt_device *dev, clt_pool_kind kind, int n, int c, int h, int w,
                                 int k, int stride, cl_mem dy, cl_mem argmax, clt_pool_argmax fmt, cl_mem dx);
/* Global average pooling over hw = h*w positions: (n*c, hw) -> (n*c). */
clt_status clt_gap_forward_raw(clt_device *dev, int nc, int hw, cl_mem x, cl_mem y);
clt_status clt_gap_backward_raw(clt_device *dev, int nc, int hw, cl_mem dy, cl_mem dx);

#endif
