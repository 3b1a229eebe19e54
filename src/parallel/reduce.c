/* The default reduction: a local host sum in fixed device order. */
#include <string.h>

#include "parallel/trainer.h"

clt_status clt_reduce_local_sum(void *user, const float *const *in, int k, float *out, size_t count,
                                float scale)
{
    (void)user;
    /* Device-major loops vectorise; the order of additions per element is
     * still device 0, 1, ..., k-1, so the result does not depend on slicing. */
    for (size_t i = 0; i < count; i++) out[i] = in[0][i];
    for (int d = 1; d < k; d++) {
        const float *src = in[d];
        for (size_t i = 0; i < count; i++) out[i] += src[i];
    }
    for (size_t i = 0; i < count; i++) out[i] *= scale;
    return CLT_OK;
}

void clt_reduce_local_sum_into(const float *const *in, int k, float *const *out, size_t count, float scale)
{
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
        for (int d = 0; d < k; d++) memcpy(out[d] + i0, t, n * sizeof(float));
    }
}
