/* Batch normalisation over the channels of x viewed as (n, C, hw). Launchers
 * in src/ops/bn.c.
 *
 * Channel statistics are shifted power sums: S1 = sum (x - s), S2 = sum
 * (x - s)^2 for a per-channel shift s close to the channel mean (the first
 * element of the channel in the shard, or the running mean), so that
 * var = S2/M - (S1/M)^2 does not cancel catastrophically for inputs whose
 * mean is large against their spread. They are sums, so shards summed on the
 * host (with one common shift) give the statistics of the whole batch.
 *
 * Work layout of the kernels that read x: a 2-D range, dimension 0 the lx
 * lanes (lx a power of two, at most 64; 1 on CPU devices, which run a
 * work-group's lanes one after the other: one lane streams the plane),
 * dimension 1 the rows; row
 * q = chunk * C + c covers samples [chunk*S, chunk*S + S) of channel c.
 * Work-item (lane, q) walks, sample after sample, the units lane, lane + lx,
 * ... of each plane, a unit being 4 consecutive floats (vload4, kernels with
 * suffix 4, used when hw >= 4) or one; after the units of a plane, its last
 * hw % 4 floats one at a time, float tail0 + lane, tail0 + lane + lx, ...
 * (BN_TAIL). Accesses are contiguous across
 * lanes (coalesced on GPUs), per-channel values are loaded once per
 * work-item, and there is no division per element and no barrier in the
 * kernels that stream x (CPU implementations such as PoCL run the lanes of a
 * work-group as a loop: there a per-element division, a work-group barrier
 * or a loop-carried scalar sum costs more than the memory traffic).
 *
 * Reductions are deterministic, without atomics, in two steps:
 *  1. bn_stats_part / bn_bstats_part: each work-item sums its units
 *     in order (the 4 components of a unit in separate accumulators, added
 *     as (x + y) + (z + w) at the end), and its tail floats in order in a
 *     scalar sum added after them, into
 *     part[part_off + ((k*C + c)*chunks + chunk)*lx + lane], k = 0 for the
 *     first sum and 1 for the second;
 *  2. bn_reduce_parts: one work-group per (k, c) adds its chunks*lx
 *     partials, each lane a fixed strided subset in order, then a fixed tree
 *     in local memory. */

#define bn_vload1(i, p) ((p)[i])
#define bn_vstore1(v, i, p) ((p)[i] = (v))
#define bn_vload4(i, p) vload4((i), (p))
#define bn_vstore4(v, i, p) vstore4((v), (i), (p))
#define bn_hsum1(a) (a)
#define bn_hsum4(a) (((a).x + (a).y) + ((a).z + (a).w))

/* Head of every kernel that reads x: the row's channel and samples; units
 * per plane hu = hw / VEC, the tail's floats from tail0 on. */
#define BN_ROW_HEAD(VEC)                                                                           \
    const int lane = get_local_id(0), lx = get_local_size(0);                                      \
    const int q = get_global_id(1);                                                                \
    if (q >= C * chunks) return;                                                                   \
    const int ch = q / C, c = q - ch * C;                                                          \
    const int s0 = ch * S, s1 = min(n, s0 + S);                                                    \
    const int hu = hw / VEC, tail0 = hu * VEC;

#define BN_ARGS_ROWS const int n, const int C, const int hw, const int S, const int chunks

/* BN_UNITS_BEGIN statements BN_UNITS_END runs the statements for each unit
 * u of this work-item, sample after sample; base is the offset of the plane
 * (sample s, channel c). A pair, not a variadic macro: OpenCL C forbids
 * those (NVIDIA's compiler refuses them). */
#define BN_UNITS_BEGIN                                                                             \
    for (int s = s0; s < s1; s++) {                                                                \
        const size_t base = ((size_t)s * C + c) * hw;                                              \
        for (int u = lane; u < hu; u += lx) {
#define BN_UNITS_END                                                                               \
        }                                                                                          \
    }
