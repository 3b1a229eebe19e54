/* Inverted dropout launcher (kernels/dropout.cl). */
#include "ops/dropout.h"

#include "runtime/launch.h"

clt_status clt_dropout_raw(clt_device *dev, size_t per_sample, int n, cl_mem x, cl_mem y, float p, clt_rng_key key)
{
    if (!(p >= 0.0f && p < 1.0f)) return clt_fail(CLT_ERR_INVALID_ARG, "dropout: probability %g outside [0, 1)", p);
    if (n < 1 || per_sample < 1) return CLT_OK;
    double t = (double)p * 4294967296.0;
    cl_uint thresh = t >= 4294967295.0 ? 4294967295u : (cl_uint)t;
    float scale = 1.0f / (1.0f - p);
    cl_ulong per = per_sample, count = per_sample * (size_t)n, seed = key.seed, step = key.step,
             first = key.first_sample;
    return clt_launch_1d(dev, "dropout", "dropout_apply", (size_t)count,
                         CLT_ARGS(CLT_ARG(x), CLT_ARG(y), CLT_ARG(per), CLT_ARG(count), CLT_ARG(seed), CLT_ARG(step),
                                  CLT_ARG(first), CLT_ARG(thresh), CLT_ARG(scale)));
}
