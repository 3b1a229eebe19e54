/* Max / average pooling (floor mode, no padding) and global average pooling.
 * Kernels in kernels/pool.cl. argmax holds, for each output element, the
 * index ih * w + iw of the winning input within its (n, c) plane (PyTorch's
 * return_indices convention), or, the layer's own where the row kernels
 * run, the window's cell in 2 bits (pool.h, CLT_POOL_ARGMAX_PRIVATE). Every
 * dx element is written exactly once, with no atomics: without overlap
 * (stride >= k) each window writes its own cells (after a zero fill when
 * some cells lie in no window); with overlap each dx element gathers the
 * windows covering it, in a fixed order. */
#include "ops/pool.h"

#include <limits.h>
#include <stdio.h>

#include "ops/conv.h"
#include "runtime/launch.h"
#include "tensor/tensor.h"

/* Magic numbers for dividing 0 <= n < 2^31 by d >= 1 in the kernels
 * (POOL_DIV in kernels/pool.cl): n / d == (mul_hi(n, m) + n) >> sh. */
typedef struct divisor {
    cl_uint m, sh;
} divisor;

static divisor make_divisor(int d)
{
    divisor r;
    cl_uint sh = 0;
    while (sh < 31 && ((uint64_t)1 << sh) < (uint64_t)d) sh++;
    r.m = (cl_uint)((((uint64_t)1 << 32) * (((uint64_t)1 << sh) - (uint64_t)d)) / (uint64_t)d + 1);
    r.sh = sh;
    return r;
}

/* Checks the geometry of a raw call and gives the output size. */
static clt_status pool_geom(const char *op, int n, int c, int h, int w, int k, int s, int *oh,
                            int *ow)
{
    if (n < 1 || c < 1 || h < 1 || w < 1)
        return clt_fail(CLT_ERR_SHAPE, "%s: input (%d, %d, %d, %d) has a dimension < 1", op, n, c, h, w);
    if (k < 1 || s < 1)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: window %d and stride %d must be >= 1", op, k, s);
    if (h < k || w < k)
        return clt_fail(CLT_ERR_SHAPE, "%s: window %d is larger than the input plane %dx%d", op, k, h, w);
    if ((int64_t)n * c * h * w > INT_MAX)
        return clt_fail(CLT_ERR_UNSUPPORTED, "%s: input (%d, %d, %d, %d) has more than %d elements", op,
                        n, c, h, w, INT_MAX);
    *oh = (h - k) / s + 1;
    *ow = (w - k) / s + 1;
    return CLT_OK;
}

/* Local size for a 2-D range of rows `width` long: the whole row (up to 64)
 * along dimension 0, rows stacked up to about 64 work-items. */
static void rows_local(const clt_device *dev, int width, size_t *lx, size_t *ly)
{
    size_t target = 64, most = (size_t)clt_device_get_info(dev)->max_work_group_size;
    if (most > 0 && most < target) target = most;
    *lx = (size_t)width < target ? (size_t)width : target;
    *ly = target / *lx;
}

/* Whether the row kernels run (kernels/pool.cl, pool_*_rows): 2x2 windows
 * at stride 2 on rows of at least 4 outputs, where the device runs the CPU
 * kernels (clt_conv_uses_lanes: CPU devices, or CLTRAIN_CONV_ALGO=lanes);
 * a GPU wants neighbouring work-items on neighbouring outputs, as the
 * one-window kernels have them. */
static int by_rows(const clt_device *dev, int k, int stride, int ow)
{
    int lanes = 0;
    return k == 2 && stride == 2 && ow >= 4 && clt_conv_uses_lanes(dev, &lanes) == CLT_OK && lanes;
}

/* Outputs a step of the row kernels. */
static int row_step(int ow) { return ow >= 8 ? 8 : 4; }

/* The pool program, built without argmax stores for a max pooling's
 * forward whose caller keeps none (inference: kernels/pool.cl,
 * POOL_NO_INDEX). */
#define POOL_PROGRAM(no_index) ((no_index) ? "pool -DPOOL_NO_INDEX" : "pool")

/* A row kernel over the n*c planes, 8 outputs a step (4 for rows shorter
 * than 8); max pooling's argmax packed for a PRIVATE one. */
