/* The "implicit" convolution (src/ops/conv_implicit.c; GPUs): every pass is
 * one tiled matrix product whose operands are gathered from the NCHW tensors
 * while the tiles load, so there is no im2col matrix and no transpose, and
 * the forward adds the bias and applies a fused ReLU in its store:
 *
 *   PASS 0 forward           y(co, q)  = sum over r of w(co, r) x~(r, q)     M CO, N n*P,   K C*KK
 *   PASS 1 backward-data     dx(c, t)  = sum over s of w~(c, s) dy~(s, t)    M C,  N n*H*W, K CO*KK (*)
 *   PASS 2 backward-weights  dw(co, r) = sum over q of dy(co, q) x~(q, r)    M CO, N C*KK,  K n*P
 *
 * with q = (image, output pixel), r = (input channel, tap), s = (output
 * channel, tap), t = (image, input pixel) and ~ a gather (0 where a tap
 * falls in the padding). (*) Backward-data runs one product per stride
 * phase (y0, x0), a launch each: the input pixels (y0 + S*a, x0 + S*b)
 * and only the taps that reach them, (i0 + S*u, j0 + S*v) with i0 = (y0 +
 * PAD) mod S, so its N is n*hy*hx and its K CO*ti*tj (phase_of), not K*K
 * taps per pixel of which 1 in S^2 lands; a phase no tap reaches writes
 * zeros. Backward-weights splits K into slices (dimension 1 of the
 * range: slice * row tiles + row tile), each writing its own partial
 * matrix, summed later in a fixed order.
 *
 * Build-time: PASS; the tile TM x TN x TK; RM x RN results per work-item (4
 * or 8 each); TC 1 or 2 for TF32 tensor-core products (prelude.h: mma on
 * NVIDIA, or its OpenCL C twin) in place of the fp32 FMAs; and, on GPUs, the geometry GC GH GW GCO GK GS GPAD GOH GOW
 * and backward-data's phase GPY GPX (conv_implicit.c says when), so that
 * the index arithmetic divides by constants (a phase's extents as
 * run-time divisors cost every gathered element several integer
 * divisions). Without them they come from the argument gv (c, h, w, co,
 * k, stride, pad, oh, ow, y0, x0 in s0..sa): one program per pass and
 * tile, for CPU devices, where a program per shape would cost a long
 * compile each. A work-group is
 * (TN/RN) x (TM/RM) items; item (tx, ty) holds the rows and columns
 * SPREAD(e, t, items): runs of 4 strided by the items, which makes its
 * local reads float4s without bank conflicts and its stores coalesced.
 * Indices are ints: the plan refuses tensors of 2^31 elements or more. */

#ifndef PASS /* defaults that let the source build alone */
#define PASS 0
#endif
#ifndef TM
#define TM 64
#define TN 64
#define TK 16
#define RM 4
#define RN 4
#endif
#ifndef GC
#define GC gv.s0
#define GH gv.s1
#define GW gv.s2
#define GCO gv.s3
#define GK gv.s4
#define GS gv.s5
#define GPAD gv.s6
#define GOH gv.s7
#define GOW gv.s8
#endif
#ifndef GPY
#define GPY gv.s9
#define GPX gv.sa
#endif

#ifndef TC
#define TC 0
#endif

#define LX (TN / RN)
#define LY (TM / RM)
#define NT (LX * LY)
/* Tile elements each item loads (every tile divides evenly). */
#define NA (TM * TK / NT)
#define NB (TK * TN / NT)
#if (TM * TK) % NT || (TK * TN) % NT
#error "conv_implicit: a tile whose elements do not divide evenly among its items"
#endif
#define KK (GK * GK)
#define P (GOH * GOW)
/* Local rows padded by 4 floats: a column's stores land on 2 banks at most.
 * TC: by 8, so that a fragment's 32 reads (8 columns of 4 rows) fall on 32
 * banks (conv_implicit.c's cfg_fits counts the same). */
#if TC
#define AS (TM + 8)
#define BS (TN + 8)
#else
#define AS (TM + 4)
#define BS (TN + 4)
#endif

/* TC: a work-group's warps (32 items each) cover the tile as a grid of WGM
 * warps along M; a warp holds MI x NI products of 16 x 8 (prelude.h's
 * mma), RM x RN results per item as the fp32 tiles. */
