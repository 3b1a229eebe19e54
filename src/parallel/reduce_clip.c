/* Clipping to a global norm needs every bucket's sum: the host sums the
 * buckets as they arrive, then every thread computes the same factor from
 * the same sums and writes every bucket back scaled by it, and the
 * optimizer updates every parameter at once. */
#include "optim/clip.h"
#include "parallel/reduction.h"

clt_status clt_reduction_write_clipped(clt_worker *w)
{
    clt_trainer *t = w->t;
    float factor = clt_clip_factor(clt_grad_norm(t->sum, t->flat), t->cfg.clip_grad_norm);
    for (int b = 0; b < t->n_buckets; b++) CLT_TRY(clt_reduction_write_sum(w, b, factor));
    return CLT_OK;
}

static clt_status sum(clt_worker *w, int b) { return clt_reduction_sum_slice(w, b, 0); }

static clt_status finish(clt_worker *w)
{
    CLT_TRY(clt_reduction_write_clipped(w));
    return clt_reduction_update(w, -1);
}

const clt_reduction clt_reduction_clip = {.name = "host sum, clipped", .bucket = sum, .finish = finish};
