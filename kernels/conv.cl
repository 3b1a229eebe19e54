/* 2-D convolution (NCHW, float32, cross-correlation, zero padding, square
 * kernel K, stride S, padding PAD). src/ops/conv.c launches these kernels and
 * documents the algorithms and the measurements behind the choice:
 *
 *  "lanes" (CPU devices): the batch becomes the vector lane. Activations are
 *   copied into a (C, H, W, NP) layout (batch padded to NP, a multiple of 16)
 *   and every work-item keeps a register block of RM channels x 16*NV lanes
 *   of one pixel in float16 accumulators. The inner loop is a rank-1 update:
 *   RM broadcast weights times NV contiguous float16 loads. Only taps that
 *   land inside the input are visited (no padded copies, no work on zeros).
 *   The copies into and out of the layout are 16 x 16 in-register
 *   transposes; a 1x1 layer with stride copies only the pixels it reads.
 *  "direct" (CPU devices, stride 1, tiny c*k*k such as a first layer):
 *   NCHW rows as vectors, no layout copies (a padded copy of x only when
 *   there is padding or a row is shorter than 16).
 *  "gemm" (GPUs): im2col over a chunk of images into a (C*K*K, images*P)
 *   matrix, one CLBlast SGEMM per chunk, and a gather-style col2im.
 *
 * No atomics anywhere; every output element is written once (or, for the
 * sums over chunks, summed in a fixed order), so results are deterministic.
 * Offsets into the shared scratch buffer are passed as ulong element offsets.
 * Loops over register blocks carry "#pragma unroll": without it PoCL kept
 * the accumulators in memory and ran 3-6x slower. */

#define LANES 16

/* Helpers are forced inline so the register-block sizes (literals at each
 * call) fold into constants. */
#if defined(__clang__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE inline
#endif

/* ------------------------------------------------------------------ */
/* Layout kernels for the "lanes" algorithm                            */
/* ------------------------------------------------------------------ */

/* In-register transpose of a 16 x 16 block: afterwards r[u].s[q] is the old
 * r[q].s[u]. Each round maps element (row i, column j), as the 8-bit index
 * i3i2i1i0 j3j2j1j0, to j0i3i2i1 i0j3j2j1 (a rotation by one bit); four
 * rounds swap the halves. Every output vector is one two-source shuffle
 * of .even / .odd halves (standard swizzles), no scalar gathers. */
INLINE void transpose16(float16 r[LANES])
{
    float16 t[LANES];
#pragma unroll
    for (int round = 0; round < 4; round++) {
#pragma unroll
        for (int k = 0; k < LANES / 2; k++) {
            t[k] = (float16)(r[2 * k].even, r[2 * k + 1].even);
            t[k + LANES / 2] = (float16)(r[2 * k].odd, r[2 * k + 1].odd);
        }
#pragma unroll
        for (int k = 0; k < LANES; k++) r[k] = t[k];
    }
}

/* The lanes layout of a 1x1 convolution with stride S (and no padding),
 * which only reads every S-th row and column: dst (C, OH, OW, NP) at
 * dst_off, dst[c][oy][ox][n] = src[n][c][oy*S][ox*S], zero for n >= N.
 * One work-item per (c, oy) row of 16 lanes: it walks ox, gathering 16
 * images into one vector store. Dimension 0 runs along the rows, so a
 * work-group walks down the same 16 images. Global: (C*OH, NP/16). */
__kernel void conv_to_lanes_sub(int N, int C, int H, int W, int S, int OH, int OW, int NP,
                                __global const float *src, __global float *dst, ulong dst_off)
{
    int row = get_global_id(0); /* c*OH + oy */
    int nb = get_global_id(1);
    if (nb * LANES >= NP || row >= C * OH) return;
    int n0 = nb * LANES;
    __global float *d = dst + dst_off + (size_t)row * OW * NP + n0;
    if (n0 >= N) {
        for (int ox = 0; ox < OW; ox++) vstore16((float16)0.0f, 0, d + (size_t)ox * NP);
        return;
    }
    int c = row / OH, oy = row - (row / OH) * OH;
    size_t img = (size_t)C * H * W;
    __global const float *s = src + ((size_t)n0 * C + c) * H * W + (size_t)oy * S * W;
    int nn = min(LANES, N - n0);
    if (nn == LANES) {
        for (int ox = 0; ox < OW; ox++) {
            __global const float *p = s + ox * S;
            float16 v = (float16)(p[0], p[img], p[2 * img], p[3 * img], p[4 * img], p[5 * img],
                                  p[6 * img], p[7 * img], p[8 * img], p[9 * img], p[10 * img],
                                  p[11 * img], p[12 * img], p[13 * img], p[14 * img], p[15 * img]);
            vstore16(v, 0, d + (size_t)ox * NP);
        }
    } else {
        for (int ox = 0; ox < OW; ox++) {
            float v[LANES];
            for (int q = 0; q < LANES; q++) v[q] = q < nn ? s[q * img + ox * S] : 0.0f;
            vstore16(vload16(0, v), 0, d + (size_t)ox * NP);
        }
    }
}

/* The inverse for dx of such a layer: dst[n][c][y][x] = src[c][y/S][x/S][n]
 * (src (C, OH, OW, NP) at src_off) where S divides y and x, else 0: every
 * dx element is written once. One work-item per channel of 16 lanes: it
 * writes the 16 images' (c) planes one after the other, each in order; a
 * row with values is assembled in private memory and stored as vectors
 * (1.7x faster than scalar stores into dx). Global: (C, NP/16). */
