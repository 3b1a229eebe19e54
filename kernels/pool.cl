/* 2-D pooling (floor mode, no padding) and global average pooling, NCHW.
 *
 * Index convention: argmax[o] is the index of the winning input element
 * within its (n, c) plane, ih * w + iw (PyTorch's return_indices
 * convention). Every output element is written by exactly one work-item,
 * summing in a fixed order: results are deterministic, no atomics.
 *
 * Layout of the work: the pooling kernels run on a 2-D range, dimension 0
 * along a row (ox or ix), dimension 1 over the rows of all planes, so what
 * depends on the row is uniform across dimension 0 (CPU implementations
 * such as PoCL hoist it out of their work-item loops) and neighbouring
 * work-items touch neighbouring memory (coalesced on GPUs). Division of a
 * row index by a run-time divisor d uses a host-computed magic number
 * (m, sh): n / d == (mul_hi(n, m) + n) >> sh for every 0 <= n < 2^31.
 * Variants with the window size built in (suffix _k2, _k3) let compilers
 * unroll the window loops; the arithmetic is the same in every variant. */
#define CLT_DIV(n, m, sh) ((int)((mul_hi((uint)(n), (m)) + (uint)(n)) >> (sh)))

/* Forward: work-item (ox, row), row = plane * oh + oy over rows = n*c*oh. */
#define CLT_POOL_FWD_HEAD                                                                          \
    int ox = get_global_id(0), row = get_global_id(1);                                             \
    if (ox >= ow || row >= rows) return;                                                           \
    int plane = CLT_DIV(row, oh_m, oh_sh);                                                         \
    int oy = row - plane * oh;                                                                     \
    size_t o = (size_t)row * ow + ox;

#define CLT_MAXPOOL_FWD(NAME, K)                                                                   \
    __kernel void NAME(__global const float *x, __global float *y, __global int *argmax,           \
                       const int h, const int w, const int oh, const uint oh_m, const uint oh_sh,  \
                       const int ow, const int k_arg, const int s, const int rows)                 \
    {                                                                                              \
        const int k = (K);                                                                         \
        CLT_POOL_FWD_HEAD                                                                          \
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
                       const int k_arg, const int s, const int rows)                               \
    {                                                                                              \
        const int k = (K);                                                                         \
        CLT_POOL_FWD_HEAD                                                                          \
        __global const float *xp = x + (size_t)plane * h * w + oy * s * w + ox * s;                \
        float sum = 0.0f;                                                                          \
        for (int i = 0; i < k; i++)                                                                \
            for (int j = 0; j < k; j++) sum += xp[i * w + j];                                      \
        y[o] = sum / (float)(k * k);                                                               \
    }

/* Backward without overlap (s >= k): work-item (ox, row) as in the forward
 * writes the k x k input cells of its own window, which no other window
 * touches. Inputs outside every window (s > k, or the rows and columns that
 * floor mode drops) are zeroed by the host beforehand. */
#define CLT_MAXPOOL_BWD_TILE(NAME, K)                                                              \
    __kernel void NAME(__global const float *dy, __global const int *argmax, __global float *dx,   \
                       const int h, const int w, const int oh, const uint oh_m, const uint oh_sh,  \
                       const int ow, const int k_arg, const int s, const int rows)                 \
    {                                                                                              \
        const int k = (K);                                                                         \
        CLT_POOL_FWD_HEAD                                                                          \
        float d = dy[o];                                                                           \
        int am = argmax[o];                                                                        \
        int first = oy * s * w + ox * s;                                                           \
        __global float *dp = dx + (size_t)plane * h * w;                                           \
        for (int i = 0; i < k; i++)                                                                \
            for (int j = 0; j < k; j++) {                                                          \
                int idx = first + i * w + j;                                                       \
                dp[idx] = idx == am ? d : 0.0f;                                                    \
            }                                                                                      \
    }

#define CLT_AVGPOOL_BWD_TILE(NAME, K)                                                              \
    __kernel void NAME(__global const float *dy, __global float *dx, const int h, const int w,     \
                       const int oh, const uint oh_m, const uint oh_sh, const int ow,              \
                       const int k_arg, const int s, const int rows)                               \
    {                                                                                              \
        const int k = (K);                                                                         \
        CLT_POOL_FWD_HEAD                                                                          \
        float d = dy[o] / (float)(k * k);                                                          \
        __global float *dp = dx + (size_t)plane * h * w + oy * s * w + ox * s;                     \
        for (int i = 0; i < k; i++)                                                                \
            for (int j = 0; j < k; j++) dp[i * w + j] = d;                                         \
    }

