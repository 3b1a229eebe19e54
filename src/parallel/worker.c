/* One worker thread per device: runs the commands of the trainer (a
 * training step or an evaluation) on its device's shard. The step is
 * run_step; how the gradients become one update is the trainer's
 * reduction strategy (reduction.h). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "parallel/reduction.h"
#include "runtime/queue.h"

int clt_worker_wait_all(clt_worker *w, const int *counter)
{
    clt_trainer *t = w->t;
    double t0 = clt_now(), mpi_s = 0;
    while (*counter < t->k && !t->failed) {
        if (w->slot == 0 && t->cl && clt_cluster_pending(t->cl)) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 200000; /* 0.2 ms */
            if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
            pthread_cond_timedwait(&t->cv, &t->mu, &until);
            pthread_mutex_unlock(&t->mu);
            double m0 = clt_now();
            clt_reduction_mpi_progress(w, 0); /* a failure is the trainer's; its time counts as reduce_s */
            mpi_s += clt_now() - m0;
            pthread_mutex_lock(&t->mu);
        } else
            pthread_cond_wait(&t->cv, &t->mu);
    }
    /* Waiting while this device still computes is not idle, nor is summing over the processes. */
    if (w->backward_ended) {
        double idle = clt_now() - (w->backward_end > t0 ? w->backward_end : t0) - mpi_s;
        if (idle > 0) w->stats.idle_s += idle;
    }
    return !t->failed;
}

/* Upload of the shard, forward and backward enqueued; the gradient
 * buckets leave for the host as their layers finish (pipeline.c).
 * Returns while the device still computes. */
static clt_status compute_shard(clt_worker *w)
{
    clt_trainer *t = w->t;
    clt_net *net = w->net;
    if (w->inject_fail_at && w->inject_fail_at == t->steps)
        return clt_fail(CLT_ERR_DEVICE_LOST, "injected failure (test) at step %lld", (long long)t->steps);
    w->next_bucket = 0;
    CLT_TRY(clt_pipeline_begin(w));
    if (w->n == 0) {
        clt_pipeline_no_shard(w);
        return clt_sync_bn_no_shard(w);
    }
    size_t sample = (size_t)t->cfg.channels * (size_t)t->cfg.height * (size_t)t->cfg.width;
    cl_event up;
    CLT_TRY(clt_net_set_input(net, t->images + (size_t)w->off * sample, w->n, &up));
    clt_event_release(up); /* the in-order queue runs it before the forward */
    CLT_TRY(clt_net_set_labels(net, t->labels + w->off, w->n));
    if (w->tracing) CLT_TRY(clt_pipeline_mark(w, -1, 0)); /* the forward's start */
    /* dropout masks by the sample's place in the whole batch */
    clt_net_set_rng(net, (clt_rng_key){t->cfg.seed, (uint64_t)t->optim_steps, (uint64_t)w->off});
    clt_sync sync = clt_sync_bn_hook(w);
    const clt_sync *hook = t->cfg.sync_bn ? &sync : NULL;
    CLT_TRY(clt_net_forward_device(net, 1, hook, w->n));
    CLT_TRY(clt_net_backward_device(net, hook, 1.0f, clt_pipeline_grads_ready, w));
    return clt_pipeline_end_backward(w);
}

/* Every device's copy of bucket b on the host. Worker 0 keeps the
 * processes' sums of earlier buckets moving while it waits, so they run
 * during backward rather than after it. */
static clt_status await_everyone(clt_worker *w, int b)
{
    clt_trainer *t = w->t;
    if (w->n > 0) {
        /* ended: done, or failed (clt_pipeline_await says which) */
        while (w->slot == 0 && t->cl && clt_cluster_pending(t->cl) && !clt_event_ended(w->events[b])) {
            if (clt_reduction_mpi_progress(w, 0) != CLT_OK) return CLT_ERR_CANCELLED;
            if (!clt_event_ended(w->events[b])) nanosleep(&(struct timespec){0, 200000}, NULL); /* 0.2 ms */
        }
        CLT_TRY(clt_pipeline_await(w, b));
    }
    clt_pipeline_poll_backward(w);
    pthread_mutex_lock(&t->mu);
    int ok = clt_worker_wait_all(w, &t->arrived[b]);
    pthread_mutex_unlock(&t->mu);
    return ok ? CLT_OK : CLT_ERR_CANCELLED;
}

