/* The optimizer table (optim.h). */
#include "optim/optim.h"

#include <stdio.h>
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

clt_status clt_optim_launch(clt_device *dev, const char *program, const char *kernel, size_t count, cl_mem w,
                            const clt_grads *g, int nargs, const clt_arg *args)
{
    if (g->n < 1 || g->n > CLT_GRADS_MAX)
        return clt_fail(CLT_ERR_INTERNAL, "%s: %d gradient buffers (1..%d)", kernel, g->n, CLT_GRADS_MAX);
    enum { MOST = 1 + CLT_GRADS_MAX + 1 + 16 };
    if (nargs > 16) return clt_fail(CLT_ERR_INTERNAL, "%s: %d arguments", kernel, nargs);
    clt_arg all[MOST];
    int a = 0;
    all[a++] = CLT_ARG(w);
    for (int i = 0; i < g->n; i++) all[a++] = CLT_ARG(g->buf[i]);
    if (g->n > 1) all[a++] = CLT_ARG(g->scale);
    for (int i = 0; i < nargs; i++) all[a++] = args[i];
    char spec[64];
    if (g->n > 1) snprintf(spec, sizeof spec, "%s -DNGRAD=%d", program, g->n);
    else snprintf(spec, sizeof spec, "%s", program);
    return clt_launch_elementwise(dev, spec, kernel, count, a, all);
}