/* BN_UNITS_BEGIN vector-statements BN_TAIL scalar-statements BN_UNITS_END:
 * the same, then the plane's last hw % VEC floats one at a time (u the
 * float's index; none for VEC 1). */
#define BN_TAIL                                                                                    \
        }                                                                                          \
        for (int u = tail0 + lane; u < hw; u += lx) {

/* End of the step-1 kernels: this work-item's partials of the two sums. */
#define BN_PART_STORE(P1, P2)                                                                      \
    const size_t r = part_off + ((size_t)c * chunks + ch) * lx + lane;                             \
    part[r] = (P1);                                                                                \
    part[r + (size_t)C * chunks * lx] = (P2);

/* A ReLU fused after the batch norm (src/nn/fuse.c): the forward's store
 * applies it (relu), and every read of dy goes through its derivative from
 * the forward's output ym. */
#define BN_ARGS_RELU const int relu, __global const float *ym
#define BN_DY(VEC)                                                                                 \
    (relu ? RELU_BWD(bn_vload##VEC(u, ym + base), bn_vload##VEC(u, dy + base)) : bn_vload##VEC(u, dy + base))

/* One unit's work in each kernel, on units of V floats of type TT (the
 * kernels run them on VEC-float units, then on a plane's tail floats). */
#define BN_STATS_STEP(V, TT, A1, A2)                                                               \
    {                                                                                              \
        TT v = bn_vload##V(u, x + base) - sh;                                                      \
        A1 += v;                                                                                   \
        A2 += v * v;                                                                               \
    }
#define BN_BSTATS_STEP(V, TT, A1, A2)                                                              \
    {                                                                                              \
        TT d = BN_DY(V);                                                                           \
        A1 += d;                                                                                   \
        A2 += d * (bn_vload##V(u, x + base) - mean);                                               \
    }
#define BN_APPLY_STEP(V, TT)                                                                       \
    {                                                                                              \
        TT v = (bn_vload##V(u, x + base) - mean) * scale + shift;                                  \
        if (has_add) v = v + bn_vload##V(u, add + base);                                           \
        bn_vstore##V(relu ? RELU_FWD(v) : v, u, y + base);                                         \
    }
#define BN_BACKWARD_STEP(V, TT)                                                                    \
    {                                                                                              \
        TT d = BN_DY(V), xv = bn_vload##V(u, x + base);                                            \
        bn_vstore##V(k * (d - mdy - (xv - mean) * mdx), u, dx + base);                             \
    }

#define BN_KERNELS(SUF, VEC, T)                                                                    \
    /* Step 1: partials of S1 = sum (x - shift[c]) and S2 = sum (x - shift[c])^2. */               \
    __kernel void bn_stats_part##SUF(__global const float *x, __global const float *shift,         \
                                     const ulong shift_off, __global float *part,                  \
                                     const ulong part_off, BN_ARGS_ROWS)                           \
    {                                                                                              \
        BN_ROW_HEAD(VEC)                                                                           \
        const float sh = shift[shift_off + c];                                                     \
        T a1 = 0.0f, a2 = 0.0f;                                                                    \
        float t1 = -0.0f, t2 = -0.0f; /* v + -0.0f is v: without a tail, the sums' bits stay */     \
        BN_UNITS_BEGIN                                                                             \
            BN_STATS_STEP(VEC, T, a1, a2)                                                          \
        BN_TAIL                                                                                    \
            BN_STATS_STEP(1, float, t1, t2)                                                        \
        BN_UNITS_END                                                                               \
        BN_PART_STORE(bn_hsum##VEC(a1) + t1, bn_hsum##VEC(a2) + t2)                                \
    }                                                                                              \
                                                                                                   \
    /* Step 1: partials of B1 = sum dy and B2 = sum dy * xhat, xhat = (x - mean) * invstd. */      \
    __kernel void bn_bstats_part##SUF(__global const float *x, __global const float *dy,           \
                                      BN_ARGS_RELU, __global const float *mean_invstd,             \
                                      const ulong mi_off, __global float *part,                    \
                                      const ulong part_off, BN_ARGS_ROWS)                          \
    {                                                                                              \
        BN_ROW_HEAD(VEC)                                                                           \
        const float mean = mean_invstd[mi_off + c];                                                \
        T a1 = 0.0f, a2 = 0.0f;                                                                    \
        float t1 = -0.0f, t2 = -0.0f; /* v + -0.0f is v: without a tail, the sums' bits stay */     \
        BN_UNITS_BEGIN                                                                             \
            BN_BSTATS_STEP(VEC, T, a1, a2)                                                         \
        BN_TAIL                                                                                    \
            BN_BSTATS_STEP(1, float, t1, t2)                                                       \
        BN_UNITS_END                                                                               \
        BN_PART_STORE(bn_hsum##VEC(a1) + t1,                                                       \
                      (bn_hsum##VEC(a2) + t2) * mean_invstd[mi_off + C + c])                       \
    }                                                                                              \
                                                                                                   \
    /* y = (x - mean) * (invstd * gamma) + beta, plus add (has_add: a residual block's shortcut), \
     * then a fused ReLU when relu; gamma = 1 / beta = 0 unless has_gamma / has_beta. y may be x. */ \
    __kernel void bn_apply##SUF(__global const float *x, __global const float *mean_invstd,        \
                                const ulong mi_off, __global const float *gamma,                   \
                                const int has_gamma, __global const float *beta,                   \
                                const int has_beta, __global const float *add, const int has_add,  \
                                const int relu, __global float *y, BN_ARGS_ROWS)                   \
    {                                                                                              \
        BN_ROW_HEAD(VEC)                                                                           \
        const float mean = mean_invstd[mi_off + c];                                                \
        const float scale = mean_invstd[mi_off + C + c] * (has_gamma ? gamma[c] : 1.0f);           \
        const float shift = has_beta ? beta[c] : 0.0f;                                             \
        BN_UNITS_BEGIN                                                                             \
            BN_APPLY_STEP(VEC, T)                                                                  \
        BN_TAIL                                                                                    \
            BN_APPLY_STEP(1, float)                                                                \
        BN_UNITS_END                                                                               \
    }                                                                                              \
                                                                                                   \
    /* Training backward: dx = gamma * invstd * (dy - B1/M - xhat * B2/M) with bstats =            \
     * [B1 | B2] summed over the M = count elements of each channel (inv_count = 1/M).             \
     * dx may be dy. */                                                                            \
    __kernel void bn_backward_apply##SUF(                                                          \
        __global const float *x, __global const float *dy, BN_ARGS_RELU,                           \
        __global const float *mean_invstd, const ulong mi_off, __global const float *gamma,        \
        const int has_gamma,                                                                       \
        __global const float *bstats, const ulong bs_off, const float inv_count,                   \
        __global float *dx, BN_ARGS_ROWS)                                                          \
    {                                                                                              \
        BN_ROW_HEAD(VEC)                                                                           \
        const float mean = mean_invstd[mi_off + c], invstd = mean_invstd[mi_off + C + c];          \
        const float k = invstd * (has_gamma ? gamma[c] : 1.0f);                                    \
        const float mdy = bstats[bs_off + c] * inv_count;                                          \
        const float mdx = bstats[bs_off + C + c] * inv_count * invstd; /* mean(dy xhat) invstd */  \
        BN_UNITS_BEGIN                                                                             \
            BN_BACKWARD_STEP(VEC, T)                                                               \
        BN_TAIL                                                                                    \
            BN_BACKWARD_STEP(1, float)                                                             \
        BN_UNITS_END                                                                               \
    }                                                                                              \
                                                                                                   \
    /* Backward with the statistics held fixed (inference): dx = gamma * invstd * dy. */           \
    __kernel void bn_backward_infer##SUF(__global const float *dy, BN_ARGS_RELU,                   \
                                         __global const float *mean_invstd, const ulong mi_off,    \
                                         __global const float *gamma, const int has_gamma,         \
                                         __global float *dx, BN_ARGS_ROWS)                         \
    {                                                                                              \
        BN_ROW_HEAD(VEC)                                                                           \
        const float k = mean_invstd[mi_off + C + c] * (has_gamma ? gamma[c] : 1.0f);               \
        BN_UNITS_BEGIN                                                                             \
            bn_vstore##VEC(k * BN_DY(VEC), u, dx + base);                                          \
        BN_TAIL                                                                                    \
            bn_vstore1(k * BN_DY(1), u, dx + base);                                                \
        BN_UNITS_END                                                                               \
    }

BN_KERNELS(, 1, float)
BN_KERNELS(4, 4, float4)

/* Step 2: out[out_off + row] = sum of the len partials of row `row` (the
 * work-group index along dimension 1; rows k*C + c give [sums 1 | sums 2]).
 * Local size L along dimension 0, a power of two. */
__kernel void bn_reduce_parts(__global const float *part, const ulong part_off, const int len,
                              __global float *out, const ulong out_off, __local float *l)
{
    const int lane = get_local_id(0), L = get_local_size(0), row = get_group_id(1);
    __global const float *pr = part + part_off + (size_t)row * len;
    float a = 0.0f;
    for (int i = lane; i < len; i += L) a += pr[i];
    l[lane] = a;
    for (int off = L >> 1; off > 0; off >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lane < off) l[lane] += l[lane + off];
    }
    if (lane == 0) out[out_off + row] = l[0];
}

/* shift[c] = x[0, c, 0]: the first element of each channel of a shard. */
__kernel void bn_shift(__global const float *x, __global float *shift, const ulong shift_off,
                       const int C, const int hw)
{
    int c = get_global_id(0);
    if (c < C) shift[shift_off + c] = x[(size_t)c * hw];
}

/* From stats [S1 | S2] about shift over `count` elements (inv_count =
 * 1/count, unbias = count/(count-1), in double on the host): mean_invstd =
 * [mean | 1/sqrt(var + eps)] with the biased variance, and when update is set
 * running_mean/var = (1 - m) * running + m * (mean, unbiased variance). */
__kernel void bn_finalize(__global const float *stats, const ulong stats_off,
                          __global const float *shift, const ulong shift_off,
                          __global float *running_mean, __global float *running_var,
                          const int update, __global float *mean_invstd, const ulong mi_off,
                          const int C, const float inv_count, const float unbias,
                          const float momentum, const float eps)
{
    int c = get_global_id(0);
    if (c >= C) return;
    float d = stats[stats_off + c] * inv_count;        /* mean - shift */
    float var = stats[stats_off + C + c] * inv_count - d * d;
    var = fmax(var, 0.0f);
    float mean = shift[shift_off + c] + d;
    if (update) {
        running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * mean;
        running_var[c] = (1.0f - momentum) * running_var[c] + momentum * (var * unbias);
    }
    mean_invstd[mi_off + c] = mean;
    mean_invstd[mi_off + C + c] = 1.0f / sqrt(var + eps);
}

/* Inference statistics: mean_invstd = [running_mean | 1/sqrt(running_var + eps)]. */
__kernel void bn_infer_stats(__global const float *running_mean,
                             __global const float *running_var, __global float *mean_invstd,
                             const ulong mi_off, const int C, const float eps)
{
    int c = get_global_id(0);
    if (c >= C) return;
    mean_invstd[mi_off + c] = running_mean[c];
    mean_invstd[mi_off + C + c] = 1.0f / sqrt(running_var[c] + eps);
}
