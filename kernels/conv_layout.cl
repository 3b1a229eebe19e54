/* The "lanes" layouts (src/ops/conv_lanes.c): the batch becomes the vector
 * lane. Activations are copied from NCHW into rows NP floats apart (the
 * batch padded to a multiple of 16, and for pixel-major layouts at some
 * batch sizes a gap of 16 floats that no kernel touches: conv_lanes.c,
 * lanes_stride), pixel p of channel c in row p*ps + c*cs:
 * channel-major (C, H, W, NP) with ps = 1, cs = H*W, or pixel-major (H, W,
 * C, NP) with ps = C, cs = 1 (conv_lanes.cl says which pass takes which);
 * weights into the order the lanes kernels broadcast them in. The copies
 * are 16 x 16 in-register transposes (2x the per-element gathers they
 * replaced); a 1x1 layer with stride copies only the pixels it reads. Copy
 * kernels whose neighbouring work-items touched 16 different images
 * (pages) each ran 2-2.5x slower than these, which walk along the same
 * images. */

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
 * aligned) past the cache where the compiler can (src/ops/conv_lanes.c
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

/* In-register transpose of an N x N block (N = 16, or TQ): afterwards
 * r[u].s[q] is the old r[q].s[u]. Each round maps element (row i, column
 * j), as the bits of i then j, to j0 i(top..1) i0 j(top..1) (a rotation by
 * one bit); log2(N) rounds swap the halves. Every output vector is one
 * two-source shuffle of .even / .odd halves (standard swizzles), no scalar
 * gathers. */
#define DEFINE_TRANSPOSE(NAME, VEC, N, ROUNDS)                                                     \
    INLINE void NAME(VEC r[N])                                                                     \
    {                                                                                              \
        VEC t[N];                                                                                  \
        _Pragma("unroll") for (int round = 0; round < (ROUNDS); round++)                           \
        {                                                                                          \
            _Pragma("unroll") for (int k = 0; k < (N) / 2; k++)                                    \
            {                                                                                      \
                t[k] = (VEC)(r[2 * k].even, r[2 * k + 1].even);                                    \
                t[k + (N) / 2] = (VEC)(r[2 * k].odd, r[2 * k + 1].odd);                            \
            }                                                                                      \
            _Pragma("unroll") for (int k = 0; k < (N); k++) r[k] = t[k];                           \
        }                                                                                          \
    }
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
 * keeping a program's binary compiles each of its kernels (3.2 s of a cold
 * ResNet-18 start for the eight kernels here it never ran so). */
#ifndef NT

/* The lanes layout of a 1x1 convolution with stride S (and no padding),
 * which only reads every S-th row and column: the OH x OW pixels at
 * dst_off, row (oy*OW + ox)*ps + c*cs holding src[n][c][oy*S][ox*S], zero
 * for n >= N.
 * One work-item per (c, oy) row of 16 lanes. S = 2: per TQ pixels, each
 * image's 2*TQ floats in two vector loads, their even lanes, and an
 * in-register transpose (the scalar gather of 16 images per pixel it
 * replaced ran ResNet-18's 64x28x28 projection at 14 GB/s); a tile whose
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
 * scalars, ran 2-2.6x longer (4.6-10 GB/s). Global: (C*OH, NP/16). */
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

/* A 2x2 stride-2 pooling fused after a lanes convolution (ops/epilogue.h),
 * average or (max) max: PH = OH/2, PW = OW/2 windows (a last odd row or
 * column of the convolution is in none), PQ = PH*PW of them per channel,
 * their cells numbered 0-3 in raster order. */

/* Forward: the pooled output of the pixel-major layout at src_off (row
 * p*CH + ch, rows NP floats apart, plus bias[ch], then a fused ReLU when
 * relu) into dst (N, CH, PH, PW), as pool.cl pools: the average ((((0 +
 * y00) + y01) + y10) + y11) / 4, or the maximum in raster order taking a
 * value > the best or NaN. A byte per window into cells: max, the
 * maximum's cell; average with relu, bit q set where cell q is > 0
 * (RELU_BWD's test). One work-item per 16 windows x 16 lanes of one
 * channel: 4 row loads per window, then in-register transposes give each
 * image's 16 windows. Global: (ceil(PQ/16), CH*NP/16). */
