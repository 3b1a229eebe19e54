#include "nn/layer.h"
#include "runtime/queue.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int64_t clt_shape_numel(const clt_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++) n *= s->d[i];
    return n;
}

const char *clt_shape_fmt(const clt_shape *s, char *buf, size_t cap)
{
    if (s->ndim == 3)
        snprintf(buf, cap, "(%d, %d, %d)", s->d[0], s->d[1], s->d[2]);
    else
        snprintf(buf, cap, "(%d)", s->d[0]);
    return buf;
}

clt_param *clt_layer_add_param(clt_layer *l, const char *suffix, int ndim, const int64_t *shape,
                               int64_t fan_in, int64_t fan_out, int is_bias)
{
    clt_param *p = &l->params[l->n_params++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s.%s", l->prefix, suffix);
    p->ndim = ndim;
    p->numel = 1;
    for (int i = 0; i < ndim; i++) {
        p->shape[i] = shape[i];
        /* a spec may ask for more than int64 holds: clt_layer_check_sizes refuses it */
        p->numel = shape[i] && p->numel > INT64_MAX / shape[i] ? INT64_MAX : p->numel * shape[i];
    }
    p->fan_in = fan_in;
    p->fan_out = fan_out;
    p->is_bias = is_bias;
    return p;
}

clt_param *clt_layer_add_buffer(clt_layer *l, const char *suffix, int64_t numel, float value)
{
    clt_param *p = clt_layer_add_param(l, suffix, 1, &numel, 0, 0, 0);
    p->is_buffer = 1;
    p->init_value = value;
    return p;
}

clt_status clt_layer_check_sizes(const clt_layer *l)
{
    char buf[64];
    int64_t out = clt_shape_numel(&l->out);
    if (out > CLT_MAX_ELEMENTS)
        return clt_layer_fail(l, CLT_ERR_SPEC, "its output %s holds %.3g values per sample, more than %d",
                              clt_shape_fmt(&l->out, buf, sizeof buf), (double)out, CLT_MAX_ELEMENTS);
    for (int i = 0; i < l->n_params; i++)
        if (l->params[i].numel > CLT_MAX_ELEMENTS)
            return clt_layer_fail(l, CLT_ERR_SPEC, "its parameter %s would hold %.3g values, more than %d",
                                  l->params[i].name, (double)l->params[i].numel, CLT_MAX_ELEMENTS);
    return CLT_OK;
}

clt_status clt_layer_fail(const clt_layer *l, clt_status s, const char *fmt, ...)
{
    char msg[1024], tok[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int at = snprintf(tok, sizeof tok, "%s", l->token);
    for (int i = 0; i < l->nargs && at < (int)sizeof tok; i++)
        at += snprintf(tok + at, sizeof tok - (size_t)at, ":%d", l->args[i]);
    return clt_fail(s, "layer %d (%s): %s", l->index, tok, msg);
}

clt_status clt_layer_priv(clt_layer *l, clt_device *dev, int i, size_t bytes)
{
    if (l->priv[i]) return CLT_OK;
    if (clt_buffer_create(dev, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, "clCreateBuffer", &l->priv[i]) != CLT_OK)
        return clt_fail_context(CLT_ERR_DEVICE_MEMORY, "layer %s: %zu-byte work buffer", l->prefix, bytes);
    return CLT_OK;
}

void clt_layer_release(clt_layer *l)
{
    if (l->kind && l->kind->release) l->kind->release(l);
    for (size_t i = 0; i < sizeof l->priv / sizeof l->priv[0]; i++) {
        clt_buffer_release(l->priv[i]);
        l->priv[i] = NULL;
    }
    l->priv_cap = 0;
}

clt_status clt_pass_sync(const clt_pass *pass, clt_device *dev, cl_mem partial, int count, double *total)
{
    if (*pass->sync_done >= pass->sync_rounds)
        return clt_fail(CLT_ERR_INTERNAL, "synchronisation round %d of a step whose layers declare %d",
                        *pass->sync_done + 1, pass->sync_rounds);
    ++*pass->sync_done;
    size_t bytes = (size_t)count * sizeof(float);
    CLT_TRY(clt_device_read(dev, partial, 0, bytes, pass->sync_host, "synchronised statistics: read"));
    CLT_TRY(pass->sync.fn(pass->sync.user, pass->sync_host, count, total));
    return clt_device_write(dev, partial, 0, bytes, pass->sync_host, "synchronised statistics: write");
}

int clt_layer_fuses_always(const clt_layer *l, const clt_device *dev)
{
    (void)l;
    (void)dev;
    return 1;
}