__kernel void conv_from_lanes_sub(int N, int C, int H, int W, int S, int OH, int OW, int NP,
                                  __global const float *src, ulong src_off, __global float *dst)
{
    int c = get_global_id(0);
    int nb = get_global_id(1);
    int n0 = nb * LANES;
    if (n0 >= N || c >= C) return;
    int nn = min(LANES, N - n0);
    __global const float *s = src + src_off + (size_t)c * OH * OW * NP + n0;
    for (int q = 0; q < nn; q++) {
        __global float *d = dst + ((size_t)(n0 + q) * C + c) * H * W;
        for (int y = 0; y < H; y++, d += W) {
            if (y % S != 0) {
                int x = 0;
                for (; x + LANES <= W; x += LANES) vstore16((float16)0.0f, 0, d + x);
                for (; x < W; x++) d[x] = 0.0f;
                continue;
            }
            __global const float *sr = s + (size_t)(y / S) * OW * NP + q;
            /* the row in private memory first, then vector stores */
            for (int x0 = 0; x0 < W; x0 += 4 * LANES) {
                int len = min(4 * LANES, W - x0);
                float t[4 * LANES];
                int ox = (x0 + S - 1) / S, ph = ox * S - x0;
                for (int l = 0; l < len; l++) {
                    float v = 0.0f;
                    if (l == ph) {
                        v = sr[(size_t)ox * NP];
                        ox++;
                        ph += S;
                    }
                    t[l] = v;
                }
                int l = 0;
                for (; l + LANES <= len; l += LANES) vstore16(vload16(0, t + l), 0, d + x0 + l);
                for (; l < len; l++) d[x0 + l] = t[l];
            }
        }
    }
}

/* dst (M, NP) at dst_off: dst[m][n] = src[n][m] for an (N, M) source (an
 * NCHW tensor with M = C*H*W is its lanes layout (C, H, W, NP)), zero for
 * n >= N. One work-item per 16 images x 16 consecutive m: 16 row loads,
 * an in-register transpose, 16 vector stores; a partial block of m takes
 * scalar loads. Dimension 0 runs along m, so a work-group streams along
 * the same 16 images. Global: (ceil(M/16), NP/16). */
__kernel void conv_to_lanes_t(int N, int M, int NP, __global const float *src,
                              __global float *dst, ulong dst_off)
{
    int mb = get_global_id(0);
    int nb = get_global_id(1);
    int n0 = nb * LANES, m0 = mb * LANES;
    if (n0 >= NP || m0 >= M) return;
    __global float *d = dst + dst_off + (size_t)m0 * NP + n0;
    int nn = clamp(N - n0, 0, LANES), mm = min(LANES, M - m0);
    float16 r[LANES];
    if (mm == LANES) {
#pragma unroll
        for (int q = 0; q < LANES; q++)
            r[q] = q < nn ? vload16(0, src + (size_t)(n0 + q) * M + m0) : (float16)0.0f;
        transpose16(r);
#pragma unroll
        for (int u = 0; u < LANES; u++) vstore16(r[u], 0, d + (size_t)u * NP);
    } else {
        for (int u = 0; u < mm; u++) {
            float v[LANES];
            for (int q = 0; q < LANES; q++) v[q] = q < nn ? src[(size_t)(n0 + q) * M + m0 + u] : 0.0f;
            vstore16(vload16(0, v), 0, d + (size_t)u * NP);
        }
    }
}

/* dst[n][ch][p] = src[ch][p][n] (+ bias[ch]) for n < N: the lanes layout
 * (CH, P, NP) at src_off back to NCHW. One work-item per 16 pixels x 16
 * lanes of one channel: 16 vector loads, an in-register transpose, one
 * vector store per image; a partial block of pixels (P not a multiple of
 * 16) stores scalars. Global: (ceil(P/16), CH*NP/16). */
__kernel void conv_from_lanes(int N, int CH, int P, int NP, __global const float *src,
                              ulong src_off, __global const float *bias, int has_bias,
                              __global float *dst)
{
    int pb = get_global_id(0);
    int g1 = get_global_id(1);
    int nbs = NP / LANES;
    if (pb * LANES >= P || g1 >= CH * nbs) return;
    int ch = g1 / nbs, n0 = (g1 - (g1 / nbs) * nbs) * LANES, p0 = pb * LANES;
    if (n0 >= N) return;
    float bv = has_bias ? bias[ch] : 0.0f;
    __global const float *s = src + src_off + ((size_t)ch * P + p0) * NP + n0;
    int nn = min(LANES, N - n0), pp = min(LANES, P - p0);
    if (pp == LANES) {
        float16 r[LANES];
#pragma unroll
        for (int u = 0; u < LANES; u++) r[u] = vload16(0, s + (size_t)u * NP);
        transpose16(r);
#pragma unroll
        for (int q = 0; q < LANES; q++)
            if (q < nn) vstore16(r[q] + bv, 0, dst + ((size_t)(n0 + q) * CH + ch) * P + p0);
    } else {
        for (int q = 0; q < nn; q++) {
            __global float *d = dst + ((size_t)(n0 + q) * CH + ch) * P + p0;
            for (int u = 0; u < pp; u++) d[u] = s[(size_t)u * NP + q] + bv;
        }
    }
}

/* The same for images smaller than 16 pixels (a dense layer's are 1x1),
 * whose rows conv_from_lanes would store one scalar at a time: the
 * transpose runs over m = ch*P, dst[n][m] = src[m][n] (+ bias[m / P]), 16
 * consecutive m x 16 lanes per work-item. Global: (ceil(M/16), NP/16). */
__kernel void conv_from_lanes_flat(int N, int M, int P, int NP, __global const float *src,
                                   ulong src_off, __global const float *bias, int has_bias,
                                   __global float *dst)
{
    int mb = get_global_id(0);
    int nb = get_global_id(1);
    int m0 = mb * LANES, n0 = nb * LANES;
    if (m0 >= M || n0 >= N) return;
    __global const float *s = src + src_off + (size_t)m0 * NP + n0;
    int nn = min(LANES, N - n0), mm = min(LANES, M - m0);
    float bv[LANES];
    for (int l = 0; l < LANES; l++) bv[l] = 0.0f;
    if (has_bias) {
        int ch = m0 / P, r = m0 - ch * P; /* walk (ch, p) without dividing */
        for (int l = 0; l < mm; l++) {
            bv[l] = bias[ch];
            if (++r == P) r = 0, ch++;
        }
    }
    if (mm == LANES) {
        float16 r[LANES];
#pragma unroll
        for (int u = 0; u < LANES; u++) r[u] = vload16(0, s + (size_t)u * NP);
        transpose16(r);
        float16 b16 = vload16(0, bv);
#pragma unroll
        for (int q = 0; q < LANES; q++)
            if (q < nn) vstore16(r[q] + b16, 0, dst + (size_t)(n0 + q) * M + m0);
    } else {
        for (int q = 0; q < nn; q++) {
            __global float *d = dst + (size_t)(n0 + q) * M + m0;
            for (int l = 0; l < mm; l++) d[l] = s[(size_t)l * NP + q] + bv[l];
        }
    }
}

