/* Elementwise activations (kernels/activation.cl): forward from x, backward
 * from the forward output y, as PyTorch's relu/sigmoid/tanh backward. */
#include "ops/activation.h"

#include "ops/elementwise.h"
#include "runtime/launch.h"
#include "tensor/tensor.h"

static const char *const fwd_kernel[] = {"activation_relu_fwd", "activation_sigmoid_fwd", "activation_tanh_fwd"};
static const char *const bwd_kernel[] = {"activation_relu_bwd", "activation_sigmoid_bwd", "activation_tanh_bwd"};

static clt_status check_f(const char *op, clt_activation f)
{
    if ((int)f < 0 || (int)f > 2)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: unknown activation %d (CLT_ACT_RELU, CLT_ACT_SIGMOID or CLT_ACT_TANH)",
                        op, (int)f);
    return CLT_OK;
}

clt_status clt_act_forward_raw(clt_device *dev, clt_activation f, size_t count, cl_mem x, cl_mem y)
{
    CLT_TRY(check_f("activation forward", f));
    cl_ulong n = count;
    return clt_launch_elementwise(dev, "activation", fwd_kernel[f], count,
                         CLT_ARGS(CLT_ARG(x), CLT_ARG(y), CLT_ARG(n)));
}

clt_status clt_act_backward_raw(clt_device *dev, clt_activation f, size_t count, cl_mem y,
                                cl_mem dy, cl_mem dx)
{
    CLT_TRY(check_f("activation backward", f));
    cl_ulong n = count;
    return clt_launch_elementwise(dev, "activation", bwd_kernel[f], count,
                         CLT_ARGS(CLT_ARG(y), CLT_ARG(dy), CLT_ARG(dx), CLT_ARG(n)));
}

clt_status clt_activation_forward(clt_activation f, const clt_tensor *x, clt_tensor *y)
{
    const char *op = "clt_activation_forward";
    CLT_TRY(check_f(op, f));
    const clt_tensor *t[] = {x, y};
    CLT_TRY(clt_elementwise_check(op, 2, t, (const char *const[]){"x", "y"}));
    return clt_act_forward_raw(x->dev, f, (size_t)x->numel, x->buf, y->buf);
}

clt_status clt_activation_backward(clt_activation f, const clt_tensor *y, const clt_tensor *dy,
                                   clt_tensor *dx)
{
    const char *op = "clt_activation_backward";
    CLT_TRY(check_f(op, f));
    const clt_tensor *t[] = {y, dy, dx};
    CLT_TRY(clt_elementwise_check(op, 3, t, (const char *const[]){"y", "dy", "dx"}));
    return clt_act_backward_raw(y->dev, f, (size_t)y->numel, y->buf, dy->buf, dx->buf);
}
