/* Across MPI processes: each process sums its devices' buckets on the host
 * (reduce_host.c), then worker 0 starts the sum of each bucket over the
 * processes as soon as it is in, while later buckets are still summed
 * here, and every worker writes each bucket back as the processes' sum
 * of it arrives. Clipping needs every bucket's global sum first. The
 * optimizer updates every parameter at once. */
#include "parallel/reduction.h"

clt_status clt_reduction_mpi_progress(clt_worker *w, int wait)
{
    clt_trainer *t = w->t;
    double c0 = clt_now();
    int done = 0;
    clt_status s = clt_cluster_progress(t->cl, wait, &done);
    double c1 = clt_now();
    w->stats.reduce_s += c1 - c0;
    clt_pipeline_poll_backward(w);
    if (!w->backward_ended) w->hidden_reduce_s += c1 - c0;
    for (int b = t->crossed; w->tracing && b < done; b++) /* only this thread writes t->crossed */
        clt_trace_add(&w->trace, CLT_TR_ALLREDUCE, b, t->cross_t0[b], c1 - t->cross_t0[b]);
    pthread_mutex_lock(&t->mu);
    if (s != CLT_OK) clt_trainer_fail_locked(t, -1, s, clt_last_error());
    if (done > t->crossed) {
        t->crossed = done;
        pthread_cond_broadcast(&t->cv);
    }
    pthread_mutex_unlock(&t->mu);
    return s;
}

/* Takes the buckets whose processes' sums are in, from w->taken on, in
 * bucket order; with `all`, waits until every bucket is in. Without
 * clipping each is written back as it comes, so the first buckets travel
 * to the devices while the processes still sum later ones. */
static clt_status take_crossed(clt_worker *w, int all)
{
    clt_trainer *t = w->t;
    int write = t->cfg.clip_grad_norm == 0;
    while (w->taken < t->n_buckets) {
        if (w->slot == 0) CLT_TRY(clt_reduction_mpi_progress(w, all));
        pthread_mutex_lock(&t->mu);
        while (all && w->slot != 0 && t->crossed <= w->taken && !t->failed) pthread_cond_wait(&t->cv, &t->mu);
        int in = t->crossed, failed = t->failed;
        pthread_mutex_unlock(&t->mu);
        if (failed) return CLT_ERR_CANCELLED;
        for (; w->taken < in; w->taken++)
            if (write) CLT_TRY(clt_reduction_write_sum(w, w->taken, 1.0f));
        if (!all) break;
    }
    return CLT_OK;
}

static clt_status begin(clt_worker *w)
{
    w->taken = 0;
    return CLT_OK;
}

static clt_status bucket(clt_worker *w, int b)
{
    clt_trainer *t = w->t;
    const clt_bucket *bk = &t->buckets[b];
    CLT_TRY(clt_reduction_sum_slice(w, b, 0));
    if (w->slot == 0) {
        t->cross_t0[b] = clt_now();
        clt_status s = clt_cluster_start_sum(t->cl, b, t->n_buckets, t->sum + bk->span.offset, bk->span.count);
        if (s != CLT_OK) {
            pthread_mutex_lock(&t->mu);
            clt_trainer_fail_locked(t, -1, s, clt_last_error());
            pthread_mutex_unlock(&t->mu);
            return s;
        }
    }
    return take_crossed(w, 0);
}

static clt_status finish(clt_worker *w)
{
    CLT_TRY(take_crossed(w, 1));
    if (w->t->cfg.clip_grad_norm > 0) CLT_TRY(clt_reduction_write_clipped(w));
    return clt_reduction_update(w, -1);
}

const clt_reduction clt_reduction_mpi = {.name = "MPI", .begin = begin, .bucket = bucket, .finish = finish};
