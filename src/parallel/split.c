/* Shard sizes from weights by largest remainder: deterministic, sums to n. */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"

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