/* Stores 16 values at dst[0..limit) (vector store when all 16 fit). */
INLINE void store16(float16 v, __global float *dst, int limit)
{
    if (limit >= LANES) {
        vstore16(v, 0, dst);
    } else {
        float t[LANES];
        vstore16(v, 0, t);
        for (int q = 0; q < limit; q++) dst[q] = t[q];
    }
}

/* Forward weights: wf[((i*K + j)*C + c)*COP + o] = w[o][c][i][j] (0 for
 * o >= CO). One work-item per 16 output channels of one input channel: it
 * reads 16 rows of K*K taps and writes one 16-vector per tap. Global:
 * (ceil(COP/16), C). */
__kernel void conv_weights_fwd(int CO, int C, int K, int COP, __global const float *w,
                               __global float *wf, ulong wf_off)
{
    int o0 = get_global_id(0) * LANES;
    int c = get_global_id(1);
    if (o0 >= COP || c >= C) return;
    int KK = K * K;
    for (int t = 0; t < KK; t++) {
        float v[LANES];
        for (int q = 0; q < LANES; q++)
            v[q] = o0 + q < CO ? w[((size_t)(o0 + q) * C + c) * KK + t] : 0.0f;
        store16(vload16(0, v), wf + wf_off + ((size_t)t * C + c) * COP + o0, COP - o0);
    }
}

/* Backward-data weights: wb[((i*K + j)*CO + o)*CIP + c] = w[o][c][i][j] (0
 * for c >= C). One work-item per 16 input channels of one output channel.
 * Global: (ceil(CIP/16), CO). */
__kernel void conv_weights_bwd(int CO, int C, int K, int CIP, __global const float *w,
                               __global float *wb, ulong wb_off)
{
    int c0 = get_global_id(0) * LANES;
    int o = get_global_id(1);
    if (c0 >= CIP || o >= CO) return;
    int KK = K * K;
    for (int t = 0; t < KK; t++) {
        float v[LANES];
        for (int q = 0; q < LANES; q++)
            v[q] = c0 + q < C ? w[((size_t)o * C + c0 + q) * KK + t] : 0.0f;
        store16(vload16(0, v), wb + wb_off + ((size_t)t * CO + o) * CIP + c0, CIP - c0);
    }
}

/* ------------------------------------------------------------------ */
/* The register-blocked inner loop shared by forward and backward-data */
/* ------------------------------------------------------------------ */

#define MAX_RM 10

/* acc[v][r] += sum over `cin` channels of a[r] * b[v]: a walks `a` by
 * a_step (RM contiguous weights per channel), b walks by b_step (one
 * channel of the lanes layout). rm and nv are literals at every call site,
 * so the loops unroll and acc stays in registers. */
#define RANK1_LOOP(rm, nv, acc, ap, bp, cin, a_step, b_step)                  \
    for (int ch_ = 0; ch_ < (cin); ch_++) {                                   \
        float16 b0_ = vload16(0, bp);                                         \
        float16 b1_ = (nv) > 1 ? vload16(1, bp) : b0_;                        \
        _Pragma("unroll")                                                     \
        for (int r_ = 0; r_ < (rm); r_++) {                                   \
            float16 a_ = (float16)(ap[r_]);                                   \
            acc[0][r_] = fma(a_, b0_, acc[0][r_]);                            \
            if ((nv) > 1) acc[1][r_] = fma(a_, b1_, acc[1][r_]);              \
        }                                                                     \
        bp += (b_step);                                                       \
        ap += (a_step);                                                       \
    }

/* Writes acc (channels ch0.., lanes n0..) into the lanes layout
 * out (NCH, P, NP) at pixel pix: contiguous vector stores (a scalar scatter
 * straight into NCHW measured 1.5-6x slower); conv_from_lanes then makes
 * NCHW. Channels >= NCH are dropped. */
INLINE void store_lanes(int rm, int nv, float16 acc[2][MAX_RM], int ch0, int NCH, int n0, int NP,
                        size_t P, int pix, __global float *out)
{
#pragma unroll
    for (int r = 0; r < rm; r++) {
        int ch = ch0 + r;
        if (ch >= NCH) break;
        __global float *op = out + ((size_t)ch * P + pix) * NP + n0;
        vstore16(acc[0][r], 0, op);
        if (nv > 1) vstore16(acc[1][r], 1, op);
    }
}

/* Forward: y[n][co][oy][ox] = b[co] + sum_{c,i,j} x[n][c][oy*S-PAD+i][ox*S-PAD+j] w[co][c][i][j].
 * xT: (C, H, W, NP); yT: (CO, OH*OW, NP). Only the taps that land inside the input are visited
 * (no padded copy, no work on padding). One work-item: RM output channels
 * x 16*NV lanes of one output pixel. Global: (ceil(CO/RM), OH*OW*NP/(16*NV));
 * a work-group along dim 0 shares the input window in cache. */
