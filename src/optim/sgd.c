/* SGD step (kernels/sgd.cl), PyTorch semantics, one pass over w, g (and v):
 * torch.optim.SGD(lr, momentum, weight_decay, nesterov). */
#include "optim/sgd.h"

#include <math.h>

#include "optim/optim.h"
#include "tensor/tensor.h"

clt_status clt_sgd_check(const char *op, float lr, float momentum, float weight_decay)
{
    /* PyTorch refuses negative values too. */
    if (!isfinite(lr) || lr < 0)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: learning rate %g must be finite and >= 0", op, lr);
    if (!isfinite(momentum) || momentum < 0 || momentum >= 1)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: momentum %g must be in [0, 1)", op, momentum);
    if (!isfinite(weight_decay) || weight_decay < 0)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: weight decay %g must be finite and >= 0", op, weight_decay);
    return CLT_OK;
}

/* Floats [off, off + count) of io's buffers; its slot 0 (velocity) when
 * `velocity`. */
static clt_status sgd_launch(clt_device *dev, size_t off, size_t count, const clt_optim_io *io, int velocity,
                             float lr, float momentum, float weight_decay, int nesterov)
{
    cl_ulong o = off, n = count;
    cl_mem v = velocity && io->slot[0] ? io->slot[0][0] : NULL;
    if (momentum != 0.0f) {
        if (!v) return clt_fail(CLT_ERR_INVALID_ARG, "sgd: momentum %g needs a velocity buffer", momentum);
        return clt_optim_launch(dev, "sgd", "sgd_momentum", count, io, 1,
                                CLT_ARGS(CLT_ARG(v), CLT_ARG(lr), CLT_ARG(momentum), CLT_ARG(weight_decay),
                                         CLT_ARG(nesterov), CLT_ARG(o), CLT_ARG(n)));
    }
    if (v)
        return clt_optim_launch(dev, "sgd", "sgd_store", count, io, 1,
                                CLT_ARGS(CLT_ARG(v), CLT_ARG(lr), CLT_ARG(weight_decay), CLT_ARG(o), CLT_ARG(n)));
    return clt_optim_launch(dev, "sgd", "sgd_plain", count, io, 0,
                            CLT_ARGS(CLT_ARG(lr), CLT_ARG(weight_decay), CLT_ARG(o), CLT_ARG(n)));
}

clt_status clt_sgd_raw(clt_device *dev, size_t count, cl_mem w, cl_mem g, cl_mem v, float lr,
                       float momentum, float weight_decay)
{
    clt_optim_io io = {&w, {v ? &v : NULL, NULL}, 1, {&g, 1, 1.0f}};
    return sgd_launch(dev, 0, count, &io, v != NULL, lr, momentum, weight_decay, 0);
}

static int sgd_slots(const clt_optim_settings *s) { return s->momentum > 0 ? 1 : 0; }

static clt_status sgd_settings_check(const clt_optim_settings *s, const char *op)
{
    CLT_TRY(clt_sgd_check(op, s->lr, s->momentum, s->weight_decay));
    if (s->nesterov && !(s->momentum > 0)) /* as torch.optim.SGD refuses it */
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: Nesterov momentum needs a momentum > 0 (it is %g)", op, s->momentum);
    return CLT_OK;
}

static clt_status sgd_update(clt_device *dev, const clt_optim_settings *s, int64_t step, size_t offset, size_t count,
                             const clt_optim_io *io)
{
    (void)step;
    return sgd_launch(dev, offset, count, io, s->momentum > 0, s->lr, s->momentum, s->weight_decay, s->nesterov);
}

const clt_optim_ops clt_optim_sgd = {"sgd", "sgd", "sgd_plain", {"momentum/", NULL}, sgd_slots, sgd_settings_check, sgd_update};

clt_status clt_sgd_step(clt_tensor *param, const clt_tensor *grad, clt_tensor *velocity, float lr,
                        float momentum, float weight_decay)
{
    const char *op = "clt_sgd_step";
    CLT_TRY(clt_tensor_need(param, op, "param"));
    CLT_TRY(clt_tensor_expect(param, op, "param", CLT_DTYPE_FLOAT32, param->ndim, param->shape));
    CLT_TRY(clt_tensor_expect(grad, op, "grad", CLT_DTYPE_FLOAT32, param->ndim, param->shape));
    if (velocity)
        CLT_TRY(clt_tensor_expect(velocity, op, "velocity", CLT_DTYPE_FLOAT32, param->ndim, param->shape));
    CLT_TRY(clt_sgd_check(op, lr, momentum, weight_decay));
    if (momentum != 0.0f && !velocity)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: velocity is NULL but momentum is %g (only momentum 0 runs without one)",
                        op, momentum);
    const clt_tensor *others[] = {grad, velocity};
    CLT_TRY(clt_tensor_same_device(op, param, 2, others));
    return clt_sgd_raw(param->dev, (size_t)param->numel, param->buf, grad->buf,
                       velocity ? velocity->buf : NULL, lr, momentum, weight_decay);
}
