/* Elementwise activation launchers. */
#ifndef CLT_OPS_ACTIVATION_H
#define CLT_OPS_ACTIVATION_H

#include "runtime/device.h"

/* y = f(x) over count elements (y may equal x). */
clt_status clt_act_forward_raw(clt_device *dev, clt_activation f, size_t count, cl_mem x, cl_mem y);
/* dx = dy * f'(.) computed from the forward output y (dx may equal dy). */
clt_status clt_act_backward_raw(clt_device *dev, clt_activation f, size_t count, cl_mem y,
                                cl_mem dy, cl_mem dx);

#endif
