/* The trainer's life cycle: its configuration, the devices and their
 * worker threads, the gradient buckets, and the first failure. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/config.h"
#include "runtime/gemm.h"
#include "parallel/reduction.h"
#include "parallel/test_hooks.h"

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
    /* the reserved bytes past the fields laid over them */
    size_t used = offsetof(clt_trainer_config, precision) + sizeof c->precision - offsetof(clt_trainer_config, reserved);
    CLT_TRY(clt_config_check_reserved_from(c->reserved, used, sizeof c->reserved, "clt_trainer_create"));
    if (c->precision != CLT_PRECISION_DEFAULT && c->precision != CLT_PRECISION_FP32)
        return clt_fail(CLT_ERR_INVALID_ARG, "trainer: precision %d: expected CLT_PRECISION_DEFAULT or CLT_PRECISION_FP32",
                        (int)c->precision);
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

static clt_status open_worker(clt_trainer *t, int slot, int device_index)
{
    clt_worker *w = &t->workers[slot];
    w->t = t;
    w->slot = slot;
    CLT_TRY(clt_device_open(device_index, &w->dev));
    clt_device_set_log(w->dev, t->cfg.log, t->cfg.log_user);
    clt_gemm_share_lock(w->dev, &t->gemm_mu);
    clt_device_set_interrupt(w->dev, &t->interrupt);
    if (t->cfg.precision == CLT_PRECISION_FP32) { /* no TF32 tile offered to the tuner (conv_implicit.c) */
        clt_device_settings s = *clt_device_get_settings(w->dev);
        s.tf32 = CLT_TF32_OFF;
        CLT_TRY(clt_device_set_settings(w->dev, &s));
    }
    /* The programs every net uses and CLBlast's (whose compile cache is
     * not thread-safe) built here, one device at a time, before any worker
     * thread runs; the others are built in the workers at first use, each
     * on its own device. */
    return clt_device_warmup(w->dev);
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
    CLT_TRY(clt_replicas_create(t, hooks));
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
    CLT_TRY(clt_sync_bn_plan(t));
    t->reduction = clt_reduction_choose(t);
    clt_device_log(t->workers[0].dev, 0, "trainer: %d device(s), gradients reduced: %s", k, t->reduction->name);
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
    clt_sync_bn_free(t);
    free(t->spec);
    free(t);
}

void clt_trainer_fail_locked(clt_trainer *t, int slot, clt_status s, const char *msg)
{
    if (!t->failed && slot < 0) { /* not a device's: MPI between the processes */
        snprintf(t->fail_msg, sizeof t->fail_msg, "MPI process %d: %s", clt_cluster_rank(t->cl), msg);
        t->fail_status = s;
        t->failed = 1;
    } else if (!t->failed) {
        const clt_device_info *in = clt_device_get_info(t->workers[slot].dev);
        snprintf(t->fail_msg, sizeof t->fail_msg, "device %d (%s): %s", in->index, in->name, msg);
        t->fail_status = s;
        t->failed = 1;
    }
    pthread_cond_broadcast(&t->cv);
}

int clt_trainer_device_count(const clt_trainer *t) { return t ? t->k : 0; }

clt_status clt_trainer_set_reduce(clt_trainer *t, clt_reduce_fn fn, void *user)
{
    if (!t) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_set_reduce: trainer is NULL");
    t->reduce = fn ? fn : clt_reduce_local_sum;
    t->reduce_user = fn ? user : NULL;
    t->reduction = clt_reduction_choose(t);
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

void clt_trainer_inject_failure(clt_trainer *t, int slot, int64_t step)
{
    if (t && slot >= 0 && slot < t->k) t->workers[slot].inject_fail_at = (int)step;
}
