/* 2-D pooling (floor mode, no padding) and global average pooling, NCHW.
 *
 * Index convention: argmax[o] is the index of the winning input element
 * within its (n, c) plane, ih * w + iw (PyTorch's return_indices
 * convention), except in the row kernels built with -DPOOL_PACKED (below).
 * Every output element is written by exactly one work-item,
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
#define POOL_DIV(n, m, sh) ((int)((mul_hi((uint)(n), (m)) + (uint)(n)) >> (sh)))

/* The kernels of one window per work-item (forward, and backward without
 * overlap) take these arguments after their buffers; k_arg is the window
 * unless the variant has it built in. */
#define POOL_TILE_ARGS                                                                             \
    const int h, const int w, const int oh, const uint oh_m, const uint oh_sh, const int ow,       \
        const int k_arg, const int s, const int rows

/* Their head: work-item (ox, row), row = plane * oh + oy over rows = n*c*oh;
 * the window k is K. */
#define POOL_TILE_HEAD(K)                                                                          \
    const int k = (K);                                                                             \
    int ox = get_global_id(0), row = get_global_id(1);                                             \
    if (ox >= ow || row >= rows) return;                                                           \
    int plane = POOL_DIV(row, oh_m, oh_sh);                                                        \
    int oy = row - plane * oh;                                                                     \
    size_t o = (size_t)row * ow + ox;

/* Inference builds (-DPOOL_NO_INDEX, src/ops/pool.c) keep no argmax: the
 * index search is then dead code, and max pooling's forward writes what
 * average pooling's does (the same y bits). */
#ifdef POOL_NO_INDEX
#define POOL_INDEX_STORE(store)
#else
#define POOL_INDEX_STORE(store) store;
#endif

#define POOL_MAX_FWD(NAME, K)                                                                      \
    __kernel void NAME(__global const float *x, __global float *y, __global int *argmax,           \
                       POOL_TILE_ARGS)                                                             \
    {                                                                                              \
        POOL_TILE_HEAD(K)                                                                          \
        __global const float *xp = x + (size_t)plane * h * w;                                      \
        int first = oy * s * w + ox * s;                                                           \
        /* The maximum, then where it is: two passes, where tracking the   \
         * index in one ran slower on PoCL. The first maximum wins;         \
         * NaN propagates with the last NaN's index (what one pass taking   \
         * v > best || isnan(v) gives, as PyTorch's CPU kernel does). */    \
        float best = xp[first];                                                                    \
        int nan = 0;                                                                               \
        for (int i = 0; i < k; i++)                                                                \
            for (int j = 0; j < k; j++) {                                                          \
                float v = xp[first + i * w + j];                                                   \
                best = v > best ? v : best;                                                        \
                nan |= v != v;                                                                     \
            }                                                                                      \
        int besti = first;                                                                         \
        if (nan) {                                                                                 \
            for (int i = 0; i < k; i++)                                                            \
                for (int j = 0; j < k; j++) {                                                      \
                    int idx = first + i * w + j;                                                   \
                    besti = xp[idx] != xp[idx] ? idx : besti;                                      \
                }                                                                                  \
            best = xp[besti];                                                                      \
        } else {                                                                                   \
            for (int i = k - 1; i >= 0; i--)                                                       \
                for (int j = k - 1; j >= 0; j--) {                                                 \
                    int idx = first + i * w + j;                                                   \
                    besti = xp[idx] == best ? idx : besti;                                         \
                }                                                                                  \
        }                                                                                          \
        y[o] = best;                                                                               \
        POOL_INDEX_STORE(argmax[o] = besti)                                                        \
    }

