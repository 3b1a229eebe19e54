/* The default reduction: a local host sum in fixed device order. */
#include <string.h>

#include "parallel/trainer.h"

clt_status clt_reduce_local_sum(void *user, const float *const *in, int k, float *out, size_t count,
                                float scale)
{
    (void)user;
    clt_reduce_local_sum_to(in, k, &out, 1, count, scale);
    return CLT_OK;
}

void clt_reduce_local_sum_to(const float *const *in, int k, float *const *out, int n_out, size_t count, float scale)
{
    /* A block at a time, device-major within it (the loops vectorise); the
     * order of additions per element is device 0, 1, ..., k-1 whatever the
     * slicing. A block is read whole before it is written, so out may be
     * among the in[]. */
    enum { BLOCK = 1024 };
    float t[BLOCK];
    for (size_t i0 = 0; i0 < count; i0 += BLOCK) {
        size_t n = count - i0 < BLOCK ? count - i0 : BLOCK;
        for (size_t i = 0; i < n; i++) t[i] = in[0][i0 + i];
        for (int d = 1; d < k; d++) {
            const float *src = in[d] + i0;
            for (size_t i = 0; i < n; i++) t[i] += src[i];
        }
        for (size_t i = 0; i < n; i++) t[i] *= scale;
        for (int d = 0; d < n_out; d++) memcpy(out[d] + i0, t, n * sizeof(float));
    }
}
