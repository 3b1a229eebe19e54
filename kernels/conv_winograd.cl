/* The "winograd" algorithm's kernels (src/ops/conv_winograd.c): 3x3
 * stride-1 convolutions by minimal filtering F(WM x WM, 3x3) (Lavin and
 * Gray, 2015). A tile of WM x WM outputs reads an A x A input patch
 * (A = WM + 2); in the transform domain the convolution is E = A*A
 * independent products over the channels, M[e] = U[e] V[e], so a tile
 * costs E multiplies per channel pair instead of 9*WM*WM. Per pass:
 *
 * forward / backward-data (a forward of dy with the flipped, transposed
 * filter): U = G g G^T (conv_winograd_filter), V = B^T d B
 * (conv_winograd_input), the products (conv_winograd_product) and
 * Y = A^T M A (conv_winograd_output, with bias and ReLU);
 * backward-weights, the adjoint of the forward's tile arithmetic: V of x
 * (conv_winograd_input_nhwc), D = A dY A^T of dy (conv_winograd_dy_nhwc),
 * dU[e] = D[e] V[e]^T summed over tiles (conv_winograd_wgemm), dw = G^T
 * dU G (conv_winograd_filter_grad).
 *
 * Forward and backward-data: tiles are the vector lanes, the lanes idea:
 * tile t of a chunk is image g0 + t % 16 at tile position p0 + t / 16 (16
 * images per position, zeros past the batch), so every transform works
 * on float16 vectors whose lanes share their bounds and arithmetic; each
 * group of 16 images is first interleaved (conv_winograd_interleave), so
 * that a tile's pixel is one vector load. V is blocked by BW tiles
 * ([e][tile block][channel][BW]) so the products' channel loops walk
 * memory contiguously; so is U (RP: the output channels padded to RM,
 * zeros beyond) blocked by RM channels, [e][RP/RM][K][RM], M [e][RP][TP].
 * The products are the lanes kernels' rank-1 update with the tiles as
 * the vector lanes (CPU devices). On CPU devices they can instead run
 * fused (conv_winograd_fused): V and M of a few tile positions in local
 * memory, never written out. The weight gradient sums over the tiles, so
 * there the channels are the lanes: an image group in NHWC
 * (conv_winograd_nhwc), V and D [e][tile][channel], and the product's
 * rank-1 updates run over the tiles with no sum across lanes. Built with
 * -DWM (2 or 4), and -DRM -DNV (forward product, fused) or -DWR -DWV
 * (weight product). */
#ifndef WM
#define WM 2
#endif
#define A (WM + 2)
#define E (A * A)
#define VW 16

#if WM == 2
__constant float BT[A][A] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
__constant float G[A][3] = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
__constant float AT[WM][A] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
#elif WM == 4
/* Interpolation points 0, +-3/2, +-2/3 and infinity, not Lavin's 0, +-1,
 * +-2: the same zeros (as cheap) and about 4x less rounding
 * (Barabasz et al., 2020, measured here: docs/ARCHITECTURE.md); the rows
 * and columns are scaled so that B^T and A^T are exact binary fractions
 * near 1, all inexact constants in G (the filter, transformed once). */
__constant float BT[A][A] = {{9.0f / 8, 0, -97.0f / 32, 0, 9.0f / 8, 0},
                             {0, -3.0f / 4, -1.0f / 2, 27.0f / 16, 9.0f / 8, 0},
                             {0, 3.0f / 4, -1.0f / 2, -27.0f / 16, 9.0f / 8, 0},
                             {0, -9.0f / 8, -27.0f / 16, 1.0f / 2, 3.0f / 4, 0},
                             {0, 9.0f / 8, -27.0f / 16, -1.0f / 2, 3.0f / 4, 0},
                             {0, 9.0f / 8, 0, -97.0f / 32, 0, 9.0f / 8}};
__constant float G[A][3] = {{8.0f / 9, 0, 0},
                            {64.0f / 585, 32.0f / 195, 16.0f / 65},
                            {64.0f / 585, -32.0f / 195, 16.0f / 65},
                            {-64.0f / 65, -128.0f / 195, -256.0f / 585},
                            {-64.0f / 65, 128.0f / 195, -256.0f / 585},
                            {0, 0, 8.0f / 9}};
