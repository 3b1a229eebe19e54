/* One worker thread per device: runs its shard of each step, moves its
 * gradients through pinned staging (or shares them with the host where
 * the device can: runtime/svm.h), takes a slice of the host reduction,
 * writes the reduced gradients back and applies the optimizer step. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "optim/clip.h"
#include "parallel/trainer.h"

void clt_trainer_fail_locked(clt_trainer *t, int slot, clt_status s, const char *msg)
{
    if (!t->failed && slot < 0) { /* not a device's: MPI between the processes */
        snprintf(t->fail_msg, sizeof t->fail_msg, "MPI process %d: %s", clt_cluster_rank(t->cl), msg);
        t->fail_status = s;
        t->failed = 1;
    } else if (!t->failed) {
        const clt_device_info *in = &t->workers[slot].dev->info;
        snprintf(t->fail_msg, sizeof t->fail_msg, "device %d (%s): %s", in->index, in->name, msg);
        t->fail_status = s;
        t->failed = 1;
    }
    pthread_cond_broadcast(&t->cv);
}

static clt_status cross_progress(clt_worker *w, int wait);

/* Waits (mutex held) until *counter reaches k or the trainer failed;
 * returns 0 on failure. Adds the wait after this device's backward ended
 * to the idle time. Worker 0 keeps the processes' sums moving meanwhile
 * (MPI progresses them only inside its calls). */
static int wait_count(clt_worker *w, const int *counter)
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
            cross_progress(w, 0); /* a failure is the trainer's; its time counts as reduce_s */
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

/* The first len floats of this process's devices' contributions of round
 * parity par, summed in device order into out; returns their counts' sum. */
static double sum_devices(const clt_trainer *t, int par, float *out, int len)
{
    double n = 0;
    for (int i = 0; i < len; i++) out[i] = 0;
    for (int d = 0; d < t->k; d++) {
        n += t->bn_count[par][d];
        const float *src = t->bn_slots[par] + (size_t)d * (size_t)t->bn_cap;
        for (int i = 0; i < t->bn_len[par][d] && i < len; i++) out[i] += src[i];
    }
    return n;
}

/* A round across MPI processes: worker 0 sums this process's devices
 * (device order) into bn_x, all bn_cap floats, so that processes whose
 * shards are all empty still pass the same count, sums bn_x over the
 * processes and publishes it; every worker copies it. bn_x is rewritten
 * only at the next round, after every worker arrived there (so copied). */
static clt_status bn_round_processes(clt_worker *w, int par, float *values, int len, double *total)
{
    clt_trainer *t = w->t;
    clt_status s = CLT_OK;
    if (w->slot == 0) {
        double n[1] = {sum_devices(t, par, t->bn_x, t->bn_cap)};
        s = clt_cluster_sum_floats(t->cl, t->bn_x, (size_t)t->bn_cap);
        if (s == CLT_OK) s = clt_cluster_sum_doubles(t->cl, n, 1);
        pthread_mutex_lock(&t->mu);
        if (s != CLT_OK) clt_trainer_fail_locked(t, -1, s, clt_last_error());
        t->bn_xn = n[0];
        t->bn_crossed = w->bn_round + 1;
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
    } else {
        pthread_mutex_lock(&t->mu);
        while (t->bn_crossed < w->bn_round + 1 && !t->failed) pthread_cond_wait(&t->cv, &t->mu);
        if (t->failed) s = CLT_ERR_CANCELLED;
        pthread_mutex_unlock(&t->mu);
    }
    if (s != CLT_OK) return s == CLT_ERR_CANCELLED ? clt_fail(s, "another device failed") : s;
    for (int i = 0; i < len; i++) values[i] = t->bn_x[i];
    *total = t->bn_xn;
    w->bn_round++;
    return CLT_OK;
}

/* One round of synchronised batch norm (clt_sync): every device posts its
 * partial sums, waits for all, and takes the sum in device order (the same
 * bits on every device). An empty shard posts nothing (len 0) but takes
 * part. */