INLINE void conv_fwd_lanes(int rm, int nv, int C, int H, int W, int NP, int CO, int COP, int K,
                           int S, int PAD, int OH, int OW, __global const float *x, ulong x_off,
                           __global const float *wf, ulong wf_off, __global float *y, ulong y_off)
{
    int cb = get_global_id(0);
    int item = get_global_id(1);
    int nblocks = NP / (LANES * nv);
    int co0 = cb * rm;
    if (co0 >= CO || item >= OH * OW * nblocks) return;
    int nb = item % nblocks;
    int pix = item / nblocks;
    int oy = pix / OW, ox = pix - (pix / OW) * OW;
    int n0 = nb * LANES * nv;
    float16 acc[2][MAX_RM];
#pragma unroll
    for (int r = 0; r < rm; r++) acc[0][r] = acc[1][r] = (float16)0.0f;
    size_t cstride = (size_t)H * W * NP;
    int iy0 = oy * S - PAD, ix0 = ox * S - PAD;
    int i0 = max(0, -iy0), i1 = min(K, H - iy0);
    int j0 = max(0, -ix0), j1 = min(K, W - ix0);
    for (int i = i0; i < i1; i++) {
        for (int j = j0; j < j1; j++) {
            __global const float *bp = x + x_off + ((size_t)(iy0 + i) * W + (ix0 + j)) * NP + n0;
            __global const float *ap = wf + wf_off + (size_t)(i * K + j) * C * COP + co0;
            RANK1_LOOP(rm, nv, acc, ap, bp, C, COP, cstride)
        }
    }
    store_lanes(rm, nv, acc, co0, CO, n0, NP, (size_t)OH * OW, pix, y + y_off);
}

/* Backward data: dx[n][c][y][x] = sum over (co, i, j) with (y+PAD-i) and
 * (x+PAD-j) divisible by S and inside dy of
 * dy[n][co][(y+PAD-i)/S][(x+PAD-j)/S] w[co][c][i][j]. dyT: (CO, OH, OW, NP),
 * dxT: (C, H*W, NP).
 * Only the taps of the pixel's stride phase that land inside dy are visited
 * (no zero dilation, no padding). One work-item: RM input channels x 16*NV
 * lanes of one dx pixel. */
INLINE void conv_bwd_data_lanes(int rm, int nv, int C, int CIP, int H, int W, int NP, int CO,
                                int OH, int OW, int K, int S, int PAD, __global const float *dy,
                                ulong dy_off, __global const float *wb, ulong wb_off,
                                __global float *dx, ulong dx_off)
{
    int cb = get_global_id(0);
    int item = get_global_id(1);
    int nblocks = NP / (LANES * nv);
    int c0 = cb * rm;
    if (c0 >= C || item >= H * W * nblocks) return;
    int nb = item % nblocks;
    int pix = item / nblocks;
    int yy = pix / W, xx = pix - (pix / W) * W;
    int n0 = nb * LANES * nv;
    float16 acc[2][MAX_RM];
#pragma unroll
    for (int r = 0; r < rm; r++) acc[0][r] = acc[1][r] = (float16)0.0f;
    size_t cstride = (size_t)OH * OW * NP;
    int ys = yy + PAD, xs = xx + PAD;
    /* taps i = ys - S*oy for oy in [0, OH), 0 <= i < K */
    int i0 = max(ys % S, ys - (OH - 1) * S), i1 = min(K - 1, ys);
    int j0 = max(xs % S, xs - (OW - 1) * S), j1 = min(K - 1, xs);
    for (int i = i0; i <= i1; i += S) {
        int oy = (ys - i) / S;
        for (int j = j0; j <= j1; j += S) {
            int ox = (xs - j) / S;
            __global const float *bp = dy + dy_off + ((size_t)oy * OW + ox) * NP + n0;
            __global const float *ap = wb + wb_off + (size_t)(i * K + j) * CO * CIP + c0;
            RANK1_LOOP(rm, nv, acc, ap, bp, CO, CIP, cstride)
        }
    }
    store_lanes(rm, nv, acc, c0, C, n0, NP, (size_t)H * W, pix, dx + dx_off);
}

#define FWD_ARGS                                                                          \
    int C, int H, int W, int NP, int CO, int COP, int K, int S, int PAD, int OH, int OW,  \
        __global const float *x, ulong x_off, __global const float *wf, ulong wf_off,     \
        __global float *y, ulong y_off
#define FWD_PASS C, H, W, NP, CO, COP, K, S, PAD, OH, OW, x, x_off, wf, wf_off, y, y_off

#define BWD_ARGS                                                                          \
    int C, int CIP, int H, int W, int NP, int CO, int OH, int OW, int K, int S, int PAD,  \
        __global const float *dy, ulong dy_off, __global const float *wb, ulong wb_off,   \
        __global float *dx, ulong dx_off
#define BWD_PASS C, CIP, H, W, NP, CO, OH, OW, K, S, PAD, dy, dy_off, wb, wb_off, dx, dx_off

/* Variants: _<RM>_<NV>. conv.c picks RM by channel count, NV by batch. */
__kernel void conv_fwd_4_1(FWD_ARGS) { conv_fwd_lanes(4, 1, FWD_PASS); }
__kernel void conv_fwd_4_2(FWD_ARGS) { conv_fwd_lanes(4, 2, FWD_PASS); }
__kernel void conv_fwd_8_1(FWD_ARGS) { conv_fwd_lanes(8, 1, FWD_PASS); }
__kernel void conv_fwd_8_2(FWD_ARGS) { conv_fwd_lanes(8, 2, FWD_PASS); }
__kernel void conv_fwd_10_1(FWD_ARGS) { conv_fwd_lanes(10, 1, FWD_PASS); }
__kernel void conv_fwd_10_2(FWD_ARGS) { conv_fwd_lanes(10, 2, FWD_PASS); }
__kernel void conv_bwd_data_4_1(BWD_ARGS) { conv_bwd_data_lanes(4, 1, BWD_PASS); }
__kernel void conv_bwd_data_4_2(BWD_ARGS) { conv_bwd_data_lanes(4, 2, BWD_PASS); }
__kernel void conv_bwd_data_8_1(BWD_ARGS) { conv_bwd_data_lanes(8, 1, BWD_PASS); }
__kernel void conv_bwd_data_8_2(BWD_ARGS) { conv_bwd_data_lanes(8, 2, BWD_PASS); }
__kernel void conv_bwd_data_10_1(BWD_ARGS) { conv_bwd_data_lanes(10, 1, BWD_PASS); }
__kernel void conv_bwd_data_10_2(BWD_ARGS) { conv_bwd_data_lanes(10, 2, BWD_PASS); }