#if TC
#define MI (RM / 2)
#define NI (RN / 2)
#define WGM (TM / (16 * MI))
#if TK % 8 || LY % 8 || LX % 4
#error "conv_implicit: a TC tile needs TK a multiple of 8, TM/RM of 8 and TN/RN of 4"
#endif
/* operands go to local memory rounded once, as cvt.rna would each fragment */
#define TO_LOCAL(v) tf32_round(v)
#else
#define TO_LOCAL(v) (v)
#endif

#if PASS == 0
#define MDIM GCO
#define KDIM (GC * KK)
#elif PASS == 1
#define MDIM GC
#else
#define MDIM GCO
#define NDIM (GC * KK)
#endif

/* A stride phase of backward-data (above): its first input pixel (y0, x0),
 * first tap (i0, j0), taps per column and row (ti, tj), pixels per column
 * and row (hy, hx), and dy's row and column of its first pixel and first
 * tap (oy0, ox0). Other passes carry it unused. */
typedef struct phase {
    int y0, x0, i0, j0, ti, tj, hy, hx, oy0, ox0;
} phase;

INLINE phase phase_of(int y0, int x0, int16 gv)
{
    phase f;
    f.y0 = y0;
    f.x0 = x0;
    f.i0 = (f.y0 + GPAD) % GS;
    f.j0 = (f.x0 + GPAD) % GS;
    f.ti = f.i0 < GK ? (GK - f.i0 + GS - 1) / GS : 0;
    f.tj = f.j0 < GK ? (GK - f.j0 + GS - 1) / GS : 0;
    f.hy = f.y0 < GH ? (GH - f.y0 + GS - 1) / GS : 0;
    f.hx = f.x0 < GW ? (GW - f.x0 + GS - 1) / GS : 0;
    f.oy0 = (f.y0 + GPAD - f.i0) / GS; /* exact: i0 is y0 + PAD's remainder */
    f.ox0 = (f.x0 + GPAD - f.j0) / GS;
    return f;
}

/* Column n of a phase's product: image *img, the phase's pixel (*a, *b). */
INLINE void phase_pixel(phase f, int n, int *img, int *a, int *b)
{
    int pp = f.hy * f.hx, q = n % pp;
    *img = n / pp;
    *a = q / f.hx;
    *b = q % f.hx;
}

/* Row k of a phase's product: output channel *co, the phase's tap (*u, *v). */
INLINE void phase_tap(phase f, int k, int *co, int *u, int *v)
{
    int tt = f.ti * f.tj, r = k % tt;
    *co = k / tt;
    *u = r / f.tj;
    *v = r % f.tj;
}

/* x at input channel c, tap (i, j) of output pixel p of image img; 0 in the padding. */
INLINE float x_tap(__global const float *x, int img, int c, int i, int j, int p, int16 gv)
{
    int h = (p / GOW) * GS - GPAD + i, w = (p % GOW) * GS - GPAD + j;
    return h >= 0 && h < GH && w >= 0 && w < GW ? x[((img * GC + c) * GH + h) * GW + w] : 0.0f;
}

/* dy at (img, co, at) through a fused ReLU's derivative when relu. */
INLINE float dy_at(__global const float *dy, __global const float *ym, int relu, int at)
{
    return relu ? RELU_BWD(ym[at], dy[at]) : dy[at];
}

/* Operand A (m, k); m < MDIM and 0 <= k < kdim are the caller's checks. */
INLINE float load_a(__global const float *a, __global const float *ym, int relu, int m, int k, phase f, int16 gv)
{
#if PASS == 0
    return a[m * KDIM + k];
#elif PASS == 1
    int co, u, v;
    phase_tap(f, k, &co, &u, &v);
    return a[((co * GC + m) * GK + f.i0 + GS * u) * GK + f.j0 + GS * v];
#else
    return dy_at(a, ym, relu, ((k / P) * GCO + m) * P + k % P);
#endif
}