CLT_MAXPOOL_FWD(clt_maxpool_fwd, k_arg)
CLT_MAXPOOL_FWD(clt_maxpool_fwd_k2, 2)
CLT_MAXPOOL_FWD(clt_maxpool_fwd_k3, 3)
CLT_AVGPOOL_FWD(clt_avgpool_fwd, k_arg)
CLT_AVGPOOL_FWD(clt_avgpool_fwd_k2, 2)
CLT_AVGPOOL_FWD(clt_avgpool_fwd_k3, 3)
CLT_MAXPOOL_BWD_TILE(clt_maxpool_bwd_tile, k_arg)
CLT_MAXPOOL_BWD_TILE(clt_maxpool_bwd_tile_k2, 2)
CLT_MAXPOOL_BWD_TILE(clt_maxpool_bwd_tile_k3, 3)
CLT_AVGPOOL_BWD_TILE(clt_avgpool_bwd_tile, k_arg)
CLT_AVGPOOL_BWD_TILE(clt_avgpool_bwd_tile_k2, 2)
CLT_AVGPOOL_BWD_TILE(clt_avgpool_bwd_tile_k3, 3)

/* Backward with overlapping windows (s < k), by gathering: work-item
 * (ix, row), row = plane * h + iy over rows = n*c*h, sums the windows that
 * cover input (iy, ix): window rows ylo .. yhi (uniform along the row) and
 * columns qx - b for b = r-1 .. 0, qx = ix/s, r = ceil(k/s), where
 * 0 <= ox < ow and ix - ox*s < k (masked, not branched around). Windows are
 * summed in raster order, each term as PyTorch's CPU backward adds it
 * (dy / (k*k) for average); dx is overwritten (zero where no window reads). */
#define CLT_POOL_BWD_GATHER_HEAD                                                                   \
    int ix = get_global_id(0), row = get_global_id(1);                                             \
    if (ix >= w || row >= rows) return;                                                            \
    int plane = CLT_DIV(row, h_m, h_sh);                                                           \
    int iy = row - plane * h;                                                                      \
    int ylo = iy < k ? 0 : CLT_DIV(iy - k, s_m, s_sh) + 1;                                         \
    int yhi = min(CLT_DIV(iy, s_m, s_sh), oh - 1);                                                 \
    int qx = CLT_DIV(ix, s_m, s_sh);                                                               \
    size_t base = (size_t)plane * oh * ow;                                                         \
    float sum = 0.0f;

__kernel void clt_maxpool_bwd_gather(__global const float *dy, __global const int *argmax,
                                     __global float *dx, const int h, const uint h_m,
                                     const uint h_sh, const int w, const int oh, const int ow,
                                     const int k, const int s, const uint s_m, const uint s_sh,
                                     const int r, const int rows)
{
    CLT_POOL_BWD_GATHER_HEAD
    int me = iy * w + ix;
    for (int oy = ylo; oy <= yhi; oy++)
        for (int b = r - 1; b >= 0; b--) {
            int ox = qx - b;
            int v = ox >= 0 && ox < ow && ix - ox * s < k;
            size_t o = base + oy * ow + (v ? ox : 0);
            float d = dy[o];
            sum += v && argmax[o] == me ? d : 0.0f;
        }
    dx[(size_t)row * w + ix] = sum;
}

__kernel void clt_avgpool_bwd_gather(__global const float *dy, __global float *dx, const int h,
                                     const uint h_m, const uint h_sh, const int w, const int oh,
                                     const int ow, const int k, const int s, const uint s_m,
                                     const uint s_sh, const int r, const int rows)
{
    CLT_POOL_BWD_GATHER_HEAD
    const float kk = (float)(k * k);
    for (int oy = ylo; oy <= yhi; oy++)
        for (int b = r - 1; b >= 0; b--) {
            int ox = qx - b;
            int v = ox >= 0 && ox < ow && ix - ox * s < k;
            float d = dy[base + oy * ow + (v ? ox : 0)] / kk;
            sum += v ? d : 0.0f;
        }
    dx[(size_t)row * w + ix] = sum;
}

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

/* dx[r, i] = dy[r] / hw: work-item (i, r). */
__kernel void clt_gap_bwd(__global const float *dy, __global float *dx, const int hw, const int rows)
{
    int i = get_global_id(0), r = get_global_id(1);
    if (i >= hw || r >= rows) return;
    dx[(size_t)r * hw + i] = dy[r] / (float)hw;
}