/* Backward weights, partial over one chunk (a range of output rows x a
 * range of 16-lane vectors): part[chunk][co][c][i][j] = sum over the
 * chunk's (n, oy, ox) of dy[n][co][oy][ox] x[n][c][oy*S-PAD+i][ox*S-PAD+j],
 * visiting only the (oy, ox) whose input lands inside x.
 * Work-item: WA output channels x WB input channels of one tap (i, j); the
 * 16 lanes are summed at the end in a fixed order. Global:
 * (K*K, ceil(CO/WA) * ceil(C/WB) * chunks), chunk = row_chunk * vchunks +
 * vector_chunk; a work-group holds the K*K taps of one block, which share
 * their dy and x rows in cache. Variants _<WA>_<WB> (WA*WB accumulators,
 * WA + WB loads per WA*WB FMAs); conv.c picks one by the channels it pads
 * and its loads per FMA. */
#define MAX_WA 6
#define MAX_WB 6
INLINE void conv_bwd_weights_lanes(int wa, int wb, int C, int H, int W, int NP, int CO, int OH,
                                   int OW, int K, int S, int PAD, int rows, int vecs, int vchunks,
                                   int chunks, __global const float *x, ulong x_off,
                                   __global const float *dy, ulong dy_off, __global float *part,
                                   ulong part_off)
{
    int tap = get_global_id(0);
    int g1 = get_global_id(1);
    int KK = K * K;
    int ncb = (C + wb - 1) / wb;
    int nob = (CO + wa - 1) / wa;
    if (tap >= KK || g1 >= nob * ncb * chunks) return;
    int o0 = (g1 % nob) * wa;
    int c0 = ((g1 / nob) % ncb) * wb;
    int chunk = g1 / (nob * ncb);
    int rc = chunk / vchunks, vc = chunk - (chunk / vchunks) * vchunks;
    int ti = tap / K, tj = tap - (tap / K) * K;
    /* output rows/columns whose input row/column is inside x */
    int oy_lo = PAD - ti > 0 ? (PAD - ti + S - 1) / S : 0;
    int oy_hi = H - 1 + PAD - ti >= 0 ? min(OH - 1, (H - 1 + PAD - ti) / S) : -1;
    int ox_lo = PAD - tj > 0 ? (PAD - tj + S - 1) / S : 0;
    int ox_hi = W - 1 + PAD - tj >= 0 ? min(OW - 1, (W - 1 + PAD - tj) / S) : -1;
    oy_lo = max(oy_lo, rc * rows);
    oy_hi = min(oy_hi, rc * rows + rows - 1);
    int v0 = vc * vecs, v1 = min(NP / LANES, v0 + vecs);
    size_t xs = (size_t)H * W * NP, ds = (size_t)OH * OW * NP;
    size_t xo[MAX_WB], dof[MAX_WA];
#pragma unroll
    for (int b = 0; b < wb; b++) xo[b] = x_off + (size_t)min(c0 + b, C - 1) * xs;
#pragma unroll
    for (int a = 0; a < wa; a++) dof[a] = dy_off + (size_t)min(o0 + a, CO - 1) * ds;
    float16 acc[MAX_WA][MAX_WB];
#pragma unroll
    for (int a = 0; a < wa; a++)
#pragma unroll
        for (int b = 0; b < wb; b++) acc[a][b] = (float16)0.0f;
    for (int oy = oy_lo; oy <= oy_hi; oy++) {
        for (int ox = ox_lo; ox <= ox_hi; ox++) {
            size_t xp = ((size_t)(oy * S - PAD + ti) * W + (ox * S - PAD + tj)) * NP;
            size_t dp = ((size_t)oy * OW + ox) * NP;
            for (int v = v0; v < v1; v++) {
                float16 d[MAX_WA];
#pragma unroll
                for (int a = 0; a < wa; a++) d[a] = vload16(v, dy + dof[a] + dp);
#pragma unroll
                for (int b = 0; b < wb; b++) {
                    float16 xv = vload16(v, x + xo[b] + xp);
#pragma unroll
                    for (int a = 0; a < wa; a++) acc[a][b] = fma(d[a], xv, acc[a][b]);
                }
            }
        }
    }
    size_t cs = (size_t)C * KK;
    __global float *pp = part + part_off + (size_t)chunk * CO * cs;
#pragma unroll
    for (int a = 0; a < wa; a++) {
        if (o0 + a >= CO) break;
#pragma unroll
        for (int b = 0; b < wb; b++) {
            if (c0 + b >= C) break;
            float16 s16 = acc[a][b];
            float8 s8 = s16.lo + s16.hi;
            float4 s4 = s8.lo + s8.hi;
            float2 s2 = s4.lo + s4.hi;
            pp[(size_t)(o0 + a) * cs + (size_t)(c0 + b) * KK + tap] = s2.x + s2.y;
        }
    }
}

#define BWDW_ARGS                                                                            \
    int C, int H, int W, int NP, int CO, int OH, int OW, int K, int S, int PAD, int rows,    \
        int vecs, int vchunks, int chunks, __global const float *x, ulong x_off,             \
        __global const float *dy, ulong dy_off, __global float *part, ulong part_off
#define BWDW_PASS                                                                            \
    C, H, W, NP, CO, OH, OW, K, S, PAD, rows, vecs, vchunks, chunks, x, x_off, dy, dy_off,   \
        part, part_off
__kernel void conv_bwd_weights_4_6(BWDW_ARGS) { conv_bwd_weights_lanes(4, 6, BWDW_PASS); }
__kernel void conv_bwd_weights_6_4(BWDW_ARGS) { conv_bwd_weights_lanes(6, 4, BWDW_PASS); }
__kernel void conv_bwd_weights_5_5(BWDW_ARGS) { conv_bwd_weights_lanes(5, 5, BWDW_PASS); }
__kernel void conv_bwd_weights_5_4(BWDW_ARGS) { conv_bwd_weights_lanes(5, 4, BWDW_PASS); }
__kernel void conv_bwd_weights_4_5(BWDW_ARGS) { conv_bwd_weights_lanes(4, 5, BWDW_PASS); }
__kernel void conv_bwd_weights_4_4(BWDW_ARGS) { conv_bwd_weights_lanes(4, 4, BWDW_PASS); }