__constant float AT[WM][A] = {{1, 1, 1, 27.0f / 32, 27.0f / 32, 0},
                              {0, 3.0f / 2, -3.0f / 2, 9.0f / 16, -9.0f / 16, 0},
                              {0, 9.0f / 4, 9.0f / 4, 3.0f / 8, 3.0f / 8, 0},
                              {0, 27.0f / 8, -27.0f / 8, 1.0f / 4, -1.0f / 4, 1}};
#else
#error "WM must be 2 or 4"
#endif

/* The matrices by (row, column), plain and transposed, for the products below. */
#define BT_(i, k) BT[i][k]
#define BTT(i, k) BT[k][i]
#define AT_(i, k) AT[i][k]
#define ATT(i, k) AT[k][i]
#define G_(i, k) G[i][k]
#define GT_(i, k) G[k][i]
/* The transforms' small products with a constant matrix m (an accessor
 * above), k ascending, the zero coefficients skipped (they fold away once
 * unrolled): LEFT: out[i][j] = sum over k < n of m(i, k) in[k][j]; RIGHT:
 * out[i][j] = sum over k < n of in[i][k] m(k, j); i < rows, j < cols. */
#define LEFT(T, out, m, in, rows, n, cols)                                                         \
    _Pragma("unroll") for (int i_ = 0; i_ < (rows); i_++)                                          \
        _Pragma("unroll") for (int j_ = 0; j_ < (cols); j_++)                                      \
    {                                                                                              \
        T a_ = 0.0f;                                                                               \
        _Pragma("unroll") for (int k_ = 0; k_ < (n); k_++) if (m(i_, k_) != 0.0f) a_ += m(i_, k_) * in[k_][j_]; \
        out[i_][j_] = a_;                                                                          \
    }
#define RIGHT(T, out, in, m, rows, n, cols)                                                        \
    _Pragma("unroll") for (int i_ = 0; i_ < (rows); i_++)                                          \
        _Pragma("unroll") for (int j_ = 0; j_ < (cols); j_++)                                      \
    {                                                                                              \
        T a_ = 0.0f;                                                                               \
        _Pragma("unroll") for (int k_ = 0; k_ < (n); k_++) if (m(k_, j_) != 0.0f) a_ += in[i_][k_] * m(k_, j_); \
        out[i_][j_] = a_;                                                                          \
    }

#define LN 16 /* images per tile position: the lanes */

/* Where tile position pos lies: first row and column. */
INLINE void tile_at(int pos, int TW, int *ty, int *tx)
{
    *ty = pos / TW * WM;
    *tx = pos % TW * WM;
}

/* A chunk's tile t, channel ch, element e of a blocked layout. */
INLINE size_t blocked(int e, int t, int ch, int TB, int K, int BW)
{
    return (((size_t)e * TB + t / BW) * K + ch) * BW + t % BW;
}

DEFINE_TRANSPOSE(transpose16, float16, LN, 4)

/* np (at most LN) floats from p + at, zeros after them. */
INLINE float16 row16(__global const float *p, size_t at, int np)
{
    if (np == LN) return vload16(0, p + at);
    float v[LN];
    for (int q = 0; q < LN; q++) v[q] = q < np ? p[at + q] : 0.0f;
    return vload16(0, v);
}

/* r[q][j] = row j's pixel q for LN rows of np pixels from x + at, rows
 * stride apart (zeros for rows from nrows on, none read; read through the
 * ReLU's derivative where relu, ym: the forward's output): a block
 * transposed in registers, for the interleaving (rows: images) and NHWC
 * (rows: channels) copies. */
INLINE void transposed_rows(float16 r[LN], __global const float *x, int relu, __global const float *ym, size_t at,
                            size_t stride, int nrows, int np)
{
#pragma unroll
    for (int j = 0; j < LN; j++) r[j] = 0.0f;
    if (nrows > 0) {
#pragma unroll
        for (int j = 0; j < LN; j++) { /* rows past nrows load the last again (no branch), then drop it */
            size_t a = at + (size_t)min(j, nrows - 1) * stride;
            float16 v = row16(x, a, np);
            if (relu) v = select((float16)0.0f, v, isgreater(row16(ym, a, np), (float16)0.0f));
            r[j] = j < nrows ? v : (float16)0.0f;
        }
    }
    transpose16(r);
}

