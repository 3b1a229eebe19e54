/* Elementwise launchers over flat float buffers (kernels/elementwise.cl),
 * and the argument check the elementwise tensor calls share. */
#ifndef CLT_OPS_ELEMENTWISE_H
#define CLT_OPS_ELEMENTWISE_H

#include "runtime/device.h"

/* Residual add: y = a + b over `count` floats; y may be a or b. The
 * backward is the identity (da = db = dy). */
clt_status clt_add_raw(clt_device *dev, size_t count, cl_mem a, cl_mem b, cl_mem y);

/* x *= a over `count` floats from float `offset` (the same rounding as
 * the host's x * a). */
clt_status clt_scale_raw(clt_device *dev, cl_mem x, size_t offset, size_t count, float a);

/* The `count` tensors t[] (t[0] not NULL) are float32 of t[0]'s shape on
 * t[0]'s device; errors name `op` and names[i]. */
clt_status clt_elementwise_check(const char *op, int count, const clt_tensor *const *t,
                                 const char *const *names);

#endif