/* out[e] = sum over chunk of part[chunk][e], chunks in order; 16 elements
 * per work-item. Global: ceil(n / 16). */
__kernel void conv_sum_chunks(int n, int chunks, __global const float *part, ulong part_off,
                              __global float *out)
{
    int e0 = get_global_id(0) * LANES;
    if (e0 >= n) return;
    __global const float *p = part + part_off;
    if (e0 + LANES <= n) {
        float16 s = vload16(0, p + e0);
        for (int k = 1; k < chunks; k++) s += vload16(0, p + (size_t)k * n + e0);
        vstore16(s, 0, out + e0);
    } else {
        for (int e = e0; e < n; e++) {
            float s = p[e];
            for (int k = 1; k < chunks; k++) s += p[(size_t)k * n + e];
            out[e] = s;
        }
    }
}

/* part[chunk][co] = sum over images [chunk*imgs, (chunk+1)*imgs) and their
 * pixels of dy[n][co][.]: 16 running sums over the pixels of each image,
 * fixed order. Global: (CO, chunks); conv_sum_chunks finishes db. */
__kernel void conv_bias_grad(int N, int CO, int P, int imgs, __global const float *dy,
                             __global float *part, ulong part_off)
{
    int co = get_global_id(0);
    int chunk = get_global_id(1);
    int n0 = chunk * imgs;
    if (co >= CO || n0 >= N) return;
    int n1 = min(N, n0 + imgs);
    float total = 0.0f;
    for (int n = n0; n < n1; n++) {
        __global const float *p = dy + ((size_t)n * CO + co) * P;
        float16 s = (float16)0.0f;
        int q = 0;
        for (; q + LANES <= P; q += LANES) s += vload16(0, p + q);
        float8 s8 = s.lo + s.hi;
        float4 s4 = s8.lo + s8.hi;
        float2 s2 = s4.lo + s4.hi;
        float t = s2.x + s2.y;
        for (; q < P; q++) t += p[q];
        total += t;
    }
    part[part_off + (size_t)chunk * CO + co] = total;
}

/* ------------------------------------------------------------------ */
/* Direct NCHW kernels for stride 1 and a small reduction (c*k*k), where  */
/* the lanes layout copies would cost more than the arithmetic            */
/* ------------------------------------------------------------------ */

/* xp (N*C, HP, WPP): x with PAD zero rows/columns on top/left and zeros to
 * the right up to WPP. One work-item per padded row: vector copies of the
 * row, scalar zeros around it. Global: N*C*HP. */
__kernel void conv_pad_rows(int H, int W, int PAD, int HP, int WPP, int rows,
                            __global const float *x, __global float *xp, ulong xp_off)
{
    int r = get_global_id(0); /* (n*C + c)*HP + hp */
    if (r >= rows) return;
    int hp = r % HP, img = r / HP, h = hp - PAD;
    __global float *d = xp + xp_off + (size_t)r * WPP;
    if (h < 0 || h >= H) {
        int w = 0;
        for (; w + LANES <= WPP; w += LANES) vstore16((float16)0.0f, 0, d + w);
        for (; w < WPP; w++) d[w] = 0.0f;
        return;
    }
    __global const float *src = x + ((size_t)img * H + h) * W;
    for (int w = 0; w < PAD; w++) d[w] = 0.0f;
    int w = 0;
    for (; w + LANES <= W; w += LANES) vstore16(vload16(0, src + w), 0, d + PAD + w);
    for (; w < W; w++) d[PAD + w] = src[w];
    for (w = PAD + W; w < WPP; w++) d[w] = 0.0f;
}

/* 16 floats from p[0..n) and zeros after (n < 16 reads stay in bounds). */
INLINE float16 load16_tail(__global const float *p, int n)
{
    if (n >= LANES) return vload16(0, p);
    float t[LANES];
    for (int q = 0; q < LANES; q++) t[q] = q < n ? p[q] : 0.0f;
    return vload16(0, t);
}

/* Forward, stride 1: y[n][co][oy][ox0..ox0+31] for RM output channels, the
 * 32 output pixels of a row as two float16 accumulators per channel; the
 * input rows come from xp (x itself when there is no padding) with
 * unaligned vector loads, the weights are broadcast. The two vectors start
 * at s0 and s1; near the row end they slide back to end exactly at OW
 * (overlapping pixels get the same value twice), so with OW >= 16 every
 * read stays inside the row (WPP >= OW + K - 1) and every store is a full
 * vector store; a shorter row reads WPP >= 16 + K - 1 and stores a part.
 * A work-item walks the rows [rg*R, rg*R + R) of one image, so each output
 * plane is written in long runs by one thread (rows of 26 or 28 floats
 * written by different threads shared cache lines). Global:
 * (ceil(CO/RM), N*ceil(OH/R)). */
INLINE void conv_fwd_direct(int rm, int N, int C, int CO, int K, int HP, int WPP, int OH, int OW,
                            int R, __global const float *xp, ulong xp_off,
                            __global const float *w, __global const float *bias, int has_bias,
                            __global float *y)
{
    int cb = get_global_id(0);
    int item = get_global_id(1);
    int rgroups = (OH + R - 1) / R;
    int co0 = cb * rm;
    if (co0 >= CO || item >= N * rgroups) return;
    int rg = item % rgroups, n = item / rgroups;
    int oy0 = rg * R, oy1 = min(OH, oy0 + R);
    int oblocks = (OW + 2 * LANES - 1) / (2 * LANES);
    int last = max(0, OW - LANES);
    int ckk = C * K * K;
    __global const float *wr[MAX_RM];
#pragma unroll
    for (int r = 0; r < rm; r++) wr[r] = w + (size_t)min(co0 + r, CO - 1) * ckk;
    float bv[MAX_RM];
#pragma unroll
    for (int r = 0; r < rm; r++) bv[r] = has_bias ? bias[min(co0 + r, CO - 1)] : 0.0f;
    __global const float *xn = xp + xp_off + (size_t)n * C * HP * WPP;
    for (int oy = oy0; oy < oy1; oy++) {
        for (int ob = 0; ob < oblocks; ob++) {
            int s0 = min(ob * 2 * LANES, last), s1 = min(ob * 2 * LANES + LANES, last);
            float16 acc[2][MAX_RM];
#pragma unroll
            for (int r = 0; r < rm; r++) acc[0][r] = acc[1][r] = (float16)0.0f;
            int t = 0;
            for (int c = 0; c < C; c++) {
                for (int i = 0; i < K; i++) {
                    __global const float *xr = xn + ((size_t)c * HP + oy + i) * WPP;
                    for (int j = 0; j < K; j++, t++) {
                        float16 b0 = vload16(0, xr + s0 + j), b1 = vload16(0, xr + s1 + j);
#pragma unroll
                        for (int r = 0; r < rm; r++) {
                            float16 a = (float16)(wr[r][t]);
                            acc[0][r] = fma(a, b0, acc[0][r]);
                            acc[1][r] = fma(a, b1, acc[1][r]);
                        }
                    }
                }
            }
#pragma unroll
            for (int r = 0; r < rm; r++) {
                int co = co0 + r;
                if (co >= CO) break;
                __global float *yp = y + (((size_t)n * CO + co) * OH + oy) * OW;
                if (OW >= LANES) {
                    vstore16(acc[0][r] + bv[r], 0, yp + s0);
                    vstore16(acc[1][r] + bv[r], 0, yp + s1);
                } else {
                    store16(acc[0][r] + bv[r], yp, OW);
                }
            }
        }
    }
}