/* xt[(ch*H*W + p) * LN + l] = x[g0 + l][ch][p] for the K channels of an
 * image group (zeros past the batch's N images; through the ReLU's
 * derivative where relu, ym: the forward's output), 16 pixels per
 * work-item, transposed in registers: the transforms then read a tile's
 * 16 images as one vector. Global: (ceil(HW / LN), K). */
__kernel void conv_winograd_interleave(int K, int HW, int N, int g0, __global const float *x, int relu,
                                       __global const float *ym, __global float *xt, ulong xt_off)
{
    int pb = get_global_id(0), ch = get_global_id(1), p0 = pb * LN;
    if (p0 >= HW || ch >= K) return;
    int np = min(LN, HW - p0);
    float16 r[LN];
    transposed_rows(r, x, relu, ym, ((size_t)g0 * K + ch) * HW + p0, (size_t)K * HW, min(LN, N - g0), np);
    xt += xt_off + ((size_t)ch * HW + p0) * LN;
#pragma unroll
    for (int q = 0; q < LN; q++)
        if (q < np) vstore16(r[q], q, xt);
}

/* Pixel (y, x) of an H x W plane of 16-float vectors ps floats apart (a
 * channel interleaved: LN images per pixel, ps = LN; or an image in NHWC,
 * 16 of its channels, ps its channel count), zero outside it or where !in. */
INLINE float16 lanes_at(__global const float *xt, size_t base, int y, int x, int H, int W, int ps, int in)
{
    in = in && y >= 0 && y < H && x >= 0 && x < W;
    return in ? vload16(0, xt + base + ((size_t)y * W + x) * ps) : (float16)0.0f;
}

#ifdef RM
#if RM != 8
#error "conv_winograd_filter takes a block of RM = 8 output channels as a float8"
#endif
/* U[e][rb][k][l] = (G g G^T)[e] for output channel r = rb*RM + l and
 * input channel k: g = w[r][k] (flip 0), or for backward-data the flipped
 * w[k][r] (w is K x R x 3 x 3 then); zeros for the padded rows r >= R.
 * The block's RM channels are the lanes of a vector, so that each element
 * is one contiguous store (one scalar item per r was left scalar by
 * PoCL, its stores RM apart). Global: (K, RP / RM). */
__kernel void conv_winograd_filter(int R, int K, int RP, int flip, __global const float *w, __global float *u,
                                   ulong u_off)
{
    int k = get_global_id(0), rb = get_global_id(1);
    if (k >= K || rb >= RP / RM) return;
    float a[3][3][RM];
    for (int l = 0; l < RM; l++) {
        int r = rb * RM + l;
#pragma unroll
        for (int i = 0; i < 3; i++)
#pragma unroll
            for (int j = 0; j < 3; j++)
                a[i][j][l] = r >= R ? 0.0f
                             : flip ? w[((size_t)k * R + r) * 9 + (2 - i) * 3 + (2 - j)]
                                    : w[((size_t)r * K + k) * 9 + i * 3 + j];
    }
    float8 g[3][3], t[A][3], o[A][A];
#pragma unroll
    for (int i = 0; i < 3; i++)
#pragma unroll
        for (int j = 0; j < 3; j++) g[i][j] = vload8(0, a[i][j]);
    LEFT(float8, t, G_, g, A, 3, 3)
    RIGHT(float8, o, t, GT_, A, 3, A)
#pragma unroll
    for (int e = 0; e < E; e++) vstore8(o[e / A][e % A], 0, u + u_off + (((size_t)e * (RP / RM) + rb) * K + k) * RM);
}
#endif

/* o = LM d RM_ of the P x P patch d at (ty, tx) of the plane at base
 * (lanes_at: H x W, pixels ps apart, padding PAD, zeros outside it or
 * where !in). */
#define PATCH_TRANSFORM(o, P, LM, RM_, xt, base, ty, tx, PAD, H, W, ps, in)                       \
    {                                                                                              \
        float16 d_[P][P], s_[A][P];                                                                \
        _Pragma("unroll") for (int i_ = 0; i_ < (P); i_++)                                         \
            _Pragma("unroll") for (int j_ = 0; j_ < (P); j_++)                                     \
                d_[i_][j_] = lanes_at(xt, base, (ty) - (PAD) + i_, (tx) - (PAD) + j_, H, W, ps, in); \
        LEFT(float16, s_, LM, d_, A, P, P)                                                         \
        RIGHT(float16, o, s_, RM_, A, P, A)                                                        \
    }

