/* Replicas that update each other. Where every replica is on a CPU device
 * and shares its parameters, gradients and optimizer state with the host
 * (runtime/svm.h), every device can reach the others' too, through
 * buffers of its own context made over their memory. Then the host sums
 * nothing and no device updates more than its share: once a bucket arrived
 * from every device, device i takes its slice of the bucket (the i-th of
 * k), sums the k replicas' gradients there itself, with the host sum's
 * roundings (clt_grads), reads its own parameters and state, and writes the
 * results into every replica's (clt_optim_io). The parameters are the bits
 * the host sum and k replicated updates give, and every replica holds them
 * all. On two CPU runtimes sharing two cores the host sum, and then the
 * replicated update (320 MB per device), each measurably cut the
 * 20M-parameter MLP's scaling (bench/README.md).
 *
 * By the letter of OpenCL a CL_MEM_USE_HOST_PTR buffer may keep a copy of
 * its memory; CPU runtimes use the memory itself. Each wrapper is checked
 * at creation: a copy out of it sees values written to the memory
 * afterwards, and a copy into it lands there. That cannot tell a runtime
 * which copies the whole buffer in when a command starts and back when it
 * ends (legal, and unknown among CPU runtimes): there the devices' slices
 * would overwrite each other, which clt_trainer_check_replicas (the
 * config's check_every) reports. A wrapper that fails, more
 * than CLT_GRADS_MAX devices, a GPU, a device flushing denormals (its sums
 * would differ from the host's), MPI or clipping keep the host sum and
 * replicated updates. */
#include <stdio.h>
#include <string.h>

#include "parallel/reduction.h"
#include "runtime/queue.h"

/* Whether device w reads the memory `host` live through its wrapper
 * `peer` (a copy out sees two values the host writes after the wrapper was
 * made) and, with `write`, writes it (a value copied in lands there).
 * `host[0]` is restored. */
static int live(clt_worker *w, cl_mem peer, float *host, cl_mem out, int write)
{
    const float keep = host[0], values[3] = {1.25f, -3.5f, 6.0f};
    cl_command_queue q = clt_device_queue(w->dev);
    int ok = 1;
    for (int r = 0; r < 2 && ok; r++) {
        host[0] = values[r];
        float got = 0;
        ok = clt_queue_copy(q, peer, 0, out, 0, sizeof(float), "peer check") == CLT_OK &&
             clt_device_read(w->dev, out, 0, sizeof got, &got, "peer check") == CLT_OK &&
             memcmp(&got, &values[r], sizeof got) == 0;
    }
    if (ok && write)
        ok = clt_device_write(w->dev, out, 0, sizeof(float), &values[2], "peer check") == CLT_OK &&
             clt_queue_copy(q, out, 0, peer, 0, sizeof(float), "peer check") == CLT_OK &&
             clt_queue_finish(q, "peer check") == CLT_OK && memcmp(&host[0], &values[2], sizeof(float)) == 0;
    host[0] = keep;
    return ok;
}

/* Worker w's buffer over buffer b of replica j (its own: the net's, retained). */
static int wrap(clt_trainer *t, clt_worker *w, int j, clt_net_buffer b, cl_mem out, cl_mem *to)
{
    clt_net *net = t->workers[j].net;
    if (j == w->slot) {
        cl_mem own = clt_net_buffer_mem(net, b);
        *to = clt_buffer_retain(own) ? own : NULL;
        return *to != NULL;
    }
    float *host = clt_net_shared(net, b);
    int write = b != CLT_NET_GRADS;
    *to = NULL;
    if (host)
        clt_buffer_create(w->dev, write ? CL_MEM_READ_WRITE : CL_MEM_READ_ONLY, t->flat * sizeof(float), host,
                          "peer buffer", to);
    if (*to && live(w, *to, host, out, write)) return 1;
    clt_device_log(w->dev, 0, "device %d cannot reach device %d's replica in place: the host sums gradients",
                   clt_device_get_info(w->dev)->index, clt_device_get_info(t->workers[j].dev)->index);
    return 0;
}

/* Worker w's buffers over every replica's: gradients in device order;
 * parameters and the `slots` state slots with its own first. */
