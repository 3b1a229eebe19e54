/* Shard sizes from weights by largest remainder: deterministic, sums to n;
 * and the auto split's whole units (parallel/trainer.h). */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "parallel/trainer.h"

clt_status clt_split_sizes(int n, int k, const float *weights, int *sizes)
{
    if (!sizes || k < 1 || n < 0)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_split_sizes: n %d, k %d%s", n, k, sizes ? "" : ", sizes NULL");
    double total = 0;
    for (int i = 0; i < k; i++) {
        double w = weights ? weights[i] : 1.0;
        if (!(w >= 0) || !isfinite(w))
            return clt_fail(CLT_ERR_INVALID_ARG, "split weight %d is %g (must be finite and >= 0)", i, w);
        total += w;
    }
    if (!(total > 0)) return clt_fail(CLT_ERR_INVALID_ARG, "split weights sum to 0");
    int given = 0;
    for (int i = 0; i < k; i++) {
        double w = weights ? weights[i] : 1.0;
        sizes[i] = (int)floor(n * w / total);
        given += sizes[i];
    }
    /* Hand out the rest one by one to the largest remainders, lowest index
     * first on ties. */
    while (given < n) {
        int best = 0;
        double best_r = -1;
        for (int i = 0; i < k; i++) {
            double w = weights ? weights[i] : 1.0;
            double r = n * w / total - sizes[i];
            if (r > best_r + 1e-12) {
                best_r = r;
                best = i;
            }
        }
        sizes[best]++;
        given++;
    }
    return CLT_OK;
}

#define UNIT 32
#define MIN_UNITS 4

/* The step a split predicts: its slowest shard at the measured rates. */
static double predicted(int all, const float *rates, const int *sizes)
{
    double worst = 0;
    for (int i = 0; i < all; i++) {
        double t = sizes[i] / (double)rates[i];
        if (sizes[i] > 0 && t > worst) worst = t;
    }
    return worst;
}

int clt_split_units(int n, int all, const float *rates, const int *prev, int *sizes)
{
    if (all < 1 || n < MIN_UNITS * UNIT * all) return 0;
    int fastest = 0, q[CLT_MAX_ALL_DEVICES];
    for (int i = 0; i < all; i++) {
        if (!(rates[i] > 0) || !isfinite(rates[i])) return 0;
        if (rates[i] > rates[fastest]) fastest = i;
    }
    if (clt_split_sizes(n / UNIT, all, rates, q) != CLT_OK) {
        clt_clear_error();
        return 0;
    }
    int given = 0;
    for (int i = 0; i < all; i++) {
        sizes[i] = q[i] * UNIT;
        given += q[i];
    }
    sizes[fastest] += n - given * UNIT;
    /* One unit at a time from the slowest shard to where it costs least. */
    for (int moves = 0; moves < n / UNIT; moves++) {
        double best = predicted(all, rates, sizes);
        int slow = 0, to = -1;
        for (int i = 1; i < all; i++)
            if (sizes[i] / (double)rates[i] > sizes[slow] / (double)rates[slow]) slow = i;
        if (sizes[slow] < UNIT) break;
        for (int j = 0; j < all; j++) {
            if (j == slow) continue;
            sizes[slow] -= UNIT, sizes[j] += UNIT;
            double t = predicted(all, rates, sizes);
            sizes[slow] += UNIT, sizes[j] -= UNIT;
            if (t < best) best = t, to = j;
        }
        if (to < 0) break;
        sizes[slow] -= UNIT, sizes[to] += UNIT;
    }
    if (prev) {
        int sum = 0;
        for (int i = 0; i < all; i++) sum += prev[i] >= 0 ? prev[i] : n + 1;
        if (sum == n && predicted(all, rates, prev) <= 1.05 * predicted(all, rates, sizes))
            for (int i = 0; i < all; i++) sizes[i] = prev[i];
    }
    return 1;
}

/* Shards of n samples over every device (every process's, with MPI: each
 * process computes the same list and takes its own devices' part). */
clt_status clt_trainer_assign_shards(clt_trainer *t, int n, int training)
{
    int sizes[CLT_MAX_ALL_DEVICES]; /* start() refused more */
    int all = t->cl ? clt_cluster_devices(t->cl) : t->k, first = t->cl ? clt_cluster_first(t->cl) : 0;
    const float *weights = t->cfg.split == CLT_SPLIT_EQUAL ? NULL : t->cl ? clt_cluster_weights(t->cl) : t->weights;
    CLT_TRY(clt_split_sizes(n, all, weights, sizes));
    if (t->cfg.split == CLT_SPLIT_AUTO && !t->cl) {
        /* The CPU kernels pad a shard to 32 lanes: measured shards of 120
         * and 136 ran 128 and 160 lanes, the padded device measured slower,
         * and a proportional split drifted (PoCL + Intel, LeNet batch 256:
         * it scaled worse than the equal split). */
        int prev[CLT_MAX_ALL_DEVICES];
        for (int i = 0; i < all; i++) prev[i] = t->workers[i].n;
        clt_split_units(n, all, weights, prev, sizes);
    }
    /* Batch norm on a shard's own statistics needs two samples (one value
     * per channel has no variance): a lone sample joins the largest shard. */
    if (training && t->bn.rounds && !t->cfg.sync_bn && n >= 2) {
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

/* Auto split: weights follow each device's smoothed samples/s; the first
 * steps (compilation, caches) are not measured. */
void clt_trainer_update_auto_split(clt_trainer *t)
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
