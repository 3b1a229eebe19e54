/* The "lanes" algorithm's arithmetic (src/ops/conv_lanes.c; CPU devices),
 * on activations in the lanes layouts that conv_layout.cl makes: each
 * work-item keeps a register block of RM channels x NV vectors of VW lanes
 * of one pixel in accumulators, and the inner loop is a rank-1
 * update (RM broadcast weights times NV contiguous vector loads).
 * The forward and backward-data read the pixel-major layout (H, W, C, NP),
 * so their channel loop walks memory NP floats at a time (in channel-major
 * planes each channel's load is on another page: at batch 128 the forward
 * and backward-data ran longer); the weight gradient
 * reads the channel-major (C, H, W, NL), walking the pixels of a few
 * channels (pixel-major, it ran longer; x's pixels in stride
 * phases where `phased`: the prelude's lanes_phase). The forward writes y
 * pixel-major, backward-data dx channel-major. The kernels compute NL
 * lanes (the padded batch); pixel-major rows are NP >= NL floats apart (a
 * gap spreads the channel loop's loads over the L1's sets: conv_lanes.c,
 * lanes_stride), channel-major rows NL.
 * Forward and backward-data visit only the taps that land inside the input
 * (backward-data only those of the pixel's stride phase: no zero dilation,
 * no padded copies, no work on zeros). Loops over register blocks carry
 * "#pragma unroll": without it PoCL kept the accumulators in memory and ran
 * far slower.
 *
 * One source, parameterised at build time (conv_lanes.c passes -D and the
 * tuner picks per device and shape): VW lanes per vector (4, 8, 16), RM and
 * NV for forward and backward-data, WA, WB and TR (0, or K for rows of
 * taps) for backward-weights. The defaults are the AVX-512 choice the
 * kernels were first written for. A
 * build given RM only has the forward and backward-data kernels, one given
 * WA only the backward-weights kernel (PoCL compiles what a program has). */
#if defined(RM) && !defined(WA)
#define LANES_RANK1 1
#define LANES_BWDW 0
#elif defined(WA) && !defined(RM)
#define LANES_RANK1 0
#define LANES_BWDW 1
#else
#define LANES_RANK1 1
#define LANES_BWDW 1
#endif
#ifndef VW
#define VW 16
#endif
#ifndef RM
#define RM 8
#endif
#ifndef NV
#define NV 2
#endif
#ifndef WA
#define WA 5
#endif
#ifndef WB
#define WB 5
#endif
#if VW != 4 && VW != 8 && VW != 16
#error "VW must be 4, 8 or 16"
#endif

#if LANES_RANK1
/* acc[v][r] += sum over `cin` channels of a[r] * b[v]: a walks `ap` by
 * RM (contiguous weights per channel), b walks `bp` by b_step (one
 * channel of the lanes layout). */
INLINE void rank1_loop(floatV acc[NV][RM], __global const float *ap, __global const float *bp, int cin,
                       size_t b_step)
{
    for (int ch = 0; ch < cin; ch++) {
        floatV b[NV];
#pragma unroll
        for (int v = 0; v < NV; v++) b[v] = vloadV(v, bp);
#pragma unroll
        for (int r = 0; r < RM; r++) {
            floatV a = (floatV)(ap[r]);
#pragma unroll
            for (int v = 0; v < NV; v++) acc[v][r] = fma(a, b[v], acc[v][r]);
        }
        bp += b_step;
        ap += RM;
    }
}

/* Writes acc (channels ch0.., lanes n0..) into the lanes layout out at
 * pixel pix, pixels ps and channels cs floats apart: contiguous vector
 * stores (a scalar scatter straight into NCHW measured slower);
 * conv_layout_from_lanes then makes NCHW. Channels >= NCH are dropped. */
INLINE void store_lanes(floatV acc[NV][RM], int ch0, int NCH, int n0, size_t ps, size_t cs, int pix,
                        __global float *out)
{
#pragma unroll
    for (int r = 0; r < RM; r++) {
        int ch = ch0 + r;
        if (ch >= NCH) break;
        __global float *op = out + pix * ps + ch * cs + n0;
#pragma unroll
        for (int v = 0; v < NV; v++) vstoreV(acc[v][r], v, op);
    }
}

