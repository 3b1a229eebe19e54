/* Dense layers on CPU devices (src/ops/dense_cpu.c): the three products of
 * a fully connected layer on its tensors as they are, row-major (n, in),
 * (out, in), (n, out), so no call copies the weights into another layout
 * (a 4096 x 4096 layer run as a 1x1 convolution spent much of each pass
 * transposing its 67 MB of weights, every call).
 *
 * Built per configuration: VW lanes per vector; RA x RB dot products per
 * work-item in dense_cpu_nt; RM rows x NV vectors per work-item in
 * dense_cpu_rank1. The defaults are AVX2's. Loops over register blocks
 * carry "#pragma unroll" so PoCL keeps the accumulators in registers. */
#ifndef VW
#define VW 8
#endif
#ifndef RA
#define RA 3
#endif
#ifndef RB
#define RB 4
#endif
#ifndef RM
#define RM 6
#endif
#ifndef NV
#define NV 2
#endif
#if VW != 4 && VW != 8 && VW != 16
#error "VW must be 4, 8 or 16"
#endif

/* The forward: c[m][n] = epi(bias[n] + sum_k a[m][k] b[n][k]) for a (M, K)
 * and b (N, K) row-major (x and w), c (M, N) (y). A work-item takes RA
 * rows of a and RB of b, RA x RB vector accumulators along k, their lanes
 * summed at the end in a fixed order and the last K % VW terms added in
 * order. Rows past M or N read the last row and store nothing. Global
 * (ceil(M/RA), ceil(N/RB)): a work-group along dimension 0 shares its RB
 * rows of b, which are read from memory once. */
__kernel void dense_cpu_nt(int M, int N, int K, __global const float *a, __global const float *b,
                           __global const float *bias, int has_bias, int relu, __global float *c)
{
    int m0 = get_global_id(0) * RA, n0 = get_global_id(1) * RB;
    if (m0 >= M || n0 >= N) return;
    __global const float *ap[RA], *bp[RB];
    floatV acc[RA][RB];
#pragma unroll
    for (int j = 0; j < RB; j++) bp[j] = b + (size_t)min(n0 + j, N - 1) * K;
#pragma unroll
    for (int i = 0; i < RA; i++) {
        ap[i] = a + (size_t)min(m0 + i, M - 1) * K;
#pragma unroll
        for (int j = 0; j < RB; j++) acc[i][j] = (floatV)0.0f;
    }
    int kv = K / VW;
    for (int k = 0; k < kv; k++) {
        floatV av[RA];
#pragma unroll
        for (int i = 0; i < RA; i++) av[i] = vloadV(k, ap[i]);
#pragma unroll
        for (int j = 0; j < RB; j++) {
            floatV bv = vloadV(k, bp[j]);
#pragma unroll
            for (int i = 0; i < RA; i++) acc[i][j] = fma(av[i], bv, acc[i][j]);
        }
    }
#pragma unroll
    for (int i = 0; i < RA; i++) {
        if (m0 + i >= M) break;
#pragma unroll
        for (int j = 0; j < RB; j++) {
            if (n0 + j >= N) break;
            float s = lane_sum(acc[i][j]);
            for (int k = kv * VW; k < K; k++) s = fma(ap[i][k], bp[j][k], s);
            if (has_bias) s += bias[n0 + j];
            c[(size_t)(m0 + i) * N + n0 + j] = relu ? RELU_FWD(s) : s;
        }
    }
}

/* Vector v of row p from column n0, whole (tail 0) or its columns < N only
 * (the rest repeat column N - 1, so nothing past the row is read). */
INLINE floatV load_cols(__global const float *p, int n0, int v, int N, int tail)
{
    if (!tail) return vloadV(0, p + n0 + v * VW);
    float t[VW];
#pragma unroll
    for (int e = 0; e < VW; e++) t[e] = p[min(n0 + v * VW + e, N - 1)];
    return vloadV(0, t);
}

/* acc[r][v] += sum over k of a[k * lda + m0 + min(r, rlim)] * b[k * ldb +
 * columns of vector v]: RM broadcasts and NV vector loads per k. rlim and
 * tail are literals at one call (whole blocks) and fold away. */
