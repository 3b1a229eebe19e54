/* The replicas: one net per device, made alike (one parameter layout, the
 * same initial parameters from replica 0) and checked alike on request. */
#include <stdio.h>

#include "core/alloc.h"
#include "core/hash.h"
#include "parallel/test_hooks.h"
#include "parallel/trainer.h"

/* One parameter layout for every replica: offsets aligned to the largest
 * base alignment among the devices (vendors differ: NVIDIA 4096 bits, PoCL
 * 1024), so flat spans mean the same floats on every device. */
clt_status clt_replicas_create(clt_trainer *t, const clt_trainer_test_hooks *hooks)
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
        peers &= clt_device_get_info(t->workers[i].dev)->type == CLT_DEVICE_CPU && !(force_copies && force_copies[i]);
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
                         clt_device_get_info(t->workers[i].dev)->index, clt_device_get_info(t->workers[0].dev)->index,
                         (long long)t->steps);
    }
    clt_aligned_free(host);
    return s;
}
