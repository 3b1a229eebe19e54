/* Kernel argument setting and launching with work-group sizes chosen from
 * the device's limits. */
#ifndef CLT_RUNTIME_LAUNCH_H
#define CLT_RUNTIME_LAUNCH_H

#include "runtime/device.h"

typedef struct clt_arg {
    size_t size;
    const void *value;
} clt_arg;

/* CLT_ARG(x): an argument from an lvalue (cl_mem, int, float...). */
#define CLT_ARG(x) ((clt_arg){sizeof(x), &(x)})
/* CLT_LOCAL(bytes): a __local buffer argument. */
#define CLT_LOCAL(bytes) ((clt_arg){(bytes), NULL})

/* Sets args and enqueues `kernel` of `program` over a 1-D range of n items
 * (rounded up to the work-group size; kernels check their bound). */
clt_status clt_launch_1d(clt_device *dev, const char *program, const char *kernel, size_t n,
                         int nargs, const clt_arg *args);
/* As clt_launch_1d with the work-group size `local` chosen by the caller
 * (0: the driver's choice), for a kernel whose speed depends on it (the
 * peak FMA measurement of cltrain bench ops); n is rounded up to a
 * multiple of it. */
clt_status clt_launch_1d_local(clt_device *dev, const char *program, const char *kernel, size_t n,
                               size_t local, int nargs, const clt_arg *args);
/* An elementwise kernel (kernels/prelude.h, EW_FOR) over n floats: its
 * program built with -DEW=w, w floats per work-item (the native vector
 * width on CPU devices, 1 elsewhere), over ceil(n / w) items. */
clt_status clt_launch_elementwise(clt_device *dev, const char *program, const char *kernel, size_t n,
                                  int nargs, const clt_arg *args);
/* Builds (or finds) what clt_launch_elementwise would launch, launching nothing. */
clt_status clt_elementwise_build(clt_device *dev, const char *program, const char *kernel);
/* 2-D range gx x gy with local size lx x ly (0: let the driver choose; the
 * global size is rounded up to a multiple of the local size). */
clt_status clt_launch_2d(clt_device *dev, const char *program, const char *kernel, size_t gx,
                         size_t gy, size_t lx, size_t ly, int nargs, const clt_arg *args);

#define CLT_ARGS(...) (int)(sizeof((clt_arg[]){__VA_ARGS__}) / sizeof(clt_arg)), (clt_arg[]){__VA_ARGS__}

/* The device-wide scratch buffer of at least `bytes` (grown, never shrunk).
 * Valid until the next call on this device; ops use it for im2col columns. */
clt_status clt_device_scratch(clt_device *dev, size_t bytes, cl_mem *out);
/* Frees it (the next clt_device_scratch allocates again). */
void clt_device_scratch_release(clt_device *dev);
/* Bytes the scratch buffer holds now (0: none). */
size_t clt_device_scratch_size(const clt_device *dev);

/* Enqueues zeros over `bytes` bytes of buf from byte `off` (both multiples
 * of 4); `what` names the call in an error. */
clt_status clt_device_zero(clt_device *dev, cl_mem buf, size_t off, size_t bytes, const char *what);

#endif