/* Operand B (k, n); n < ndim and 0 <= k < kdim are the caller's checks. */
INLINE float load_b(__global const float *b, __global const float *ym, int relu, int k, int n, phase f, int16 gv)
{
#if PASS == 0
    int c = k / KK, t = k % KK;
    return x_tap(b, n / P, c, t / GK, t % GK, n % P, gv);
#elif PASS == 1
    /* pixel (y0 + S*pa, x0 + S*pb) and tap (i0 + S*u, j0 + S*v) meet at
     * dy's (oy0 + pa - u, ox0 + pb - v) */
    int co, u, v, img, pa, pb;
    phase_tap(f, k, &co, &u, &v);
    phase_pixel(f, n, &img, &pa, &pb);
    int y = f.oy0 + pa - u, x = f.ox0 + pb - v;
    if (y < 0 || x < 0 || y >= GOH || x >= GOW) return 0.0f;
    return dy_at(b, ym, relu, ((img * GCO + co) * GOH + y) * GOW + x);
#else
    int t = n % KK;
    return x_tap(b, k / P, n / KK, t / GK, t % GK, k % P, gv);
#endif
}

INLINE void unpack4(float4 v, float *to)
{
    to[0] = v.x;
    to[1] = v.y;
    to[2] = v.z;
    to[3] = v.w;
}

/* Element e of a tile, as fetch_tiles loads it and the kernel stores it:
 * A runs along k, consecutive items along k (w's rows and dy's pixels are
 * contiguous); B along n where the gather is contiguous in n (x's and dy's
 * pixels), along k for backward-weights (x's pixels are its k). */
#define A_K(e) ((e) % TK)
#define A_M(e) ((e) / TK)
#if PASS == 2
#define B_K(e) ((e) % TK)
#define B_N(e) ((e) / TK)
#else
#define B_K(e) ((e) / TN)
#define B_N(e) ((e) % TN)
#endif

/* The operands' tiles at k0 into an item's registers; zero outside the
 * matrices. */
INLINE void fetch_tiles(float *pa, float *pb, __global const float *a, __global const float *b,
                        __global const float *aux, int relu, int lid, int m0, int n0, int k0, int kend, int ndim,
                        phase f, int16 gv)
{
    for (int i = 0; i < NA; i++) {
        int e = lid + i * NT, m = m0 + A_M(e), k = k0 + A_K(e);
        pa[i] = m < MDIM && k < kend ? load_a(a, aux, relu, m, k, f, gv) : 0.0f;
    }
    for (int i = 0; i < NB; i++) {
        int e = lid + i * NT, n = n0 + B_N(e), k = k0 + B_K(e);
        pb[i] = n < ndim && k < kend ? load_b(b, aux, relu, k, n, f, gv) : 0.0f;
    }
}

/* Row or column index of register e of an item at position pos of a
 * work-group dimension of `items` items: runs of 4. */
#define SPREAD(e, pos, items) (((e) / 4) * (items) * 4 + (pos) * 4 + (e) % 4)

/* Result (m, n) into out (kernel arguments below): the bias and ReLU of the
 * forward, the phase's pixel of backward-data, the slice's partial matrix
 * of backward-weights. */
INLINE void store_result(__global float *out, __global const float *aux, int flags, int m, int n, int ndim, float v,
                         phase f, int slice, ulong out_off, int16 gv)
{
    if (m >= MDIM || n >= ndim) return;
#if PASS == 0
    if (flags & 1) v += aux[m];
    out[((n / P) * GCO + m) * P + n % P] = (flags & 2) ? RELU_FWD(v) : v;
#elif PASS == 1
    int img, pa, pb;
    phase_pixel(f, n, &img, &pa, &pb);
    out[((img * GC + m) * GH + f.y0 + GS * pa) * GW + f.x0 + GS * pb] = v;
#else
    out[out_off + ((size_t)slice * MDIM + m) * NDIM + n] = v;
#endif
}

/* gv: the geometry (above); nimg images; kslice: K per slice (PASS 2, a
 * multiple of TK; else unused);
 * a, b: the operands' tensors; aux: the bias (PASS 0, flags bit 0) or a
 * fused ReLU's output (flags bit 1: ReLU); out: y, dx, or the partial
 * matrices at out_off (PASS 2). */
__kernel __attribute__((reqd_work_group_size(LX, LY, 1))) void conv_implicit(
    int16 gv, int nimg, int kslice, __global const float *a, __global const float *b, __global const float *aux,
    int flags, __global float *out, ulong out_off)
{
    __local float As[TK * AS];
    __local float Bs[TK * BS];
    int tx = get_local_id(0), ty = get_local_id(1), lid = ty * LX + tx;
    int n0 = get_group_id(0) * TN;
#if PASS == 1
    phase f = phase_of(GPY, GPX, gv); /* at stride 1 the one phase: every pixel and tap */
#else
    phase f = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}; /* unused */
