/* Batch norm across the devices. With synchronised batch norm
 * (cfg.sync_bn) every layer that takes batch statistics calls a round
 * (clt_sync, nn/layer.h) in which every device posts its partial sums and
 * takes the sum over all devices of all processes, in device order, so
 * every device normalises with the same bits. Its running statistics are
 * then the same on every device that ran the step; one given no sample
 * takes them from the first device that ran. Without it each replica
 * normalises by its own shard, and after the step the running statistics
 * are averaged over the devices that ran one so the replicas stay
 * identical. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "parallel/trainer.h"

clt_status clt_sync_bn_plan(clt_trainer *t)
{
    clt_bn_rounds *bn = &t->bn;
    int most = 0;
    clt_net_sync_plan(t->workers[0].net, &bn->rounds, &most);
    if (!t->cfg.sync_bn || bn->rounds == 0) return CLT_OK;
    bn->cap = most;
    for (int p = 0; p < 2; p++) {
        CLT_TRY(clt_calloc((void **)&bn->slots[p], (size_t)t->k * (size_t)bn->cap, sizeof(float), "batch norm"));
        CLT_TRY(clt_calloc((void **)&bn->len[p], (size_t)t->k, sizeof(int), "batch norm"));
        CLT_TRY(clt_calloc((void **)&bn->count[p], (size_t)t->k, sizeof(double), "batch norm"));
    }
    if (t->cl) CLT_TRY(clt_calloc((void **)&bn->x, (size_t)bn->cap, sizeof(float), "batch norm"));
    return CLT_OK;
}

void clt_sync_bn_free(clt_trainer *t)
{
    for (int p = 0; p < 2; p++) {
        free(t->bn.slots[p]);
        free(t->bn.len[p]);
        free(t->bn.count[p]);
    }
    free(t->bn.x);
}

/* The first len floats of this process's devices' contributions of round
 * parity par, summed in device order into out; returns their counts' sum. */
static double sum_devices(const clt_trainer *t, int par, float *out, int len)
{
    const clt_bn_rounds *bn = &t->bn;
    double n = 0;
    for (int i = 0; i < len; i++) out[i] = 0;
    for (int d = 0; d < t->k; d++) {
        n += bn->count[par][d];
        const float *src = bn->slots[par] + (size_t)d * (size_t)bn->cap;
        for (int i = 0; i < bn->len[par][d] && i < len; i++) out[i] += src[i];
    }
    return n;
}

/* A round across MPI processes: worker 0 sums this process's devices
 * (device order) into bn->x, all bn->cap floats, so that processes whose
 * shards are all empty still pass the same count, sums bn->x over the
 * processes and publishes it; every worker copies it. bn->x is rewritten
 * only at the next round, after every worker arrived there (so copied). */
static clt_status round_processes(clt_worker *w, int par, float *values, int len, double *total)
{
    clt_trainer *t = w->t;
    clt_bn_rounds *bn = &t->bn;
    clt_status s = CLT_OK;
    if (w->slot == 0) {
        double n[1] = {sum_devices(t, par, bn->x, bn->cap)};
        s = clt_cluster_sum_floats(t->cl, bn->x, (size_t)bn->cap);
        if (s == CLT_OK) s = clt_cluster_sum_doubles(t->cl, n, 1);
        pthread_mutex_lock(&t->mu);
        if (s != CLT_OK) clt_trainer_fail_locked(t, -1, s, clt_last_error());
        bn->xn = n[0];
        bn->crossed = w->bn_round + 1;
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
    } else {
        pthread_mutex_lock(&t->mu);
        while (bn->crossed < w->bn_round + 1 && !t->failed) pthread_cond_wait(&t->cv, &t->mu);
        if (t->failed) s = CLT_ERR_CANCELLED;
        pthread_mutex_unlock(&t->mu);
    }
    if (s != CLT_OK) return s == CLT_ERR_CANCELLED ? clt_fail(s, "another device failed") : s;
    for (int i = 0; i < len; i++) values[i] = bn->x[i];
    *total = bn->xn;
    w->bn_round++;
    return CLT_OK;
}

/* One round (clt_sync): every device posts its partial sums, waits for
 * all, and takes the sum in device order (the same bits on every device).
 * An empty shard posts nothing (len 0) but takes part. */
