/* 2-D pooling (floor mode, no padding) and global average pooling, NCHW.
 *
 * Index convention: argmax[o] is the index of the winning input element
 * within its (n, c) plane, ih * w + iw (PyTorch's return_indices
 * convention). Every output element is written by exactly one work-item,
 * summing in a fixed order: results are deterministic, no atomics.
 *
 * Speed notes. Integer division by a run-time divisor d is done with a
 * host-computed magic number (m, sh): n / d == (mul_hi(n, m) + n) >> sh for
 * every 0 <= n < 2^31, a multiply instead of a slow divide on CPUs and GPUs.
 * CPU implementations (PoCL) vectorise across work-items only when a kernel
 * has no loop left after unrolling, so every kernel also comes in variants
 * whose window loops have constant trip counts (suffix _k2/_k3 for the
 * window, _r1/_r2 for the windows covering one input per dimension); the
 * host picks one by the geometry. The arithmetic is the same in every
 * variant, so results do not depend on the choice. */
#define CLT_DIV(n, m, sh) ((int)((mul_hi((uint)(n), (m)) + (uint)(n)) >> (sh)))

/* Forward: one work-item per output element; total = n * c * oh * ow. */
#define CLT_MAXPOOL_FWD(NAME, K)                                                                   \
    __kernel void NAME(__global const float *x, __global float *y, __global int *argmax,           \
                       const int h, const int w, const int oh, const uint oh_m, const uint oh_sh,  \
                       const int ow, const uint ow_m, const uint ow_sh, const int k_arg,           \
                       const int s, const int total)                                               \
    {                                                                                              \
        const int k = (K);                                                                         \
        int o = get_global_id(0);                                                                  \
        if (o >= total) return;                                                                    \
        int t = CLT_DIV(o, ow_m, ow_sh);                                                           \
        int ox = o - t * ow;                                                                       \
        int plane = CLT_DIV(t, oh_m, oh_sh);                                                       \
        int oy = t - plane * oh;                                                                   \
        __global const float *xp = x + (size_t)plane * h * w;                                      \
        int first = oy * s * w + ox * s;                                                           \
        float best = xp[first];                                                                    \
        int besti = first;                                                                         \
        for (int i = 0; i < k; i++)                                                                \
            for (int j = 0; j < k; j++) {                                                          \
                int idx = first + i * w + j;                                                       \
                float v = xp[idx];                                                                 \
                /* first maximum wins; NaN propagates (as PyTorch's CPU kernel) */                 \
                int take = v > best || isnan(v);                                                   \
                best = take ? v : best;                                                            \
                besti = take ? idx : besti;                                                        \
            }                                                                                      \
        y[o] = best;                                                                               \
        argmax[o] = besti;                                                                         \
    }

#define CLT_AVGPOOL_FWD(NAME, K)                                                                   \
    __kernel void NAME(__global const float *x, __global float *y, const int h, const int w,       \
                       const int oh, const uint oh_m, const uint oh_sh, const int ow,              \
                       const uint ow_m, const uint ow_sh, const int k_arg, const int s,            \
                       const int total)                                                            \
    {                                                                                              \
        const int k = (K);                                                                         \
        int o = get_global_id(0);                                                                  \
        if (o >= total) return;                                                                    \
        int t = CLT_DIV(o, ow_m, ow_sh);                                                           \
        int ox = o - t * ow;                                                                       \
        int plane = CLT_DIV(t, oh_m, oh_sh);                                                       \
        int oy = t - plane * oh;                                                                   \
        __global const float *xp = x + (size_t)plane * h * w + oy * s * w + ox * s;                \
        float sum = 0.0f;                                                                          \
        for (int i = 0; i < k; i++)                                                                \
            for (int j = 0; j < k; j++) sum += xp[i * w + j];                                      \
        y[o] = sum / (float)(k * k);                                                               \
    }

/* Backward by gathering: one work-item per input element (n*c*h*w) sums the
 * output windows that cover it, so dx is overwritten (zero where no window
 * reads) without atomics, also for overlapping windows (s < k). Input row iy
 * lies in window rows oy = iy/s - a for a = 0 .. r-1, r = ceil(k/s), where
 * 0 <= oy < oh and iy - oy*s < k; the same for columns. Out-of-range
 * windows are masked, not branched around; the sum runs in a fixed order. */
#define CLT_POOL_BWD_HEAD                                                                          \
    int i = get_global_id(0);                                                                      \
    if (i >= total) return;                                                                        \
    int t = CLT_DIV(i, w_m, w_sh);                                                                 \
    int ix = i - t * w;                                                                            \
    int plane = CLT_DIV(t, h_m, h_sh);                                                             \
    int iy = t - plane * h;                                                                        \
    int qy = CLT_DIV(iy, s_m, s_sh), qx = CLT_DIV(ix, s_m, s_sh);                                  \
    float sum = 0.0f;