__kernel void conv_layout_from_lanes_pool(int N, int CH, int OH, int OW, int NP, __global const float *src,
                                          ulong src_off, __global const float *bias, int has_bias, int relu,
                                          int max, __global float *dst, __global uchar *cells)
{
    int qb = get_global_id(0);
    int g1 = get_global_id(1);
    int nbs = NP / LANES, PW = OW / 2, PQ = (OH / 2) * PW;
    if (qb * LANES >= PQ || g1 >= CH * nbs) return;
    int ch = g1 / nbs, n0 = (g1 - (g1 / nbs) * nbs) * LANES, q0 = qb * LANES;
    if (n0 >= N) return;
    int nn = min(LANES, N - n0), qq = min(LANES, PQ - q0);
    float bv = has_bias ? bias[ch] : 0.0f;
    __global const float *s = src + src_off + (size_t)ch * NP + n0;
    size_t step = (size_t)CH * NP; /* from one pixel to the next */
    float16 pv[LANES], cv[LANES];
    for (int u = 0; u < LANES; u++) {
        int q = min(q0 + u, PQ - 1), py = q / PW, px = q - py * PW; /* past PQ: a copy, not stored */
        __global const float *r = s + ((size_t)(2 * py) * OW + 2 * px) * step;
        float16 y00 = vload16(0, r) + bv, y01 = vload16(0, r + step) + bv;
        float16 y10 = vload16(0, r + OW * step) + bv, y11 = vload16(0, r + (OW + 1) * step) + bv;
        if (relu) y00 = RELU_FWD(y00), y01 = RELU_FWD(y01), y10 = RELU_FWD(y10), y11 = RELU_FWD(y11);
        int16 c = (int16)0;
        if (max) {
            pv[u] = y00;
            POOL_MAX_STEP(int16, pv[u], c, y01, 1);
            POOL_MAX_STEP(int16, pv[u], c, y10, 2);
            POOL_MAX_STEP(int16, pv[u], c, y11, 3);
        } else {
            if (relu) c = POOL_CELLS_ABOVE_0(float16, y00, y01) | POOL_CELLS_ABOVE_0(float16, y10, y11) << 2;
            pv[u] = (((((float16)0.0f + y00) + y01) + y10) + y11) / 4.0f;
        }
        cv[u] = convert_float16(c);
    }
    int keep = max || relu; /* the cells */
    transpose16(pv);
    if (keep) transpose16(cv);
    for (int i = 0; i < nn; i++) {
        size_t at = ((size_t)(n0 + i) * CH + ch) * PQ + q0;
        if (qq == LANES) {
            vstore16(pv[i], 0, dst + at);
            if (keep) vstore16(convert_uchar16(cv[i]), 0, cells + at);
            continue;
        }
        float pf[LANES], cf[LANES];
        vstore16(pv[i], 0, pf);
        vstore16(cv[i], 0, cf);
        for (int l = 0; l < qq; l++) {
            dst[at + l] = pf[l];
            if (keep) cells[at + l] = (uchar)cf[l];
        }
    }
}

/* Backward: that pooling's dy (N, CH, PH, PW) spread into the lanes
 * layout of the convolution's dy at dst_off (row p*ps + ch*cs), as
 * pool.cl's backward and a fused ReLU's derivative give it: average, dy /
 * 4 on each cell of its window, 0 where the cell's bit is clear (relu);
 * max, dy on the maximum's cell (relu: through the derivative at the
 * pooled output ym), 0 on the others; 0 on the pixels in no window and the
 * lanes n >= N. One work-item per 16 consecutive windows m = ch*PQ + q x
 * 16 images: 16 row loads (and 16 of cells, and of ym) and in-register
 * transposes give each window's vector of images; each writes its
 * window's 4 rows (and the pixels in no window beside it). With rs2 > 0
 * each row goes to a second lanes layout too (row p*ps2 + ch*cs2, rows
 * rs2 floats apart, at dst2_off): backward-data's pixel-major dy and the
 * weight gradient's channel-major one from one pass over the pooling's dy,
 * cells and ym (LeNet's conv2 at batch 256 on PoCL: 1.21-1.28 ms per step
 * against 1.49-1.63 for two calls). A run-time test here costs nothing
 * measurable, where a -D variant cost a second build of this program (6 s
 * of a cold start); but the same test around a second store in
 * conv_layout_to_lanes_t's unrolled tile made PoCL's build of that kernel
 * 3.8x slower even with the second layout off. Global:
 * (ceil(CH*PQ/16), NL/16). */