/* DEFINE_TILE_TRANSFORM(NAME, P, LM, RM_) defines NAME: (LM d RM_) of the
 * P x P patch at each tile of K channels of an H x W input with padding
 * PAD (zeros outside), read interleaved (conv_winograd_interleave) at
 * xt_off, at the chunk's positions p0 to p0 + cp, blocked; the positions
 * after those fill their blocks with zeros. Global: (TB*BW/LN, K). */
#define DEFINE_TILE_TRANSFORM(NAME, P, LM, RM_)                                                    \
    __kernel void NAME(int K, int H, int W, int PAD, int TW, int p0, int cp, int TB, int BW,       \
                       __global const float *xt, ulong xt_off, __global float *v, ulong v_off)     \
    {                                                                                              \
        int q = get_global_id(0), ch = get_global_id(1);                                           \
        if (q >= TB * BW / LN || ch >= K) return;                                                  \
        int ty, tx;                                                                                \
        tile_at(p0 + q, TW, &ty, &tx);                                                             \
        size_t base = xt_off + (size_t)ch * H * W * LN;                                            \
        float16 o[A][A];                                                                           \
        PATCH_TRANSFORM(o, P, LM, RM_, xt, base, ty, tx, PAD, H, W, LN, q < cp)                    \
        _Pragma("unroll") for (int e = 0; e < E; e++)                                              \
            vstore16(o[e / A][e % A], 0, v + v_off + blocked(e, q * LN, ch, TB, K, BW));           \
    }

/* V = B^T d B of each tile's A x A input patch. */
DEFINE_TILE_TRANSFORM(conv_winograd_input, A, BT_, BTT)

/* y = A^T m A + b at the tile (ty, tx) of channel plane yt (interleaved,
 * OH x OW), ReLU where relu, the outputs inside the plane only. */
INLINE void output_tile(float16 mm[A][A], int ty, int tx, int OH, int OW, float b, int relu, __global float *yt)
{
    float16 s[WM][A], o[WM][WM];
    LEFT(float16, s, AT_, mm, WM, A, A)
    RIGHT(float16, o, s, ATT, WM, A, WM)
#pragma unroll
    for (int i = 0; i < WM; i++)
#pragma unroll
        for (int j = 0; j < WM; j++) {
            float16 a = o[i][j] + b;
            if (relu) a = RELU_FWD(a);
            if (ty + i < OH && tx + j < OW) vstore16(a, 0, yt + ((size_t)(ty + i) * OW + tx + j) * LN);
        }
}

/* y = A^T M A + bias for each of the chunk's tiles and output channel r
 * < R (ReLU where relu), the outputs inside OH x OW only, interleaved
 * like the input (conv_winograd_deinterleave puts them in place). Global:
 * (cp, R). */
__kernel void conv_winograd_output(int R, int RP, int OH, int OW, int TW, int p0, int cp, int TP,
                                   __global const float *m, ulong m_off, __global const float *bias, int has_bias,
                                   int relu, __global float *yt, ulong yt_off)
{
    int q = get_global_id(0), r = get_global_id(1);
    if (q >= cp || r >= R) return;
    float16 mm[A][A];
    m += m_off + (size_t)r * TP + (size_t)q * LN;
#pragma unroll
    for (int e = 0; e < E; e++) mm[e / A][e % A] = vload16(0, m + (size_t)e * RP * TP);
    int ty, tx;
    tile_at(p0 + q, TW, &ty, &tx);
    output_tile(mm, ty, tx, OH, OW, has_bias ? bias[r] : 0.0f, relu, yt + yt_off + (size_t)r * OH * OW * LN);
}

/* y[g0 + l][ch][p] = yt[(ch*HW + p) * LN + l] for the image group's
 * images in the batch (N): conv_winograd_interleave's inverse. Global:
 * (ceil(HW / LN), K). */