#define CLT_MAXPOOL_BWD(NAME, R)                                                                   \
    __kernel void NAME(__global const float *dy, __global const int *argmax, __global float *dx,   \
                       const int h, const uint h_m, const uint h_sh, const int w, const uint w_m,  \
                       const uint w_sh, const int oh, const int ow, const int k, const int s,      \
                       const uint s_m, const uint s_sh, const int r_arg, const int total)          \
    {                                                                                              \
        const int r = (R);                                                                         \
        CLT_POOL_BWD_HEAD                                                                          \
        int me = iy * w + ix;                                                                      \
        __global const float *dp = dy + (size_t)plane * oh * ow;                                   \
        __global const int *ap = argmax + (size_t)plane * oh * ow;                                 \
        for (int a = 0; a < r; a++) {                                                              \
            int oy = qy - a;                                                                       \
            int vy = oy >= 0 && oy < oh && iy - oy * s < k;                                        \
            for (int b = 0; b < r; b++) {                                                          \
                int ox = qx - b;                                                                   \
                int v = vy && ox >= 0 && ox < ow && ix - ox * s < k;                               \
                int o = v ? oy * ow + ox : 0;                                                      \
                float d = dp[o];                                                                   \
                sum += v && ap[o] == me ? d : 0.0f;                                                \
            }                                                                                      \
        }                                                                                          \
        dx[i] = sum;                                                                               \
    }

#define CLT_AVGPOOL_BWD(NAME, R)                                                                   \
    __kernel void NAME(__global const float *dy, __global float *dx, const int h, const uint h_m,  \
                       const uint h_sh, const int w, const uint w_m, const uint w_sh,              \
                       const int oh, const int ow, const int k, const int s, const uint s_m,       \
                       const uint s_sh, const int r_arg, const int total)                          \
    {                                                                                              \
        const int r = (R);                                                                         \
        CLT_POOL_BWD_HEAD                                                                          \
        __global const float *dp = dy + (size_t)plane * oh * ow;                                   \
        for (int a = 0; a < r; a++) {                                                              \
            int oy = qy - a;                                                                       \
            int vy = oy >= 0 && oy < oh && iy - oy * s < k;                                        \
            for (int b = 0; b < r; b++) {                                                          \
                int ox = qx - b;                                                                   \
                int v = vy && ox >= 0 && ox < ow && ix - ox * s < k;                               \
                float d = dp[v ? oy * ow + ox : 0];                                                \
                sum += v ? d : 0.0f;                                                               \
            }                                                                                      \
        }                                                                                          \
        dx[i] = sum / (float)(k * k);                                                              \
    }

CLT_MAXPOOL_FWD(clt_maxpool_fwd, k_arg)
CLT_MAXPOOL_FWD(clt_maxpool_fwd_k2, 2)
CLT_MAXPOOL_FWD(clt_maxpool_fwd_k3, 3)
CLT_AVGPOOL_FWD(clt_avgpool_fwd, k_arg)
CLT_AVGPOOL_FWD(clt_avgpool_fwd_k2, 2)
CLT_AVGPOOL_FWD(clt_avgpool_fwd_k3, 3)
CLT_MAXPOOL_BWD(clt_maxpool_bwd, r_arg)
CLT_MAXPOOL_BWD(clt_maxpool_bwd_r1, 1)
CLT_MAXPOOL_BWD(clt_maxpool_bwd_r2, 2)
CLT_AVGPOOL_BWD(clt_avgpool_bwd, r_arg)
CLT_AVGPOOL_BWD(clt_avgpool_bwd_r1, 1)
CLT_AVGPOOL_BWD(clt_avgpool_bwd_r2, 2)

/* Global average pooling: row r of x (hw contiguous values) -> y[r]. One
 * work-item per row, fixed summation order. */
__kernel void clt_gap_fwd(__global const float *x, __global float *y, const int hw, const int rows)
{
    int r = get_global_id(0);
    if (r >= rows) return;
    __global const float *xp = x + (size_t)r * hw;
    float sum = 0.0f;
    for (int i = 0; i < hw; i++) sum += xp[i];
    y[r] = sum / (float)hw;
}

__kernel void clt_gap_bwd(__global const float *dy, __global float *dx, const int hw,
                          const uint hw_m, const uint hw_sh, const int total)
{
    int i = get_global_id(0);
    if (i >= total) return;
    dx[i] = dy[CLT_DIV(i, hw_m, hw_sh)] / (float)hw;
}
