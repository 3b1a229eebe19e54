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

/* The program spec of kernels summing n_grads gradients into n_out replicas. */
static void optim_spec(const char *program, int n_grads, int n_out, char *spec, size_t cap)
{
    /* the plain update: the program without defines */
    if (n_grads == 1 && n_out == 1) snprintf(spec, cap, "%s", program);
    else snprintf(spec, cap, "%s -DNGRAD=%d -DNOUT=%d", program, n_grads, n_out);
}

clt_status clt_optim_build(clt_device *dev, const clt_optim_ops *ops, int n_grads, int n_out)
{
    char spec[64];
    optim_spec(ops->program, n_grads, n_out, spec, sizeof spec);
    return clt_elementwise_build(dev, spec, ops->kernel);
}

clt_status clt_optim_launch(clt_device *dev, const char *program, const char *kernel, size_t count,
                            const clt_optim_io *io, int slots, int nargs, const clt_arg *args)
{
    const clt_grads *g = &io->g;
    if (g->n < 1 || g->n > CLT_GRADS_MAX || io->n_out < 1 || io->n_out > CLT_GRADS_MAX || nargs > 16 ||
        slots > CLT_OPTIM_SLOTS)
        return clt_fail(CLT_ERR_INTERNAL, "%s: %d gradient and %d output buffers (1..%d), %d arguments", kernel, g->n,
                        io->n_out, CLT_GRADS_MAX, nargs);
    clt_arg all[1 + CLT_GRADS_MAX + 1 + 16 + (1 + CLT_OPTIM_SLOTS) * CLT_GRADS_MAX];
    int a = 0;
    all[a++] = CLT_ARG(io->w[0]);
    for (int i = 0; i < g->n; i++) all[a++] = CLT_ARG(g->buf[i]);
    if (g->n > 1) all[a++] = CLT_ARG(g->scale);
    for (int i = 0; i < nargs; i++) all[a++] = args[i];
    for (int r = 1; r < io->n_out; r++) all[a++] = CLT_ARG(io->w[r]);
    for (int sl = 0; sl < slots; sl++)
        for (int r = 1; r < io->n_out; r++) all[a++] = CLT_ARG(io->slot[sl][r]);
    char spec[64];
    optim_spec(program, g->n, io->n_out, spec, sizeof spec);
    return clt_launch_elementwise(dev, spec, kernel, count, a, all);
}