__kernel void conv_winograd_deinterleave(int K, int HW, int N, int g0, __global const float *yt, ulong yt_off,
                                         __global float *y)
{
    int pb = get_global_id(0), ch = get_global_id(1), p0 = pb * LN;
    if (p0 >= HW || ch >= K) return;
    int nl = min(LN, N - g0), np = min(LN, HW - p0);
    float16 r[LN];
    yt += yt_off + ((size_t)ch * HW + p0) * LN;
#pragma unroll
    for (int q = 0; q < LN; q++) r[q] = q < np ? vload16(q, yt) : (float16)0.0f;
    transpose16(r);
    for (int l = 0; l < nl; l++) {
        __global float *out = y + ((size_t)(g0 + l) * K + ch) * HW + p0;
        if (np == LN) {
            vstore16(r[l], 0, out);
        } else {
            float v[LN];
            vstore16(r[l], 0, v);
            for (int q = 0; q < np; q++) out[q] = v[q];
        }
    }
}

/* acc[q][r] = sum over k < n of ap[k*as + r] bp[k*bs + q*VW ...], r < NR,
 * q < NB: rank-1 updates, NR scalars broadcast against NB vectors per step
 * (ap and bp advance past the n steps). */
#define RANK1_UPDATES(acc, NR, NB, ap, as, bp, bs, n)                                              \
    _Pragma("unroll") for (int q_ = 0; q_ < (NB); q_++)                                            \
        _Pragma("unroll") for (int r_ = 0; r_ < (NR); r_++) acc[q_][r_] = 0.0f;                    \
    for (int k_ = 0; k_ < (n); k_++) {                                                             \
        float16 b_[NB];                                                                            \
        _Pragma("unroll") for (int q_ = 0; q_ < (NB); q_++) b_[q_] = vload16(q_, bp);              \
        _Pragma("unroll") for (int r_ = 0; r_ < (NR); r_++)                                        \
        {                                                                                          \
            float16 a_ = (float16)(ap[r_]);                                                        \
            _Pragma("unroll") for (int q_ = 0; q_ < (NB); q_++) acc[q_][r_] = fma(a_, b_[q_], acc[q_][r_]); \
        }                                                                                          \
        bp += (bs);                                                                                \
        ap += (as);                                                                                \
    }

#ifdef RM
/* M[e][r][t] = sum over k of U[e][k][r] V[e][k][t]: a block of RM output
 * channels x NV vectors of tiles per work-item (BW = NV*VW), rank-1
 * updates over the K channels. Global: (E * RP/RM, TB): a work-group's
 * items share their tiles' V (in cache), each with its own weights. */
__kernel void conv_winograd_product(int K, int RP, int TB, __global const float *u, ulong u_off,
                                    __global const float *v, ulong v_off, __global float *m, ulong m_off)
{
    int rb = get_global_id(0), tb = get_global_id(1), blocks = RP / RM;
    if (tb >= TB || rb >= E * blocks) return;
    int e = rb / blocks, r0 = rb % blocks * RM;
    __global const float *ap = u + u_off + (size_t)rb * K * RM;
    __global const float *bp = v + v_off + ((size_t)e * TB + tb) * K * (NV * VW);
    float16 acc[NV][RM];
    RANK1_UPDATES(acc, RM, NV, ap, RM, bp, NV * VW, K)
    size_t TP = (size_t)TB * NV * VW;
    __global float *out = m + m_off + ((size_t)e * RP + r0) * TP + (size_t)tb * NV * VW;
#pragma unroll
    for (int r = 0; r < RM; r++)
#pragma unroll
        for (int q = 0; q < NV; q++) vstore16(acc[q][r], q, out + r * TP);
}