/* The register block of this work-item: channels ch0.. (of NCH, in blocks
 * of RM) x the VW*NV lanes from n0 of pixel pix (of P), its accumulators
 * zeroed. px: dimension 0 walks the pixels, dimension 1 the channel
 * blocks, then the lane blocks; else dimension 0 walks the channel blocks
 * and dimension 1 the (pixel, lane block) items. An argument, not a build
 * option: it is decided once per work-item, and as a build option it
 * doubled the programs the tuner compiles. 0 when the item lies past the
 * end. */
INLINE int lanes_item(int px, int NCH, int P, int NL, int *ch0, int *pix, int *n0, floatV acc[NV][RM])
{
#pragma unroll
    for (int r = 0; r < RM; r++)
#pragma unroll
        for (int v = 0; v < NV; v++) acc[v][r] = (floatV)0.0f;
    int nblocks = NL / (VW * NV);
    if (px) {
        int ncb = (NCH + RM - 1) / RM, g1 = get_global_id(1);
        *pix = get_global_id(0);
        *ch0 = (g1 % ncb) * RM;
        int lb = g1 / ncb;
        if (*pix >= P || lb >= nblocks || *ch0 >= NCH) return 0;
        *n0 = lb * VW * NV;
    } else {
        int item = get_global_id(1);
        *ch0 = get_global_id(0) * RM;
        if (*ch0 >= NCH || item >= P * nblocks) return 0;
        *pix = item / nblocks;
        *n0 = (item % nblocks) * VW * NV;
    }
    return 1;
}

/* Forward: y[n][co][oy][ox] = b[co] + sum_{c,i,j} x[n][c][oy*S-PAD+i][ox*S-PAD+j] w[co][c][i][j].
 * xT: (H, W, C, NP); yT: (OH*OW, CO, NP). Only the taps that land inside the input are visited
 * (no padded copy, no work on padding). One work-item: RM output channels
 * x VW*NV lanes of one output pixel, its weights the RM-channel block of
 * wf (conv_layout_weights). Global, px 0: (ceil(CO/RM), OH*OW*NL/(VW*NV)),
 * a work-group along dim 0 sharing the input window in cache (px 1:
 * lanes_item). */
__kernel void conv_lanes_fwd(int C, int H, int W, int NP, int NL, int CO, int OH, int OW, int K, int S, int PAD,
                             int px, __global const float *x, ulong x_off, __global const float *wf,
                             ulong wf_off, __global float *y, ulong y_off)
{
    int co0, pix, n0;
    floatV acc[NV][RM];
    if (!lanes_item(px, CO, OH * OW, NL, &co0, &pix, &n0, acc)) return;
    int oy = pix / OW, ox = pix - (pix / OW) * OW;
    int iy0 = oy * S - PAD, ix0 = ox * S - PAD;
    int i0 = max(0, -iy0), i1 = min(K, H - iy0);
    int j0 = max(0, -ix0), j1 = min(K, W - ix0);
    for (int i = i0; i < i1; i++) {
        for (int j = j0; j < j1; j++) {
            __global const float *bp = x + x_off + ((size_t)(iy0 + i) * W + (ix0 + j)) * C * NP + n0;
            __global const float *ap = wf + wf_off + ((size_t)(co0 / RM) * K * K + i * K + j) * C * RM;
            rank1_loop(acc, ap, bp, C, NP);
        }
    }
    store_lanes(acc, co0, CO, n0, (size_t)CO * NP, NP, pix, y + y_off);
}

/* Backward data: dx[n][c][y][x] = sum over (co, i, j) with (y+PAD-i) and
 * (x+PAD-j) divisible by S and inside dy of
 * dy[n][co][(y+PAD-i)/S][(x+PAD-j)/S] w[co][c][i][j]. dyT: (OH, OW, CO, NP),
 * dxT: (C, H*W, NL).
 * Only the taps of the pixel's stride phase that land inside dy are visited
 * (no zero dilation, no padding). One work-item: RM input channels x VW*NV
 * lanes of one dx pixel, its weights the RM-channel block of wb. The
 * arguments are the forward's, in the same order. */
