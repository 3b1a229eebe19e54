/* The "lanes" layouts (src/ops/conv_lanes.c; src/ops/conv_lanes_copy.c
 * launches these copies): the batch becomes the vector
 * lane. Activations are copied from NCHW into rows NP floats apart (the
 * batch padded to a multiple of 16, and for pixel-major layouts at some
 * batch sizes a gap of 16 floats that no kernel touches: conv_lanes.c,
 * lanes_stride), pixel p of channel c in row p*ps + c*cs:
 * channel-major (C, H, W, NP) with ps = 1, cs = H*W, or pixel-major (H, W,
 * C, NP) with ps = C, cs = 1 (conv_lanes.cl says which pass takes which);
 * weights into the order the lanes kernels broadcast them in. The copies
 * are 16 x 16 in-register transposes (faster than the per-element gathers
 * they replaced); a 1x1 layer with stride copies only the pixels it reads.
 * Copy kernels whose neighbouring work-items touched 16 different images
 * (pages) each ran slower than these, which walk along the same
 * images. A fused pooling's copies are conv_layout_pool.cl's. */

#define LANES 16

/* Transposes run in TQ x TQ blocks, the size the device's registers
 * hold: 16 where a float16 is one register (AVX-512), 8 below (-DTQ=8: on
 * AVX2 a 16 x 16 block takes 32 registers of 16 and spills); a 16 x 16
 * tile of the copies is then four blocks. */
#ifndef TQ
#define TQ 16
#endif
#if TQ == 16
#define TQ_ROUNDS 4
#elif TQ == 8
#define TQ_ROUNDS 3
#else
#error "TQ must be 8 or 16"
#endif
#define floatT CAT(float, TQ)
#define vloadT CAT(vload, TQ)
#define vstoreT CAT(vstore, TQ)

/* A transposed row of a block into a lanes layout, whose rows start
 * TQ-float aligned: with -DNT=1 (the host has seen that buffers start so
 * aligned) past the cache where the compiler can (src/ops/conv_lanes_copy.c
 * says why). No fence follows them: the kernel's completion, which the
 * runtime signals through locked (fencing) instructions on x86 CPUs, makes
 * them visible to the next kernel. */
#if defined(NT) && defined(__has_builtin)
#if __has_builtin(__builtin_nontemporal_store)
#define STORE_LANES_ROW(v, p) __builtin_nontemporal_store((v), (__global floatT *)(p))
#endif
#endif
#ifndef STORE_LANES_ROW
#define STORE_LANES_ROW(v, p) vstoreT((v), 0, (p))
#endif

/* The transposes (prelude.h's DEFINE_TRANSPOSE): 16 x 16, and TQ x TQ. */
DEFINE_TRANSPOSE(transpose16, float16, LANES, 4)
#if TQ == 8
DEFINE_TRANSPOSE(transposeT, floatT, TQ, TQ_ROUNDS)
#else
#define transposeT transpose16
#endif

/* Where m = c*P + p and the 15 after it lie in a lanes layout: at[u] is
 * the offset of lane n0 of m + u's row p*ps + c*cs (past the end of M too:
 * callers read only the m < M), ch[u] its channel; (c, p) walked from m,
 * not divided per m. SW > 0: the pixels of each channel in stride phases
 * (lanes_phase), SW the image's width; 0: in raster order. */
INLINE void lanes_rows16(int m, int P, int ps, int cs, int NP, int SW, size_t off, size_t at[LANES], int ch[LANES])
{
    int c = m / P, p = m - c * P;
    int W = SW > 0 ? SW : P, H = P / W, h = p / W, w = p - h * W;
    for (int u = 0; u < LANES; u++) {
        int row = SW > 0 ? lanes_phase(H, W, h, w) : p;
        at[u] = off + ((size_t)row * ps + (size_t)c * cs) * NP;
        ch[u] = c;
        if (++w == W) w = 0, h++;
        if (++p == P) p = 0, h = 0, c++;
    }
}