/* The forward in one launch per image group, for CPU devices: a
 * work-group of one item takes NV tile positions (NV*LN tiles), puts the
 * input transforms of all K channels in local memory (vl: [e][k][NV*VW]),
 * then per block of RM output channels the E products (the rank-1 updates
 * of conv_winograd_product) in ml ([e][RM][NV*VW]) and their output
 * transforms: V and M stay in the core's cache instead of streaming
 * through memory between kernels. Global: ceil(positions / NV). */
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void conv_winograd_fused(
    int K, int H, int W, int PAD, int R, int RP, int OH, int OW, int TW, int positions, __global const float *xt,
    ulong xt_off, __global const float *u, ulong u_off, __global const float *bias, int has_bias, int relu,
    __global float *yt, ulong yt_off, __local float *vl, __local float *ml)
{
    int p0 = get_global_id(0) * NV;
    if (p0 >= positions) return;
    int np = min(NV, positions - p0), blocks = RP / RM;
    for (int ch = 0; ch < K; ch++) {
        size_t base = xt_off + (size_t)ch * H * W * LN;
        for (int q = 0; q < NV; q++) {
            int ty, tx;
            tile_at(p0 + q, TW, &ty, &tx);
            float16 o[A][A];
            PATCH_TRANSFORM(o, A, BT_, BTT, xt, base, ty, tx, PAD, H, W, LN, q < np)
#pragma unroll
            for (int e = 0; e < E; e++) vstore16(o[e / A][e % A], 0, vl + (((size_t)e * K + ch) * NV + q) * VW);
        }
    }
    for (int rb = 0; rb < blocks; rb++) {
        for (int e = 0; e < E; e++) {
            __global const float *ap = u + u_off + ((size_t)e * blocks + rb) * K * RM;
            __local const float *bp = vl + (size_t)e * K * NV * VW;
            float16 acc[NV][RM];
            RANK1_UPDATES(acc, RM, NV, ap, RM, bp, NV * VW, K)
#pragma unroll
            for (int r = 0; r < RM; r++)
#pragma unroll
                for (int q = 0; q < NV; q++) vstore16(acc[q][r], 0, ml + (((size_t)e * RM + r) * NV + q) * VW);
        }
        for (int r = 0; r < RM && rb * RM + r < R; r++) {
            int ro = rb * RM + r;
            for (int q = 0; q < np; q++) {
                float16 mm[A][A];
#pragma unroll
                for (int e = 0; e < E; e++) mm[e / A][e % A] = vload16(0, ml + (((size_t)e * RM + r) * NV + q) * VW);
                int ty, tx;
                tile_at(p0 + q, TW, &ty, &tx);
                output_tile(mm, ty, tx, OH, OW, has_bias ? bias[ro] : 0.0f, relu,
                            yt + yt_off + (size_t)ro * OH * OW * LN);
            }
        }
    }
}
#endif

#ifdef WR
/* xn[(l*HW + p)*KP + ch] = x[g0 + l][ch][p]: image l of an image group in
 * NHWC, KP channels (zeros past K; through the ReLU's derivative where
 * relu, ym: the forward's output), 16 channels of 16 pixels per
 * work-item, transposed in registers: the weight gradient's transforms
 * then read 16 channels of a pixel as one vector. Global: (ceil(HW / LN),
 * KP / LN * nl), nl the group's images. */
__kernel void conv_winograd_nhwc(int K, int KP, int HW, int g0, int nl, __global const float *x, int relu,
                                 __global const float *ym, __global float *xn, ulong xn_off)
{
    int pb = get_global_id(0), cb = get_global_id(1) % (KP / LN), l = get_global_id(1) / (KP / LN);
    int p0 = pb * LN, c0 = cb * LN;
    if (p0 >= HW || l >= nl) return;
    int np = min(LN, HW - p0);
    float16 r[LN];
    transposed_rows(r, x, relu, ym, ((size_t)(g0 + l) * K + c0) * HW + p0, HW, K - c0, np);
    xn += xn_off + ((size_t)l * HW + p0) * KP + c0;
#pragma unroll
    for (int q = 0; q < LN; q++)
        if (q < np) vstore16(r[q], 0, xn + (size_t)q * KP);
}

/* DEFINE_CHANNEL_TRANSFORM(NAME, P, LM, RM_) defines NAME: (LM d RM_) of
 * the P x P patch at each of a chunk's tc tiles, 16 channels a vector: an
 * image group's input in NHWC (conv_winograd_nhwc: KP channels, H x W,
 * padding PAD, zeros outside) at xn_off; the chunk's tile t is image t %
 * nl at position p0 + t / nl; out [e][t][KP] at v_off. Global: (tc, KP /
 * LN). */
#define DEFINE_CHANNEL_TRANSFORM(NAME, P, LM, RM_)                                                 \
    __kernel void NAME(int KP, int H, int W, int PAD, int TW, int p0, int nl, int tc,              \
                       __global const float *xn, ulong xn_off, __global float *v, ulong v_off)     \
    {                                                                                              \
        int t = get_global_id(0), c0 = get_global_id(1) * LN;                                     \
        if (t >= tc || c0 >= KP) return;                                                           \
        int ty, tx;                                                                                \
        tile_at(p0 + t / nl, TW, &ty, &tx);                                                        \
        size_t base = xn_off + (size_t)(t % nl) * H * W * KP + c0;                                 \
        float16 o[A][A];                                                                           \
        PATCH_TRANSFORM(o, P, LM, RM_, xn, base, ty, tx, PAD, H, W, KP, 1)                         \
        _Pragma("unroll") for (int e = 0; e < E; e++)                                              \
            vstore16(o[e / A][e % A], 0, v + v_off + ((size_t)e * tc + t) * KP + c0);              \
    }