static clt_status bn_round(void *user, float *values, int len, double *total)
{
    clt_worker *w = user;
    clt_trainer *t = w->t;
    int par = (int)(w->bn_round & 1);
    if (len > t->bn_cap) return clt_fail(CLT_ERR_INTERNAL, "batch norm statistics of %d floats (room for %d)", len, t->bn_cap);
    pthread_mutex_lock(&t->mu);
    if (len) memcpy(t->bn_slots[par] + (size_t)w->slot * (size_t)t->bn_cap, values, (size_t)len * sizeof(float));
    t->bn_len[par][w->slot] = len;
    t->bn_count[par][w->slot] = *total;
    t->bn_arrivals++;
    pthread_cond_broadcast(&t->cv);
    int64_t need = (int64_t)t->k * (w->bn_round + 1);
    double t0 = clt_now();
    while (t->bn_arrivals < need && !t->failed) pthread_cond_wait(&t->cv, &t->mu);
    w->stats.idle_s += clt_now() - t0;
    int failed = t->failed;
    pthread_mutex_unlock(&t->mu);
    if (failed) return clt_fail(CLT_ERR_CANCELLED, "another device failed");
    /* Slots of this parity are rewritten only two rounds later, after
     * every device has arrived at the next round, so reading is safe. */
    if (t->cl) return bn_round_processes(w, par, values, len, total);
    *total = sum_devices(t, par, values, len);
    w->bn_round++;
    return CLT_OK;
}

static clt_status compute_shard(clt_worker *w)
{
    clt_trainer *t = w->t;
    clt_net *net = w->net;
    if (w->inject_fail_at && w->inject_fail_at == t->steps)
        return clt_fail(CLT_ERR_DEVICE_LOST, "injected failure (test) at step %lld", (long long)t->steps);
    w->next_bucket = 0;
    w->bn_round = 0;
    CLT_TRY(clt_pipeline_begin(w));
    if (w->n == 0) {
        clt_pipeline_no_shard(w);
        /* as many rounds as the others' layers make (clt_net_sync_plan) */
        for (int r = 0; t->cfg.sync_bn && r < t->sync_rounds; r++) {
            double none = 0;
            CLT_TRY(bn_round(w, NULL, 0, &none));
        }
        return CLT_OK;
    }
    size_t sample = (size_t)t->cfg.channels * (size_t)t->cfg.height * (size_t)t->cfg.width;
    cl_event up;
    CLT_TRY(clt_net_set_input(net, t->images + (size_t)w->off * sample, w->n, &up));
    clReleaseEvent(up); /* the in-order queue runs it before the forward */
    CLT_TRY(clt_net_set_labels(net, t->labels + w->off, w->n));
    if (w->tracing) CLT_TRY(clt_pipeline_mark(w, -1, 0)); /* the forward's start */
    /* dropout masks by the sample's place in the whole batch */
    clt_net_set_rng(net, (clt_rng_key){t->cfg.seed, (uint64_t)t->optim_steps, (uint64_t)w->off});
    clt_sync sync = {bn_round, w};
    const clt_sync *hook = t->cfg.sync_bn ? &sync : NULL;
    CLT_TRY(clt_net_forward_device(net, 1, hook, w->n));
    CLT_TRY(clt_net_backward_device(net, hook, 1.0f, clt_pipeline_grads_ready, w));
    return clt_pipeline_end_backward(w); /* returns while the device still computes */
}

/* Bucket b, already in this device's staging, back to the device on the
 * transfer queue (c0: when the write-back began, for the trace). */
static clt_status write_staged_since(clt_worker *w, int b, double c0)
{
    clt_status s = clt_pipeline_write_back(w, b);
    if (w->tracing) clt_trace_add(&w->trace, CLT_TR_WRITE_BACK, b, c0, clt_now() - c0);
    return s;
}

static clt_status write_staged(clt_worker *w, int b) { return write_staged_since(w, b, clt_now()); }

/* Writes the reduced gradients of bucket b, times `factor`, to the device
 * through the staging (every slice of the bucket is summed, so no thread
 * reads it any more). */
static clt_status write_bucket(clt_worker *w, int b, float factor)
{
    const clt_bucket *bk = &w->t->buckets[b];
    double c0 = clt_now();
    float *to = w->staging + bk->span.offset;
    const float *from = w->t->sum + bk->span.offset;
    if (factor == 1.0f) memcpy(to, from, bk->span.count * sizeof(float));
    else for (size_t i = 0; i < bk->span.count; i++) to[i] = from[i] * factor;
    return write_staged_since(w, b, c0);
}

/* Worker 0 alone calls MPI: it progresses the processes' sums (with
 * `wait`, waits for the next one) and publishes how many leading buckets
 * are in. */
static clt_status cross_progress(clt_worker *w, int wait)
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

/* Takes the buckets whose processes' sums are in, from *taken on, in
 * bucket order; with `all`, waits until every bucket is in. With `write`
 * each is written back as it comes, so the first buckets travel to the
 * devices while the processes still sum later ones. */
