/* 2-D convolution launchers on raw device buffers (NCHW, float32). */
#ifndef CLT_OPS_CONV_H
#define CLT_OPS_CONV_H

#include "runtime/device.h"

typedef struct clt_conv_geom {
    int n, c, h, w;   /* input batch, channels, height, width */
    int co, k;        /* output channels, square kernel size */
    int stride, pad;
    int oh, ow;       /* output size: (h + 2 pad - k) / stride + 1 */
} clt_conv_geom;

/* Fills oh/ow and checks the geometry (error names the sizes). */
clt_status clt_conv_geom_init(clt_conv_geom *g, int n, int c, int h, int w, int co, int k,
                              int stride, int pad);
/* Whether convolutions run the lane kernels on this device (CPU devices,
 * unless CLTRAIN_CONV_ALGO says otherwise); other ops may borrow them. */
clt_status clt_conv_uses_lanes(const clt_device *dev, int *yes);
/* y = conv(x, w) + b; b may be NULL. */
clt_status clt_conv_forward_raw(clt_device *dev, const clt_conv_geom *g, cl_mem x, cl_mem w,
                                cl_mem b, cl_mem y);
/* Gradient sums over the batch; dx, dw, db may each be NULL (skipped);
 * outputs are overwritten. */
clt_status clt_conv_backward_raw(clt_device *dev, const clt_conv_geom *g, cl_mem x, cl_mem w,
                                 cl_mem dy, cl_mem dx, cl_mem dw, cl_mem db);

#endif