INLINE void rank1(floatV acc[RM][NV], __global const float *a, int lda, __global const float *b, int ldb,
                  int K, int n0, int N, int rlim, int tail)
{
    for (int k = 0; k < K; k++) {
        floatV bv[NV];
#pragma unroll
        for (int v = 0; v < NV; v++) bv[v] = load_cols(b, n0, v, N, tail);
#pragma unroll
        for (int r = 0; r < RM; r++) {
            floatV s = (floatV)(a[min(r, rlim)]);
#pragma unroll
            for (int v = 0; v < NV; v++) acc[r][v] = fma(s, bv[v], acc[r][v]);
        }
        a += lda;
        b += ldb;
    }
}

/* The backward products: c[m][n] = sum_k a[k][m] b[k][n], a (K, lda) from
 * a_off, b (K, N) with rows ldb apart, c (M, N) row-major. Backward-data:
 * a = dy transposed (out, n), b = w, c = dx; the weight gradient: a = dy,
 * b = x, c = dw. A work-item takes RM rows x NV vectors of c, summing k in
 * order over one chunk of kc rows; with several chunks, chunk q's partial
 * sums go to c + q * M * N (summed in order after). Each k reads a new row
 * of b, a page apart in a large w: a chunk's rows are few enough that the
 * next work-items, on the next columns, find their pages in the TLB (one
 * walk down all 4096 rows of a 4096 x 4096 w per item ran backward-data
 * far slower than the forward). Global: (row blocks, column blocks x
 * chunks), the column blocks fastest; cols_first swaps the dimensions, so
 * that a work-group along dimension 0 writes adjacent columns (the weight
 * gradient) instead of sharing its columns of b (backward-data). */
__kernel void dense_cpu_rank1(int M, int N, int K, int kc, int cols_first, __global const float *a, ulong a_off,
                              int lda, __global const float *b, int ldb, __global float *c, ulong c_off)
{
    int ncb = (N + VW * NV - 1) / (VW * NV);
    int g0 = get_global_id(0), g1 = get_global_id(1);
    int mb = cols_first ? g1 : g0, cq = cols_first ? g0 : g1;
    int m0 = mb * RM, n0 = (cq % ncb) * (VW * NV), k0 = (cq / ncb) * kc;
    if (m0 >= M || k0 >= K) return;
    floatV acc[RM][NV];
#pragma unroll
    for (int r = 0; r < RM; r++)
#pragma unroll
        for (int v = 0; v < NV; v++) acc[r][v] = (floatV)0.0f;
    __global const float *ap = a + a_off + (size_t)k0 * lda + m0, *bp = b + (size_t)k0 * ldb;
    int kn = min(kc, K - k0), tail = n0 + VW * NV > N;
    /* whole vectors of columns unless this block holds the last of them */
    if (tail)
        rank1(acc, ap, lda, bp, ldb, kn, n0, N, min(RM - 1, M - 1 - m0), 1);
    else if (m0 + RM <= M)
        rank1(acc, ap, lda, bp, ldb, kn, n0, N, RM - 1, 0);
    else
        rank1(acc, ap, lda, bp, ldb, kn, n0, N, M - 1 - m0, 0);
    __global float *cc = c + c_off + (size_t)(k0 / kc) * M * N;
#pragma unroll
    for (int r = 0; r < RM; r++) {
        if (m0 + r >= M) break;
        __global float *cp = cc + (size_t)(m0 + r) * N + n0;
#pragma unroll
        for (int v = 0; v < NV; v++) {
            if (!tail) {
                vstoreV(acc[r][v], v, cp);
                continue;
            }
            float t[VW];
            vstoreV(acc[r][v], 0, t);
            for (int e = 0; e < VW && n0 + v * VW + e < N; e++) cp[v * VW + e] = t[e];
        }
    }
}

/* dy (M, N) times the fused ReLU's derivative (relu, from the forward's
 * output ym) into the work buffer at dst_off: transposed to (N, M) for
 * backward-data's a (transpose), as it is for the weight gradient's. One
 * work-item per (column n of dy, 16 of its rows). */
__kernel void dense_cpu_dy(int M, int N, __global const float *dy, int relu, __global const float *ym,
                           int transpose, __global float *dst, ulong dst_off)
{
    int n = get_global_id(0), m0 = get_global_id(1) * 16;
    if (n >= N || m0 >= M) return;
    for (int m = m0; m < min(m0 + 16, M); m++) {
        size_t i = (size_t)m * N + n;
        dst[dst_off + (transpose ? (size_t)n * M + m : i)] = relu ? RELU_BWD(ym[i], dy[i]) : dy[i];
    }
}
