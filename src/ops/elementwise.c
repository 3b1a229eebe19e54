/* The residual add (kernels/elementwise.cl) and the check every elementwise
 * tensor call makes. */
#include "ops/elementwise.h"

#include <limits.h>

#include "runtime/launch.h"
#include "tensor/tensor.h"

clt_status clt_add_raw(clt_device *dev, size_t count, cl_mem a, cl_mem b, cl_mem y)
{
    if (count == 0) return CLT_OK;
    if (!a || !b || !y)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_add_raw: %s buffer is NULL", !a ? "a" : !b ? "b" : "y");
    cl_ulong n = count;
    return clt_launch_elementwise(dev, "elementwise", "elementwise_add", count,
                         CLT_ARGS(CLT_ARG(a), CLT_ARG(b), CLT_ARG(y), CLT_ARG(n)));
}

clt_status clt_scale_raw(clt_device *dev, cl_mem x, size_t offset, size_t count, float a)
{
    if (count == 0) return CLT_OK;
    if (!x) return clt_fail(CLT_ERR_INVALID_ARG, "clt_scale_raw: buffer is NULL");
    if (count > INT_MAX || offset > (size_t)1 << 40)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_scale_raw: %zu floats at %zu: too many", count, offset);
    cl_ulong off = offset;
    int n = (int)count;
    return clt_launch_elementwise(dev, "elementwise", "elementwise_scale", count,
                         CLT_ARGS(CLT_ARG(x), CLT_ARG(off), CLT_ARG(a), CLT_ARG(n)));
}

clt_status clt_elementwise_check(const char *op, int count, const clt_tensor *const *t,
                                 const char *const *names)
{
    CLT_TRY(clt_tensor_need(t[0], op, names[0]));
    for (int i = 0; i < count; i++)
        CLT_TRY(clt_tensor_expect(t[i], op, names[i], CLT_DTYPE_FLOAT32, t[0]->ndim, t[0]->shape));
    return clt_tensor_same_device(op, t[0], count - 1, t + 1);
}

clt_status clt_add(const clt_tensor *a, const clt_tensor *b, clt_tensor *y)
{
    const clt_tensor *t[] = {a, b, y};
    CLT_TRY(clt_elementwise_check("clt_add", 3, t, (const char *const[]){"a", "b", "y"}));
    return clt_add_raw(a->dev, (size_t)a->numel, a->buf, b->buf, y->buf);
}