#endif
#if PASS == 2
    int tiles_m = (MDIM + TM - 1) / TM;
    int slice = get_group_id(1) / tiles_m, m0 = (get_group_id(1) % tiles_m) * TM;
    int kdim = nimg * P, kbeg = slice * kslice, kend = min(kdim, kbeg + kslice);
    int ndim = NDIM;
#elif PASS == 1
    int m0 = get_group_id(1) * TM, kbeg = 0, kend = GCO * f.ti * f.tj;
    int ndim = nimg * f.hy * f.hx;
#else
    int m0 = get_group_id(1) * TM, kbeg = 0, kend = KDIM;
    int ndim = nimg * P;
#endif
    int relu = (flags >> 1) & 1;
#if PASS != 2
    int slice = 0;
#endif
#if TC
    int lane = lid % 32, wm0 = (lid / 32) % WGM * 16 * MI, wn0 = (lid / 32) / WGM * 8 * NI;
    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int r = 0; r < 4; r++) acc[i][j][r] = 0.0f;
#else
    float acc[RM][RN];
    for (int i = 0; i < RM; i++)
        for (int j = 0; j < RN; j++) acc[i][j] = 0.0f;
#endif

    /* The next tiles are loaded into registers while this one computes
     * (the loads' latency hides behind the FMAs) and stored to local
     * memory after it. */
    float pa[NA], pb[NB];
    fetch_tiles(pa, pb, a, b, aux, relu, lid, m0, n0, kbeg, kend, ndim, f, gv);
    for (int k0 = kbeg; k0 < kend; k0 += TK) {
        for (int i = 0; i < NA; i++) As[A_K(lid + i * NT) * AS + A_M(lid + i * NT)] = TO_LOCAL(pa[i]);
        for (int i = 0; i < NB; i++) Bs[B_K(lid + i * NT) * BS + B_N(lid + i * NT)] = TO_LOCAL(pb[i]);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (k0 + TK < kend) fetch_tiles(pa, pb, a, b, aux, relu, lid, m0, n0, k0 + TK, kend, ndim, f, gv);
#if TC
#pragma unroll
        for (int kk = 0; kk < TK; kk += 8) {
            uint fa[MI][TF32_FA], fb[NI][TF32_FB];
#pragma unroll
            for (int i = 0; i < MI; i++) tf32_frag_a(&As[kk * AS + wm0 + 16 * i], AS, lane, fa[i]);
#pragma unroll
            for (int j = 0; j < NI; j++) tf32_frag_b(&Bs[kk * BS + wn0 + 8 * j], BS, lane, fb[j]);
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int j = 0; j < NI; j++) tf32_mma(acc[i][j], fa[i], fb[j]);
        }
#else
        for (int kk = 0; kk < TK; kk++) {
            float ar[RM], br[RN];
            for (int i = 0; i < RM; i += 4) unpack4(vload4(0, &As[kk * AS + SPREAD(i, ty, LY)]), ar + i);
            for (int j = 0; j < RN; j += 4) unpack4(vload4(0, &Bs[kk * BS + SPREAD(j, tx, LX)]), br + j);
            for (int i = 0; i < RM; i++)
                for (int j = 0; j < RN; j++) acc[i][j] = mad(ar[i], br[j], acc[i][j]);
        }
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
    }

#if TC
    /* c0..c3 of a product: rows g, g + 8, columns 2t, 2t + 1 (prelude.h) */
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                store_result(out, aux, flags, m0 + wm0 + 16 * i + lane / 4 + 8 * (r >> 1),
                             n0 + wn0 + 8 * j + 2 * (lane % 4) + (r & 1), ndim, acc[i][j][r], f, slice, out_off, gv);
#else
    for (int i = 0; i < RM; i++)
        for (int j = 0; j < RN; j++)
            store_result(out, aux, flags, m0 + SPREAD(i, ty, LY), n0 + SPREAD(j, tx, LX), ndim, acc[i][j], f, slice,
                         out_off, gv);
#endif
}