#define DIRECT_ARGS                                                                          \
    int N, int C, int CO, int K, int HP, int WPP, int OH, int OW, int R,                      \
        __global const float *xp, ulong xp_off, __global const float *w,                     \
        __global const float *bias, int has_bias, __global float *y
#define DIRECT_PASS N, C, CO, K, HP, WPP, OH, OW, R, xp, xp_off, w, bias, has_bias, y
__kernel void conv_fwd_direct_4(DIRECT_ARGS) { conv_fwd_direct(4, DIRECT_PASS); }
__kernel void conv_fwd_direct_8(DIRECT_ARGS) { conv_fwd_direct(8, DIRECT_PASS); }
__kernel void conv_fwd_direct_10(DIRECT_ARGS) { conv_fwd_direct(10, DIRECT_PASS); }

/* Backward weights, stride 1, partial over a chunk of images:
 * part[chunk][co][t] for CB output channels co and the taps
 * t = (c*K + i)*K + j of group tg (TG taps per work-item) = sum over the
 * chunk's n, oy and ox of dy[n][co][oy][ox] xp[n][c][oy+i][ox+j], and
 * (has_db, group 0) the bias gradient's partial dbpart[chunk][co] = the sum
 * of those dy. A row is read as 16-pixel vectors placed like the
 * forward's: the last one slides back to end at OW, so with OW >= 16 every
 * read stays inside the row, and its lanes that the previous vector
 * covered are multiplied by 0 (a select there became masked loads that ran
 * 2x slower; an infinite dy there makes that pixel's terms NaN instead of
 * infinite). Rows shorter than 16 read dy with a zero tail and xp
 * 16 + K - 1 wide. Each x vector feeds the CB channels (CB*TG
 * accumulators); the lanes are summed at the end. Global:
 * (ceil(CO/CB), groups*chunks). */