/* The lanes layout at dst_off of an (N, M) source, M = C*P (an NCHW tensor
 * of P = H*W pixels): row p*ps + c*cs holds src[n][c*P + p], zero for
 * n >= N, the pixels in phase order for SW > 0 (lanes_phase); with relu,
 * src is a dy read through a fused ReLU's derivative (ym: that ReLU's
 * output, shaped as src). One work-item per 16 images x
 * 16 consecutive m: 16 row loads, an in-register transpose, 16 vector
 * stores; a partial block of m takes scalar loads. Dimension 0 runs along
 * m, so a work-group streams along the same 16 images. Global:
 * (ceil(M/16), NL/16), NL the lanes computed (the gap after them is not
 * written). */
__kernel void conv_layout_to_lanes_t(int N, int M, int P, int ps, int cs, int NP, int SW, __global const float *src,
                                     int relu, __global const float *ym, __global float *dst, ulong dst_off)
{
    int mb = get_global_id(0);
    int nb = get_global_id(1);
    int n0 = nb * LANES, m0 = mb * LANES;
    if (n0 >= NP || m0 >= M) return;
    int nn = clamp(N - n0, 0, LANES), mm = min(LANES, M - m0);
    size_t at[LANES];
    int ch[LANES];
    lanes_rows16(m0, P, ps, cs, NP, SW, dst_off + n0, at, ch);
    if (mm == LANES) {
        /* blocks of images inside blocks of m: both halves of a row's line
         * are written one after the other */
#pragma unroll
        for (int mj = 0; mj < LANES; mj += TQ)
#pragma unroll
            for (int ni = 0; ni < LANES; ni += TQ) {
                floatT r[TQ];
#pragma unroll
                for (int q = 0; q < TQ; q++) {
                    size_t a = (size_t)(n0 + ni + q) * M + m0 + mj;
                    r[q] = ni + q >= nn ? (floatT)0.0f
                           : relu       ? RELU_BWD(vloadT(0, ym + a), vloadT(0, src + a))
                                        : vloadT(0, src + a);
                }
                transposeT(r);
#pragma unroll
                for (int u = 0; u < TQ; u++) STORE_LANES_ROW(r[u], dst + at[mj + u] + ni);
            }
    } else {
        for (int u = 0; u < mm; u++) {
            float v[LANES];
            for (int q = 0; q < LANES; q++) {
                size_t at = (size_t)(n0 + q) * M + m0 + u;
                v[q] = q >= nn ? 0.0f : relu ? RELU_BWD(ym[at], src[at]) : src[at];
            }
            vstore16(vload16(0, v), 0, dst + at[u]);
        }
    }
}

/* -DNT=1 builds the copy above alone, the only one that streams: on PoCL
 * keeping a program's binary compiles each of its kernels (a measurable
 * part of a cold ResNet-18 start for the eight kernels it never ran so,
 * when the pooling's copies were here too). */
#ifndef NT

/* The lanes layout of a 1x1 convolution with stride S (and no padding),
 * which only reads every S-th row and column: the OH x OW pixels at
 * dst_off, row (oy*OW + ox)*ps + c*cs holding src[n][c][oy*S][ox*S], zero
 * for n >= N.
 * One work-item per (c, oy) row of 16 lanes. S = 2: per TQ pixels, each
 * image's 2*TQ floats in two vector loads, their even lanes, and an
 * in-register transpose (the scalar gather of 16 images per pixel it
 * replaced ran ResNet-18's 64x28x28 projection slower); a tile whose
 * loads would pass the end of src (the last rows of the last images)
 * reads scalars. Other strides gather scalars. Dimension 0 runs along the
 * rows, so a work-group walks down the same 16 images. Global: (C*OH,
 * NL/16), NL the lanes computed (the gap after them is not written). */
