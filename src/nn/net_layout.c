/* The net's memory layout: the flat parameter, gradient, optimizer-state
 * and layer-state buffers and the parameters' views into them, on memory
 * shared with the host where the net shares it (runtime/svm.h). */
#include "nn/net_impl.h"

#include "runtime/launch.h"
#include "runtime/svm.h"
#include "runtime/queue.h"

clt_status clt_net_make_buffer(clt_device *dev, size_t bytes, const char *what, cl_mem *out)
{
    if (clt_buffer_create(dev, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, "clCreateBuffer", out) != CLT_OK) {
        const clt_device_info *in = clt_device_get_info(dev);
        return clt_fail_context(CLT_ERR_DEVICE_MEMORY, "%s (%zu bytes) on device %d (%s)", what, bytes, in->index,
                                in->name);
    }
    return CLT_OK;
}

/* A buffer of the parameters' size on memory shared with the host where
 * the net shares at least `level` (clt_net_share; *host: that memory),
 * else a plain one (*host NULL). A failed shared allocation falls back to
 * a plain buffer: copies work wherever plain buffers do. */
static clt_status make_shared(clt_net *net, clt_net_share level, size_t bytes, const char *what, cl_mem *out, float **host)
{
    *host = NULL;
    void *p = NULL;
    int want = net->share >= level;
    if (want && clt_svm_buffer(net->dev, bytes, what, out, &p) == CLT_OK) {
        *host = p;
        return CLT_OK;
    }
    if (want) {
        const clt_device_info *in = clt_device_get_info(net->dev);
        clt_device_log(net->dev, 2, "device %d (%s): %s; a buffer of its own instead", in->index, in->name,
                       clt_last_error());
    }
    return clt_net_make_buffer(net->dev, bytes, what, out);
}

static clt_status sub_buffer(cl_mem parent, size_t offset_floats, int64_t numel, cl_mem *out)
{
    return clt_buffer_view(parent, offset_floats * sizeof(float), (size_t)numel * sizeof(float),
                           "clCreateSubBuffer (parameter view)", out);
}

static clt_status zero(clt_device *dev, cl_mem m, size_t bytes)
{
    return clt_device_zero(dev, m, 0, bytes, "clEnqueueFillBuffer");
}

size_t clt_net_base_align(const clt_device *dev)
{
    size_t bytes = clt_device_base_align(dev) ? clt_device_base_align(dev) : 128; /* 1024 bits where the device does not say */
    return bytes >= sizeof(float) ? bytes : sizeof(float);
}

/* Lays parameters out last layer first (gradients become ready in buffer
 * order during backward) at offsets aligned for sub-buffers (align_bytes,
 * a multiple of the device's: every replica of a trainer shares one
 * layout); state buffers (running statistics) go to a flat buffer of their
 * own. */
clt_status clt_net_layout_params(clt_net *net, size_t align_bytes, clt_net_share share)
{
    size_t own = clt_net_base_align(net->dev);
    if (align_bytes == 0) align_bytes = own;
    if (align_bytes % own != 0 || align_bytes % sizeof(float) != 0)
        return clt_fail(CLT_ERR_INVALID_ARG, "net: parameter alignment of %zu bytes is not a multiple of device %d's %zu",
                        align_bytes, clt_device_get_info(net->dev)->index, own);
    size_t align = align_bytes / sizeof(float);
    size_t at[2] = {0, 0}; /* parameters, state */
    net->first_param_layer = clt_model_first_trainable(&net->model);
    for (int i = net->model.n_layers - 1; i >= 0; i--) {
        clt_layer *l = &net->model.layers[i];
        for (int p = 0; p < l->n_params; p++) {
            clt_param *q = &l->params[p];
            q->offset = at[q->is_buffer];
            at[q->is_buffer] += ((size_t)q->numel + align - 1) / align * align;
        }
    }
    net->flat = at[0] ? at[0] : 1;
    net->flat_state = at[1] ? at[1] : 1;
    size_t bytes = net->flat * sizeof(float), sbytes = net->flat_state * sizeof(float);
    net->share = clt_svm_shared(net->dev) ? share : CLT_SHARE_NONE;
    CLT_TRY(make_shared(net, CLT_SHARE_ALL, bytes, "parameters shared with the host", &net->params, &net->params_host));
    CLT_TRY(make_shared(net, CLT_SHARE_GRADS, bytes, "gradients shared with the host", &net->grads, &net->grads_host));
    CLT_TRY(clt_net_make_buffer(net->dev, sbytes, "layer state", &net->state));
    CLT_TRY(zero(net->dev, net->params, bytes));
    CLT_TRY(zero(net->dev, net->grads, bytes));
    CLT_TRY(zero(net->dev, net->state, sbytes));
    for (int i = 0; i < net->model.n_layers; i++) {
        clt_layer *l = &net->model.layers[i];
        for (int p = 0; p < l->n_params; p++) {
            clt_param *q = &l->params[p];
            CLT_TRY(sub_buffer(q->is_buffer ? net->state : net->params, q->offset, q->numel, &q->w));
            if (!q->is_buffer) CLT_TRY(sub_buffer(net->grads, q->offset, q->numel, &q->g));
        }
    }
    return CLT_OK;
}

int clt_net_grads_shared(const clt_net *net) { return net && net->grads_host; }

float *clt_net_shared(const clt_net *net, clt_net_buffer b)
{
    if (b == CLT_NET_PARAMS) return net->params_host;
    if (b == CLT_NET_GRADS) return net->grads_host;
    int i = (int)b - (int)CLT_NET_SLOT0;
    return i >= 0 && i < CLT_OPTIM_SLOTS ? net->slot_host[i] : NULL;
}

int clt_net_slots(const clt_net *net)
{
    int n = 0;
    while (n < CLT_OPTIM_SLOTS && net->slot[n]) n++;
    return n;
}

clt_status clt_net_ensure_slots(clt_net *net, int n)
{
    if (n > CLT_OPTIM_SLOTS)
        return clt_fail(CLT_ERR_INTERNAL, "%d optimizer state slots (at most %d)", n, CLT_OPTIM_SLOTS);
    size_t bytes = net->flat * sizeof(float);
    for (int i = clt_net_slots(net); i < n; i++) {
        CLT_TRY(make_shared(net, CLT_SHARE_ALL, bytes, "optimizer state shared with the host", &net->slot[i],
                            &net->slot_host[i]));
        CLT_TRY(zero(net->dev, net->slot[i], bytes));
    }
    return CLT_OK;
}

clt_status clt_net_reset_slots(clt_net *net)
{
    for (int i = 0; i < clt_net_slots(net); i++) CLT_TRY(zero(net->dev, net->slot[i], net->flat * sizeof(float)));
    return CLT_OK;
}
