/* The default reduction: a local host sum in fixed device order. */
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