__kernel void conv_layout_to_lanes_sub(int N, int C, int H, int W, int S, int OH, int OW,
                                       int ps, int cs, int NP, __global const float *src,
                                       __global float *dst, ulong dst_off)
{
    int row = get_global_id(0); /* c*OH + oy */
    int nb = get_global_id(1);
    if (nb * LANES >= NP || row >= C * OH) return;
    int n0 = nb * LANES;
    int c = row / OH, oy = row - (row / OH) * OH;
    size_t step = (size_t)ps * NP; /* from one pixel to the next */
    __global float *d = dst + dst_off + ((size_t)oy * OW * ps + (size_t)c * cs) * NP + n0;
    if (n0 >= N) {
        for (int ox = 0; ox < OW; ox++) vstore16((float16)0.0f, 0, d + ox * step);
        return;
    }
    size_t img = (size_t)C * H * W;
    size_t first = (size_t)n0 * img + ((size_t)c * H + (size_t)oy * S) * W;
    __global const float *s = src + first;
    size_t end = (size_t)N * img - first; /* floats of src from s on */
    int nn = min(LANES, N - n0);
    if (S == 2) {
        for (int ox0 = 0; ox0 < OW; ox0 += TQ) {
            int m = min(TQ, OW - ox0);
            int fast = (size_t)(nn - 1) * img + 2 * ox0 + 2 * TQ <= end;
#pragma unroll
            for (int ni = 0; ni < LANES; ni += TQ) {
                floatT r[TQ];
#pragma unroll
                for (int q = 0; q < TQ; q++) {
                    __global const float *p = s + (size_t)(ni + q) * img + 2 * ox0;
                    if (ni + q >= nn) {
                        r[q] = (floatT)0.0f;
                    } else if (fast) {
                        r[q] = (floatT)(vloadT(0, p).even, vloadT(0, p + TQ).even);
                    } else {
                        float v[TQ];
                        for (int l = 0; l < TQ; l++) v[l] = l < m ? p[2 * l] : 0.0f;
                        r[q] = vloadT(0, v);
                    }
                }
                transposeT(r);
#pragma unroll
                for (int u = 0; u < TQ; u++)
                    if (u < m) vstoreT(r[u], 0, d + (ox0 + u) * step + ni);
            }
        }
        return;
    }
    for (int ox = 0; ox < OW; ox++) {
        float v[LANES];
        for (int q = 0; q < LANES; q++) v[q] = q < nn ? s[q * img + ox * S] : 0.0f;
        vstore16(vload16(0, v), 0, d + ox * step);
    }
}

/* The n < 16 first floats of v at d, in vector stores. */
INLINE void vstore_n(float16 v, int n, __global float *d)
{
    if (n >= LANES) {
        vstore16(v, 0, d);
        return;
    }
    /* n's bits: 8, 4, 2 and 1 floats from the front, each shifting the rest down */
    if (n & 8) vstore8(v.lo, 0, d), d += 8, v.lo = v.hi;
    if (n & 4) vstore4(v.s0123, 0, d), d += 4, v.s0123 = v.s4567;
    if (n & 2) vstore2(v.s01, 0, d), d += 2, v.s01 = v.s23;
    if (n & 1) d[0] = v.s0;
}

/* The inverse for dx of such a layer: dst[n][c][y][x] = src[c][y/S][x/S][n]
 * (src channel-major (C, OH, OW, NP) at src_off) where S divides y and x,
 * else 0: every dx element is written once. One work-item per (c, oy) and
 * 16 lanes: 16 pixels' vector loads and an in-register transpose give each
 * image's pixels of row oy, which go out with the zeros between them
 * (stride 2: two shuffles, then vector stores), then the S - 1 rows of
 * zeros below. The kernel before, one work-item per channel gathering
 * scalars, ran longer. Global: (C*OH, NP/16). */
__kernel void conv_layout_from_lanes_sub(int N, int C, int H, int W, int S, int OH, int OW,
                                         int NP, __global const float *src, ulong src_off,
                                         __global float *dst)
{
    int row = get_global_id(0); /* c*OH + oy */
    int n0 = get_global_id(1) * LANES;
    if (row >= C * OH || n0 >= N) return;
    int c = row / OH, oy = row - (row / OH) * OH;
    int nn = min(LANES, N - n0);
    size_t img = (size_t)C * H * W;
    __global const float *s = src + src_off + (size_t)row * OW * NP + n0;
    __global float *d0 = dst + (size_t)n0 * img + ((size_t)c * H + (size_t)oy * S) * W;
    for (int ox0 = 0; ox0 < OW; ox0 += LANES) {
        int m = min(LANES, OW - ox0);
        float16 r[LANES];
#pragma unroll
        for (int u = 0; u < LANES; u++) r[u] = u < m ? vload16(0, s + (size_t)(ox0 + u) * NP) : (float16)0.0f;
        transpose16(r);
        int x0 = ox0 * S, len = min(W - x0, LANES * S);
        for (int q = 0; q < nn; q++) {
            __global float *d = d0 + q * img + x0;
            if (S == 2) {
                float16 z = (float16)0.0f;
                float16 lo = shuffle2(r[q], z, (uint16)(0, 16, 1, 16, 2, 16, 3, 16, 4, 16, 5, 16, 6, 16, 7, 16));
                float16 hi = shuffle2(r[q], z, (uint16)(8, 16, 9, 16, 10, 16, 11, 16, 12, 16, 13, 16, 14, 16, 15, 16));
                vstore_n(lo, len, d);
                if (len > LANES) vstore_n(hi, len - LANES, d + LANES);
            } else {
                float pv[LANES];
                vstore16(r[q], 0, pv);
                for (int l = 0; l < len; l++) d[l] = l % S == 0 ? pv[l / S] : 0.0f;
            }
        }
    }
    /* the rows between: zeros */
    int rows = min(S, H - oy * S);
    for (int q = 0; q < nn; q++)
        for (int y = 1; y < rows; y++) {
            __global float *d = d0 + q * img + (size_t)y * W;
            int x = 0;
            for (; x + LANES <= W; x += LANES) vstore16((float16)0.0f, 0, d + x);
            vstore_n((float16)0.0f, W - x, d + x);
        }
}