/* This device's loss and correct count of the step (waits for its queue). */
static clt_status read_results(clt_worker *w)
{
    if (w->n == 0) return clt_device_finish(w->dev);
    return clt_net_read_stats(w->net, &w->loss, &w->correct);
}

static void begin_stats(clt_worker *w)
{
    memset(&w->stats, 0, sizeof w->stats);
    w->stats.device = clt_device_get_info(w->dev)->index;
    w->stats.shard = w->n;
    w->backward_ended = 0;
    w->early_sums = 0;
    w->hidden_transfer_s = w->hidden_reduce_s = 0;
    w->loss = 0;
    w->correct = 0;
}

static void end_stats(clt_worker *w, double t0)
{
    w->stats.step_s = clt_now() - t0;
    w->stats.compute_s = (w->backward_ended ? w->backward_end : clt_now()) - t0;
    w->stats.hidden_s = w->hidden_transfer_s + w->hidden_reduce_s;
    w->stats.exposed_s = w->stats.step_s - w->stats.compute_s;
}

/* One training step on this device, stage by stage. */
static clt_status run_step(clt_worker *w)
{
    clt_trainer *t = w->t;
    const clt_reduction *r = t->reduction;
    double t0 = clt_now();
    begin_stats(w);
    clt_status s = compute_shard(w);
    if (s == CLT_OK && r->begin) s = r->begin(w);
    for (int b = 0; s == CLT_OK && r->bucket && b < t->n_buckets; b++) {
        s = await_everyone(w, b);
        if (s == CLT_OK) s = r->bucket(w, b); /* sum, write back, update: as the mode does */
    }
    if (s == CLT_OK && r->finish) s = r->finish(w); /* what needs every bucket, and the update */
    if (s == CLT_OK) s = read_results(w);
    if (s != CLT_OK) {
        pthread_mutex_lock(&t->mu);
        clt_trainer_fail_locked(t, w->slot, s, clt_last_error()); /* the first failure is kept */
        pthread_mutex_unlock(&t->mu);
    }
    clt_pipeline_settle(w); /* nothing in flight once the step is reported */
    end_stats(w, t0);
    return s;
}

static clt_status run_eval(clt_worker *w)
{
    clt_trainer *t = w->t;
    w->loss = 0;
    w->correct = 0;
    return clt_net_evaluate_range(w->net, t->eval_ds, w->off, w->n, t->eval_batch, &w->loss, &w->correct,
                                  t->eval_pred ? t->eval_pred + w->off : NULL);
}

void *clt_worker_main(void *arg)
{
    clt_worker *w = arg;
    clt_trainer *t = w->t;
    uint64_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&t->mu);
        while (t->generation == seen) pthread_cond_wait(&t->cv, &t->mu);
        seen = t->generation;
        clt_command cmd = t->command;
        pthread_mutex_unlock(&t->mu);
        if (cmd == CMD_QUIT) break;
        clt_status s = cmd == CMD_STEP ? run_step(w) : run_eval(w);
        /* An evaluation changes no parameter: its failure is reported, not
         * fatal to the trainer. */
        const clt_device_info *in = clt_device_get_info(w->dev);
        if (s != CLT_OK && cmd == CMD_EVAL)
            snprintf(w->error, sizeof w->error, "device %d (%s): %s", in->index, in->name, clt_last_error());
        /* After a failure, nothing may still read the caller's batch or
         * write the staging once the command is reported done. */
        if (s != CLT_OK) clt_queue_drain(clt_device_queue(w->dev));
        pthread_mutex_lock(&t->mu);
        w->status = s;
        t->done++;
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
    }
    return NULL;
}
