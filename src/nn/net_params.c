/* Parameter access by name, initialisation, and small accessors. */
#include <stdio.h>
#include <string.h>

#include "core/hash.h"
#include "nn/net_impl.h"
#include "tensor/tensor.h"

const clt_param *clt_net_param_at(const clt_net *net, int i)
{
    for (int l = 0; l < net->model.n_layers; l++) {
        const clt_layer *layer = &net->model.layers[l];
        if (i < layer->n_params) return &layer->params[i];
        i -= layer->n_params;
    }
    return NULL;
}

const clt_param *clt_net_find_param(const clt_net *net, const char *name)
{
    for (int l = 0; l < net->model.n_layers; l++)
        for (int p = 0; p < net->model.layers[l].n_params; p++)
            if (strcmp(net->model.layers[l].params[p].name, name) == 0) return &net->model.layers[l].params[p];
    return NULL;
}

int clt_net_param_count(const clt_net *net)
{
    int n = 0;
    for (int l = 0; net && l < net->model.n_layers; l++) n += net->model.layers[l].n_params;
    return n;
}

clt_status clt_net_param_info(const clt_net *net, int i, const char **name, int *ndim, int64_t shape[CLT_MAX_DIMS])
{
    if (!net) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_param_info: net is NULL");
    const clt_param *p = i >= 0 ? clt_net_param_at(net, i) : NULL;
    if (!p)
        return clt_fail(CLT_ERR_NOT_FOUND, "parameter %d does not exist (the net has %d)", i,
                        clt_net_param_count(net));
    if (name) *name = p->name;
    if (ndim) *ndim = p->ndim;
    if (shape) memcpy(shape, p->shape, (size_t)p->ndim * sizeof *shape);
    return CLT_OK;
}

static clt_status lookup(const clt_net *net, const char *name, const void *host, int64_t count,
                         const char *op, const clt_param **out)
{
    if (!net || !name || !host) return clt_fail(CLT_ERR_INVALID_ARG, "%s: NULL argument", op);
    const clt_param *p = clt_net_find_param(net, name);
    if (!p) return clt_fail(CLT_ERR_NOT_FOUND, "%s: the net has no parameter \"%s\"", op, name);
    if (count != p->numel)
        return clt_fail(CLT_ERR_SHAPE, "%s: parameter %s has %lld elements, %lld given", op, name,
                        (long long)p->numel, (long long)count);
    *out = p;
    return CLT_OK;
}

static clt_status read_view(const clt_net *net, cl_mem view, const clt_param *p, float *host, const char *op)
{
    return clt_device_read(net->dev, view, 0, (size_t)p->numel * sizeof(float), host, op);
}

clt_status clt_net_param_get(const clt_net *net, const char *name, float *host, int64_t count)
{
    const clt_param *p;
    CLT_TRY(lookup(net, name, host, count, "clt_net_param_get", &p));
    return read_view(net, p->w, p, host, "clt_net_param_get");
}

clt_status clt_net_grad_get(const clt_net *net, const char *name, float *host, int64_t count)
{
    const clt_param *p;
    CLT_TRY(lookup(net, name, host, count, "clt_net_grad_get", &p));
    if (p->is_buffer) return clt_fail(CLT_ERR_NOT_FOUND, "clt_net_grad_get: %s is a state buffer without gradient", name);
    return read_view(net, p->g, p, host, "clt_net_grad_get");
}

clt_status clt_net_param_set(clt_net *net, const char *name, const float *host, int64_t count)
{
    const clt_param *p;
    CLT_TRY(lookup(net, name, host, count, "clt_net_param_set", &p));
    return clt_device_write(net->dev, p->w, 0, (size_t)p->numel * sizeof(float), host, "clt_net_param_set");
}

clt_status clt_net_init(clt_net *net, uint64_t seed, clt_init scheme)
{
    if (!net) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_init: net is NULL");
    if (scheme != CLT_INIT_NORMAL && scheme != CLT_INIT_XAVIER)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_init: unknown scheme %d", (int)scheme);
    for (int i = 0, n = clt_net_param_count(net); i < n; i++) {
        const clt_param *p = clt_net_param_at(net, i);
        /* A stream per parameter name: adding a layer elsewhere does not
         * change the values of the others. */
        uint64_t s = clt_hash(clt_hash(CLT_HASH_INIT, &seed, sizeof seed), p->name, strlen(p->name));
        clt_tensor view = {net->dev, CLT_DTYPE_FLOAT32, p->ndim, {0}, p->numel, p->w};
        memcpy(view.shape, p->shape, sizeof p->shape);
        clt_status st;
        if (p->is_buffer || p->fan_in == 0) /* constant start: state, batch-norm scale */
            st = clt_tensor_fill(&view, p->init_value);
        else if (p->is_bias)
            st = clt_tensor_fill(&view, 0.0f);
        else if (scheme == CLT_INIT_XAVIER)
            st = clt_tensor_init_xavier(&view, s, p->fan_in, p->fan_out, 1.0f);
        else
            st = clt_tensor_init_normal(&view, s, 0.0f, 0.01f);
        if (st != CLT_OK) return clt_fail_context(st, "initialising %s", p->name);
    }
    return clt_net_reset_slots(net);
}

clt_device *clt_net_device(const clt_net *net) { return net ? net->dev : NULL; }
int clt_net_classes(const clt_net *net) { return net ? net->model.classes : 0; }
const char *clt_net_spec(const clt_net *net) { return net ? net->model.spec : NULL; }

clt_status clt_spec_check(const char *spec, int channels, int height, int width, char *summary,
                          size_t summary_cap)
{
    clt_model m;
    CLT_TRY(clt_model_parse(spec, channels, height, width, &m));
    if (summary && summary_cap) {
        size_t at = 0;
        char shape[64];
        summary[0] = 0;
        for (int i = 0; i < m.n_layers && at < summary_cap; i++) {
            const clt_layer *l = &m.layers[i];
            int64_t np = 0;
            for (int p = 0; p < l->n_params; p++) np += l->params[p].numel;
            int w = snprintf(summary + at, summary_cap - at, "%3d %-8s -> %-16s %lld params\n", i, l->token,
                             clt_shape_fmt(&l->out, shape, sizeof shape), (long long)np);
            if (w < 0) break;
            at += (size_t)w;
        }
    }
    clt_model_free(&m);
    return CLT_OK;
}
