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
 * all. On two CPU runtimes sharing two cores the host sum cost the
 * 20M-parameter MLP 1.75-1.80x -> 1.48-1.61x, and the replicated update
 * (320 MB per device) what remained to 1.7x (bench/README.md).
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

/* Whether the device computes with denormal floats (the host sum does). */
static int keeps_denormals(const clt_device *dev)
{
    cl_device_fp_config fp = 0;
    return clGetDeviceInfo(dev->id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL) == CL_SUCCESS &&
           (fp & CL_FP_DENORM);
}

/* Whether device w reads the memory `host` live through its wrapper
 * `peer` (a copy out sees two values the host writes after the wrapper was
 * made) and, with `write`, writes it (a value copied in lands there).
 * `host[0]` is restored. */
static int live(clt_worker *w, cl_mem peer, float *host, cl_mem out, int write)
{
    const float keep = host[0], values[3] = {1.25f, -3.5f, 6.0f};
    int ok = 1;
    for (int r = 0; r < 2 && ok; r++) {
        host[0] = values[r];
        float got = 0;
        ok = clEnqueueCopyBuffer(w->dev->queue, peer, out, 0, 0, sizeof(float), 0, NULL, NULL) == CL_SUCCESS &&
             clt_device_read(w->dev, out, 0, sizeof got, &got, "peer check") == CLT_OK &&
             memcmp(&got, &values[r], sizeof got) == 0;
    }
    if (ok && write)
        ok = clt_device_write(w->dev, out, 0, sizeof(float), &values[2], "peer check") == CLT_OK &&
             clEnqueueCopyBuffer(w->dev->queue, out, peer, 0, 0, sizeof(float), 0, NULL, NULL) == CL_SUCCESS &&
             clFinish(w->dev->queue) == CL_SUCCESS && memcmp(&host[0], &values[2], sizeof(float)) == 0;
    host[0] = keep;
    return ok;
}

/* Worker w's buffer over buffer b of replica j (its own: the net's, retained). */
static int wrap(clt_trainer *t, clt_worker *w, int j, clt_net_buffer b, cl_mem out, cl_mem *to)
{
    clt_net *net = t->workers[j].net;
    if (j == w->slot) {
        cl_mem own = clt_net_buffer_mem(net, b);
        *to = own && clRetainMemObject(own) == CL_SUCCESS ? own : NULL;
        return *to != NULL;
    }
    float *host = clt_net_shared(net, b);
    cl_int err;
    int write = b != CLT_NET_GRADS;
    *to = host ? clCreateBuffer(w->dev->ctx, (write ? CL_MEM_READ_WRITE : CL_MEM_READ_ONLY) | CL_MEM_USE_HOST_PTR,
                                t->flat * sizeof(float), host, &err)
               : NULL;
    if (*to && live(w, *to, host, out, write)) return 1;
    clt_device_log(w->dev, 0, "device %d cannot reach device %d's replica in place: the host sums gradients",
                   w->dev->info.index, t->workers[j].dev->info.index);
    return 0;
}

/* Worker w's buffers over every replica's: gradients in device order;
 * parameters and the `slots` state slots with its own first. */
static int open_worker_peers(clt_trainer *t, clt_worker *w, int slots)
{
    cl_int err;
    cl_mem out = clCreateBuffer(w->dev->ctx, CL_MEM_READ_WRITE, sizeof(float), NULL, &err);
    if (!out) return 0;
    int ok = 1;
    for (int j = 0; j < t->k && ok; j++) {
        int r = j == w->slot ? 0 : j < w->slot ? j + 1 : j; /* own first, then the others in order */
        ok = wrap(t, w, j, CLT_NET_GRADS, out, &w->peer_g[j]) && wrap(t, w, j, CLT_NET_PARAMS, out, &w->peer_out[0][r]);
        for (int i = 0; i < slots && ok; i++)
            ok = wrap(t, w, j, (clt_net_buffer)(CLT_NET_SLOT0 + i), out, &w->peer_out[1 + i][r]);
    }
    clReleaseMemObject(out);
    clt_clear_error(); /* a failed check chooses the host sum; it is not an error */
    return ok;
}

static void release_all(cl_mem *m, int n)
{
    for (int j = 0; j < n; j++) {
        if (m[j]) clReleaseMemObject(m[j]);
        m[j] = NULL;
    }
}

void clt_peers_close(clt_worker *w)
{
    if (!w->peer_g[0]) return; /* made first: nothing was */
    clFinish(w->dev->queue); /* nothing still reads or writes through them */
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
              keeps_denormals(w->dev) &&
              clt_net_ensure_slots(w->net, slots) == CLT_OK &&
              clt_optim_build(w->dev, ops, t->k, t->k) == CLT_OK; /* here a failure still chooses the host sum */
        for (int s = 0; s < slots && can; s++) can = clt_net_shared(w->net, (clt_net_buffer)(CLT_NET_SLOT0 + s)) != NULL;
    }
    /* nothing may still write what the checks write (the buffers' zeroing) */
    for (int i = 0; i < t->k && can; i++) can = clFinish(t->workers[i].dev->queue) == CL_SUCCESS;
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