/* dst[n][ch][p] = row p*ps + ch*cs of src, lane n (+ bias[ch], then a
 * fused ReLU when relu) for n < N: a lanes layout at src_off back to NCHW.
 * One work-item per 16 pixels x 16 lanes of one channel: 16 vector loads,
 * an in-register transpose, one vector store per image; a partial block of pixels (P not a multiple of
 * 16) stores scalars. Global: (ceil(P/16), CH*NP/16). */
__kernel void conv_layout_from_lanes(int N, int CH, int P, int ps, int cs, int NP, __global const float *src,
                                     ulong src_off, __global const float *bias, int has_bias,
                                     int relu, __global float *dst)
{
    int pb = get_global_id(0);
    int g1 = get_global_id(1);
    int nbs = NP / LANES;
    if (pb * LANES >= P || g1 >= CH * nbs) return;
    int ch = g1 / nbs, n0 = (g1 - (g1 / nbs) * nbs) * LANES, p0 = pb * LANES;
    if (n0 >= N) return;
    float bv = has_bias ? bias[ch] : 0.0f;
    size_t step = (size_t)ps * NP; /* from one pixel to the next */
    __global const float *s = src + src_off + ((size_t)p0 * ps + (size_t)ch * cs) * NP + n0;
    int nn = min(LANES, N - n0), pp = min(LANES, P - p0);
    if (pp == LANES) {
#pragma unroll
        for (int pj = 0; pj < LANES; pj += TQ)
#pragma unroll
            for (int ni = 0; ni < LANES; ni += TQ) {
                floatT r[TQ];
#pragma unroll
                for (int u = 0; u < TQ; u++) r[u] = vloadT(0, s + (pj + u) * step + ni);
                transposeT(r);
#pragma unroll
                for (int q = 0; q < TQ; q++)
                    if (ni + q < nn) {
                        floatT v = r[q] + bv;
                        vstoreT(relu ? RELU_FWD(v) : v, 0, dst + ((size_t)(n0 + ni + q) * CH + ch) * P + p0 + pj);
                    }
            }
    } else {
        for (int q = 0; q < nn; q++) {
            __global float *d = dst + ((size_t)(n0 + q) * CH + ch) * P + p0;
            for (int u = 0; u < pp; u++) {
                float v = s[u * step + q] + bv;
                d[u] = relu ? RELU_FWD(v) : v;
            }
        }
    }
}

/* The same for images smaller than 16 pixels (a dense layer's are 1x1),
 * whose rows conv_layout_from_lanes would store one scalar at a time: the
 * transpose runs over m = ch*P, dst[n][m] = row p*ps + ch*cs (+ bias[ch]), 16
 * consecutive m x 16 lanes per work-item (relu: a fused ReLU after the
 * bias). Global: (ceil(M/16), NP/16). */
