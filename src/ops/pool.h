/* Pooling launchers on raw device buffers. */
#ifndef CLT_OPS_POOL_H
#define CLT_OPS_POOL_H

#include "runtime/device.h"

/* Floor mode: oh = (h - k) / stride + 1 (requires h >= k, w >= k).
 * argmax (int32, n*c*oh*ow) is written for max pooling, unused for average;
 * NULL for max pooling: the values alone (inference, no backward after). */
clt_status clt_pool_forward_raw(clt_device *dev, clt_pool_kind kind, int n, int c, int h, int w,
                                int k, int stride, cl_mem x, cl_mem y, cl_mem argmax);
/* dx is overwritten (zeros where no window reads). */
clt_status clt_pool_backward_raw(clt_device *dev, clt_pool_kind kind, int n, int c, int h, int w,
                                 int k, int stride, cl_mem dy, cl_mem argmax, cl_mem dx);
/* Global average pooling over hw = h*w positions: (n*c, hw) -> (n*c). */
clt_status clt_gap_forward_raw(clt_device *dev, int nc, int hw, cl_mem x, cl_mem y);
clt_status clt_gap_backward_raw(clt_device *dev, int nc, int hw, cl_mem dy, cl_mem dx);

#endif