static clt_status launch_rows(clt_device *dev, const char *name, int no_index, clt_pool_argmax fmt, int h, int w,
                              int oh, int ow, int planes, cl_mem a, cl_mem b, cl_mem c)
{
    char program[64];
    snprintf(program, sizeof program, "%s%s%s", POOL_PROGRAM(no_index),
             fmt == CLT_POOL_ARGMAX_PRIVATE && !no_index ? " -DPOOL_PACKED" : "", row_step(ow) == 8 ? "" : " -DPV=4");
    if (!c)
        return clt_launch_1d(dev, program, name, (size_t)planes,
                             CLT_ARGS(CLT_ARG(a), CLT_ARG(b), CLT_ARG(h), CLT_ARG(w), CLT_ARG(oh), CLT_ARG(ow),
                                      CLT_ARG(planes)));
    return clt_launch_1d(dev, program, name, (size_t)planes,
                         CLT_ARGS(CLT_ARG(a), CLT_ARG(b), CLT_ARG(c), CLT_ARG(h), CLT_ARG(w), CLT_ARG(oh),
                                  CLT_ARG(ow), CLT_ARG(planes)));
}

size_t clt_pool_argmax_bytes(const clt_device *dev, clt_pool_argmax fmt, int n, int c, int h, int w, int k,
                             int stride)
{
    size_t oh = (size_t)((h - k) / stride + 1), ow = (size_t)((w - k) / stride + 1), planes = (size_t)n * c;
    if (fmt == CLT_POOL_ARGMAX_PRIVATE && by_rows(dev, k, stride, (int)ow))
        return planes * oh * ((ow + (size_t)row_step((int)ow) - 1) / (size_t)row_step((int)ow)) * 2;
    return planes * oh * ow * 4;
}

/* A format the kernels know. */
static clt_status check_fmt(clt_pool_argmax fmt, const char *op)
{
    if (fmt != CLT_POOL_ARGMAX_PLANE && fmt != CLT_POOL_ARGMAX_PRIVATE)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: unknown argmax format %d", op, (int)fmt);
    return CLT_OK;
}

clt_status clt_pool_forward_raw(clt_device *dev, clt_pool_kind kind, int n, int c, int h, int w,
                                int k, int stride, cl_mem x, cl_mem y, cl_mem argmax, clt_pool_argmax fmt)
{
    CLT_TRY(check_fmt(fmt, "pool forward"));
    int oh, ow;
    CLT_TRY(pool_geom("pool forward", n, c, h, w, k, stride, &oh, &ow));
    int rows = n * c * oh;
    /* no argmax: the values alone, y as the kernels' unused argument */
    int no_index = kind == CLT_POOL_MAX && !argmax;
    if (no_index) argmax = y;
    if ((kind == CLT_POOL_MAX || kind == CLT_POOL_AVG) && by_rows(dev, k, stride, ow))
        return kind == CLT_POOL_MAX
                   ? launch_rows(dev, "pool_max_fwd_rows", no_index, fmt, h, w, oh, ow, n * c, x, y, argmax)
                   : launch_rows(dev, "pool_avg_fwd_rows", 0, CLT_POOL_ARGMAX_PLANE, h, w, oh, ow, n * c, x, y,
                                 NULL);
    divisor dh = make_divisor(oh);
    size_t lx, ly;
    rows_local(dev, ow, &lx, &ly);
    /* Variants with the window size built in (see kernels/pool.cl). */
    const char *suffix = k == 2 ? "_k2" : k == 3 ? "_k3" : "";
    char name[48];
    if (kind == CLT_POOL_MAX) {
        snprintf(name, sizeof name, "pool_max_fwd%s", suffix);
        return clt_launch_2d(dev, POOL_PROGRAM(no_index), name, (size_t)ow, (size_t)rows, lx, ly,
                             CLT_ARGS(CLT_ARG(x), CLT_ARG(y), CLT_ARG(argmax), CLT_ARG(h), CLT_ARG(w),
                                      CLT_ARG(oh), CLT_ARG(dh.m), CLT_ARG(dh.sh), CLT_ARG(ow), CLT_ARG(k),
                                      CLT_ARG(stride), CLT_ARG(rows)));
    }
    if (kind != CLT_POOL_AVG) return clt_fail(CLT_ERR_INVALID_ARG, "pool forward: unknown kind %d", (int)kind);
    snprintf(name, sizeof name, "pool_avg_fwd%s", suffix);
    return clt_launch_2d(dev, "pool", name, (size_t)ow, (size_t)rows, lx, ly,
                         CLT_ARGS(CLT_ARG(x), CLT_ARG(y), CLT_ARG(h), CLT_ARG(w), CLT_ARG(oh), CLT_ARG(dh.m),
                                  CLT_ARG(dh.sh), CLT_ARG(ow), CLT_ARG(k), CLT_ARG(stride), CLT_ARG(rows)));
}

