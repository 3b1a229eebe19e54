/* The "lanes" algorithm's arithmetic (src/ops/conv_lanes.c; CPU devices),
 * on activations in the lanes layout (C, H, W, NP) that conv_layout.cl
 * makes: each work-item keeps a register block of RM channels x 16*NV
 * lanes of one pixel in float16 accumulators, and the inner loop is a
 * rank-1 update (RM broadcast weights times NV contiguous float16 loads).
 * Forward and backward-data visit only the taps that land inside the input
 * (backward-data only those of the pixel's stride phase: no zero dilation,
 * no padded copies, no work on zeros). Loops over register blocks carry
 * "#pragma unroll": without it PoCL kept the accumulators in memory and ran
 * 3-6x slower. */

#define LANES 16
#define MAX_RM 10 /* largest register block height */

/* Helpers are forced inline so the register-block sizes (literals at each
 * call) fold into constants. */
#if defined(__clang__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE inline
#endif

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
 * straight into NCHW measured 1.5-6x slower); conv_layout_from_lanes then
 * makes NCHW. Channels >= NCH are dropped. */
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

/* The register block of this work-item: channels ch0.. (of NCH, blocks of
 * rm along dimension 0) x the 16*nv lanes from n0 of pixel pix (of P,
 * blocks of lanes along dimension 1), its accumulators zeroed. 0 when the
 * item lies past the end. */
INLINE int lanes_item(int rm, int nv, int NCH, int P, int NP, int *ch0, int *pix, int *n0,
                      float16 acc[2][MAX_RM])
{
#pragma unroll
    for (int r = 0; r < rm; r++) acc[0][r] = acc[1][r] = (float16)0.0f;
    int item = get_global_id(1);
    int nblocks = NP / (LANES * nv);
    *ch0 = get_global_id(0) * rm;
    if (*ch0 >= NCH || item >= P * nblocks) return 0;
    *pix = item / nblocks;
    *n0 = (item % nblocks) * LANES * nv;
    return 1;
}

/* Forward: y[n][co][oy][ox] = b[co] + sum_{c,i,j} x[n][c][oy*S-PAD+i][ox*S-PAD+j] w[co][c][i][j].
 * xT: (C, H, W, NP); yT: (CO, OH*OW, NP). Only the taps that land inside the input are visited
 * (no padded copy, no work on padding). One work-item: RM output channels
 * x 16*NV lanes of one output pixel. Global: (ceil(CO/RM), OH*OW*NP/(16*NV));
 * a work-group along dim 0 shares the input window in cache. */
INLINE void lanes_fwd(int rm, int nv, int C, int H, int W, int NP, int CO, int COP, int K, int S,
                      int PAD, int OH, int OW, __global const float *x, ulong x_off,
                      __global const float *wf, ulong wf_off, __global float *y, ulong y_off)
{
    int co0, pix, n0;
    float16 acc[2][MAX_RM];
    if (!lanes_item(rm, nv, CO, OH * OW, NP, &co0, &pix, &n0, acc)) return;
    int oy = pix / OW, ox = pix - (pix / OW) * OW;
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
INLINE void lanes_bwd_data(int rm, int nv, int C, int CIP, int H, int W, int NP, int CO, int OH,
                           int OW, int K, int S, int PAD, __global const float *dy, ulong dy_off,
                           __global const float *wb, ulong wb_off, __global float *dx,
                           ulong dx_off)
{
    int c0, pix, n0;
    float16 acc[2][MAX_RM];
    if (!lanes_item(rm, nv, C, H * W, NP, &c0, &pix, &n0, acc)) return;
    int yy = pix / W, xx = pix - (pix / W) * W;
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

/* Kernels _<RM>_<NV> of both (conv_lanes.c picks RM by channel count, NV
 * by batch), with one argument list: PADDED is COP for the forward, CIP
 * for backward-data; in, wt, out are x, wf, y or dy, wb, dx. */
#define LANES_ARGS                                                                           \
    int C, int H, int W, int NP, int CO, int OH, int OW, int K, int S, int PAD, int PADDED,  \
        __global const float *in, ulong in_off, __global const float *wt, ulong wt_off,      \
        __global float *out, ulong out_off
#define LANES_VARIANTS(RM, NV)                                                                \
    __kernel void conv_lanes_fwd_##RM##_##NV(LANES_ARGS)                                      \
    {                                                                                         \
        lanes_fwd(RM, NV, C, H, W, NP, CO, PADDED, K, S, PAD, OH, OW, in, in_off, wt, wt_off, \
                  out, out_off);                                                              \
    }                                                                                         \
    __kernel void conv_lanes_bwd_data_##RM##_##NV(LANES_ARGS)                                 \
    {                                                                                         \
        lanes_bwd_data(RM, NV, C, PADDED, H, W, NP, CO, OH, OW, K, S, PAD, in, in_off, wt,    \
                       wt_off, out, out_off);                                                 \
    }
LANES_VARIANTS(4, 1)
LANES_VARIANTS(4, 2)
LANES_VARIANTS(8, 1)
LANES_VARIANTS(8, 2)
LANES_VARIANTS(10, 1)
LANES_VARIANTS(10, 2)

/* Backward weights, partial over one chunk (a range of output rows x a
 * range of 16-lane vectors): part[chunk][co][c][i][j] = sum over the
 * chunk's (n, oy, ox) of dy[n][co][oy][ox] x[n][c][oy*S-PAD+i][ox*S-PAD+j],
 * visiting only the (oy, ox) whose input lands inside x.
 * Work-item: WA output channels x WB input channels of one tap (i, j); the
 * 16 lanes are summed at the end in a fixed order. Global:
 * (K*K, ceil(CO/WA) * ceil(C/WB) * chunks), chunk = row_chunk * vchunks +
 * vector_chunk; a work-group holds the K*K taps of one block, which share
 * their dy and x rows in cache. Variants _<WA>_<WB> (WA*WB accumulators,
 * WA + WB loads per WA*WB FMAs); conv_lanes.c picks one by the channels
 * it pads and its loads per FMA. */
#define MAX_WA 6
#define MAX_WB 6
INLINE void lanes_bwd_weights(int wa, int wb, int C, int H, int W, int NP, int CO, int OH,
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
__kernel void conv_lanes_bwd_weights_4_6(BWDW_ARGS) { lanes_bwd_weights(4, 6, BWDW_PASS); }
__kernel void conv_lanes_bwd_weights_6_4(BWDW_ARGS) { lanes_bwd_weights(6, 4, BWDW_PASS); }
__kernel void conv_lanes_bwd_weights_5_5(BWDW_ARGS) { lanes_bwd_weights(5, 5, BWDW_PASS); }
__kernel void conv_lanes_bwd_weights_5_4(BWDW_ARGS) { lanes_bwd_weights(5, 4, BWDW_PASS); }
__kernel void conv_lanes_bwd_weights_4_5(BWDW_ARGS) { lanes_bwd_weights(4, 5, BWDW_PASS); }
__kernel void conv_lanes_bwd_weights_4_4(BWDW_ARGS) { lanes_bwd_weights(4, 4, BWDW_PASS); }
