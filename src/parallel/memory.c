/* Whether a step fits in memory, checked before the trainer allocates a
 * batch's buffers: a GPU out of memory fails a step half-way, and CPU
 * drivers allocate from the process's address space, where PoCL aborts
 * the process on a failed allocation (ResNet-18 at batch 8000 under a
 * 6 GB RLIMIT_AS). The estimate (nn/net_memory.c) is compared with each
 * device's global memory and, for CPU devices together, with what the
 * process's limits leave. */
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "parallel/trainer.h"

/* Pages of the process: total and private data (/proc/self/statm). */
static int statm(double *size, double *data)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long s = 0, r, sh, text, lib, d = 0;
    int ok = f && fscanf(f, "%lu %lu %lu %lu %lu %lu", &s, &r, &sh, &text, &lib, &d) == 6;
    if (f) fclose(f);
    double page = (double)sysconf(_SC_PAGESIZE);
    *size = (double)s * page, *data = (double)d * page;
    return ok;
}

/* Bytes the process may still map under RLIMIT_AS and RLIMIT_DATA (the
 * tighter), into *room with the limit and the use it comes from; 0 when
 * neither limits it. */
static int process_room(double *room, double *limit, double *used)
{
    struct rlimit as, data;
    double size, priv;
    if (!statm(&size, &priv)) return 0;
    int found = 0;
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
        *limit = (double)as.rlim_cur, *used = size, *room = *limit - size;
        found = 1;
    }
    if (getrlimit(RLIMIT_DATA, &data) == 0 && data.rlim_cur != RLIM_INFINITY &&
        (!found || (double)data.rlim_cur - priv < *room)) {
        *limit = (double)data.rlim_cur, *used = priv, *room = *limit - priv;
        found = 1;
    }
    return found;
}

static double gb(double bytes) { return bytes / 1e9; }

#define MARGIN 1.1

clt_status clt_trainer_memory_check(clt_trainer *t)
{
    const clt_optim_ops *ops = clt_optim_find(t->optim.kind);
    int slots = ops ? ops->slots(&t->optim) : 2;
    double grow = 0, grow_fixed = 0, cpu_per = 0;
    int cpu_n = 0, cpu_cap = 0;
    for (int i = 0; i < t->k; i++) {
        const clt_worker *w = &t->workers[i];
        clt_net_memory m;
        clt_net_memory_estimate(w->net, slots, &m);
        /* the work buffer twice: it grows by a new allocation while
         * queued kernels may still hold the smaller one; and a margin for
         * what the estimate misses (drivers' own, alignment: ResNet-18 on
         * PoCL took a little more than estimated at the edge of ulimit -v) */
        double per = MARGIN * (m.per_sample + 2 * m.work), need = m.fixed + (double)w->n * per;
        const clt_device_info *in = clt_device_get_info(w->dev);
        if (in->global_mem_bytes > 0 && need > (double)in->global_mem_bytes) {
            double most = ((double)in->global_mem_bytes - m.fixed) / per;
            return clt_fail(CLT_ERR_DEVICE_MEMORY,
                            "device %d (%s): %d samples need about %.2f GB (%.2f GB of parameters, gradients and "
                            "optimizer state, %.1f MB per sample), more than its %.2f GB of memory: at most about "
                            "%.0f samples per device fit",
                            in->index, in->name, w->n, gb(need), gb(m.fixed), per / 1e6,
                            gb((double)in->global_mem_bytes), most > 0 ? most : 0);
        }
        if (in->type != CLT_DEVICE_CPU) continue;
        /* what the process maps beyond what it holds now (the parameters
         * since creation, the batch buffers it has): the optimizer state
         * made at the first update, and a larger batch's buffers */
        int cap = clt_net_batch_capacity(w->net);
        double missing = (double)(slots - clt_net_slots(w->net)) * sizeof(float) * (double)clt_net_floats(w->net, CLT_NET_GRADS);
        grow_fixed += missing > 0 ? missing : 0;
        grow += (missing > 0 ? missing : 0) + (w->n > cap ? (double)(w->n - cap) * per : 0);
        cpu_per += per, cpu_n = w->n > cpu_n ? w->n : cpu_n, cpu_cap = cap > cpu_cap ? cap : cpu_cap;
    }
    double room, limit, used;
    if (grow > 0 && process_room(&room, &limit, &used) && grow > room) {
        double most = cpu_cap + (room - grow_fixed) / cpu_per;
        return clt_fail(CLT_ERR_DEVICE_MEMORY,
                        "%d samples per CPU device need about %.2f GB more, and this process may map only %.2f GB "
                        "more (its limit, ulimit -v or -d, is %.2f GB; %.2f GB are in use): at most about %.0f "
                        "samples per device fit",
                        cpu_n, gb(grow), gb(room > 0 ? room : 0), gb(limit), gb(used), most > 0 ? most : 0);
    }
    return CLT_OK;
}

/* The memory check where the largest shard of any device (of any
 * process: every process decides alike) is larger than any checked before.
 * Nothing is allocated yet: a refusal leaves the trainer as it was. Across
 * processes, one that does not fit makes every one refuse. */
clt_status clt_trainer_fit_memory(clt_trainer *t, int most)
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
    CLT_TRY(clt_trainer_assign_shards(t, batch_size, 1));
    CLT_TRY(clt_trainer_fit_memory(t, t->max_shard));
    /* an evaluation runs batches of batch_size on each device */
    for (int i = 0; i < t->k; i++) t->workers[i].n = batch_size;
    return clt_trainer_fit_memory(t, batch_size);
}