__kernel void conv_layout_from_lanes_flat(int N, int M, int P, int ps, int cs, int NP, __global const float *src,
                                          ulong src_off, __global const float *bias, int has_bias,
                                          int relu, __global float *dst)
{
    int mb = get_global_id(0);
    int nb = get_global_id(1);
    int m0 = mb * LANES, n0 = nb * LANES;
    if (m0 >= M || n0 >= N) return;
    int nn = min(LANES, N - n0), mm = min(LANES, M - m0);
    size_t at[LANES];
    int ch[LANES];
    lanes_rows16(m0, P, ps, cs, NP, 0, src_off + n0, at, ch);
    float bv[LANES];
    for (int l = 0; l < LANES; l++) bv[l] = has_bias && l < mm ? bias[ch[l]] : 0.0f;
    if (mm == LANES) {
        float16 rv[LANES];
#pragma unroll
        for (int u = 0; u < LANES; u++) rv[u] = vload16(0, src + at[u]);
        transpose16(rv);
        float16 b16 = vload16(0, bv);
#pragma unroll
        for (int q = 0; q < LANES; q++)
            if (q < nn) {
                float16 v = rv[q] + b16;
                vstore16(relu ? RELU_FWD(v) : v, 0, dst + (size_t)(n0 + q) * M + m0);
            }
    } else {
        for (int q = 0; q < nn; q++) {
            __global float *d = dst + (size_t)(n0 + q) * M + m0;
            for (int l = 0; l < mm; l++) {
                float v = src[at[l] + q] + bv[l];
                d[l] = relu ? RELU_FWD(v) : v;
            }
        }
    }
}

/* db[co] = the sum of channel co's rows of dy's channel-major lanes
 * layout at src_off (P rows of NL lanes, rs floats apart, zero past N: the
 * values through the ReLU's derivative and a fused pooling): four float16
 * running sums along the rows, a fixed order. The copy is in cache where
 * dy and the ReLU's output were in memory (summing it measured faster than
 * summing them: LeNet's conv2 at batch 256 in training on a loaded 2-core
 * AVX2 host). Global: CO. */
__kernel void conv_bias_grad_lanes(int CO, int P, int NL, int rs, __global const float *src, ulong src_off,
                                   __global float *db)
{
    int co = get_global_id(0);
    if (co >= CO) return;
    __global const float *s = src + src_off + (size_t)co * P * rs;
    float16 a[4] = {(float16)0.0f, (float16)0.0f, (float16)0.0f, (float16)0.0f};
    for (int p = 0; p < P; p++) {
        __global const float *row = s + (size_t)p * rs;
        int l = 0;
        for (; l + 4 * LANES <= NL; l += 4 * LANES)
            for (int k = 0; k < 4; k++) a[k] += vload16(0, row + l + k * LANES);
        for (int k = 0; l < NL; l += LANES, k++) a[k] += vload16(0, row + l);
    }
    db[co] = lane_sum16((a[0] + a[1]) + (a[2] + a[3]));
}

/* Weights in the order the lanes kernels broadcast them, zero-padded, in
 * blocks of QB q (the kernel's register block RM): block qb holds, for each
 * tap t < KK and r < R, its QB values contiguous,
 * dst[((qb*KK + t)*R + r)*QB + u] = w[q*qs + r*rs + t] for q = qb*QB + u < Q
 * (0 for Q <= q < QP). So a work-item's weights are one contiguous stream
 * that it uses whole (across the blocks, each cache line served RM of 16
 * floats to a work-item and the rest to other blocks' work-groups: the
 * 512-channel ResNet layers streamed their weights more than once). The
 * forward's q is the output channel and r the input channel (w[o][c][i][j]
 * at wf[((o/RM*KK + i*K + j)*C + c)*RM + o%RM]); backward-data's q is the
 * input channel and r the output channel. One work-item per block and 16
 * r: the QB rows of w it reads stay in cache over the taps. Global:
 * (QP/QB, ceil(R/16)). */
__kernel void conv_layout_weights(int Q, int QP, int QB, int R, int KK, int qs, int rs,
                                  __global const float *w, __global float *dst, ulong dst_off)
{
    int qb = get_global_id(0);
    int r0 = get_global_id(1) * LANES;
    if (qb * QB >= QP || r0 >= R) return;
    int r1 = min(R, r0 + LANES);
    __global float *d = dst + dst_off + (size_t)qb * KK * R * QB;
    for (int t = 0; t < KK; t++)
        for (int r = r0; r < r1; r++)
            for (int u = 0; u < QB; u++) {
                int q = qb * QB + u;
                d[((size_t)t * R + r) * QB + u] = q < Q ? w[(size_t)q * qs + (size_t)r * rs + t] : 0.0f;
            }
}
#endif /* NT */