clt_status clt_pool_backward_raw(clt_device *dev, clt_pool_kind kind, int n, int c, int h, int w,
                                 int k, int stride, cl_mem dy, cl_mem argmax, clt_pool_argmax fmt, cl_mem dx)
{
    CLT_TRY(check_fmt(fmt, "pool backward"));
    int oh, ow;
    CLT_TRY(pool_geom("pool backward", n, c, h, w, k, stride, &oh, &ow));
    if (kind != CLT_POOL_MAX && kind != CLT_POOL_AVG)
        return clt_fail(CLT_ERR_INVALID_ARG, "pool backward: unknown kind %d", (int)kind);
    if (kind == CLT_POOL_MAX && !argmax)
        return clt_fail(CLT_ERR_INVALID_ARG, "max pool backward: argmax buffer is NULL");
    const char *kname = kind == CLT_POOL_MAX ? "pool_max" : "pool_avg";
    char name[48];
    size_t lx, ly;
    if (stride >= k) {
        /* No overlap: each window writes its own cells; zero the cells no
         * window covers first (gaps between windows, dropped edges; the
         * row kernels zero the edges themselves). */
        int rows_kernel = by_rows(dev, k, stride, ow);
        if (!rows_kernel && (stride != k || oh * k != h || ow * k != w)) {
            CLT_TRY(clt_device_zero(dev, dx, 0, (size_t)n * c * h * w * sizeof(float),
                                    "pool backward: clEnqueueFillBuffer"));
        }
        if (rows_kernel)
            return kind == CLT_POOL_MAX
                       ? launch_rows(dev, "pool_max_bwd_rows", 0, fmt, h, w, oh, ow, n * c, dy, argmax, dx)
                       : launch_rows(dev, "pool_avg_bwd_rows", 0, CLT_POOL_ARGMAX_PLANE, h, w, oh, ow, n * c, dy, dx,
                                     NULL);
        int rows = n * c * oh;
        divisor dh = make_divisor(oh);
        rows_local(dev, ow, &lx, &ly);
        snprintf(name, sizeof name, "%s_bwd_tile%s", kname, k == 2 ? "_k2" : k == 3 ? "_k3" : "");
        if (kind == CLT_POOL_MAX)
            return clt_launch_2d(dev, "pool", name, (size_t)ow, (size_t)rows, lx, ly,
                                 CLT_ARGS(CLT_ARG(dy), CLT_ARG(argmax), CLT_ARG(dx), CLT_ARG(h), CLT_ARG(w),
                                          CLT_ARG(oh), CLT_ARG(dh.m), CLT_ARG(dh.sh), CLT_ARG(ow), CLT_ARG(k),
                                          CLT_ARG(stride), CLT_ARG(rows)));
        return clt_launch_2d(dev, "pool", name, (size_t)ow, (size_t)rows, lx, ly,
                             CLT_ARGS(CLT_ARG(dy), CLT_ARG(dx), CLT_ARG(h), CLT_ARG(w), CLT_ARG(oh),
                                      CLT_ARG(dh.m), CLT_ARG(dh.sh), CLT_ARG(ow), CLT_ARG(k), CLT_ARG(stride),
                                      CLT_ARG(rows)));
    }
    /* Overlapping windows: gather per input element. */
    int rows = n * c * h;
    int r = (k + stride - 1) / stride; /* windows covering an input column */
    divisor dh = make_divisor(h), ds = make_divisor(stride);
    rows_local(dev, w, &lx, &ly);
    snprintf(name, sizeof name, "%s_bwd_gather", kname);
    if (kind == CLT_POOL_MAX)
        return clt_launch_2d(dev, "pool", name, (size_t)w, (size_t)rows, lx, ly,
                             CLT_ARGS(CLT_ARG(dy), CLT_ARG(argmax), CLT_ARG(dx), CLT_ARG(h), CLT_ARG(dh.m),
                                      CLT_ARG(dh.sh), CLT_ARG(w), CLT_ARG(oh), CLT_ARG(ow), CLT_ARG(k),
                                      CLT_ARG(stride), CLT_ARG(ds.m), CLT_ARG(ds.sh), CLT_ARG(r),
                                      CLT_ARG(rows)));
    return clt_launch_2d(dev, "pool", name, (size_t)w, (size_t)rows, lx, ly,
                         CLT_ARGS(CLT_ARG(dy), CLT_ARG(dx), CLT_ARG(h), CLT_ARG(dh.m), CLT_ARG(dh.sh),
                                  CLT_ARG(w), CLT_ARG(oh), CLT_ARG(ow), CLT_ARG(k), CLT_ARG(stride),
                                  CLT_ARG(ds.m), CLT_ARG(ds.sh), CLT_ARG(r), CLT_ARG(rows)));
}