__kernel void conv_lanes_bwd_data(int C, int H, int W, int NP, int NL, int CO, int OH, int OW, int K, int S,
                                  int PAD, int px, __global const float *dy, ulong dy_off,
                                  __global const float *wb, ulong wb_off, __global float *dx, ulong dx_off)
{
    int c0, pix, n0;
    floatV acc[NV][RM];
    if (!lanes_item(px, C, H * W, NL, &c0, &pix, &n0, acc)) return;
    int yy = pix / W, xx = pix - (pix / W) * W;
    int ys = yy + PAD, xs = xx + PAD;
    /* taps i = ys - S*oy for oy in [0, OH), 0 <= i < K */
    int i0 = max(ys % S, ys - (OH - 1) * S), i1 = min(K - 1, ys);
    int j0 = max(xs % S, xs - (OW - 1) * S), j1 = min(K - 1, xs);
    for (int i = i0; i <= i1; i += S) {
        int oy = (ys - i) / S;
        for (int j = j0; j <= j1; j += S) {
            int ox = (xs - j) / S;
            __global const float *bp = dy + dy_off + ((size_t)oy * OW + ox) * CO * NP + n0;
            __global const float *ap = wb + wb_off + ((size_t)(c0 / RM) * K * K + i * K + j) * CO * RM;
            rank1_loop(acc, ap, bp, CO, NP);
        }
    }
    store_lanes(acc, c0, C, n0, NL, (size_t)H * W * NL, pix, dx + dx_off);
}

#endif

#if LANES_BWDW
#ifndef TR
#define TR 0
#endif
/* taps of one row a work-item holds: TR (= K) when set, else one */
#if TR
#define TT TR
#define TAP_ITEMS K
#else
#define TT 1
#define TAP_ITEMS KK
#endif
/* Backward weights, partial over one chunk (a range of output rows x a
 * range of VW-lane vectors): part[chunk][co][c][i][j] = sum over the
 * chunk's (n, oy, ox) of dy[n][co][oy][ox] x[n][c][oy*S-PAD+i][ox*S-PAD+j],
 * visiting only the (oy, ox) whose input lands inside x.
 * Work-item: WA output channels x WB input channels of one tap (i, j)
 * (WA*WB accumulators, WA + WB loads per WA*WB FMAs), or with TR of the K
 * taps of row i (WA*WB*K accumulators): taps S columns apart read the same
 * x vector at successive output columns, so it comes from memory once and
 * then from L1 (one tap per item streams the whole chunk from L2 per tap:
 * WA + WB L2 loads per WA*WB FMAs, and L2 bandwidth bounded the 28x28 and
 * 14x14 layers). The VW lanes are summed at the end in a fixed order.
 * Global: (K*K, or K with TR; ceil(CO/WA) * ceil(C/WB) * chunks), chunk =
 * row_chunk * vchunks + vector_chunk; a work-group holds the taps of one
 * block, which share their dy and x rows in cache. */
