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
 *   Results go back to NCHW through a transposing copy.
 *  "direct" (CPU devices, stride 1, tiny c*k*k such as a first layer):
 *   NCHW rows as vectors, no layout copies.
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

/* dst (C, H, W, NP) at dst_off: dst[c][h][w][n] = src[n][c][h][w], zero for
 * n >= N. One work-item per (16 lanes, c, h) row: it walks w, gathering 16
 * images into one vector store. Global: (NP/16, C*H). */
__kernel void conv_to_lanes(int N, int C, int H, int W, int NP, __global const float *src,
                            __global float *dst, ulong dst_off)
{
    int nb = get_global_id(0);
    int row = get_global_id(1); /* c*H + h */
    if (nb * LANES >= NP || row >= C * H) return;
    int n0 = nb * LANES;
    __global float *d = dst + dst_off + (size_t)row * W * NP + n0;
    if (n0 >= N) {
        for (int w = 0; w < W; w++) vstore16((float16)0.0f, 0, d + (size_t)w * NP);
        return;
    }
    int c = row / H, h = row - (row / H) * H;
    size_t img = (size_t)C * H * W;
    __global const float *s = src + ((size_t)n0 * C + c) * H * W + (size_t)h * W;
    int nn = min(LANES, N - n0);
    if (nn == LANES) {
        for (int w = 0; w < W; w++) {
            __global const float *p = s + w;
            float16 v = (float16)(p[0], p[img], p[2 * img], p[3 * img], p[4 * img], p[5 * img],
                                  p[6 * img], p[7 * img], p[8 * img], p[9 * img], p[10 * img],
                                  p[11 * img], p[12 * img], p[13 * img], p[14 * img], p[15 * img]);
            vstore16(v, 0, d + (size_t)w * NP);
        }
    } else {
        for (int w = 0; w < W; w++) {
            float v[LANES];
            for (int q = 0; q < LANES; q++) v[q] = q < nn ? s[q * img + w] : 0.0f;
            vstore16(vload16(0, v), 0, d + (size_t)w * NP);
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

/* dst[n][ch][p] = src[ch][p][n] (+ bias[ch]) for n < N: the lanes layout
 * (CH, P, NP) at src_off back to NCHW. One work-item per 16 pixels x 16
 * lanes of one channel: 16 gathers from 16 cache lines per vector store.
 * Global: (ceil(P/16), CH*NP/16). */
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
    for (int q = 0; q < nn; q++) {
        __global float *d = dst + ((size_t)(n0 + q) * CH + ch) * P + p0;
        __global const float *c = s + q;
        if (pp == LANES) {
            float16 v = (float16)(c[0], c[NP], c[2 * NP], c[3 * NP], c[4 * NP], c[5 * NP],
                                  c[6 * NP], c[7 * NP], c[8 * NP], c[9 * NP], c[10 * NP],
                                  c[11 * NP], c[12 * NP], c[13 * NP], c[14 * NP], c[15 * NP]);
            vstore16(v + bv, 0, d);
        } else {
            for (int u = 0; u < pp; u++) d[u] = c[(size_t)u * NP] + bv;
        }
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
 * their dy and x rows in cache. */
#define WA 4
#define WB 6
__kernel void conv_bwd_weights_lanes(int C, int H, int W, int NP, int CO, int OH, int OW, int K,
                                     int S, int PAD, int rows, int vecs, int vchunks, int chunks,
                                     __global const float *x, ulong x_off, __global const float *dy,
                                     ulong dy_off, __global float *part, ulong part_off)
{
    int tap = get_global_id(0);
    int g1 = get_global_id(1);
    int KK = K * K;
    int ncb = (C + WB - 1) / WB;
    int nob = (CO + WA - 1) / WA;
    if (tap >= KK || g1 >= nob * ncb * chunks) return;
    int o0 = (g1 % nob) * WA;
    int c0 = ((g1 / nob) % ncb) * WB;
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
    size_t xo[WB], dof[WA];
#pragma unroll
    for (int b = 0; b < WB; b++) xo[b] = x_off + (size_t)min(c0 + b, C - 1) * xs;
#pragma unroll
    for (int a = 0; a < WA; a++) dof[a] = dy_off + (size_t)min(o0 + a, CO - 1) * ds;
    float16 acc[WA][WB];
#pragma unroll
    for (int a = 0; a < WA; a++)
#pragma unroll
        for (int b = 0; b < WB; b++) acc[a][b] = (float16)0.0f;
    for (int oy = oy_lo; oy <= oy_hi; oy++) {
        for (int ox = ox_lo; ox <= ox_hi; ox++) {
            size_t xp = ((size_t)(oy * S - PAD + ti) * W + (ox * S - PAD + tj)) * NP;
            size_t dp = ((size_t)oy * OW + ox) * NP;
            for (int v = v0; v < v1; v++) {
                float16 d[WA];
#pragma unroll
                for (int a = 0; a < WA; a++) d[a] = vload16(v, dy + dof[a] + dp);
#pragma unroll
                for (int b = 0; b < WB; b++) {
                    float16 xv = vload16(v, x + xo[b] + xp);
#pragma unroll
                    for (int a = 0; a < WA; a++) acc[a][b] = fma(d[a], xv, acc[a][b]);
                }
            }
        }
    }
    size_t cs = (size_t)C * KK;
    __global float *pp = part + part_off + (size_t)chunk * CO * cs;
    for (int a = 0; a < WA; a++) {
        if (o0 + a >= CO) break;
        for (int b = 0; b < WB; b++) {
            if (c0 + b >= C) break;
            float16 s16 = acc[a][b];
            float8 s8 = s16.lo + s16.hi;
            float4 s4 = s8.lo + s8.hi;
            float2 s2 = s4.lo + s4.hi;
            pp[(size_t)(o0 + a) * cs + (size_t)(c0 + b) * KK + tap] = s2.x + s2.y;
        }
    }
}

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

/* xp (N*C, HP, WPP): x with PAD zero rows/columns on top/left, zeros to the
 * right up to WPP (wide enough for every 32-wide read of a row). Global:
 * (WPP, N*C*HP). */
__kernel void conv_pad_rows(int H, int W, int PAD, int HP, int WPP, int rows,
                            __global const float *x, __global float *xp, ulong xp_off)
{
    int wp = get_global_id(0);
    int r = get_global_id(1); /* (n*C + c)*HP + hp */
    if (wp >= WPP || r >= rows) return;
    int hp = r % HP, img = r / HP;
    int h = hp - PAD, w = wp - PAD;
    float v = 0.0f;
    if (h >= 0 && h < H && w >= 0 && w < W) v = x[((size_t)img * H + h) * W + w];
    xp[xp_off + (size_t)r * WPP + wp] = v;
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
 * input rows come from xp with unaligned vector loads, the weights are
 * broadcast. Global:
 * (ceil(CO/RM), N*OH*ceil(OW/32)). */
INLINE void conv_fwd_direct(int rm, int N, int C, int CO, int K, int HP, int WPP, int OH, int OW,
                            __global const float *xp, ulong xp_off, __global const float *w,
                            __global const float *bias, int has_bias, __global float *y)
{
    int cb = get_global_id(0);
    int item = get_global_id(1);
    int oblocks = (OW + 2 * LANES - 1) / (2 * LANES);
    int co0 = cb * rm;
    if (co0 >= CO || item >= N * OH * oblocks) return;
    int ob = item % oblocks, row = item / oblocks; /* row = n*OH + oy */
    int oy = row % OH, n = row / OH;
    /* The two vectors start at s0 and s1; near the row end they slide back
     * to end exactly at OW (overlapping pixels get the same value twice),
     * so every store is a full vector store unless the row is shorter than 16. */
    int last = max(0, OW - LANES);
    int s0 = min(ob * 2 * LANES, last), s1 = min(ob * 2 * LANES + LANES, last);
    int ckk = C * K * K;
    float16 acc[2][MAX_RM];
#pragma unroll
    for (int r = 0; r < rm; r++) acc[0][r] = acc[1][r] = (float16)0.0f;
    __global const float *wr[MAX_RM];
#pragma unroll
    for (int r = 0; r < rm; r++) wr[r] = w + (size_t)min(co0 + r, CO - 1) * ckk;
    int t = 0;
    for (int c = 0; c < C; c++) {
        for (int i = 0; i < K; i++) {
            __global const float *xr = xp + xp_off + (((size_t)n * C + c) * HP + oy + i) * WPP;
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
        float bv = has_bias ? bias[co] : 0.0f;
        __global float *yp = y + (((size_t)n * CO + co) * OH + oy) * OW;
        if (OW >= LANES) {
            vstore16(acc[0][r] + bv, 0, yp + s0);
            vstore16(acc[1][r] + bv, 0, yp + s1);
        } else {
            store16(acc[0][r] + bv, yp, OW);
        }
    }
}

#define DIRECT_ARGS                                                                          \
    int N, int C, int CO, int K, int HP, int WPP, int OH, int OW, __global const float *xp,  \
        ulong xp_off, __global const float *w, __global const float *bias, int has_bias,     \
        __global float *y
#define DIRECT_PASS N, C, CO, K, HP, WPP, OH, OW, xp, xp_off, w, bias, has_bias, y
__kernel void conv_fwd_direct_4(DIRECT_ARGS) { conv_fwd_direct(4, DIRECT_PASS); }
__kernel void conv_fwd_direct_8(DIRECT_ARGS) { conv_fwd_direct(8, DIRECT_PASS); }
__kernel void conv_fwd_direct_10(DIRECT_ARGS) { conv_fwd_direct(10, DIRECT_PASS); }

/* Backward weights, stride 1, partial over a chunk of images:
 * part[chunk][co][t] for the taps t = (c*K + i)*K + j of group tg (TG taps
 * per work-item) = sum over the chunk's n, oy and ox of
 * dy[n][co][oy][ox] xp[n][c][oy+i][ox+j]. 32 output pixels of a row per
 * step as two vectors (dy is zero past OW, so those pixels add nothing
 * unless x holds an infinity there); the lanes are summed at the end.
 * Global: (CO, groups*chunks). */
#define TG 9
__kernel void conv_bwd_weights_direct(int N, int C, int CO, int K, int HP, int WPP, int OH, int OW,
                                      int imgs, int groups, int chunks, __global const float *xp,
                                      ulong xp_off, __global const float *dy,
                                      __global float *part, ulong part_off)
{
    int co = get_global_id(0);
    int g1 = get_global_id(1);
    if (co >= CO || g1 >= groups * chunks) return;
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
    float16 acc[2][TG];
#pragma unroll
    for (int u = 0; u < TG; u++) acc[0][u] = acc[1][u] = (float16)0.0f;
    int n0 = chunk * imgs, n1 = min(N, n0 + imgs);
    for (int n = n0; n < n1; n++) {
        __global const float *xn = xp + xp_off + (size_t)n * C * HP * WPP;
        for (int oy = 0; oy < OH; oy++) {
            __global const float *dr = dy + (((size_t)n * CO + co) * OH + oy) * OW;
            __global const float *xr = xn + (size_t)oy * WPP;
            for (int ox0 = 0; ox0 < OW; ox0 += 2 * LANES) {
                float16 d0 = load16_tail(dr + ox0, OW - ox0);
                float16 d1 = OW - ox0 > LANES ? load16_tail(dr + ox0 + LANES, OW - ox0 - LANES)
                                              : (float16)0.0f;
#pragma unroll
                for (int u = 0; u < TG; u++) {
                    __global const float *q = xr + xo[u] + ox0;
                    acc[0][u] = fma(d0, vload16(0, q), acc[0][u]);
                    acc[1][u] = fma(d1, vload16(1, q), acc[1][u]);
                }
            }
        }
    }
    __global float *pp = part + part_off + ((size_t)chunk * CO + co) * ckk + t0;
#pragma unroll
    for (int u = 0; u < TG; u++) {
        if (u >= nt) break;
        float16 s16 = acc[0][u] + acc[1][u];
        float8 s8 = s16.lo + s16.hi;
        float4 s4 = s8.lo + s8.hi;
        float2 s2 = s4.lo + s4.hi;
        pp[u] = s2.x + s2.y;
    }
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
