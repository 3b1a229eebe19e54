/* What other rooms may do with a net's device buffers (net.h): sizes,
 * spans, transfers, pinned staging, gradient order and the sync plan. */
#include "nn/net_impl.h"
#include "ops/elementwise.h"
#include "runtime/queue.h"

size_t clt_net_floats(const clt_net *net, clt_net_buffer b)
{
    return b == CLT_NET_STATE ? net->flat_state : net->flat;
}

cl_mem clt_net_buffer_mem(const clt_net *net, clt_net_buffer b)
{
    switch (b) {
    case CLT_NET_PARAMS: return net->params;
    case CLT_NET_GRADS: return net->grads;
    case CLT_NET_STATE: return net->state;
    default: break;
    }
    int i = (int)b - (int)CLT_NET_SLOT0;
    return i >= 0 && i < CLT_OPTIM_SLOTS ? net->slot[i] : NULL;
}

static const char *buffer_name(clt_net_buffer b)
{
    static const char *const names[] = {"parameters", "gradients", "state", "optimizer slot 0", "optimizer slot 1"};
    _Static_assert(sizeof names / sizeof names[0] == CLT_NET_SLOT0 + CLT_OPTIM_SLOTS, "one name per buffer");
    return b >= CLT_NET_PARAMS && b < CLT_NET_SLOT0 + CLT_OPTIM_SLOTS ? names[b] : "?";
}

/* The buffer behind b, once the span is known to lie inside it. */
static clt_status span_mem(const clt_net *net, clt_net_buffer b, clt_span span, const char *op, cl_mem *out)
{
    size_t floats = clt_net_floats(net, b);
    *out = clt_net_buffer_mem(net, b);
    if (!*out) return clt_fail(CLT_ERR_INVALID_ARG, "%s: the net has no %s buffer", op, buffer_name(b));
    if (span.offset > floats || span.count > floats - span.offset)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: floats [%zu, +%zu) outside the %s (%zu)", op, span.offset,
                        span.count, buffer_name(b), floats);
    return CLT_OK;
}

/* One copy between host memory and a span of buffer b: into `to` when it
 * is not NULL, otherwise from `from`; on `queue` (NULL: the net's) after
 * `after` (NULL: nothing). */
static clt_status copy(const clt_net *net, cl_command_queue queue, cl_event after, clt_net_buffer b, clt_span span,
                       float *to, const float *from, cl_event *done)
{
    const char *op = to ? "clt_net_read" : "clt_net_write";
    if (!to && !from) return clt_fail(CLT_ERR_INVALID_ARG, "%s: host memory is NULL", op);
    cl_mem m;
    CLT_TRY(span_mem(net, b, span, op, &m));
    size_t at = span.offset * sizeof(float), bytes = span.count * sizeof(float);
    cl_command_queue q = queue ? queue : clt_device_queue(net->dev);
    if (!done && q == clt_device_queue(net->dev) && !after)
        return to ? clt_device_read(net->dev, m, at, bytes, to, buffer_name(b))
                  : clt_device_write(net->dev, m, at, bytes, from, buffer_name(b));
    int wait = !done;
    cl_uint nw = after ? 1 : 0;
    const cl_event *wl = after ? &after : NULL;
    return to ? clt_queue_read(q, m, wait, at, bytes, to, nw, wl, done, buffer_name(b))
              : clt_queue_write(q, m, wait, at, bytes, from, nw, wl, done, buffer_name(b));
}

clt_status clt_net_read(const clt_net *net, clt_net_buffer b, clt_span span, float *host, cl_event *done)
{
    return copy(net, NULL, NULL, b, span, host, NULL, done);
}

clt_status clt_net_write(clt_net *net, clt_net_buffer b, clt_span span, const float *host, cl_event *done)
{
    return copy(net, NULL, NULL, b, span, NULL, host, done);
}

clt_status clt_net_read_on(const clt_net *net, cl_command_queue queue, cl_event after, clt_net_buffer b,
                           clt_span span, float *host, cl_event *done)
{
    return copy(net, queue, after, b, span, host, NULL, done);
}

clt_status clt_net_write_on(clt_net *net, cl_command_queue queue, cl_event after, clt_net_buffer b, clt_span span,
                            const float *host, cl_event *done)
{
    return copy(net, queue, after, b, span, NULL, host, done);
}

void clt_net_set_layer_mark(clt_net *net, clt_layer_mark_fn fn, void *user)
{
    net->mark = fn;
    net->mark_user = user;
}

clt_status clt_net_scale(clt_net *net, clt_net_buffer b, clt_span span, float a)
{
    cl_mem m;
    CLT_TRY(span_mem(net, b, span, "clt_net_scale", &m));
    return clt_scale_raw(net->dev, m, span.offset, span.count, a);
}

clt_status clt_net_flush(clt_net *net)
{
    return clt_queue_flush(clt_device_queue(net->dev), "clFlush");
}

clt_status clt_net_staging(clt_net *net, float **out)
{
    if (net->grads_host) {
        *out = net->grads_host;
        return CLT_OK;
    }
    if (!net->staging) {
        size_t bytes = net->flat * sizeof(float);
        CLT_TRY(clt_buffer_create(net->dev, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL,
                                  "pinned staging buffer", &net->staging_buf));
        void *mapped;
        CLT_TRY(clt_queue_map(clt_device_queue(net->dev), net->staging_buf, bytes, "mapping the pinned staging buffer",
                              &mapped));
        net->staging = mapped;
    }
    *out = net->staging;
    return CLT_OK;
}

void clt_net_release_staging(clt_net *net)
{
    if (net->staging) clt_queue_unmap(clt_device_queue(net->dev), net->staging_buf, net->staging);
    if (net->staging_buf) {
        clt_queue_drain(clt_device_queue(net->dev));
        clt_buffer_release(net->staging_buf);
    }
    net->staging = NULL;
    net->staging_buf = NULL;
}

int clt_net_grad_span(const clt_net *net, int i, clt_span *span, int *layer)
{
    /* Buffer order: layers from the last, each layer's parameters in turn
     * (clt_net_layout_params in net_layout.c). */
    for (int l = net->model.n_layers - 1; l >= 0; l--) {
        const clt_layer *lay = &net->model.layers[l];
        for (int p = 0; p < lay->n_params; p++) {
            const clt_param *q = &lay->params[p];
            if (q->is_buffer || i-- > 0) continue;
            *span = (clt_span){q->offset, (size_t)q->numel};
            *layer = l;
            return 1;
        }
    }
    return 0;
}

void clt_net_sync_plan(const clt_net *net, int *rounds, int *most_floats)
{
    if (rounds) *rounds = net->sync_rounds;
    if (most_floats) *most_floats = net->sync_floats;
}

clt_status clt_net_set_label_smoothing(clt_net *net, float e)
{
    if (!(e >= 0.0f && e < 1.0f))
        return clt_fail(CLT_ERR_INVALID_ARG, "label smoothing %g must lie in [0, 1)", e);
    net->label_smoothing = e;
    return CLT_OK;
}

void clt_net_set_rng(clt_net *net, clt_rng_key key) { net->rng = key; }