__kernel void conv_lanes_bwd_weights(int C, int H, int W, int NL, int CO, int OH, int OW, int K, int S,
                                     int PAD, int phased, int rows, int vecs, int vchunks, int chunks,
                                     __global const float *x, ulong x_off, __global const float *dy,
                                     ulong dy_off, __global float *part, ulong part_off)
{
    int tap = get_global_id(0);
    int g1 = get_global_id(1);
    int KK = K * K;
    int ncb = (C + WB - 1) / WB;
    int nob = (CO + WA - 1) / WA;
#if TR
    if (K != TR) return; /* conv_lanes.c builds TR = K */
#endif
    if (tap >= TAP_ITEMS || g1 >= nob * ncb * chunks) return;
    int o0 = (g1 % nob) * WA;
    int c0 = ((g1 / nob) % ncb) * WB;
    int chunk = g1 / (nob * ncb);
    int rc = chunk / vchunks, vc = chunk - (chunk / vchunks) * vchunks;
    /* this item's taps: (ti, tj + t) for t < TT */
    int ti = TR ? tap : tap / K, tj = TR ? 0 : tap - (tap / K) * K;
    /* output rows/columns whose input row/column is inside x (columns: for
     * at least one of the taps) */
    int oy_lo = PAD - ti > 0 ? (PAD - ti + S - 1) / S : 0;
    int oy_hi = H - 1 + PAD - ti >= 0 ? min(OH - 1, (H - 1 + PAD - ti) / S) : -1;
    int tl = tj + TT - 1;
    int ox_lo = PAD - tl > 0 ? (PAD - tl + S - 1) / S : 0;
    int ox_hi = W - 1 + PAD - tj >= 0 ? min(OW - 1, (W - 1 + PAD - tj) / S) : -1;
    oy_lo = max(oy_lo, rc * rows);
    oy_hi = min(oy_hi, rc * rows + rows - 1);
    int v0 = vc * vecs, v1 = min(NL / VW, v0 + vecs);
    size_t xs = (size_t)H * W * NL, ds = (size_t)OH * OW * NL;
    size_t xo[WB], dof[WA];
#pragma unroll
    for (int b = 0; b < WB; b++) xo[b] = x_off + (size_t)min(c0 + b, C - 1) * xs;
#pragma unroll
    for (int a = 0; a < WA; a++) dof[a] = dy_off + (size_t)min(o0 + a, CO - 1) * ds;
    floatV acc[WA][WB][TT];
#pragma unroll
    for (int a = 0; a < WA; a++)
#pragma unroll
        for (int b = 0; b < WB; b++)
#pragma unroll
            for (int t = 0; t < TT; t++) acc[a][b][t] = (floatV)0.0f;
    /* x's column w0 of tap tj at the row's first output, and the pixel
     * step to the next output: S pixels on, or the next one in phase order
     * (stride 2, phased: the prelude's lanes_phase). Either is linear in
     * the output column for each tap, so a tap's pixel is its first one
     * plus steps; where a row of taps starts left of x (w0 + t < 0), the
     * first is counted back from the tap's first column inside x. */
    int w0 = ox_lo * S - PAD + tj, xstep = phased ? 1 : S;
    for (int oy = oy_lo; oy <= oy_hi; oy++) {
        int h = oy * S - PAD + ti;
        int xrow[TT];
#pragma unroll
        for (int t = 0; t < TT; t++) {
            /* outputs until the tap is inside: no shift of a negative column */
            int back = w0 + t < 0 ? (S - 1 - w0 - t) / S : 0;
            xrow[t] = phased ? lanes_phase(H, W, h, w0 + t + back * S) - back : h * W + w0 + t;
        }
        for (int ox = ox_lo; ox <= ox_hi; ox++) {
            int xw = w0 + (ox - ox_lo) * S, xstepped = (ox - ox_lo) * xstep;
#if TR
            int inside = xw >= 0 && xw + TR - 1 < W; /* all the row's taps inside x */
#else
            const int inside = 1; /* one tap: ox_lo..ox_hi are its columns inside x */
#endif
            size_t dp = ((size_t)oy * OW + ox) * NL;
            for (int v = v0; v < v1; v++) {
                floatV d[WA];
#pragma unroll
                for (int a = 0; a < WA; a++) d[a] = vloadV(v, dy + dof[a] + dp);
#pragma unroll
                for (int t = 0; t < TT; t++) {
                    if (!inside && (uint)(xw + t) >= (uint)W) continue;
                    size_t xp = (size_t)(xrow[t] + xstepped) * NL;
#pragma unroll
                    for (int b = 0; b < WB; b++) {
                        floatV xv = vloadV(v, x + xo[b] + xp);
#pragma unroll
                        for (int a = 0; a < WA; a++) acc[a][b][t] = fma(d[a], xv, acc[a][b][t]);
                    }
                }
            }
        }
    }
    size_t cs = (size_t)C * KK;
    __global float *pp = part + part_off + (size_t)chunk * CO * cs + ti * K + tj;
#pragma unroll
    for (int a = 0; a < WA; a++) {
        if (o0 + a >= CO) break;
#pragma unroll
        for (int b = 0; b < WB; b++) {
            if (c0 + b >= C) break;
#pragma unroll
            for (int t = 0; t < TT; t++) pp[(size_t)(o0 + a) * cs + (size_t)(c0 + b) * KK + t] = lane_sum(acc[a][b][t]);
        }
    }
}
#endif