static clt_status take_crossed(clt_worker *w, int *taken, int all, int write)
{
    clt_trainer *t = w->t;
    while (*taken < t->n_buckets) {
        if (w->slot == 0) {
            clt_status s = cross_progress(w, all);
            if (s != CLT_OK) return s;
        }
        pthread_mutex_lock(&t->mu);
        while (all && w->slot != 0 && t->crossed <= *taken && !t->failed) pthread_cond_wait(&t->cv, &t->mu);
        int in = t->crossed, failed = t->failed;
        pthread_mutex_unlock(&t->mu);
        if (failed) return CLT_ERR_CANCELLED;
        for (; *taken < in; (*taken)++)
            if (write) CLT_TRY(write_bucket(w, *taken, 1.0f));
        if (!all) break;
    }
    return CLT_OK;
}

/* Whether the read of bucket b ended: done, or failed (clt_pipeline_await says which). */
static int read_ended(const clt_worker *w, int b)
{
    cl_int st = CL_QUEUED;
    return clGetEventInfo(w->events[b], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL) != CL_SUCCESS ||
           st <= CL_COMPLETE;
}

/* This device's copy of bucket b on the host. Worker 0 keeps the
 * processes' sums of earlier buckets moving while it waits, so they run
 * during backward rather than after it. */
static clt_status await_bucket(clt_worker *w, int b)
{
    clt_trainer *t = w->t;
    while (w->slot == 0 && t->cl && clt_cluster_pending(t->cl) && !read_ended(w, b)) {
        if (cross_progress(w, 0) != CLT_OK) return CLT_ERR_CANCELLED;
        if (!read_ended(w, b)) nanosleep(&(struct timespec){0, 200000}, NULL); /* 0.2 ms */
    }
    return clt_pipeline_await(w, b);
}

/* Bucket by bucket, as soon as every device's copy arrived: this thread's
 * slice of the sum, then (every slice done) the write-back. */
