/* Adam and AdamW (kernels/adam.cl), PyTorch semantics and defaults:
 * torch.optim.Adam(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay) with L2
 * added to the gradient, and AdamW with the decoupled decay
 * w -= lr * wd * w. State: m in slot 0, v in slot 1. */
#include <math.h>

#include "optim/optim.h"

static int adam_slots(const clt_optim_settings *s)
{
    (void)s;
    return 2;
}

static clt_status adam_check(const clt_optim_settings *s, const char *op)
{
    const char *name = s->kind == CLT_OPTIMIZER_ADAMW ? "AdamW" : "Adam";
    if (!isfinite(s->lr) || s->lr < 0)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: %s learning rate %g must be finite and >= 0", op, name, s->lr);
    if (!(s->beta1 >= 0 && s->beta1 < 1) || !(s->beta2 >= 0 && s->beta2 < 1))
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: %s betas %g, %g must lie in [0, 1)", op, name, s->beta1, s->beta2);
    if (!isfinite(s->eps) || s->eps < 0)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: %s eps %g must be finite and >= 0", op, name, s->eps);
    if (!isfinite(s->weight_decay) || s->weight_decay < 0)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: %s weight decay %g must be finite and >= 0", op, name,
                        s->weight_decay);
    if (s->momentum != 0 || s->nesterov)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: momentum %g%s applies to SGD only, not to %s (it has betas)", op,
                        s->momentum, s->nesterov ? " and Nesterov" : "", name);
    return CLT_OK;
}

static clt_status adam_update(clt_device *dev, const clt_optim_settings *s, int64_t step, size_t offset, size_t count,
                              const clt_optim_io *io)
{
    if (step < 1) return clt_fail(CLT_ERR_INVALID_ARG, "adam: step %lld (the first is 1)", (long long)step);
    double t = (double)step, lr = s->lr;
    float step_size = (float)(lr / (1.0 - pow(s->beta1, t)));
    float bc2_sqrt = (float)sqrt(1.0 - pow(s->beta2, t));
    float c1 = (float)(1.0 - s->beta1), b2 = s->beta2, c2 = (float)(1.0 - s->beta2), eps = s->eps;
    int decoupled = s->kind == CLT_OPTIMIZER_ADAMW;
    float wd = decoupled ? 0.0f : s->weight_decay;
    float decay = decoupled && s->weight_decay != 0 ? (float)(1.0 - lr * s->weight_decay) : 1.0f;
    cl_ulong o = offset, n = count;
    return clt_optim_launch(dev, "adam", "adam_step", count, io, 2,
                            CLT_ARGS(CLT_ARG(io->slot[0][0]), CLT_ARG(io->slot[1][0]), CLT_ARG(step_size),
                                     CLT_ARG(bc2_sqrt), CLT_ARG(c1), CLT_ARG(b2), CLT_ARG(c2), CLT_ARG(eps), CLT_ARG(wd),
                                     CLT_ARG(decay), CLT_ARG(o), CLT_ARG(n)));
}

const clt_optim_ops clt_optim_adam = {"adam", "adam", "adam_step", {"adam/m/", "adam/v/"}, adam_slots, adam_check, adam_update};
const clt_optim_ops clt_optim_adamw = {"adamw", "adam", "adam_step", {"adam/m/", "adam/v/"}, adam_slots, adam_check, adam_update};
