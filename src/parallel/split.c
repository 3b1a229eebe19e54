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
