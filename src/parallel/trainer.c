/* Trainer life cycle and the host side of the step protocol. */
#include "parallel/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/config.h"
#include "core/hash.h"


void clt_trainer_config_default(clt_trainer_config *cfg)
{
    if (!cfg) return;
    memset(cfg, 0, sizeof *cfg);
    cfg->spec = "lenet";
    cfg->channels = 1;
    cfg->height = cfg->width = 28;
    cfg->split = CLT_SPLIT_EQUAL;
    cfg->lr = 0.2f;
    cfg->beta1 = 0.9f;
    cfg->beta2 = 0.999f;
    cfg->eps = 1e-8f;
    cfg->init = CLT_INIT_NORMAL;
    cfg->bucket_bytes = 25u << 20;
}

static clt_optim_settings optim_settings(const clt_trainer_config *c)
{
    return (clt_optim_settings){c->optimizer, c->lr,    c->momentum, c->weight_decay,
                                c->nesterov,  c->beta1, c->beta2,    c->eps};
}

static clt_status check_config(const clt_trainer_config *c)
{
    if (!c->spec) return clt_fail(CLT_ERR_INVALID_ARG, "trainer: no model spec");
    if (c->devices && (c->n_devices < 1 || c->n_devices > CLT_MAX_DEVICES))
        return clt_fail(CLT_ERR_INVALID_ARG, "trainer: %d devices (1..%d)", c->n_devices, CLT_MAX_DEVICES);
    if (c->split != CLT_SPLIT_EQUAL && c->split != CLT_SPLIT_WEIGHTS && c->split != CLT_SPLIT_AUTO)
        return clt_fail(CLT_ERR_INVALID_ARG, "trainer: unknown split policy %d", (int)c->split);
    if (c->split == CLT_SPLIT_WEIGHTS && (!c->weights || !c->devices))
        return clt_fail(CLT_ERR_INVALID_ARG, "trainer: a split by weights needs the device list and one weight per device");
    if (c->split == CLT_SPLIT_WEIGHTS) { /* finite, >= 0, not all 0: checked now, not at the first step */
        int sizes[CLT_MAX_DEVICES];
        clt_status s = clt_split_sizes(1, c->n_devices, c->weights, sizes);
        if (s != CLT_OK) return clt_fail_context(s, "trainer");
    }
    CLT_TRY(clt_config_check_reserved(c->reserved, sizeof c->reserved, "clt_trainer_create"));
    clt_optim_settings os = optim_settings(c);
    CLT_TRY(clt_optim_check(&os, "trainer"));
    if (!isfinite(c->clip_grad_norm) || c->clip_grad_norm < 0)
        return clt_fail(CLT_ERR_INVALID_ARG, "trainer: clip_grad_norm %g must be finite and >= 0 (0: no clipping)",
                        c->clip_grad_norm);
    if (!(c->label_smoothing >= 0 && c->label_smoothing < 1))
        return clt_fail(CLT_ERR_INVALID_ARG, "trainer: label_smoothing %g must lie in [0, 1)", c->label_smoothing);
    if (c->bucket_bytes < 4) return clt_fail(CLT_ERR_INVALID_ARG, "trainer: bucket of %zu bytes", c->bucket_bytes);
    if (c->check_every < 0) return clt_fail(CLT_ERR_INVALID_ARG, "trainer: check_every %d", c->check_every);
    if (c->mpi_comm && c->split == CLT_SPLIT_AUTO)
        return clt_fail(CLT_ERR_INVALID_ARG, "trainer: the auto split works within one process; across MPI "
                                             "processes split equally or by weights");
    return CLT_OK;
}

/* Groups parameters (in flat-buffer order: last layer first) into buckets of
 * at most bucket_bytes (or one parameter, when it is larger); a bucket ends
 * at a parameter boundary. The first is at
 * most CLT_FIRST_BUCKET_BYTES (as PyTorch DDP's): the last layers' gradients
 * leave early and the host sum starts while backward goes on. */