static clt_status run_step_body(clt_worker *w)
{
    clt_trainer *t = w->t;
    clt_status s = compute_shard(w);
    if (s != CLT_OK) {
        pthread_mutex_lock(&t->mu);
        clt_trainer_fail_locked(t, w->slot, s, clt_last_error());
        pthread_mutex_unlock(&t->mu);
        return s;
    }

    float scale = 1.0f / (float)t->batch;
    int local = clt_trainer_local_step(t);
    /* Clipping needs the norm of every bucket: then every bucket is
     * written at the end. */
    int clip = t->cfg.clip_grad_norm > 0, taken = 0;
    /* In one process without clipping each bucket's update runs as soon as
     * its sum lands, while the host still sums later buckets (the update
     * is elementwise: the same parameters as one update of all). */
    int by_bucket = !local && !clip && !t->cl;
    /* The default sum goes straight into every device's staging, where the
     * write-backs read it (no copy of the whole sum per device). */
    int into_staging = by_bucket && t->reduce == clt_reduce_local_sum;
    /* Or no sum at all: each device updates its share of every replica. */
    int peer = by_bucket && clt_trainer_peer_step(t);
    float *outs[CLT_MAX_DEVICES];
    if (local) s = clt_net_scale(w->net, CLT_NET_GRADS, (clt_span){0, t->flat}, scale);
    const float *in[CLT_MAX_DEVICES];
    for (int b = 0; b < t->n_buckets && !local; b++) {
        const clt_bucket *bk = &t->buckets[b];
        if (w->n > 0 && (s = await_bucket(w, b)) != CLT_OK) return s;
        clt_pipeline_poll_backward(w);
        pthread_mutex_lock(&t->mu);
        int ok = wait_count(w, &t->arrived[b]);
        pthread_mutex_unlock(&t->mu);
        if (!ok) return CLT_ERR_CANCELLED;
        if (peer) {
            s = clt_pipeline_before_update(w, b);
            if (s == CLT_OK) s = clt_peers_update(w, b, scale);
            if (s != CLT_OK) break;
            continue;
        }
        /* This thread's slice of the bucket. */
        size_t lo = bk->span.count * (size_t)w->slot / (size_t)t->k;
        size_t hi = bk->span.count * (size_t)(w->slot + 1) / (size_t)t->k;
        for (int d = 0; d < t->k; d++) in[d] = t->workers[d].staging + bk->span.offset + lo;
        clt_pipeline_poll_backward(w);
        int during = !w->backward_ended;
        double r0 = clt_now();
        if (into_staging) {
            for (int d = 0; d < t->k; d++) outs[d] = t->workers[d].staging + bk->span.offset + lo;
            clt_reduce_local_sum_to(in, t->k, outs, t->k, hi - lo, scale);
        } else if (hi > lo) {
            s = t->reduce(t->reduce_user, in, t->k, t->sum + bk->span.offset + lo, hi - lo, scale);
        }
        w->stats.reduce_s += clt_now() - r0;
        double r1 = clt_now();
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
        ok = wait_count(w, &t->reduced[b]);
        pthread_mutex_unlock(&t->mu);
        if (!ok) return CLT_ERR_CANCELLED;
        /* the processes' sum of the bucket starts while later ones are summed here */
        if (t->cl && w->slot == 0) t->cross_t0[b] = clt_now();
        if (t->cl && w->slot == 0 &&
            (s = clt_cluster_start_sum(t->cl, b, t->n_buckets, t->sum + bk->span.offset, bk->span.count)) != CLT_OK) {
            pthread_mutex_lock(&t->mu);
            clt_trainer_fail_locked(t, -1, s, clt_last_error());
            pthread_mutex_unlock(&t->mu);
            return s;
        }
        if (t->cl) s = take_crossed(w, &taken, 0, !clip);
        else if (into_staging) s = write_staged(w, b);
        else if (!clip) s = write_bucket(w, b, 1.0f);
        if (s == CLT_OK && by_bucket) s = clt_pipeline_before_update(w, b);
        if (s == CLT_OK && by_bucket)
            s = clt_net_optim_update(w->net, &t->optim, t->optim_steps, t->buckets[b].span);
        if (s != CLT_OK) break;
    }
    if (s == CLT_OK && !local && t->cl) s = take_crossed(w, &taken, 1, !clip);
    if (s == CLT_OK && !local && clip) {
        /* every thread computes the same factor from the same sums */
        float factor = clt_clip_factor(clt_grad_norm(t->sum, t->flat), t->cfg.clip_grad_norm);
        for (int b = 0; b < t->n_buckets && s == CLT_OK; b++) s = write_bucket(w, b, factor);
    }
    if (s == CLT_OK && !by_bucket) {
        s = local ? (w->tracing ? clt_pipeline_mark(w, -1, 2) : CLT_OK) : clt_pipeline_before_update(w, -1);
        if (s == CLT_OK) s = clt_net_optim_update(w->net, &t->optim, t->optim_steps, (clt_span){0, t->flat});
    }
    w->loss = 0;
    w->correct = 0;
    if (s == CLT_OK && w->n > 0)
        s = clt_net_read_stats(w->net, &w->loss, &w->correct); /* waits for the queue */
    else if (s == CLT_OK)
        s = clt_device_finish(w->dev);
    if (s != CLT_OK) {
        pthread_mutex_lock(&t->mu);
        clt_trainer_fail_locked(t, w->slot, s, clt_last_error());
        pthread_mutex_unlock(&t->mu);
    }
    return s;
}

static clt_status run_step(clt_worker *w)
{
    double t0 = clt_now();
    memset(&w->stats, 0, sizeof w->stats);
    w->stats.device = w->dev->info.index;
    w->stats.shard = w->n;
    w->backward_ended = 0;
    w->early_sums = 0;
    w->hidden_transfer_s = w->hidden_reduce_s = 0;
    clt_status s = run_step_body(w);
    clt_pipeline_settle(w); /* nothing in flight once the step is reported */
    w->stats.step_s = clt_now() - t0;
    w->stats.compute_s = (w->backward_ended ? w->backward_end : clt_now()) - t0;
    w->stats.hidden_s = w->hidden_transfer_s + w->hidden_reduce_s;
    w->stats.exposed_s = w->stats.step_s - w->stats.compute_s;
    return s;
}

static clt_status run_eval(clt_worker *w)
{
    clt_trainer *t = w->t;
    w->loss = 0;
    w->correct = 0;
    return clt_net_evaluate_range(w->net, t->eval_ds, w->off, w->n, t->eval_batch, &w->loss, &w->correct);
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
        /* After a failure, nothing may still read the caller's batch or
         * write the staging once the command is reported done. */
        if (s != CLT_OK) clFinish(w->dev->queue);
        pthread_mutex_lock(&t->mu);
        w->status = s;
        /* An evaluation changes no parameter: its failure is reported, not
         * fatal to the trainer. */
        if (s != CLT_OK && cmd == CMD_EVAL)
            snprintf(w->error, sizeof w->error, "device %d (%s): %s", w->dev->info.index, w->dev->info.name,
                     clt_last_error());
        t->done++;
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
    }
    return NULL;
}