static int open_worker_peers(clt_trainer *t, clt_worker *w, int slots)
{
    cl_mem out;
    if (clt_buffer_create(w->dev, CL_MEM_READ_WRITE, sizeof(float), NULL, "peer check", &out) != CLT_OK) return 0;
    int ok = 1;
    for (int j = 0; j < t->k && ok; j++) {
        int r = j == w->slot ? 0 : j < w->slot ? j + 1 : j; /* own first, then the others in order */
        ok = wrap(t, w, j, CLT_NET_GRADS, out, &w->peer_g[j]) && wrap(t, w, j, CLT_NET_PARAMS, out, &w->peer_out[0][r]);
        for (int i = 0; i < slots && ok; i++)
            ok = wrap(t, w, j, (clt_net_buffer)(CLT_NET_SLOT0 + i), out, &w->peer_out[1 + i][r]);
    }
    clt_buffer_release(out);
    clt_clear_error(); /* a failed check chooses the host sum; it is not an error */
    return ok;
}

static void release_all(cl_mem *m, int n)
{
    for (int j = 0; j < n; j++) {
        clt_buffer_release(m[j]);
        m[j] = NULL;
    }
}

void clt_peers_close(clt_worker *w)
{
    if (!w->peer_g[0]) return; /* made first: nothing was */
    clt_queue_drain(clt_device_queue(w->dev)); /* nothing still reads or writes through them */
    release_all(w->peer_g, CLT_GRADS_MAX);
    for (int i = 0; i <= CLT_OPTIM_SLOTS; i++) release_all(w->peer_out[i], CLT_GRADS_MAX);
}

void clt_peers_open(clt_trainer *t)
{
    t->peer_sum = 0;
    const clt_optim_ops *ops = clt_optim_find(t->optim.kind);
    int slots = ops ? ops->slots(&t->optim) : 0;
    /* The nets share their parameters only where the trainer allows peers
     * (create_nets: 2 to CLT_GRADS_MAX CPU devices, no MPI, no clipping). */
    int can = ops != NULL;
    for (int i = 0; i < t->k && can; i++) {
        clt_worker *w = &t->workers[i];
        can = clt_net_shared(w->net, CLT_NET_PARAMS) && clt_net_shared(w->net, CLT_NET_GRADS) &&
              clt_device_keeps_denormals(w->dev) &&
              clt_net_ensure_slots(w->net, slots) == CLT_OK &&
              clt_optim_build(w->dev, ops, t->k, t->k) == CLT_OK; /* here a failure still chooses the host sum */
        for (int s = 0; s < slots && can; s++) can = clt_net_shared(w->net, (clt_net_buffer)(CLT_NET_SLOT0 + s)) != NULL;
    }
    /* nothing may still write what the checks write (the buffers' zeroing) */
    for (int i = 0; i < t->k && can; i++) can = clt_device_finish(t->workers[i].dev) == CLT_OK;
    for (int i = 0; i < t->k && can; i++) can = open_worker_peers(t, &t->workers[i], slots);
    if (!can)
        for (int i = 0; i < t->k; i++) clt_peers_close(&t->workers[i]);
    clt_clear_error();
    t->peer_sum = can;
}

/* w's share of bucket b's update, every replica's gradients summed times
 * 1/batch, into every replica, once the bucket arrived from all. */
static clt_status update_share(clt_worker *w, int b)
{
    clt_trainer *t = w->t;
    float scale = clt_reduction_scale(t);
    const clt_bucket *bk = &t->buckets[b];
    /* this device's slice, in whole cache lines but the last: no two
     * devices write one line */
    size_t line = 16, n = bk->span.count;
    size_t lo = n * (size_t)w->slot / (size_t)t->k / line * line;
    size_t hi = w->slot == t->k - 1 ? n : n * (size_t)(w->slot + 1) / (size_t)t->k / line * line;
    if (hi <= lo) return CLT_OK;
    clt_optim_io io = {w->peer_out[0], {NULL}, t->k, {w->peer_g, t->k, scale}};
    for (int i = 0; i < CLT_OPTIM_SLOTS; i++) io.slot[i] = w->peer_out[1 + i];
    return clt_net_optim_update_from(w->net, &t->optim, t->optim_steps, (clt_span){bk->span.offset + lo, hi - lo},
                                     &io);
}

static clt_status bucket(clt_worker *w, int b)
{
    CLT_TRY(clt_pipeline_before_update(w, b));
    return update_share(w, b);
}

const clt_reduction clt_reduction_peers = {.name = "replicas update each other", .bucket = bucket};