static clt_status plan_buckets(clt_trainer *t)
{
    const clt_net *net = t->workers[0].net;
    size_t cap = t->cfg.bucket_bytes / sizeof(float);
    size_t first = CLT_FIRST_BUCKET_BYTES / sizeof(float);
    int np = 0;
    clt_span span;
    int layer;
    while (clt_net_grad_span(net, np, &span, &layer)) np++;
    CLT_TRY(clt_calloc((void **)&t->buckets, (size_t)(np ? np : 1), sizeof *t->buckets, "buckets"));
    if (np == 0) { /* a net without parameters still syncs one tiny bucket */
        t->buckets[0] = (clt_bucket){{0, t->flat}, -1};
        t->n_buckets = 1;
        return CLT_OK;
    }
    clt_bucket *cur = NULL;
    for (int i = 0; clt_net_grad_span(net, i, &span, &layer); i++) {
        size_t limit = t->n_buckets == 1 && first < cap ? first : cap;
        /* a parameter that would overflow a non-empty bucket starts the next
         * (a huge weight must not ride in the small first bucket) */
        if (!cur || span.offset + span.count - cur->span.offset > limit) {
            cur = &t->buckets[t->n_buckets++];
            cur->span = (clt_span){span.offset, 0};
        }
        cur->span.count = span.offset + span.count - cur->span.offset;
        cur->min_layer = layer;
    }
    /* The last bucket runs to the end of the buffer (alignment padding). */
    cur->span.count = t->flat - cur->span.offset;
    return CLT_OK;
}

static clt_status plan_batch_norm(clt_trainer *t)
{
    int most = 0;
    clt_net_sync_plan(t->workers[0].net, &t->sync_rounds, &most);
    if (!t->cfg.sync_bn || t->sync_rounds == 0) return CLT_OK;
    t->bn_cap = most;
    for (int p = 0; p < 2; p++) {
        CLT_TRY(clt_calloc((void **)&t->bn_slots[p], (size_t)t->k * (size_t)t->bn_cap, sizeof(float), "batch norm"));
        CLT_TRY(clt_calloc((void **)&t->bn_len[p], (size_t)t->k, sizeof(int), "batch norm"));
        CLT_TRY(clt_calloc((void **)&t->bn_count[p], (size_t)t->k, sizeof(double), "batch norm"));
    }
    if (t->cl) CLT_TRY(clt_calloc((void **)&t->bn_x, (size_t)t->bn_cap, sizeof(float), "batch norm"));
    return CLT_OK;
}

/* Without synchronised batch norm each replica's running statistics follow
 * its own shard: average those of the devices that ran one (device order;
 * a device with an empty shard ran nothing) so replicas stay identical. */
