/* Host-side parameter initialisation from a counter-based generator: element
 * i's value depends only on (seed, i), so results never depend on the device,
 * the vendor, or the order of work. */
#include <math.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "tensor/tensor.h"

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1]: 24 random bits, never 0 (log below). */
static double uniform(uint64_t seed, uint64_t counter)
{
    uint64_t r = mix64(seed * 0x9e3779b97f4a7c15ull + mix64(counter + 0x632be59bd9b4e019ull));
    return ((double)(r >> 40) + 1.0) / 16777216.0;
}

static clt_status fill_host(clt_tensor *t, const char *op, uint64_t seed, int normal, double a,
                            double b)
{
    CLT_TRY(clt_tensor_need(t, op, "tensor"));
    if (t->dtype != CLT_DTYPE_FLOAT32) return clt_fail(CLT_ERR_INVALID_ARG, "%s: tensor is not float32", op);
    float *host;
    CLT_TRY(clt_aligned_alloc((void **)&host, (size_t)t->numel, sizeof *host, op));
    for (int64_t i = 0; i < t->numel; i++) {
        double u1 = uniform(seed, 2 * (uint64_t)i), u2 = uniform(seed, 2 * (uint64_t)i + 1);
        double v = normal ? a + b * sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2)
                          : a + (b - a) * (u1 - 0.5 / 16777216.0);
        host[i] = (float)v;
    }
    clt_status s = clt_tensor_upload(t, host, t->numel);
    clt_aligned_free(host);
    return s;
}

clt_status clt_tensor_init_normal(clt_tensor *t, uint64_t seed, float mean, float std)
{
    if (!(std >= 0) || !isfinite(mean) || !isfinite(std))
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_tensor_init_normal: std %g / mean %g invalid", std, mean);
    return fill_host(t, "clt_tensor_init_normal", seed, 1, mean, std);
}

clt_status clt_tensor_init_xavier(clt_tensor *t, uint64_t seed, int64_t fan_in, int64_t fan_out,
                                  float gain)
{
    if (fan_in < 1 || fan_out < 1 || !(gain > 0) || !isfinite(gain))
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_tensor_init_xavier: fan_in %lld, fan_out %lld, gain %g",
                        (long long)fan_in, (long long)fan_out, gain);
    double a = gain * sqrt(6.0 / (double)(fan_in + fan_out));
    return fill_host(t, "clt_tensor_init_xavier", seed, 0, -a, a);
}