static clt_status round_all(void *user, float *values, int len, double *total)
{
    clt_worker *w = user;
    clt_trainer *t = w->t;
    clt_bn_rounds *bn = &t->bn;
    int par = (int)(w->bn_round & 1);
    if (len > bn->cap) return clt_fail(CLT_ERR_INTERNAL, "batch norm statistics of %d floats (room for %d)", len, bn->cap);
    pthread_mutex_lock(&t->mu);
    if (len) memcpy(bn->slots[par] + (size_t)w->slot * (size_t)bn->cap, values, (size_t)len * sizeof(float));
    bn->len[par][w->slot] = len;
    bn->count[par][w->slot] = *total;
    bn->arrivals++;
    pthread_cond_broadcast(&t->cv);
    int64_t need = (int64_t)t->k * (w->bn_round + 1);
    double t0 = clt_now();
    while (bn->arrivals < need && !t->failed) pthread_cond_wait(&t->cv, &t->mu);
    w->stats.idle_s += clt_now() - t0;
    int failed = t->failed;
    pthread_mutex_unlock(&t->mu);
    if (failed) return clt_fail(CLT_ERR_CANCELLED, "another device failed");
    /* Slots of this parity are rewritten only two rounds later, after
     * every device has arrived at the next round, so reading is safe. */
    if (t->cl) return round_processes(w, par, values, len, total);
    *total = sum_devices(t, par, values, len);
    w->bn_round++;
    return CLT_OK;
}

clt_sync clt_sync_bn_hook(clt_worker *w)
{
    w->bn_round = 0;
    return (clt_sync){round_all, w};
}

clt_status clt_sync_bn_no_shard(clt_worker *w)
{
    clt_sync hook = clt_sync_bn_hook(w);
    /* as many rounds as the others' layers make (clt_net_sync_plan) */
    for (int r = 0; w->t->cfg.sync_bn && r < w->t->bn.rounds; r++) {
        double none = 0;
        CLT_TRY(hook.fn(hook.user, NULL, 0, &none));
    }
    return CLT_OK;
}

/* Without synchronised batch norm: the devices that ran a shard average
 * their running statistics (device order; a device with an empty shard
 * ran nothing). */
static clt_status average_state(clt_trainer *t)
{
    size_t n = clt_net_floats(t->workers[0].net, CLT_NET_STATE);
    int all_devices = t->cl ? clt_cluster_devices(t->cl) : t->k;
    if (all_devices == 1 || t->bn.rounds == 0 || t->cfg.sync_bn) return CLT_OK;
    float *all;
    CLT_TRY(clt_aligned_alloc((void **)&all, n * ((size_t)t->k + 1), sizeof(float), "state average"));
    const float *in[CLT_MAX_DEVICES];
    clt_span whole = {0, n};
    clt_status s = CLT_OK;
    int ran = 0;
    for (int i = 0; i < t->k && s == CLT_OK; i++) {
        if (t->workers[i].n == 0) continue;
        float *mine = all + (size_t)(ran + 1) * n;
        in[ran++] = mine;
        s = clt_net_read(t->workers[i].net, CLT_NET_STATE, whole, mine, NULL);
    }
    if (s == CLT_OK && ran) s = clt_reduce_local_sum(NULL, in, ran, all, n, 1.0f);
    if (s != CLT_OK || !ran) memset(all, 0, n * sizeof(float));
    double devices = ran;
    if (t->cl) { /* every process's sum and count, even after a local failure: none waits */
        clt_status c = clt_cluster_sum_floats(t->cl, all, n);
        if (c == CLT_OK) c = clt_cluster_sum_doubles(t->cl, &devices, 1);
        if (s == CLT_OK) s = c;
    }
    float inv = devices > 0 ? 1.0f / (float)devices : 0;
    for (size_t i = 0; s == CLT_OK && i < n; i++) all[i] *= inv;
    for (int i = 0; i < t->k && s == CLT_OK; i++) s = clt_net_write(t->workers[i].net, CLT_NET_STATE, whole, all, NULL);
    clt_aligned_free(all);
    return s;
}

/* With synchronised batch norm: a device with an empty shard takes the
 * running statistics of the first device that ran (of any process: its
 * owner contributes them to a sum over the processes, the others zeros). */
static clt_status share_state(clt_trainer *t)
{
    if (!t->cfg.sync_bn || t->bn.rounds == 0 || t->empty_shards == 0) return CLT_OK;
    size_t n = clt_net_floats(t->workers[0].net, CLT_NET_STATE);
    int src = t->first_busy - (t->cl ? clt_cluster_first(t->cl) : 0);
    float *buf;
    CLT_TRY(clt_aligned_alloc((void **)&buf, n ? n : 1, sizeof(float), "batch-norm statistics"));
    clt_span whole = {0, n};
    clt_status s = CLT_OK;
    if (src >= 0 && src < t->k) s = clt_net_read(t->workers[src].net, CLT_NET_STATE, whole, buf, NULL);
    if (s != CLT_OK || src < 0 || src >= t->k) memset(buf, 0, n * sizeof(float));
    if (t->cl) { /* even after a local failure: none waits */
        clt_status c = clt_cluster_sum_floats(t->cl, buf, n);
        if (s == CLT_OK) s = c;
    }
    for (int i = 0; i < t->k && s == CLT_OK; i++)
        if (t->workers[i].n == 0) s = clt_net_write(t->workers[i].net, CLT_NET_STATE, whole, buf, NULL);
    clt_aligned_free(buf);
    return s;
}

clt_status clt_sync_bn_after_step(clt_trainer *t)
{
    CLT_TRY(average_state(t));
    return share_state(t);
}
