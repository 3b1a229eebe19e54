/* Replicas that read each other's gradients. Where every replica shares
 * its gradients with the host (runtime/svm.h) on a CPU device, every
 * device can read the others' as well, through a buffer of its own context
 * made over their memory. Then no sum is written anywhere: once a bucket
 * arrived from every device, each device's optimizer reads the bucket of
 * all k replicas and sums it itself, with the host sum's roundings
 * (clt_grads), so the parameters are the bits the host sum gives. The host
 * sum read k and wrote k copies of every bucket on the host's cores while
 * the devices computed; on two CPU runtimes sharing two cores that took
 * the 20M-parameter MLP from 1.75-1.80x to 1.48-1.61x (bench/README.md).
 *
 * By the letter of OpenCL a CL_MEM_USE_HOST_PTR buffer may cache a copy of
 * its memory; CPU runtimes use the memory itself. Each wrapper is checked
 * at creation: a copy through it must see two values written to the
 * memory afterwards. A device whose wrapper fails, or a trainer with
 * more than CLT_GRADS_MAX devices, a GPU, or a device flushing denormals
 * (its sum would differ from another's) keeps the host sum. */
#include <stdio.h>
#include <string.h>

#include "parallel/trainer.h"

/* Whether the device computes with denormal floats (the host sum does). */
static int keeps_denormals(const clt_device *dev)
{
    cl_device_fp_config fp = 0;
    return clGetDeviceInfo(dev->id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL) == CL_SUCCESS &&
           (fp & CL_FP_DENORM);
}

/* Whether a copy through `peer` (device w's wrapper of memory `host`) sees
 * what the host writes there after the wrapper was made. `host[0]` is
 * restored. */
static int reads_through(clt_worker *w, cl_mem peer, float *host, cl_mem out)
{
    const float keep = host[0], values[2] = {1.25f, -3.5f};
    int ok = 1;
    for (int r = 0; r < 2 && ok; r++) {
        host[0] = values[r];
        float got = 0;
        ok = clEnqueueCopyBuffer(w->dev->queue, peer, out, 0, 0, sizeof(float), 0, NULL, NULL) == CL_SUCCESS &&
             clt_device_read(w->dev, out, 0, sizeof got, &got, "peer gradient check") == CLT_OK &&
             memcmp(&got, &values[r], sizeof got) == 0;
    }
    host[0] = keep;
    return ok;
}

/* Worker w's wrappers of every other replica's gradients; 0 when one is
 * refused or fails its check. */
static int open_worker_peers(clt_trainer *t, clt_worker *w)
{
    size_t bytes = t->flat * sizeof(float);
    cl_int err;
    cl_mem out = clCreateBuffer(w->dev->ctx, CL_MEM_READ_WRITE, sizeof(float), NULL, &err);
    if (!out) return 0;
    int ok = 1;
    for (int j = 0; j < t->k && ok; j++) {
        if (j == w->slot) {
            w->peers[j] = clt_net_grads_mem(w->net);
            clRetainMemObject(w->peers[j]);
            continue;
        }
        float *host = t->workers[j].staging; /* the shared gradients themselves */
        w->peers[j] = clCreateBuffer(w->dev->ctx, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, bytes, host, &err);
        ok = w->peers[j] && reads_through(w, w->peers[j], host, out);
        if (!ok)
            clt_device_log(w->dev, 0, "device %d cannot read device %d's gradients in place: the host sums them",
                           w->dev->info.index, t->workers[j].dev->info.index);
    }
    clReleaseMemObject(out);
    clt_clear_error(); /* a failed check is a choice of path, not an error */
    return ok;
}

void clt_peers_close(clt_worker *w)
{
    int any = 0;
    for (int j = 0; j < CLT_GRADS_MAX; j++) any |= w->peers[j] != NULL;
    if (!any) return;
    clFinish(w->dev->queue); /* nothing still reads through them */
    for (int j = 0; j < CLT_GRADS_MAX; j++) {
        if (w->peers[j]) clReleaseMemObject(w->peers[j]);
        w->peers[j] = NULL;
    }
}

void clt_peers_open(clt_trainer *t, int allowed)
{
    t->peer_sum = 0;
    int can = allowed && !t->cl && t->k > 1 && t->k <= CLT_GRADS_MAX && t->cfg.clip_grad_norm == 0;
    for (int i = 0; i < t->k && can; i++) {
        const clt_worker *w = &t->workers[i];
        can = clt_net_grads_shared(w->net) && w->dev->info.type == CLT_DEVICE_CPU && keeps_denormals(w->dev);
    }
    /* nothing may still write the gradients the checks write (their zeroing) */
    for (int i = 0; i < t->k && can; i++) can = clFinish(t->workers[i].dev->queue) == CL_SUCCESS;
    for (int i = 0; i < t->k && can; i++) can = open_worker_peers(t, &t->workers[i]);
    if (!can)
        for (int i = 0; i < t->k; i++) clt_peers_close(&t->workers[i]);
    t->peer_sum = can;
}
