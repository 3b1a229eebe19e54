/* The host sum: once every device's copy of a bucket reached the host,
 * each worker thread sums its slice of it (the k-th part), so the sum of
 * a bucket runs on every thread at once while the devices still compute
 * the backward of earlier layers. Each bucket then goes back to the
 * devices and is updated as soon as it is summed: the update is
 * elementwise, so per bucket it gives the parameters one update of all
 * would. Also the stages the clipped and MPI sums share. */
#include <string.h>

#include "parallel/reduction.h"

float clt_reduction_scale(const clt_trainer *t) { return 1.0f / (float)t->batch; }

clt_status clt_reduction_sum_slice(clt_worker *w, int b, int into_staging)
{
    clt_trainer *t = w->t;
    const clt_bucket *bk = &t->buckets[b];
    float scale = clt_reduction_scale(t);
    size_t lo = bk->span.count * (size_t)w->slot / (size_t)t->k;
    size_t hi = bk->span.count * (size_t)(w->slot + 1) / (size_t)t->k;
    const float *in[CLT_MAX_DEVICES];
    for (int d = 0; d < t->k; d++) in[d] = t->workers[d].staging + bk->span.offset + lo;
    clt_pipeline_poll_backward(w);
    int during = !w->backward_ended;
    clt_status s = CLT_OK;
    double r0 = clt_now();
    if (into_staging) { /* no copy of the whole sum per device: the write-backs read it there */
        float *outs[CLT_MAX_DEVICES];
        for (int d = 0; d < t->k; d++) outs[d] = t->workers[d].staging + bk->span.offset + lo;
        clt_reduce_local_sum_to(in, t->k, outs, t->k, hi - lo, scale);
    } else if (hi > lo) {
        s = t->reduce(t->reduce_user, in, t->k, t->sum + bk->span.offset + lo, hi - lo, scale);
    }
    double r1 = clt_now();
    w->stats.reduce_s += r1 - r0;
    if (during) {
        w->early_sums++;
        w->hidden_reduce_s += r1 - r0;
    }
    if (w->tracing) clt_trace_add(&w->trace, CLT_TR_SUM, b, r0, r1 - r0);
    pthread_mutex_lock(&t->mu);
    if (s != CLT_OK) {
        clt_trainer_fail_locked(t, w->slot, s, clt_last_error());
        pthread_mutex_unlock(&t->mu);
        return s;
    }
    t->reduced[b]++;
    pthread_cond_broadcast(&t->cv);
    int ok = clt_worker_wait_all(w, &t->reduced[b]);
    pthread_mutex_unlock(&t->mu);
    return ok ? CLT_OK : CLT_ERR_CANCELLED;
}

/* c0: when the write-back began, for the trace. */
static clt_status write_staged_since(clt_worker *w, int b, double c0)
{
    clt_status s = clt_pipeline_write_back(w, b);
    if (w->tracing) clt_trace_add(&w->trace, CLT_TR_WRITE_BACK, b, c0, clt_now() - c0);
    return s;
}

clt_status clt_reduction_write_staged(clt_worker *w, int b) { return write_staged_since(w, b, clt_now()); }

/* Every slice of the bucket is summed: no thread reads it any more. */
clt_status clt_reduction_write_sum(clt_worker *w, int b, float factor)
{
    const clt_bucket *bk = &w->t->buckets[b];
    double c0 = clt_now();
    float *to = w->staging + bk->span.offset;
    const float *from = w->t->sum + bk->span.offset;
    if (factor == 1.0f) memcpy(to, from, bk->span.count * sizeof(float));
    else for (size_t i = 0; i < bk->span.count; i++) to[i] = from[i] * factor;
    return write_staged_since(w, b, c0);
}

clt_status clt_reduction_update(clt_worker *w, int b)
{
    clt_trainer *t = w->t;
    CLT_TRY(clt_pipeline_before_update(w, b));
    clt_span span = b < 0 ? (clt_span){0, t->flat} : t->buckets[b].span;
    return clt_net_optim_update(w->net, &t->optim, t->optim_steps, span);
}

static clt_status host_bucket(clt_worker *w, int b)
{
    CLT_TRY(clt_reduction_sum_slice(w, b, 1));
    CLT_TRY(clt_reduction_write_staged(w, b));
    return clt_reduction_update(w, b);
}

static clt_status hook_bucket(clt_worker *w, int b)
{
    CLT_TRY(clt_reduction_sum_slice(w, b, 0));
    CLT_TRY(clt_reduction_write_sum(w, b, 1.0f));
    return clt_reduction_update(w, b);
}

const clt_reduction clt_reduction_host = {.name = "host sum", .bucket = host_bucket};
const clt_reduction clt_reduction_hook = {.name = "caller's sum", .bucket = hook_bucket};
