/* Device peaks for `cltrain bench ops`: arithmetic (FMA) and memory (copy).
 *
 * FMA: each work-item runs CHAINS independent chains x = fma(x, a, b) on a
 * vector type T, unrolled four times per loop trip, so the hardware always
 * has independent FMAs to issue (latency x pipes on every vendor), and ends
 * with one store so nothing is dead code. a and b are kernel arguments and
 * fma() is exact, so no compiler may fold or reassociate the chains. The
 * variants differ in vector width and chain count: GPUs run scalar lanes
 * and want many threads; CPU implementations (PoCL) map float8/float16 onto
 * SIMD registers and want enough chains to cover the FMA latency. The host
 * tries them all and keeps the fastest. FLOPs per work-item:
 * 2 * 4 * CHAINS * width(T) * iters. */

#define CLT_FMA4(x) x = fma(x, va, vb); x = fma(x, va, vb); x = fma(x, va, vb); x = fma(x, va, vb);

#define CLT_PEAK_FMA8(NAME, T)                                                                     \
    __kernel void NAME(__global float *out, const float a, const float b, const int iters)         \
    {                                                                                              \
        const T va = (T)(a), vb = (T)(b);                                                          \
        float s = (float)get_global_id(0) * 1e-7f;                                                 \
        T x0 = (T)(s), x1 = (T)(s + 0.1f), x2 = (T)(s + 0.2f), x3 = (T)(s + 0.3f);                 \
        T x4 = (T)(s + 0.4f), x5 = (T)(s + 0.5f), x6 = (T)(s + 0.6f), x7 = (T)(s + 0.7f);          \
        for (int i = 0; i < iters; i++) {                                                          \
            CLT_FMA4(x0) CLT_FMA4(x1) CLT_FMA4(x2) CLT_FMA4(x3)                                    \
            CLT_FMA4(x4) CLT_FMA4(x5) CLT_FMA4(x6) CLT_FMA4(x7)                                    \
        }                                                                                          \
        T r = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));                                   \
        out[get_global_id(0)] = dot((float4)(1.0f), CLT_FOLD_##T(r));                              \
    }

#define CLT_PEAK_FMA16(NAME, T)                                                                    \
    __kernel void NAME(__global float *out, const float a, const float b, const int iters)         \
    {                                                                                              \
        const T va = (T)(a), vb = (T)(b);                                                          \
        float s = (float)get_global_id(0) * 1e-7f;                                                 \
        T x0 = (T)(s), x1 = (T)(s + 0.1f), x2 = (T)(s + 0.2f), x3 = (T)(s + 0.3f);                 \
        T x4 = (T)(s + 0.4f), x5 = (T)(s + 0.5f), x6 = (T)(s + 0.6f), x7 = (T)(s + 0.7f);          \
        T x8 = (T)(s + 0.8f), x9 = (T)(s + 0.9f), x10 = (T)(s + 1.0f), x11 = (T)(s + 1.1f);        \
        T x12 = (T)(s + 1.2f), x13 = (T)(s + 1.3f), x14 = (T)(s + 1.4f), x15 = (T)(s + 1.5f);      \
        for (int i = 0; i < iters; i++) {                                                          \
            CLT_FMA4(x0) CLT_FMA4(x1) CLT_FMA4(x2) CLT_FMA4(x3)                                    \
            CLT_FMA4(x4) CLT_FMA4(x5) CLT_FMA4(x6) CLT_FMA4(x7)                                    \
            CLT_FMA4(x8) CLT_FMA4(x9) CLT_FMA4(x10) CLT_FMA4(x11)                                  \
            CLT_FMA4(x12) CLT_FMA4(x13) CLT_FMA4(x14) CLT_FMA4(x15)                                \
        }                                                                                          \
        T r = (((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7))) +                                \
              (((x8 + x9) + (x10 + x11)) + ((x12 + x13) + (x14 + x15)));                           \
        out[get_global_id(0)] = dot((float4)(1.0f), CLT_FOLD_##T(r));                              \
    }

/* Folds a vector to a float4 whose lanes sum to the vector's sum. */
#define CLT_FOLD_float(v) ((float4)((v), 0.0f, 0.0f, 0.0f))
#define CLT_FOLD_float4(v) (v)
#define CLT_FOLD_float8(v) ((v).lo + (v).hi)
#define CLT_FOLD_float16(v) (((v).lo.lo + (v).lo.hi) + ((v).hi.lo + (v).hi.hi))

CLT_PEAK_FMA8(peak_fma_f1x8, float)
CLT_PEAK_FMA16(peak_fma_f1x16, float)
CLT_PEAK_FMA8(peak_fma_f4x8, float4)
CLT_PEAK_FMA16(peak_fma_f4x16, float4)
CLT_PEAK_FMA8(peak_fma_f8x8, float8)
CLT_PEAK_FMA16(peak_fma_f8x16, float8)
CLT_PEAK_FMA8(peak_fma_f16x8, float16)
CLT_PEAK_FMA16(peak_fma_f16x16, float16)

/* Streaming copy y = x over n vectors (bytes moved: 2 * n * sizeof vector). */
__kernel void peak_copy_f4(__global const float4 *x, __global float4 *y, const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) y[i] = x[i];
}

__kernel void peak_copy_f16(__global const float16 *x, __global float16 *y, const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) y[i] = x[i];
}
