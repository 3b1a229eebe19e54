/* The optimizer table (optim.h). */
#include "optim/optim.h"

#include <string.h>

extern const clt_optim_ops clt_optim_sgd, clt_optim_adam, clt_optim_adamw;

const clt_optim_ops *clt_optim_find(clt_optimizer kind)
{
    switch (kind) {
    case CLT_OPTIMIZER_SGD: return &clt_optim_sgd;
    case CLT_OPTIMIZER_ADAM: return &clt_optim_adam;
    case CLT_OPTIMIZER_ADAMW: return &clt_optim_adamw;
    }
    return NULL;
}

int clt_optim_named(const char *name)
{
    for (int k = CLT_OPTIMIZER_SGD; name && k <= CLT_OPTIMIZER_ADAMW; k++)
        if (!strcmp(clt_optim_find((clt_optimizer)k)->name, name)) return k;
    return -1;
}

clt_status clt_optim_check(const clt_optim_settings *s, const char *op)
{
    const clt_optim_ops *ops = clt_optim_find(s->kind);
    if (!ops) return clt_fail(CLT_ERR_INVALID_ARG, "%s: unknown optimizer %d (sgd 0, adam 1, adamw 2)", op, (int)s->kind);
    return ops->check(s, op);
}