#define TG 9
#define MAX_CB 3
INLINE void conv_bwd_weights_direct(int cb, int N, int C, int CO, int K, int HP, int WPP, int OH,
                                    int OW, int imgs, int groups, int chunks,
                                    __global const float *xp, ulong xp_off,
                                    __global const float *dy, __global float *part,
                                    ulong part_off, int has_db, __global float *dbpart,
                                    ulong dbpart_off)
{
    int co0 = get_global_id(0) * cb;
    int g1 = get_global_id(1);
    if (co0 >= CO || g1 >= groups * chunks) return;
    int tg = g1 % groups, chunk = g1 / groups;
    int KK = K * K, ckk = C * KK;
    int t0 = tg * TG, nt = min(TG, ckk - t0);
    size_t xo[TG];
#pragma unroll
    for (int u = 0; u < TG; u++) {
        int t = min(t0 + u, ckk - 1);
        int c = t / KK, ij = t - (t / KK) * KK;
        int i = ij / K, j = ij - (ij / K) * K;
        xo[u] = ((size_t)c * HP + i) * WPP + j;
    }
    size_t dco[MAX_CB];
#pragma unroll
    for (int a = 0; a < cb; a++) dco[a] = (size_t)min(co0 + a, CO - 1) * OH * OW;
    float16 acc[MAX_CB][TG], bsum[MAX_CB];
#pragma unroll
    for (int a = 0; a < cb; a++) {
        bsum[a] = (float16)0.0f;
#pragma unroll
        for (int u = 0; u < TG; u++) acc[a][u] = (float16)0.0f;
    }
    int npos = (OW + LANES - 1) / LANES;
    int last = max(0, OW - LANES);
    int16 lane = (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    /* the last vector's lanes below (npos-1)*16 belong to the one before */
    float16 mlast = select((float16)0.0f, (float16)1.0f, lane + last >= (npos - 1) * LANES);
    int n0 = chunk * imgs, n1 = min(N, n0 + imgs);
    for (int n = n0; n < n1; n++) {
        __global const float *xn = xp + xp_off + (size_t)n * C * HP * WPP;
        __global const float *dn = dy + (size_t)n * CO * OH * OW;
        for (int oy = 0; oy < OH; oy++) {
            __global const float *xr = xn + (size_t)oy * WPP;
            __global const float *dr = dn + (size_t)oy * OW;
            for (int v = 0; v < npos; v++) {
                int sv = min(v * LANES, last);
                float16 m = v == npos - 1 ? mlast : (float16)1.0f;
                float16 d[MAX_CB];
#pragma unroll
                for (int a = 0; a < cb; a++) {
                    d[a] = OW >= LANES ? vload16(0, dr + dco[a] + sv) * m
                                       : load16_tail(dr + dco[a], OW);
                    bsum[a] += d[a];
                }
#pragma unroll
                for (int u = 0; u < TG; u++) {
                    float16 xv = vload16(0, xr + xo[u] + sv);
#pragma unroll
                    for (int a = 0; a < cb; a++) acc[a][u] = fma(d[a], xv, acc[a][u]);
                }
            }
        }
    }
#pragma unroll
    for (int a = 0; a < cb; a++) {
        int co = co0 + a;
        if (co >= CO) break;
        __global float *pp = part + part_off + ((size_t)chunk * CO + co) * ckk + t0;
#pragma unroll
        for (int u = 0; u < TG; u++) {
            if (u >= nt) break;
            float16 s16 = acc[a][u];
            float8 s8 = s16.lo + s16.hi;
            float4 s4 = s8.lo + s8.hi;
            float2 s2 = s4.lo + s4.hi;
            pp[u] = s2.x + s2.y;
        }
        if (has_db && tg == 0) {
            float8 s8 = bsum[a].lo + bsum[a].hi;
            float4 s4 = s8.lo + s8.hi;
            float2 s2 = s4.lo + s4.hi;
            dbpart[dbpart_off + (size_t)chunk * CO + co] = s2.x + s2.y;
        }
    }
}

#define BWDW_DIRECT_ARGS                                                                        \
    int N, int C, int CO, int K, int HP, int WPP, int OH, int OW, int imgs, int groups,         \
        int chunks, __global const float *xp, ulong xp_off, __global const float *dy,           \
        __global float *part, ulong part_off, int has_db, __global float *dbpart,               \
        ulong dbpart_off
#define BWDW_DIRECT_PASS                                                                        \
    N, C, CO, K, HP, WPP, OH, OW, imgs, groups, chunks, xp, xp_off, dy, part, part_off, has_db, \
        dbpart, dbpart_off
__kernel void conv_bwd_weights_direct_1(BWDW_DIRECT_ARGS)
{
    conv_bwd_weights_direct(1, BWDW_DIRECT_PASS);
}
__kernel void conv_bwd_weights_direct_2(BWDW_DIRECT_ARGS)
{
    conv_bwd_weights_direct(2, BWDW_DIRECT_PASS);
}
__kernel void conv_bwd_weights_direct_3(BWDW_DIRECT_ARGS)
{
    conv_bwd_weights_direct(3, BWDW_DIRECT_PASS);
}

/* ------------------------------------------------------------------ */
/* The "gemm" algorithm: im2col / col2im over a chunk of images        */
/* ------------------------------------------------------------------ */

/* col[(c*K + i)*K + j][q] for q = (n - n0)*P + oy*OW + ox, n in [n0, n0+nb):
 * x[n][c][oy*S-PAD+i][ox*S-PAD+j] or 0. Global: (nb*P, C*K*K). */
__kernel void conv_im2col(int C, int H, int W, int K, int S, int PAD, int OH, int OW, int n0,
                          int nb, __global const float *x, __global float *col, ulong col_off)
{
    int q = get_global_id(0);
    int r = get_global_id(1);
    int P = OH * OW;
    if (q >= nb * P || r >= C * K * K) return;
    int n = n0 + q / P;
    int p = q % P;
    int oy = p / OW, ox = p % OW;
    int j = r % K;
    int i = (r / K) % K;
    int c = r / (K * K);
    int h = oy * S - PAD + i, w = ox * S - PAD + j;
    float v = 0.0f;
    if (h >= 0 && h < H && w >= 0 && w < W) v = x[(((size_t)n * C + c) * H + h) * W + w];
    col[col_off + (size_t)r * nb * P + q] = v;
}

/* Gather col2im: dx[n][c][y][x] = sum over the taps that reach (y, x) of
 * dcol[(c*K + i)*K + j][(n - n0)*P + oy*OW + ox]; each dx element is written
 * once (no atomics, deterministic). Global: (W, nb*C*H). */
__kernel void conv_col2im(int C, int H, int W, int K, int S, int PAD, int OH, int OW, int n0,
                          int nb, __global const float *dcol, ulong dcol_off, __global float *dx)
{
    int xx = get_global_id(0);
    int row = get_global_id(1); /* ((n - n0)*C + c)*H + y */
    if (xx >= W || row >= nb * C * H) return;
    int yy = row % H;
    int c = (row / H) % C;
    int nl = row / (H * C);
    size_t P = (size_t)OH * OW, Q = (size_t)nb * P;
    float s = 0.0f;
    for (int i = (yy + PAD) % S; i < K; i += S) {
        int oy = (yy + PAD - i) / S;
        if (oy < 0) break; /* i grows, oy shrinks */
        if (oy >= OH) continue;
        for (int j = (xx + PAD) % S; j < K; j += S) {
            int ox = (xx + PAD - j) / S;
            if (ox < 0) break;
            if (ox >= OW) continue;
            s += dcol[dcol_off + ((size_t)(c * K + i) * K + j) * Q + nl * P + (size_t)oy * OW + ox];
        }
    }
    dx[(((size_t)(n0 + nl) * C + c) * H + yy) * W + xx] = s;
}

/* dyt[co][q] = dy[n][co][p] for q = (n - n0)*P + p. Global: (nb*P, CO). */
__kernel void conv_nchw_to_cq(int CO, int P, int n0, int nb, __global const float *dy,
                              __global float *dyt, ulong dyt_off)
{
    int q = get_global_id(0);
    int co = get_global_id(1);
    if (q >= nb * P || co >= CO) return;
    int n = n0 + q / P, p = q % P;
    dyt[dyt_off + (size_t)co * nb * P + q] = dy[((size_t)n * CO + co) * P + p];
}

/* y[n][co][p] = yt[co][q] + b[co]. Global: (nb*P, CO). */
__kernel void conv_cq_to_nchw(int CO, int P, int n0, int nb, __global const float *yt, ulong yt_off,
                              __global const float *bias, int has_bias, __global float *y)
{
    int q = get_global_id(0);
    int co = get_global_id(1);
    if (q >= nb * P || co >= CO) return;
    int n = n0 + q / P, p = q % P;
    float v = yt[yt_off + (size_t)co * nb * P + q];
    if (has_bias) v += bias[co];
    y[((size_t)n * CO + co) * P + p] = v;
}