__kernel void conv_layout_to_lanes_pool(int N, int CH, int OH, int OW, int ps, int cs, int NP,
                                        __global const float *dy, int relu, int max, __global const uchar *cells,
                                        __global const float *ym, __global float *dst, ulong dst_off,
                                        int ps2, int cs2, int rs2, ulong dst2_off)
{
    int mb = get_global_id(0);
    int nb = get_global_id(1);
    int PH = OH / 2, PW = OW / 2, PQ = PH * PW, M = CH * PQ;
    int n0 = nb * LANES, m0 = mb * LANES;
    if (n0 >= NP || m0 >= M) return;
    int nn = clamp(N - n0, 0, LANES), mm = min(LANES, M - m0);
    /* without a ReLU an average's every cell passes; ym serves max with relu */
    int keep = max || relu, mrelu = max && relu;
    float16 dv[LANES], cv[LANES], yv[LANES];
    for (int i = 0; i < LANES; i++) {
        size_t at = (size_t)(n0 + i) * M + m0;
        if (i < nn && mm == LANES) {
            dv[i] = vload16(0, dy + at);
            cv[i] = keep ? convert_float16(vload16(0, cells + at)) : (float16)15.0f;
            yv[i] = mrelu ? vload16(0, ym + at) : (float16)0.0f;
        } else {
            float df[LANES], cf[LANES], yf[LANES];
            for (int l = 0; l < LANES; l++) {
                int in = i < nn && l < mm;
                df[l] = in ? dy[at + l] : 0.0f;
                cf[l] = in && keep ? (float)cells[at + l] : 15.0f;
                yf[l] = in && mrelu ? ym[at + l] : 0.0f;
            }
            dv[i] = vload16(0, df), cv[i] = vload16(0, cf), yv[i] = vload16(0, yf);
        }
    }
    transpose16(dv);
    transpose16(cv);
    if (mrelu) transpose16(yv);
    __global float *d = dst + dst_off + n0;
    for (int u = 0; u < mm; u++) {
        int m = m0 + u, ch = m / PQ, q = m - ch * PQ, py = q / PW, px = q - py * PW;
        float16 g = max ? (mrelu ? RELU_BWD(yv[u], dv[u]) : dv[u]) : dv[u] / 4.0f;
        /* the cells that take g: an average's bits, or the maximum's one */
        int16 bits = max ? (int16)1 << convert_int16(cv[u]) : convert_int16(cv[u]);
        /* the window's cells, and the pixels in no window below and beside
         * the last ones */
        int y1 = py == PH - 1 ? OH : 2 * py + 2, x1 = px == PW - 1 ? OW : 2 * px + 2;
        for (int y = 2 * py; y < y1; y++)
            for (int x = 2 * px; x < x1; x++) {
                int cell = (y - 2 * py) * 2 + (x - 2 * px), in = y < 2 * py + 2 && x < 2 * px + 2;
                float16 v = in ? select((float16)0.0f, g, ((bits >> cell) & 1) != 0) : (float16)0.0f;
                vstore16(v, 0, d + ((size_t)(y * OW + x) * ps + (size_t)ch * cs) * NP);
                if (rs2) vstore16(v, 0, dst + dst2_off + n0 + ((size_t)(y * OW + x) * ps2 + (size_t)ch * cs2) * rs2);
            }
    }
}

/* db[co] = the sum of channel co's rows of dy's channel-major lanes
 * layout at src_off (P rows of NL lanes, rs floats apart, zero past N: the
 * values through the ReLU's derivative and a fused pooling): four float16
 * running sums along the rows, a fixed order. The copy is in cache where
 * dy and the ReLU's output were in memory (LeNet's conv2 at batch 256 in
 * training on a loaded 2-core AVX2 host: 0.18 ms, 0.55 from them). Global:
 * CO. */
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
 * 512-channel ResNet layers streamed their weights 2-3x over). The
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