static clt_status average_state(clt_trainer *t)
{
    size_t n = clt_net_floats(t->workers[0].net, CLT_NET_STATE);
    int all_devices = t->cl ? clt_cluster_devices(t->cl) : t->k;
    if (all_devices == 1 || t->sync_rounds == 0 || t->cfg.sync_bn) return CLT_OK;
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

/* Replica 0's buffer b (process 0's with MPI) through host into the other
 * replicas. Every process takes part in the broadcast, even after a local
 * failure, so none waits. */
static clt_status spread_buffer(clt_trainer *t, clt_net_buffer b, float *host)
{
    clt_net *src = t->workers[0].net;
    clt_span whole = {0, clt_net_floats(src, b)};
    clt_status s = clt_net_read(src, b, whole, host, NULL);
    clt_status c = t->cl ? clt_cluster_broadcast(t->cl, host, whole.count) : CLT_OK;
    if (s == CLT_OK) s = c;
    for (int i = t->cl ? 0 : 1; i < t->k && s == CLT_OK; i++)
        s = clt_net_write(t->workers[i].net, b, whole, host, NULL);
    return s;
}

/* With synchronised batch norm every device that ran the step updated the
 * same running statistics; one with an empty shard ran nothing: it takes
 * those of the first device that ran (of any process: its owner
 * contributes them to a sum over the processes, the others zeros). */
static clt_status share_state(clt_trainer *t)
{
    if (!t->cfg.sync_bn || t->sync_rounds == 0 || t->empty_shards == 0) return CLT_OK;
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

static clt_status open_worker(clt_trainer *t, int slot, int device_index)
{
    clt_worker *w = &t->workers[slot];
    w->t = t;
    w->slot = slot;
    CLT_TRY(clt_device_open(device_index, &w->dev));
    clt_device_set_log(w->dev, t->cfg.log, t->cfg.log_user);
    w->dev->gemm_lock = &t->gemm_mu;
    clt_device_set_interrupt(w->dev, &t->interrupt);
    /* The programs every net uses and CLBlast's (whose compile cache is
     * not thread-safe) built here, one device at a time, before any worker
     * thread runs; the others are built in the workers at first use, each
     * on its own device. */
    return clt_device_warmup(w->dev);
}

/* One parameter layout for every replica: offsets aligned to the largest
 * base alignment among the devices (vendors differ: NVIDIA 4096 bits, PoCL
 * 1024), so flat spans mean the same floats on every device. */
static clt_status create_nets(clt_trainer *t, const clt_trainer_test_hooks *hooks)
{
    const size_t *force_align = hooks ? hooks->force_align : NULL;
    const int *force_copies = hooks ? hooks->force_copies : NULL;
    size_t align = 0;
    for (int i = 0; i < t->k; i++) {
        size_t a = force_align && force_align[i] ? force_align[i] : clt_net_base_align(t->workers[i].dev);
        if (a > align) align = a;
    }
    /* Parameters and optimizer state are shared too where the replicas may
     * update each other (peers.c decides once the nets exist, from this). */
    int peers = t->k > 1 && t->k <= CLT_GRADS_MAX && !t->cfg.mpi_comm && t->cfg.clip_grad_norm == 0 &&
                !(hooks && hooks->host_sum);
    for (int i = 0; i < t->k; i++)
        peers &= t->workers[i].dev->info.type == CLT_DEVICE_CPU && !(force_copies && force_copies[i]);
    for (int i = 0; i < t->k; i++) {
        clt_worker *w = &t->workers[i];
        /* one device alone keeps its gradients where they are */
        clt_net_share share = (t->k > 1 || t->cfg.mpi_comm) && !(force_copies && force_copies[i]) ? CLT_SHARE_GRADS
                                                                                                 : CLT_SHARE_NONE;
        if (peers) share = CLT_SHARE_ALL;
        CLT_TRY(clt_net_create_aligned(w->dev, t->spec, t->cfg.channels, t->cfg.height, t->cfg.width, align, share,
                                        &w->net));
        CLT_TRY(clt_net_set_label_smoothing(w->net, t->cfg.label_smoothing));
        CLT_TRY(clt_net_staging(w->net, &w->staging));
    }
    return CLT_OK;
}

static clt_status start(clt_trainer *t, const clt_trainer_test_hooks *hooks)
{
    const clt_trainer_config *c = &t->cfg;
    int defaults[CLT_MAX_DEVICES];
    const int *devs = c->devices;
    int k = c->n_devices;
    if (!devs) {
        CLT_TRY(clt_device_default(defaults, CLT_MAX_DEVICES, &k));
        if (k == 0) return clt_fail(CLT_ERR_NO_DEVICE, "trainer: no OpenCL device found (see cltrain-smi)");
        devs = defaults;
    }
    for (int i = 0; i < k; i++)
        for (int j = 0; j < i; j++)
            if (devs[i] == devs[j])
                return clt_fail(CLT_ERR_INVALID_ARG, "trainer: device %d is listed twice", devs[i]);
    CLT_TRY(clt_calloc((void **)&t->workers, (size_t)k, sizeof *t->workers, "workers"));
    if (pthread_mutex_init(&t->gemm_mu, NULL) != 0) return clt_fail(CLT_ERR_INTERNAL, "trainer: mutex");
    t->gemm_mu_ready = 1;
    t->k = k;
    for (int i = 0; i < k; i++) {
        CLT_TRY(open_worker(t, i, devs[i])); /* its errors name the device */
    }
    CLT_TRY(create_nets(t, hooks));
    t->flat = clt_net_floats(t->workers[0].net, CLT_NET_GRADS);
    CLT_TRY(plan_buckets(t));
    CLT_TRY(clt_aligned_alloc((void **)&t->sum, t->flat, sizeof(float), "reduced gradients"));
    /* Alignment padding between buckets is never summed: zero, it adds
     * nothing to the clipping norm taken over the whole buffer. */
    memset(t->sum, 0, t->flat * sizeof(float));
    CLT_TRY(clt_calloc((void **)&t->arrived, (size_t)t->n_buckets, sizeof(int), "bucket counters"));
    CLT_TRY(clt_calloc((void **)&t->reduced, (size_t)t->n_buckets, sizeof(int), "bucket counters"));
    CLT_TRY(clt_calloc((void **)&t->cross_t0, (size_t)t->n_buckets, sizeof(double), "bucket counters"));
    CLT_TRY(clt_calloc((void **)&t->weights, (size_t)k, sizeof(float), "split weights"));
    for (int i = 0; i < k; i++) {
        CLT_TRY(clt_pipeline_open(&t->workers[i]));
        float w = c->split == CLT_SPLIT_WEIGHTS ? c->weights[i] : 1.0f;
        if (!(w >= 0) || !isfinite(w))
            return clt_fail(CLT_ERR_INVALID_ARG, "trainer: split weight %d is %g", i, w);
        t->weights[i] = w;
    }
    if (c->mpi_comm) {
        CLT_TRY(clt_cluster_open(c->mpi_comm, k, t->weights, &t->cl));
        if (clt_cluster_devices(t->cl) > CLT_MAX_ALL_DEVICES)
            return clt_fail(CLT_ERR_INVALID_ARG, "trainer: %d devices over all MPI processes (at most %d)",
                            clt_cluster_devices(t->cl), CLT_MAX_ALL_DEVICES);
    }
    clt_peers_open(t);
    CLT_TRY(plan_batch_norm(t));
    CLT_TRY(clt_net_init(t->workers[0].net, c->seed, c->init));
    CLT_TRY(clt_trainer_broadcast_params(t)); /* process 0's, with MPI */
    if (pthread_mutex_init(&t->mu, NULL) != 0) return clt_fail(CLT_ERR_INTERNAL, "trainer: mutex");
    if (pthread_cond_init(&t->cv, NULL) != 0) {
        pthread_mutex_destroy(&t->mu);
        return clt_fail(CLT_ERR_INTERNAL, "trainer: condition variable");
    }
    t->sync_ready = 1;
    for (int i = 0; i < k; i++) {
        if (pthread_create(&t->workers[i].thread, NULL, clt_worker_main, &t->workers[i]) != 0)
            return clt_fail(CLT_ERR_INTERNAL, "trainer: cannot start a worker thread");
        t->workers[i].thread_started = 1;
    }
    return CLT_OK;
}

clt_status clt_trainer_create(const clt_trainer_config *cfg, clt_trainer **out)
{
    return clt_trainer_create_with(cfg, NULL, out);
}

clt_status clt_trainer_create_with(const clt_trainer_config *cfg, const clt_trainer_test_hooks *hooks,
                                   clt_trainer **out)
{
    if (!cfg || !out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_create: NULL argument");
    *out = NULL;
    CLT_TRY(check_config(cfg));
    clt_trainer *t = calloc(1, sizeof *t);
    if (!t) return clt_fail(CLT_ERR_NO_MEMORY, "trainer");
    t->cfg = *cfg;
    t->optim = optim_settings(cfg);
    t->reduce = clt_reduce_local_sum;
    clt_status s = clt_strdup(&t->spec, cfg->spec);
    if (s == CLT_OK) s = start(t, hooks);
    t->cfg.devices = NULL; /* not kept: the caller owns the arrays */
    t->cfg.weights = NULL;
    t->cfg.spec = t->spec;
    if (s != CLT_OK) {
        clt_trainer_destroy(t);
        return s;
    }
    *out = t;
    return CLT_OK;
}

void clt_trainer_destroy(clt_trainer *t)
{
    if (!t) return;
    if (t->sync_ready) {
        pthread_mutex_lock(&t->mu);
        t->command = CMD_QUIT;
        t->generation++;
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
    }
    for (int i = 0; i < t->k; i++)
        if (t->workers[i].thread_started) pthread_join(t->workers[i].thread, NULL);
    for (int i = 0; i < t->k; i++) clt_peers_close(&t->workers[i]); /* they read the nets' memory */
    for (int i = 0; i < t->k; i++) {
        clt_worker *w = &t->workers[i];
        clt_pipeline_close(w);
        clt_trace_free(&w->trace);
        clt_net_destroy(w->net); /* waits for its queue first */
        clt_device_destroy(w->dev);
    }
    if (t->gemm_mu_ready) pthread_mutex_destroy(&t->gemm_mu);
    if (t->sync_ready) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
    }
    free(t->workers);
    free(t->buckets);
    /* After a failed step MPI may still write into the sum (the requests
     * are left to MPI_Abort, cluster.h): then the sum is left too. */
    int in_flight = t->cl && clt_cluster_pending(t->cl);
    clt_cluster_close(t->cl);
    t->cl = NULL;
    if (!in_flight) clt_aligned_free(t->sum);
    free(t->arrived);
    free(t->reduced);
    free(t->cross_t0);
    free(t->weights);
    for (int p = 0; p < 2; p++) {
        free(t->bn_slots[p]);
        free(t->bn_len[p]);
        free(t->bn_count[p]);
    }
    free(t->bn_x);
    free(t->spec);
    free(t);
}

int clt_trainer_device_count(const clt_trainer *t) { return t ? t->k : 0; }

clt_status clt_trainer_set_reduce(clt_trainer *t, clt_reduce_fn fn, void *user)
{
    if (!t) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_set_reduce: trainer is NULL");
    t->reduce = fn ? fn : clt_reduce_local_sum;
    t->reduce_user = fn ? user : NULL;
    return CLT_OK;
}

void clt_trainer_interrupt(clt_trainer *t)
{
    if (t) atomic_store(&t->interrupt, 1);
}

clt_status clt_trainer_set_lr(clt_trainer *t, float lr)
{
    if (!t) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_set_lr: trainer is NULL");
    if (!isfinite(lr) || lr < 0)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_set_lr: learning rate %g must be finite and >= 0", lr);
    t->cfg.lr = lr;
    t->optim.lr = lr;
    return CLT_OK;
}

int64_t clt_trainer_optimizer_steps(const clt_trainer *t) { return t ? t->optim_steps : 0; }

clt_net *clt_trainer_net(clt_trainer *t, int i) { return t && i >= 0 && i < t->k ? t->workers[i].net : NULL; }

clt_status clt_trainer_broadcast_params(clt_trainer *t)
{
    if (!t) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_broadcast_params: NULL trainer");
    clt_net *src = t->workers[0].net;
    size_t flat = clt_net_floats(src, CLT_NET_PARAMS), flat_state = clt_net_floats(src, CLT_NET_STATE);
    float *host;
    CLT_TRY(clt_aligned_alloc((void **)&host, flat > flat_state ? flat : flat_state, sizeof(float), "broadcast"));
    /* parameters, state, then the optimizer slots replica 0 has (with MPI,
     * process 0's replica 0 is everyone's; every process has the same
     * slots: each loads the same checkpoint) */
    int n = CLT_NET_SLOT0 + clt_net_slots(src);
    clt_status s = CLT_OK;
    for (int i = t->cl ? 0 : 1; i < t->k && s == CLT_OK; i++)
        s = clt_net_ensure_slots(t->workers[i].net, n - CLT_NET_SLOT0);
    for (int w = CLT_NET_PARAMS; w < n; w++) { /* every buffer, whatever failed: the broadcasts pair up */
        if (w == CLT_NET_GRADS) continue;
        clt_status r = spread_buffer(t, (clt_net_buffer)w, host);
        if (s == CLT_OK) s = r;
    }
    clt_aligned_free(host);
    return s;
}

/* Runs a command on every worker and waits for all of them. */
static clt_status run_command(clt_trainer *t, clt_command cmd)
{
    pthread_mutex_lock(&t->mu);
    t->command = cmd;
    t->done = 0;
    memset(t->arrived, 0, (size_t)t->n_buckets * sizeof(int));
    memset(t->reduced, 0, (size_t)t->n_buckets * sizeof(int));
    t->bn_arrivals = 0;
    t->bn_crossed = 0;
    t->crossed = 0;
    t->generation++;
    pthread_cond_broadcast(&t->cv);
    while (t->done < t->k) pthread_cond_wait(&t->cv, &t->mu);
    int failed = t->failed;
    pthread_mutex_unlock(&t->mu);
    if (failed) return clt_fail(t->fail_status, "%s", t->fail_msg);
    return CLT_OK;
}

/* Shards of n samples over every device (every process's, with MPI: each
 * process computes the same list and takes its own devices' part). */
static clt_status assign_shards(clt_trainer *t, int n, int training)
{
    int sizes[CLT_MAX_ALL_DEVICES]; /* start() refused more */
    int all = t->cl ? clt_cluster_devices(t->cl) : t->k, first = t->cl ? clt_cluster_first(t->cl) : 0;
    const float *weights = t->cfg.split == CLT_SPLIT_EQUAL ? NULL : t->cl ? clt_cluster_weights(t->cl) : t->weights;
    CLT_TRY(clt_split_sizes(n, all, weights, sizes));
    if (t->cfg.split == CLT_SPLIT_AUTO && !t->cl) {
        /* The CPU kernels pad a shard to 32 lanes: measured shards of 120
         * and 136 ran 128 and 160 lanes, the padded device measured slower,
         * and a proportional split drifted (PoCL + Intel, LeNet batch 256:
         * 1.73x against the equal split's 1.95x). */
        int prev[CLT_MAX_ALL_DEVICES];
        for (int i = 0; i < all; i++) prev[i] = t->workers[i].n;
        clt_split_units(n, all, weights, prev, sizes);
    }
    /* Batch norm on a shard's own statistics needs two samples (one value
     * per channel has no variance): a lone sample joins the largest shard. */
    if (training && t->sync_rounds && !t->cfg.sync_bn && n >= 2) {
        for (int i = 0; i < all; i++) {
            if (sizes[i] != 1) continue;
            int big = 0;
            for (int j = 1; j < all; j++)
                if (sizes[j] > sizes[big]) big = j;
            if (big == i) continue;
            sizes[big]++;
            sizes[i] = 0;
        }
    }
    t->empty_shards = 0;
    t->max_shard = 0;
    t->first_busy = -1;
    for (int i = 0; i < all; i++) {
        t->empty_shards += sizes[i] == 0;
        if (sizes[i] > 0 && t->first_busy < 0) t->first_busy = i;
        if (sizes[i] > t->max_shard) t->max_shard = sizes[i];
    }
    int off = 0;
    for (int i = 0; i < first; i++) off += sizes[i];
    for (int i = 0; i < t->k; i++) {
        t->workers[i].off = off;
        t->workers[i].n = sizes[first + i];
        off += sizes[first + i];
    }
    return CLT_OK;
}

/* The memory check where the largest shard of any device (of any
 * process: every process decides alike) is larger than any checked before.
 * Nothing is allocated yet: a refusal leaves the trainer as it was. Across
 * processes, one that does not fit makes every one refuse. */
static clt_status check_memory(clt_trainer *t, int most)
{
    if (most <= t->mem_checked) return CLT_OK;
    clt_status s = clt_trainer_memory_check(t);
    if (t->cl) {
        double bad = s != CLT_OK;
        CLT_TRY(clt_cluster_sum_doubles(t->cl, &bad, 1));
        if (bad > 0 && s == CLT_OK)
            s = clt_fail(CLT_ERR_DEVICE_MEMORY, "the devices of another MPI process lack the memory for %d samples "
                         "per device (its message says how much)", most);
    }
    if (s == CLT_OK) t->mem_checked = most;
    return s;
}

clt_status clt_trainer_check_memory(clt_trainer *t, int batch_size)
{
    if (!t) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_check_memory: NULL trainer");
    if (batch_size < 1) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_check_memory: batch of %d samples", batch_size);
    CLT_TRY(assign_shards(t, batch_size, 1));
    CLT_TRY(check_memory(t, t->max_shard));
    /* an evaluation runs batches of batch_size on each device */
    for (int i = 0; i < t->k; i++) t->workers[i].n = batch_size;
    return check_memory(t, batch_size);
}

/* Auto split: weights follow each device's smoothed samples/s; the first
 * steps (compilation, caches) are not measured. */
static void update_auto_split(clt_trainer *t)
{
    if (t->cfg.split != CLT_SPLIT_AUTO || t->steps < 3) return;
    int all = 1;
    for (int i = 0; i < t->k; i++) {
        clt_worker *w = &t->workers[i];
        if (w->n > 0 && w->stats.compute_s > 0) {
            double sps = w->n / w->stats.compute_s;
            w->ema_sps = w->ema_sps > 0 ? 0.8 * w->ema_sps + 0.2 * sps : sps;
        }
        all &= w->ema_sps > 0;
    }
    /* Re-weigh every 10 steps, once every device has been measured. */
    if (!all || t->steps % 10 != 0) return;
    for (int i = 0; i < t->k; i++) t->weights[i] = (float)t->workers[i].ema_sps;
}

/* Loss and correct count of the last command over every device (of every
 * process), and how many devices failed it (totals[2]; every process takes
 * part even after a local failure, so none waits). */
static clt_status gather_totals(clt_trainer *t, double totals[3])
{
    totals[0] = totals[1] = totals[2] = 0;
    for (int i = 0; i < t->k; i++) {
        totals[0] += t->workers[i].loss;
        totals[1] += (double)t->workers[i].correct;
        totals[2] += t->workers[i].status != CLT_OK;
    }
    return t->cl ? clt_cluster_sum_doubles(t->cl, totals, 3) : CLT_OK;
}

clt_status clt_trainer_step(clt_trainer *t, const float *images, const int32_t *labels, int n, double *loss_sum,
                            int64_t *correct)
{
    if (!t || !images || !labels) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_step: NULL argument");
    if (t->failed)
        return clt_fail(t->fail_status, "the trainer stopped after an earlier failure: %s", t->fail_msg);
    if (n < 1) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_step: batch of %d samples", n);
    CLT_TRY(clt_labels_check(labels, n, clt_net_classes(t->workers[0].net), "clt_trainer_step"));
    CLT_TRY(assign_shards(t, n, 1));
    CLT_TRY(check_memory(t, t->max_shard));
    t->images = images;
    t->labels = labels;
    t->batch = n;
    t->steps++;
    t->optim_steps++;
    CLT_TRY(run_command(t, CMD_STEP));
    clt_status avg = average_state(t);
    if (avg == CLT_OK) avg = share_state(t);
    if (avg != CLT_OK) {
        t->failed = 1;
        t->fail_status = avg;
        snprintf(t->fail_msg, sizeof t->fail_msg, "%s", clt_last_error());
        return avg;
    }
    double totals[3];
    CLT_TRY(gather_totals(t, totals));
    double loss = totals[0];
    int64_t ok = (int64_t)totals[1];
    update_auto_split(t);
    if (t->cfg.check_every > 0 && t->steps % t->cfg.check_every == 0) CLT_TRY(clt_trainer_check_replicas(t));
    if (loss_sum) *loss_sum = loss;
    if (correct) *correct = ok;
    return CLT_OK;
}

clt_status clt_trainer_evaluate(clt_trainer *t, const clt_dataset *ds, int batch_size, double *mean_loss,
                                double *accuracy)
{
    if (!t || !ds) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_evaluate: NULL argument");
    if (t->failed)
        return clt_fail(t->fail_status, "the trainer stopped after an earlier failure: %s", t->fail_msg);
    if (batch_size < 1) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_evaluate: batch size %d", batch_size);
    CLT_TRY(clt_net_check_dataset(t->workers[0].net, ds, "clt_trainer_evaluate"));
    int64_t total = clt_dataset_size(ds);
    CLT_TRY(assign_shards(t, (int)total, 0));
    int shards[CLT_MAX_DEVICES];
    for (int i = 0; i < t->k; i++) { /* a device evaluates its shard in batches of batch_size */
        shards[i] = t->workers[i].n;
        if (t->workers[i].n > batch_size) t->workers[i].n = batch_size;
    }
    clt_status fits = check_memory(t, t->max_shard < batch_size ? t->max_shard : batch_size);
    for (int i = 0; i < t->k; i++) t->workers[i].n = shards[i];
    CLT_TRY(fits);
    t->eval_ds = ds;
    t->eval_batch = batch_size;
    CLT_TRY(run_command(t, CMD_EVAL));
    double totals[3];
    clt_status gs = gather_totals(t, totals);
    for (int i = 0; i < t->k; i++)
        if (t->workers[i].status != CLT_OK) return clt_fail(t->workers[i].status, "%s", t->workers[i].error);
    CLT_TRY(gs);
    if (totals[2] > 0)
        return clt_fail(CLT_ERR_CANCELLED, "evaluation failed on %.0f device(s) of other MPI processes", totals[2]);
    double loss = totals[0];
    int64_t ok = (int64_t)totals[1];
    if (mean_loss) *mean_loss = loss / (double)total;
    if (accuracy) *accuracy = (double)ok / (double)total;
    return CLT_OK;
}

clt_status clt_trainer_check_replicas(clt_trainer *t)
{
    if (!t) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_check_replicas: NULL trainer");
    float *host;
    CLT_TRY(clt_aligned_alloc((void **)&host, t->flat, sizeof(float), "replica check"));
    uint64_t ref = 0;
    clt_status s = CLT_OK;
    for (int i = 0; i < t->k && s == CLT_OK; i++) {
        s = clt_net_read(t->workers[i].net, CLT_NET_PARAMS, (clt_span){0, t->flat}, host, NULL);
        if (s != CLT_OK) {
            s = clt_fail_context(s, "replica check: read parameters");
            int same; /* the others still compare (and see a difference): none waits */
            if (i == 0 && t->cl) clt_cluster_same(t->cl, 0, &same);
            break;
        }
        uint64_t h = clt_hash(CLT_HASH_INIT, host, t->flat * sizeof(float));
        int same = 1;
        if (i == 0 && t->cl && (s = clt_cluster_same(t->cl, h, &same)) == CLT_OK && !same)
            s = clt_fail(CLT_ERR_INTERNAL, "replicas differ between MPI processes after step %lld (this is process %d "
                         "of %d), or one could not read its replica", (long long)t->steps, clt_cluster_rank(t->cl),
                         clt_cluster_size(t->cl));
        if (i == 0) ref = h;
        else if (h != ref)
            s = clt_fail(CLT_ERR_INTERNAL, "replica on device %d differs from the one on device %d after step %lld",
                         t->workers[i].dev->info.index, t->workers[0].dev->info.index, (long long)t->steps);
    }
    clt_aligned_free(host);
    return s;
}

clt_status clt_trainer_stats(const clt_trainer *t, clt_trainer_device_stats *stats, int cap)
{
    if (!t || (!stats && cap > 0)) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_stats: NULL argument");
    double total = 0;
    for (int i = 0; i < t->k; i++) total += t->cfg.split == CLT_SPLIT_EQUAL ? 1.0 : t->weights[i];
    for (int i = 0; i < t->k && i < cap; i++) {
        stats[i] = t->workers[i].stats;
        stats[i].device = t->workers[i].dev->info.index;
        stats[i].weight = (float)((t->cfg.split == CLT_SPLIT_EQUAL ? 1.0 : t->weights[i]) / total);
        stats[i].samples_per_s = t->workers[i].ema_sps;
    }
    return CLT_OK;
}

void clt_trainer_inject_failure(clt_trainer *t, int slot, int64_t step)
{
    if (t && slot >= 0 && slot < t->k) t->workers[slot].inject_fail_at = (int)step;
}