clt_status clt_gap_forward_raw(clt_device *dev, int nc, int hw, cl_mem x, cl_mem y)
{
    if (nc < 1 || hw < 1 || (int64_t)nc * hw > INT_MAX)
        return clt_fail(CLT_ERR_SHAPE, "gap forward: %d planes of %d positions", nc, hw);
    return clt_launch_1d(dev, "pool", "pool_gap_fwd", (size_t)nc,
                         CLT_ARGS(CLT_ARG(x), CLT_ARG(y), CLT_ARG(hw), CLT_ARG(nc)));
}

clt_status clt_gap_backward_raw(clt_device *dev, int nc, int hw, cl_mem dy, cl_mem dx)
{
    if (nc < 1 || hw < 1 || (int64_t)nc * hw > INT_MAX)
        return clt_fail(CLT_ERR_SHAPE, "gap backward: %d planes of %d positions", nc, hw);
    size_t lx, ly;
    rows_local(dev, hw, &lx, &ly);
    return clt_launch_2d(dev, "pool", "pool_gap_bwd", (size_t)hw, (size_t)nc, lx, ly,
                         CLT_ARGS(CLT_ARG(dy), CLT_ARG(dx), CLT_ARG(hw), CLT_ARG(nc)));
}

/* ---- public tensor API ---- */

static clt_status check_kind(const char *op, clt_pool_kind kind)
{
    if (kind != CLT_POOL_MAX && kind != CLT_POOL_AVG)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: unknown pool kind %d (CLT_POOL_MAX or CLT_POOL_AVG)",
                        op, (int)kind);
    return CLT_OK;
}

/* Window and stride of a public call against the input plane h x w. */
static clt_status check_window(const char *op, int64_t h, int64_t w, int k, int stride)
{
    if (k < 1 || stride < 1)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: window %d and stride %d must be >= 1", op, k, stride);
    if (h < k || w < k)
        return clt_fail(CLT_ERR_SHAPE, "%s: window %d is larger than the input plane %lldx%lld", op, k,
                        (long long)h, (long long)w);
    return CLT_OK;
}

static clt_status check_int(const char *op, const char *what, const clt_tensor *t)
{
    if (t->numel > INT_MAX) {
        char a[160];
        return clt_fail(CLT_ERR_UNSUPPORTED, "%s: %s %s has more than %d elements", op, what,
                        clt_shape_str(t->ndim, t->shape, a, sizeof a), INT_MAX);
    }
    return CLT_OK;
}

/* The checks both pooling calls make: t = {input-sized tensor (x or dx),
 * output-sized tensor (y or dy), argmax}, named by names[0..1]; t[2] is set
 * to NULL for average pooling, which has no argmax. */