#define POOL_AVG_FWD(NAME, K)                                                                      \
    __kernel void NAME(__global const float *x, __global float *y, POOL_TILE_ARGS)                 \
    {                                                                                              \
        POOL_TILE_HEAD(K)                                                                          \
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
#define POOL_MAX_BWD_TILE(NAME, K)                                                                 \
    __kernel void NAME(__global const float *dy, __global const int *argmax, __global float *dx,   \
                       POOL_TILE_ARGS)                                                             \
    {                                                                                              \
        POOL_TILE_HEAD(K)                                                                          \
        float d = dy[o];                                                                           \
        int am = argmax[o];                                                                        \
        int first = oy * s * w + ox * s;                                                           \
        __global float *dp = dx + (size_t)plane * h * w;                                           \
        /* Zeros, then the winner (a compare per cell ran far slower on    \
         * PoCL); an argmax outside this window writes nothing. */          \
        for (int i = 0; i < k; i++)                                                                \
            for (int j = 0; j < k; j++) dp[first + i * w + j] = 0.0f;                              \
        int r = am >= first ? am - first : -1, ri = r >= 0 ? r / w : -1, ci = r - ri * w;          \
        if (ri >= 0 && ri < k && ci >= 0 && ci < k) dp[am] = d;                                    \
    }

#define POOL_AVG_BWD_TILE(NAME, K)                                                                 \
    __kernel void NAME(__global const float *dy, __global float *dx, POOL_TILE_ARGS)               \
    {                                                                                              \
        POOL_TILE_HEAD(K)                                                                          \
        float d = dy[o] / (float)(k * k);                                                          \
        __global float *dp = dx + (size_t)plane * h * w + oy * s * w + ox * s;                     \
        for (int i = 0; i < k; i++)                                                                \
            for (int j = 0; j < k; j++) dp[i * w + j] = d;                                         \
    }

/* Each tile kernel with a run-time window and with windows 2 and 3 built in. */
#define POOL_VARIANTS(KERNEL, NAME) KERNEL(NAME, k_arg) KERNEL(NAME##_k2, 2) KERNEL(NAME##_k3, 3)

POOL_VARIANTS(POOL_MAX_FWD, pool_max_fwd)
POOL_VARIANTS(POOL_AVG_FWD, pool_avg_fwd)
POOL_VARIANTS(POOL_MAX_BWD_TILE, pool_max_bwd_tile)
POOL_VARIANTS(POOL_AVG_BWD_TILE, pool_avg_bwd_tile)

/* 2x2 windows at stride 2, the common case (LeNet, the tutorials), on CPU
 * devices: one work-item per (n, c) plane, its output rows (at least PV
 * long: -DPV=4 or 8, the program "pool -DPV=4"; 8 without) one after the
 * other, PV outputs per step as vectors (a
 * 2PV-float load of each input row, its even and odd lanes the windows'
 * columns; the last step slides back to end at the row's end, so only this
 * work-item writes its row twice). The arithmetic
 * is the one-window kernels' with their order, lane by lane: the same
 * bits, NaN and -0 included. The scalar kernels left the vectorising to
 * PoCL, which handled the stride-2 gathers poorly (LeNet's first average
 * and max poolings ran far below the copy peak). A work-item a
 * row, finding its plane by a division, ran longer. Global:
 * planes = n*c. */
#ifndef PV
#define PV 8
#endif
#if PV == 8
#define PW 16
#define POOL_LANE ((int8)(0, 1, 2, 3, 4, 5, 6, 7))
#define POOL_MIX ((uint16)(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15))
#elif PV == 4
#define PW 8
#define POOL_LANE ((int4)(0, 1, 2, 3))
#define POOL_MIX ((uint8)(0, 4, 1, 5, 2, 6, 3, 7))
#else
#error "PV must be 4 or 8"
#endif
#define floatP CAT(float, PV)
#define intP CAT(int, PV)
#define vloadP CAT(vload, PV)
#define vstoreP CAT(vstore, PV)
#define floatW CAT(float, PW)
#define vloadW CAT(vload, PW)
#define vstoreW CAT(vstore, PW)

#define POOL_PLANE_HEAD                                                                            \
    int plane = get_global_id(0);                                                                  \
    if (plane >= planes) return;

/* The plane's output rows oy; POOL_IN0 is the window row's start within
 * the plane. */
#define POOL_ROWS for (int oy = 0; oy < oh; oy++)
#define POOL_IN0 (2 * oy * w)

/* Steps of PV windows along the row: outputs [ox, ox + PV). */
#define POOL_ROW_STEPS for (int ob = 0, ox = min(ob, ow - PV); ob < ow; ob += PV, ox = min(ob, ow - PV))
#define POOL_ROW_OUT ((size_t)(plane * oh + oy) * ow + ox)

#define POOL_ROW_ARGS const int h, const int w, const int oh, const int ow, const int planes

/* The four cells of PV windows: vij is cell (i, j) of each. */
#define POOL_ROW_LOAD(x)                                                                           \
    __global const float *r0 = (x) + (size_t)plane * h * w + POOL_IN0 + 2 * ox;                    \
    floatW a = vloadW(0, r0), b = vloadW(0, r0 + w);                                               \
    floatP v00 = a.even, v01 = a.odd, v10 = b.even, v11 = b.odd;

__kernel void pool_avg_fwd_rows(__global const float *x, __global float *y, POOL_ROW_ARGS)
{
    POOL_PLANE_HEAD
    POOL_ROWS POOL_ROW_STEPS {
        POOL_ROW_LOAD(x)
        floatP sum = (floatP)0.0f + v00; /* from 0, as the window loop (-0 + 0 is +0) */
        sum += v01;
        sum += v10;
        sum += v11;
        vstoreP(sum / 4.0f, 0, y + POOL_ROW_OUT);
    }
}

/* The argmax of the row kernels. Plane indices (int, ih * w + iw, as
 * everywhere in this file) by default. Built with -DPOOL_PACKED
 * (src/ops/pool.c, for a caller that only hands it back to the backward:
 * the layer), the window's cell 0-3 in raster order, 2 bits per output,
 * one ushort per step of PV outputs (POOL_ROW_STEP: the last step of a
 * row, slid back, has its own). An int per output made max pooling's
 * training forward and its backward measurably slower than average
 * pooling's; this brings them close (bench/README.md). Gathering eight
 * steps' bits per lane in a register and storing them once was no faster.
 * The cells are
 * the ones the plane indices name, so dx gets the same bits. */
#ifdef POOL_PACKED
#define POOL_ARGMAX_T ushort
#define POOL_CELL(index, cell) ((intP)(cell))
#define POOL_CELL_AT(cell) (cell)
#define POOL_ROW_STEP ((size_t)(plane * oh + oy) * ((ow + PV - 1) / PV) + ob / PV)
INLINE ushort pool_pack(intP cell)
{
    intP b = cell << (2 * POOL_LANE);
#if PV == 8
    int4 q = b.lo | b.hi;
#else
    int4 q = b;
#endif
    int2 r = q.lo | q.hi;
    return (ushort)(r.x | r.y);
}
#define POOL_ARGMAX_STORE(am, besti) ((am)[POOL_ROW_STEP] = pool_pack(besti));
#define POOL_ARGMAX_CELLS(am, rel) intP rel = (((intP)(int)(am)[POOL_ROW_STEP]) >> (2 * POOL_LANE)) & 3;
#else
#define POOL_ARGMAX_T int
#define POOL_CELL(index, cell) (index)
#define POOL_CELL_AT(cell) ((cell) == 0 ? 0 : (cell) == 1 ? 1 : (cell) == 2 ? w : w + 1)
#define POOL_ARGMAX_STORE(am, besti) vstoreP((besti), 0, (am) + POOL_ROW_OUT);
/* cells relative to the window's first: 0, 1, w, w + 1 inside it */
#define POOL_ARGMAX_CELLS(am, rel)                                                                 \
    intP rel = vloadP(0, (am) + POOL_ROW_OUT) - ((intP)(POOL_IN0 + 2 * ox) + 2 * POOL_LANE);
#endif

__kernel void pool_max_fwd_rows(__global const float *x, __global float *y, __global POOL_ARGMAX_T *argmax,
                                POOL_ROW_ARGS)
{
    POOL_PLANE_HEAD
    POOL_ROWS POOL_ROW_STEPS {
        POOL_ROW_LOAD(x)
        intP i00 = (intP)(POOL_IN0 + 2 * ox) + 2 * POOL_LANE;
        intP i01 = i00 + 1, i10 = i00 + w, i11 = i10 + 1;
        /* One pass in raster order taking v > best or NaN, as PyTorch's
         * CPU kernel: the first maximum, or the last NaN (the same bits as
         * the one-window kernels' two passes; in vectors one pass is the
         * shorter code). The index through select(): Oclgrind took
         * t ? (int8)(1) : besti wrong in the low lanes. */
        floatP best = v00;
        intP besti = POOL_CELL(i00, 0), t;
        t = (v01 > best) | (v01 != v01);
        best = t ? v01 : best;
        besti = select(besti, POOL_CELL(i01, 1), t);
        t = (v10 > best) | (v10 != v10);
        best = t ? v10 : best;
        besti = select(besti, POOL_CELL(i10, 2), t);
        t = (v11 > best) | (v11 != v11);
        best = t ? v11 : best;
        besti = select(besti, POOL_CELL(i11, 3), t);
        vstoreP(best, 0, y + POOL_ROW_OUT);
        POOL_INDEX_STORE(POOL_ARGMAX_STORE(argmax, besti))
    }
}

/* Backward: the cells of row pair (2oy, 2oy+1) from PV windows' dy,
 * interleaved back into rows. */
#define POOL_ROW_STORE(dx, c00, c01, c10, c11)                                                     \
    __global float *d0 = (dx) + (size_t)plane * h * w + POOL_IN0 + 2 * ox;                         \
    vstoreW(shuffle2((c00), (c01), POOL_MIX), 0, d0);                                              \
    vstoreW(shuffle2((c10), (c11), POOL_MIX), 0, d0 + w);

/* The cells floor mode drops (a last column, a last row when w or h is
 * odd) are zeroed by the row next to them, so dx needs no fill first. */
#define POOL_ROW_EDGES(dx)                                                                         \
    __global float *e0 = (dx) + (size_t)plane * h * w + POOL_IN0;                                  \
    for (int cx = 2 * ow; cx < w; cx++) e0[cx] = e0[w + cx] = 0.0f;                                \
    if (oy == oh - 1)                                                                              \
        for (int e = 2 * w; e < (h - 2 * oy) * w; e++) e0[e] = 0.0f;

__kernel void pool_avg_bwd_rows(__global const float *dy, __global float *dx, POOL_ROW_ARGS)
{
    POOL_PLANE_HEAD
    POOL_ROWS {
        POOL_ROW_EDGES(dx)
        POOL_ROW_STEPS {
            floatP d = vloadP(0, dy + POOL_ROW_OUT) / 4.0f;
            POOL_ROW_STORE(dx, d, d, d, d)
        }
    }
}

/* dy to the argmax cell, zeros elsewhere; an argmax outside its window
 * writes nothing, as the one-window kernel. */
__kernel void pool_max_bwd_rows(__global const float *dy, __global const POOL_ARGMAX_T *argmax, __global float *dx,
                                POOL_ROW_ARGS)
{
    POOL_PLANE_HEAD
    POOL_ROWS {
        POOL_ROW_EDGES(dx)
        POOL_ROW_STEPS {
            floatP d = vloadP(0, dy + POOL_ROW_OUT), z = (floatP)0.0f;
            POOL_ARGMAX_CELLS(argmax, rel)
            POOL_ROW_STORE(dx, select(z, d, rel == POOL_CELL_AT(0)), select(z, d, rel == POOL_CELL_AT(1)),
                           select(z, d, rel == POOL_CELL_AT(2)), select(z, d, rel == POOL_CELL_AT(3)))
        }
    }
}

/* Backward with overlapping windows (s < k), by gathering: work-item
 * (ix, row), row = plane * h + iy over rows = n*c*h, sums the windows that
 * cover input (iy, ix): window rows ylo .. yhi (uniform along the row) and
 * columns qx - b for b = r-1 .. 0, qx = ix/s, r = ceil(k/s), where
 * 0 <= ox < ow and ix - ox*s < k (masked, not branched around). Windows are
 * summed in raster order, each term as PyTorch's CPU backward adds it
 * (dy / (k*k) for average); dx is overwritten (zero where no window reads). */
#define POOL_GATHER_HEAD                                                                           \
    int ix = get_global_id(0), row = get_global_id(1);                                             \
    if (ix >= w || row >= rows) return;                                                            \
    int plane = POOL_DIV(row, h_m, h_sh);                                                          \
    int iy = row - plane * h;                                                                      \
    int ylo = iy < k ? 0 : POOL_DIV(iy - k, s_m, s_sh) + 1;                                        \
    int yhi = min(POOL_DIV(iy, s_m, s_sh), oh - 1);                                                \
    int qx = POOL_DIV(ix, s_m, s_sh);                                                              \
    size_t base = (size_t)plane * oh * ow;                                                         \
    float sum = 0.0f;

__kernel void pool_max_bwd_gather(__global const float *dy, __global const int *argmax,
                                  __global float *dx, const int h, const uint h_m, const uint h_sh,
                                  const int w, const int oh, const int ow, const int k, const int s,
                                  const uint s_m, const uint s_sh, const int r, const int rows)
{
    POOL_GATHER_HEAD
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

__kernel void pool_avg_bwd_gather(__global const float *dy, __global float *dx, const int h,
                                  const uint h_m, const uint h_sh, const int w, const int oh,
                                  const int ow, const int k, const int s, const uint s_m,
                                  const uint s_sh, const int r, const int rows)
{
    POOL_GATHER_HEAD
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
__kernel void pool_gap_fwd(__global const float *x, __global float *y, const int hw, const int rows)
{
    int r = get_global_id(0);
    if (r >= rows) return;
    __global const float *xp = x + (size_t)r * hw;
    float sum = 0.0f;
    for (int i = 0; i < hw; i++) sum += xp[i];
    y[r] = sum / (float)hw;
}

/* dx[r, i] = dy[r] / hw: work-item (i, r). */
__kernel void pool_gap_bwd(__global const float *dy, __global float *dx, const int hw,
                           const int rows)
{
    int i = get_global_id(0), r = get_global_id(1);
    if (i >= hw || r >= rows) return;
    dx[(size_t)r * hw + i] = dy[r] / (float)hw;
}
