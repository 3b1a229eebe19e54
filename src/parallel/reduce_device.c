/* One device alone with the default sum and no clipping: the gradients
 * stay on the device, scaled there by 1/batch (the host sum's rounding:
 * x * scale), with no round trip through the host. */
#include "parallel/reduction.h"

static clt_status scale_grads(clt_worker *w)
{
    return clt_net_scale(w->net, CLT_NET_GRADS, (clt_span){0, w->t->flat}, clt_reduction_scale(w->t));
}

static clt_status update(clt_worker *w)
{
    clt_trainer *t = w->t;
    if (w->tracing) CLT_TRY(clt_pipeline_mark(w, -1, 2)); /* the trace's optimizer span */
    return clt_net_optim_update(w->net, &t->optim, t->optim_steps, (clt_span){0, t->flat});
}

const clt_reduction clt_reduction_device = {.name = "on the device", .begin = scale_grads, .finish = update};