static clt_status check_pool2d(const char *op, clt_pool_kind kind, int k, int stride, const clt_tensor *t[3],
                               const char *const names[2], const char *argmax_why)
{
    CLT_TRY(check_kind(op, kind));
    const int64_t any4[4] = {-1, -1, -1, -1};
    const clt_tensor *in = t[0];
    CLT_TRY(clt_tensor_expect(in, op, names[0], CLT_DTYPE_FLOAT32, 4, any4));
    CLT_TRY(clt_tensor_need(t[1], op, names[1]));
    CLT_TRY(check_int(op, names[0], in));
    CLT_TRY(check_window(op, in->shape[2], in->shape[3], k, stride));
    const int64_t oshape[4] = {in->shape[0], in->shape[1], (in->shape[2] - k) / stride + 1,
                               (in->shape[3] - k) / stride + 1};
    CLT_TRY(clt_tensor_expect(t[1], op, names[1], CLT_DTYPE_FLOAT32, 4, oshape));
    if (kind == CLT_POOL_MAX) {
        if (!t[2]) return clt_fail(CLT_ERR_INVALID_ARG, "%s: argmax is NULL (%s)", op, argmax_why);
        CLT_TRY(clt_tensor_expect(t[2], op, "argmax", CLT_DTYPE_INT32, 4, oshape));
    } else {
        t[2] = NULL;
    }
    return clt_tensor_same_device(op, in, 2, t + 1);
}

clt_status clt_pool2d_forward(clt_pool_kind kind, const clt_tensor *x, int k, int stride,
                              clt_tensor *y, clt_tensor *argmax)
{
    const clt_tensor *t[] = {x, y, argmax};
    CLT_TRY(check_pool2d("clt_pool2d_forward", kind, k, stride, t, (const char *const[]){"x", "y"},
                         "max pooling needs it for the backward"));
    return clt_pool_forward_raw(x->dev, kind, (int)x->shape[0], (int)x->shape[1], (int)x->shape[2],
                                (int)x->shape[3], k, stride, x->buf, y->buf, t[2] ? t[2]->buf : NULL,
                                CLT_POOL_ARGMAX_PLANE);
}

clt_status clt_pool2d_backward(clt_pool_kind kind, const clt_tensor *dy, const clt_tensor *argmax,
                               int k, int stride, clt_tensor *dx)
{
    const clt_tensor *t[] = {dx, dy, argmax};
    CLT_TRY(check_pool2d("clt_pool2d_backward", kind, k, stride, t, (const char *const[]){"dx", "dy"},
                         "max pooling needs the forward's argmax"));
    return clt_pool_backward_raw(dx->dev, kind, (int)dx->shape[0], (int)dx->shape[1], (int)dx->shape[2],
                                 (int)dx->shape[3], k, stride, dy->buf, t[2] ? t[2]->buf : NULL,
                                 CLT_POOL_ARGMAX_PLANE, dx->buf);
}

/* The checks both gap calls make: `planes` (x or dx) is (n, c, h, w) and
 * `flat` (y or dy) is (n, c) on its device. */
static clt_status check_gap(const char *op, const clt_tensor *planes, const char *planes_name, const clt_tensor *flat,
                            const char *flat_name)
{
    const int64_t any4[4] = {-1, -1, -1, -1};
    CLT_TRY(clt_tensor_expect(planes, op, planes_name, CLT_DTYPE_FLOAT32, 4, any4));
    CLT_TRY(check_int(op, planes_name, planes));
    const int64_t oshape[2] = {planes->shape[0], planes->shape[1]};
    CLT_TRY(clt_tensor_expect(flat, op, flat_name, CLT_DTYPE_FLOAT32, 2, oshape));
    return clt_tensor_same_device(op, planes, 1, &flat);
}

clt_status clt_gap_forward(const clt_tensor *x, clt_tensor *y)
{
    CLT_TRY(check_gap("clt_gap_forward", x, "x", y, "y"));
    return clt_gap_forward_raw(x->dev, (int)(x->shape[0] * x->shape[1]), (int)(x->shape[2] * x->shape[3]),
                               x->buf, y->buf);
}

clt_status clt_gap_backward(const clt_tensor *dy, clt_tensor *dx)
{
    CLT_TRY(check_gap("clt_gap_backward", dx, "dx", dy, "dy"));
    return clt_gap_backward_raw(dx->dev, (int)(dx->shape[0] * dx->shape[1]),
                                (int)(dx->shape[2] * dx->shape[3]), dy->buf, dx->buf);
}