/* V = B^T x B of the input's tiles, D = A dY A^T of dy's (WM x WM, PAD 0). */
DEFINE_CHANNEL_TRANSFORM(conv_winograd_input_nhwc, A, BT_, BTT)
DEFINE_CHANNEL_TRANSFORM(conv_winograd_dy_nhwc, WM, ATT, AT_)

/* dw[r][k] = G^T dU[r][k] G: the 3x3 filter gradient from the transform
 * domain's (dU is [e][R][KP]), 16 channels k per work-item as the vector
 * lanes (left to the compiler, it kept the work-items scalar for some
 * matrices G). Global: (ceil(K / 16), R). */
__kernel void conv_winograd_filter_grad(int R, int K, int KP, __global const float *du, ulong du_off,
                                        __global float *dw)
{
    int k0 = get_global_id(0) * LN, r = get_global_id(1);
    if (k0 >= K || r >= R) return;
    int nk = min(LN, K - k0);
    float16 d[A][A], s[3][A], o[3][3];
    du += du_off + (size_t)r * KP + k0;
#pragma unroll
    for (int e = 0; e < E; e++) d[e / A][e % A] = row16(du, (size_t)e * R * KP, nk);
    LEFT(float16, s, GT_, d, 3, A, A)
    RIGHT(float16, o, s, G_, 3, A, 3)
    float t[9][LN];
#pragma unroll
    for (int e = 0; e < 9; e++) vstore16(o[e / 3][e % 3], 0, t[e]);
    dw += ((size_t)r * K + k0) * 9; /* the lanes' 3x3 blocks lie side by side */
    for (int q = 0; q < nk * 9; q++) dw[q] = t[q % 9][q / 9];
}

#define WTS 32 /* tiles per partial sum of the weight product */

/* dU[e][r][k] (+= where acc) = sum over the chunk's tc tiles t of
 * D[e][t][r] V[e][t][k] (both channel-major, [e][t][RP] and [e][t][KP]):
 * a block of WR rows r (broadcast) x WV vectors of 16 channels k per
 * work-item, rank-1 updates over the tiles, summed in runs of WTS that
 * add up (the error grows with a run's length, not the chunk's); no sum
 * across lanes. dU is [e][R][KP]; the blocks of padded rows (RP rounds R
 * up to 16) return at once. Global: (KP / (WV*LN), E * RP / WR). */
__kernel void conv_winograd_wgemm(int R, int RP, int KP, int tc, int acc, __global const float *d, ulong d_off,
                                  __global const float *v, ulong v_off, __global float *du, ulong du_off)
{
    int kb = get_global_id(0), rb = get_global_id(1), blocks = RP / WR;
    if (kb * WV * LN >= KP || rb >= E * blocks) return;
    int e = rb / blocks, r0 = rb % blocks * WR, k0 = kb * WV * LN;
    if (r0 >= R) return;
    float16 sum[WV][WR], part[WV][WR];
#pragma unroll
    for (int q = 0; q < WV; q++)
#pragma unroll
        for (int r = 0; r < WR; r++) sum[q][r] = 0.0f;
    for (int t0 = 0; t0 < tc; t0 += WTS) {
        __global const float *ap = d + d_off + ((size_t)e * tc + t0) * RP + r0;
        __global const float *bp = v + v_off + ((size_t)e * tc + t0) * KP + k0;
        RANK1_UPDATES(part, WR, WV, ap, RP, bp, KP, min(WTS, tc - t0))
#pragma unroll
        for (int q = 0; q < WV; q++)
#pragma unroll
            for (int r = 0; r < WR; r++) sum[q][r] += part[q][r];
    }
    du += du_off + ((size_t)e * R + r0) * KP + k0;
#pragma unroll
    for (int r = 0; r < WR; r++)
#pragma unroll
        for (int q = 0; q < WV; q++)
            if (r0 + r < R) vstore16(acc ? vload16(q, du + (size_t)r * KP) + sum[q][r] : sum[q][r], q, du + (size_t)r * KP);
}
#endif
