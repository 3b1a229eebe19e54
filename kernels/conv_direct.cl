/* The "direct" algorithm (src/ops/conv_direct.c; CPU devices, stride 1 and
 * a small reduction c*k*k such as a first layer): NCHW rows as vectors, no
 * lanes layout copies (they would cost more than the arithmetic); a padded
 * copy of x only when there is padding or a row is shorter than VW. The
 * backward-weights kernel sums the bias gradient on the way.
 *
 * Built with -DVW=8 or 16, the vector width (conv_direct.c takes the
 * device's native width): float16 accumulators are two registers each on
 * AVX2, where the register blocks made for AVX-512 spilled. */
#ifndef VW
#define VW 16
#endif
#if VW != 8 && VW != 16
#error "VW must be 8 or 16"
#endif
#ifndef POOL
#define POOL 0 /* a 2x2 stride-2 pooling after the convolution fused (conv_direct.c): 1 average, 2 max */
#endif
#define TG 9     /* taps per backward-weights work-item */
#define MAX_CB 3 /* most output channels per backward-weights work-item */
#define MAX_RM 10 /* most output channels per forward work-item */

/* xp (N*C, HP, WPP): x with PAD zero rows/columns on top/left and zeros to
 * the right up to WPP. One work-item per padded row: vector copies of the
 * row, scalar zeros around it. Global: N*C*HP. */
__kernel void conv_direct_pad_rows(int H, int W, int PAD, int HP, int WPP, int rows,
                                   __global const float *x, __global float *xp, ulong xp_off)
{
    int r = get_global_id(0); /* (n*C + c)*HP + hp */
    if (r >= rows) return;
    int hp = r % HP, img = r / HP, h = hp - PAD;
    __global float *d = xp + xp_off + (size_t)r * WPP;
    if (h < 0 || h >= H) {
        int w = 0;
        for (; w + VW <= WPP; w += VW) vstoreV((floatV)0.0f, 0, d + w);
        for (; w < WPP; w++) d[w] = 0.0f;
        return;
    }
    __global const float *src = x + ((size_t)img * H + h) * W;
    for (int w = 0; w < PAD; w++) d[w] = 0.0f;
    int w = 0;
    for (; w + VW <= W; w += VW) vstoreV(vloadV(0, src + w), 0, d + PAD + w);
    for (; w < W; w++) d[PAD + w] = src[w];
    for (w = PAD + W; w < WPP; w++) d[w] = 0.0f;
}

/* VW floats from p[0..n) and zeros after (n < VW reads stay in bounds). */
INLINE floatV loadV_tail(__global const float *p, int n)
{
    if (n >= VW) return vloadV(0, p);
    float t[VW];
    for (int q = 0; q < VW; q++) t[q] = q < n ? p[q] : 0.0f;
    return vloadV(0, t);
}

/* The accumulators of one output row's block: acc[0][r] and acc[1][r] are
 * the VW output pixels from s0 and from s1 of row oy for channel r of the
 * block (weights wr[r]), without the bias. A forward program built with
 * -DKW has the kernel size a constant (the tuner's choice, per device:
 * Intel's CPU runtime unrolls the tap loops then and ran LeNet's conv1
 * faster, PoCL slower; the same sums in the same order). */
#ifdef KW
#define K_ROW KW
#else
#define K_ROW K
#endif
INLINE void direct_row(int rm, floatV acc[2][MAX_RM], __global const float *xn, __global const float *wr[MAX_RM],
                       int C, int K, int HP, int WPP, int oy, int s0, int s1)
{
    (void)K; /* K_ROW is KW where the build knows it */
#pragma unroll
    for (int r = 0; r < rm; r++) acc[0][r] = acc[1][r] = (floatV)0.0f;
    int t = 0;
    for (int c = 0; c < C; c++) {
        for (int i = 0; i < K_ROW; i++) {
            __global const float *xr = xn + ((size_t)c * HP + oy + i) * WPP;
            for (int j = 0; j < K_ROW; j++, t++) {
                floatV b0 = vloadV(0, xr + s0 + j), b1 = vloadV(0, xr + s1 + j);
#pragma unroll
                for (int r = 0; r < rm; r++) {
                    floatV a = (floatV)(wr[r][t]);
                    acc[0][r] = fma(a, b0, acc[0][r]);
                    acc[1][r] = fma(a, b1, acc[1][r]);
                }
            }
        }
    }
}
#undef K_ROW

/* The block of a forward work-item: output channels from co0 (their
 * weight rows wr and biases bv), image n, rows [oy0, oy1). 0 past the end. */
INLINE int direct_item(int rm, int N, int CO, int ckk, int OH, int R, __global const float *w,
                       __global const float *bias, int has_bias, __global const float *wr[MAX_RM],
                       float bv[MAX_RM], int *co0, int *n, int *oy0, int *oy1)
{
    int item = get_global_id(1);
    int rgroups = (OH + R - 1) / R;
    *co0 = get_global_id(0) * rm;
    if (*co0 >= CO || item >= N * rgroups) return 0;
    int rg = item % rgroups;
    *n = item / rgroups;
    *oy0 = rg * R;
    *oy1 = min(OH, *oy0 + R);
#pragma unroll
    for (int r = 0; r < rm; r++) {
        wr[r] = w + (size_t)min(*co0 + r, CO - 1) * ckk;
        bv[r] = has_bias ? bias[min(*co0 + r, CO - 1)] : 0.0f;
    }
    return 1;
}

/* Forward, stride 1: y[n][co][oy][ox0..ox0+2VW) for RM output channels,
 * the 2VW output pixels of a row as two accumulators per channel; the
 * input rows come from xp (x itself when there is no padding) with
 * unaligned vector loads, the weights are broadcast. The two vectors start
 * at s0 and s1; near the row end they slide back to end exactly at OW
 * (overlapping pixels get the same value twice), so with OW >= VW every
 * read stays inside the row (WPP >= OW + K - 1) and every store is a full
 * vector store; a shorter row reads WPP >= VW + K - 1 and stores a part.
 * A work-item walks the rows [rg*R, rg*R + R) of one image, so each output
 * plane is written in long runs by one thread (rows of 26 or 28 floats
 * written by different threads shared cache lines). relu: a fused ReLU
 * after the bias. Global: (ceil(CO/RM), N*ceil(OH/R)). */
INLINE void direct_fwd(int rm, int N, int C, int CO, int K, int HP, int WPP, int OH, int OW,
                       int R, __global const float *xp, ulong xp_off, __global const float *w,
                       __global const float *bias, int has_bias, int relu, __global float *y)
{
    __global const float *wr[MAX_RM];
    float bv[MAX_RM];
    int co0, n, oy0, oy1;
    if (!direct_item(rm, N, CO, C * K * K, OH, R, w, bias, has_bias, wr, bv, &co0, &n, &oy0, &oy1)) return;
    int oblocks = (OW + 2 * VW - 1) / (2 * VW);
    int last = max(0, OW - VW);
    __global const float *xn = xp + xp_off + (size_t)n * C * HP * WPP;
    for (int oy = oy0; oy < oy1; oy++) {
        for (int ob = 0; ob < oblocks; ob++) {
            int s0 = min(ob * 2 * VW, last), s1 = min(ob * 2 * VW + VW, last);
            floatV acc[2][MAX_RM];
            direct_row(rm, acc, xn, wr, C, K, HP, WPP, oy, s0, s1);
#pragma unroll
            for (int r = 0; r < rm; r++) {
                int co = co0 + r;
                if (co >= CO) break;
                __global float *yp = y + (((size_t)n * CO + co) * OH + oy) * OW;
                floatV v0 = acc[0][r] + bv[r], v1 = acc[1][r] + bv[r];
                if (relu) {
                    v0 = RELU_FWD(v0);
                    v1 = RELU_FWD(v1);
                }
                if (OW >= VW) {
                    vstoreV(v0, 0, yp + s0);
                    vstoreV(v1, 0, yp + s1);
                } else { /* a row shorter than VW: its first OW values */
                    float t[VW];
                    vstoreV(v0, 0, t);
                    for (int q = 0; q < OW; q++) yp[q] = t[q];
                }
            }
        }
    }
}

/* A 2x2 stride-2 pooling fused into the forward (-DPOOL=1 average, 2
 * max; for even OH and OW >= 16 >= VW, clt_conv_fuses_pool in conv.c, and
 * R even): the rows in pairs, each pair's pooled values computed as the
 * pooling kernels do (pool.cl): the average (((0 + y00) + y01) + y10) +
 * y11) / 4, the max in raster order taking a value > the best or NaN,
 * with its position 0-3 (the same bits, ties and NaN included). The first
 * row's column pairs (their sums, or their best and its position) wait in
 * registers for the second row. relu: the pooling's input is the ReLU's
 * output; the backward needs its derivative only where the gradient goes.
 * Max pooling's is at the argmax (the pooled value); an average pooling's
 * is at every cell, so argmax takes a byte of cells per window instead:
 * bit q set where cell q's output is > 0 (RELU_BWD's test), in place of
 * the ReLU's output at full size (LeNet's conv1 at batch 256: 0.9 MB in
 * place of 13.8 MB written, then read back by a pooling kernel and the
 * weight gradient). */
#if POOL
#if VW == 16
#define floatH float8
#define vloadH vload8
#define vstoreH vstore8
#define convert_ucharV convert_uchar16
#else
#define floatH float4
#define vloadH vload4
#define vstoreH vstore4
#define convert_ucharV convert_uchar8
#endif
#define ucharV CAT(uchar, VW)

INLINE void direct_fwd_pool(int rm, int N, int C, int CO, int K, int HP, int WPP, int OH, int OW, int R,
                            __global const float *xp, ulong xp_off, __global const float *w,
                            __global const float *bias, int has_bias, int relu, __global float *y,
                            __global uchar *argmax)
{
    __global const float *wr[MAX_RM];
    float bv[MAX_RM];
    int co0, n, oy0, oy1;
    if (!direct_item(rm, N, CO, C * K * K, OH, R, w, bias, has_bias, wr, bv, &co0, &n, &oy0, &oy1)) return;
    int oblocks = (OW + 2 * VW - 1) / (2 * VW);
    int last = OW - VW, PH = OH / 2, PW = OW / 2;
    __global const float *xn = xp + xp_off + (size_t)n * C * HP * WPP;
    for (int oy = oy0; oy < oy1; oy += 2) {
        for (int ob = 0; ob < oblocks; ob++) {
            int s0 = min(ob * 2 * VW, last), s1 = min(ob * 2 * VW + VW, last);
            /* top: the first row's pair sums or best values (halves from
             * s0 and s1); pos: the max's window positions */
            floatV acc[2][MAX_RM], top[MAX_RM];
            intV pos[MAX_RM];
            for (int ry = 0; ry < 2; ry++) {
                direct_row(rm, acc, xn, wr, C, K, HP, WPP, oy + ry, s0, s1);
#pragma unroll
                for (int r = 0; r < rm; r++) {
                    int co = co0 + r;
                    if (co >= CO) break;
                    floatV v0 = acc[0][r] + bv[r], v1 = acc[1][r] + bv[r];
                    if (relu) {
                        v0 = RELU_FWD(v0);
                        v1 = RELU_FWD(v1);
                    }
                    floatV e = (floatV)(v0.even, v1.even), o = (floatV)(v0.odd, v1.odd);
#if POOL == 1
                    if (ry == 0) {
                        top[r] = ((floatV)0.0f + e) + o; /* from 0, as pool.cl (-0 + 0 is +0) */
                        if (relu) pos[r] = POOL_CELLS_ABOVE_0(floatV, e, o);
                        continue;
                    }
                    floatV p = ((top[r] + e) + o) / 4.0f;
                    if (relu) {
                        ucharV c = convert_ucharV(pos[r] | POOL_CELLS_ABOVE_0(floatV, e, o) << 2);
                        __global uchar *ap = argmax + (((size_t)n * CO + co) * PH + oy / 2) * PW;
                        vstoreH(c.lo, 0, ap + s0 / 2);
                        vstoreH(c.hi, 0, ap + s1 / 2);
                    }
#else
                    if (ry == 0) {
                        top[r] = e;
                        pos[r] = (intV)0;
                        POOL_MAX_STEP(intV, top[r], pos[r], o, 1);
                        continue;
                    }
                    POOL_MAX_STEP(intV, top[r], pos[r], e, 2);
                    POOL_MAX_STEP(intV, top[r], pos[r], o, 3);
                    floatV p = top[r];
                    ucharV c = convert_ucharV(pos[r]);
                    __global uchar *ap = argmax + (((size_t)n * CO + co) * PH + oy / 2) * PW;
                    vstoreH(c.lo, 0, ap + s0 / 2);
                    vstoreH(c.hi, 0, ap + s1 / 2);
#endif
                    __global float *yp = y + (((size_t)n * CO + co) * PH + oy / 2) * PW;
                    vstoreH(p.lo, 0, yp + s0 / 2);
                    vstoreH(p.hi, 0, yp + s1 / 2);
                }
            }
        }
    }
}
#endif

#define DIRECT_ARGS                                                                          \
    int N, int C, int CO, int K, int HP, int WPP, int OH, int OW, int R,                      \
        __global const float *xp, ulong xp_off, __global const float *w,                     \
        __global const float *bias, int has_bias, int relu, __global float *y
#define DIRECT_PASS N, C, CO, K, HP, WPP, OH, OW, R, xp, xp_off, w, bias, has_bias, relu, y
/* One program per variant (conv_direct.c picks them): -DRM=<RM> output
 * channels per work-item has the forward, -DCB=<CB> the backward weights
 * (with -DKW=<k> and -DNT=<c*k*k>, the kernel size and taps);
 * every program has conv_direct_pad_rows. A program of all seven
 * variants made PoCL compile 7 kernels for the program cache (a
 * measurable part of a cold start on the 2-core AVX2 machine) where a run
 * uses two. */
#ifdef RM
#if RM != 2 && RM != 4 && RM != 8 && RM != 10
#error "RM must be 2, 4, 8 or 10"
#endif
#if POOL
__kernel void conv_direct_fwd(DIRECT_ARGS, __global uchar *argmax) { direct_fwd_pool(RM, DIRECT_PASS, argmax); }
#else
__kernel void conv_direct_fwd(DIRECT_ARGS, __global uchar *argmax) { direct_fwd(RM, DIRECT_PASS); }
#endif
#endif

#ifdef CB /* the backward-weights program */
/* Backward weights, stride 1, partial over a chunk of images:
 * part[chunk][co][t] for CB output channels co and every tap
 * t = (c*KW + i)*KW + j (NT = C*KW*KW <= TG) = sum over the chunk's n, oy and
 * ox of dy[n][co][oy][ox] xp[n][c][oy+i][ox+j], and (has_db) the bias
 * gradient's partial dbpart[chunk][co] = the sum of those dy. A row is
 * read as VW-pixel vectors placed like the forward's: the last one slides
 * back to end at OW, so with OW >= VW every read stays inside the row, and
 * its lanes that the previous vector covered are multiplied by 0 (a select
 * there became masked loads that ran slower; an infinite dy there makes
 * that pixel's terms NaN instead of infinite). Rows shorter than VW read
 * dy with a zero tail and xp VW + K - 1 wide. Each x vector feeds the CB
 * channels (CB*TG accumulators; blocks of 2 to 4 rows, reusing x vectors
 * across the tap rows, ran slower on AVX2: spills);
 * the lanes are summed at the end. relu: dy is read through a fused ReLU's
 * derivative, from that ReLU's output ym. A fused pooling (-DPOOL): dy is
 * the pooling's, spread by pooled_dy. Global: (groups, chunks) (direct_bwd_weights). */
#if POOL
/* Each lane's window (POOL_DUP), its column in it (POOL_COL), and the
 * shift of the window's argmax byte in the 4-byte word argmax_words gives
 * the lane (decoding the bytes with shifts, not a char-to-int conversion
 * and a shuffle, made PoCL's backward faster), by the device's byte
 * order. */
#ifdef __ENDIAN_LITTLE__
#define BYTE_SHIFTS 0, 0, 8, 8, 16, 16, 24, 24
#else
#define BYTE_SHIFTS 24, 24, 16, 16, 8, 8, 0, 0
#endif
#if VW == 16
#define POOL_DUP ((uint16)(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7))
#define POOL_COL ((intV)(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1))
#define POOL_SHIFT ((intV)(BYTE_SHIFTS, BYTE_SHIFTS))
INLINE intV argmax_words(__global const uchar *p)
{
    int2 w = as_int2(vload8(0, p));
    return (intV)((int8)(w.x), (int8)(w.y));
}
#else
#define POOL_DUP ((uint8)(0, 0, 1, 1, 2, 2, 3, 3))
#define POOL_COL ((intV)(0, 1, 0, 1, 0, 1, 0, 1))
#define POOL_SHIFT ((intV)(BYTE_SHIFTS))
INLINE intV argmax_words(__global const uchar *p) { return (intV)(as_int(vload4(0, p))); }
#endif
/* With the pooling fused, dy is the pooling's (N, CO, OH/2, OW/2): the VW
 * pixels from column sv (even) of row oy get what pool.cl's backward
 * gives them: their window's dy / 4 (average; relu: 0 where the pixel's
 * cell bit is clear, RELU_BWD's value), or the window's dy where the
 * pixel is its argmax and 0 elsewhere (max; relu: through the ReLU's
 * derivative at the pooled value ym, the argmax's own output). */
INLINE floatV pooled_dy(__global const float *dy, int relu, __global const float *ym,
                        __global const uchar *argmax, int n, int co, int CO, int OH, int OW, int oy, int sv)
{
    size_t at = (((size_t)n * CO + co) * (OH / 2) + oy / 2) * (OW / 2) + sv / 2;
#if POOL == 1
    (void)ym;
    floatV d = shuffle(vloadH(0, dy + at) / 4.0f, POOL_DUP);
    if (!relu) return d;
    intV cells = argmax_words(argmax + at) >> POOL_SHIFT;
    return select((floatV)0.0f, d, (cells & ((intV)1 << (POOL_COL + 2 * (oy & 1)))) != 0);
#else
    floatH d = vloadH(0, dy + at);
    if (relu) d = RELU_BWD(vloadH(0, ym + at), d);
    intV a = (argmax_words(argmax + at) >> POOL_SHIFT) & 0xff;
    return select((floatV)0.0f, shuffle(d, POOL_DUP), a == POOL_COL + 2 * (oy & 1));
#endif
}
#endif

/* Channel co0 + a's dy vector of row oy of image n from column sv (through
 * the fused ReLU's derivative and pooling), times m. */
INLINE floatV bwdw_dy(int a, int OH, int OW, int CO, int co0, int n, int oy, int sv, floatV m,
                      __global const float *dy, int relu, __global const float *ym, __global const uchar *argmax,
                      const size_t *dco)
{
#if POOL
    (void)dco;
    floatV dv = pooled_dy(dy, relu, ym, argmax, n, min(co0 + a, CO - 1), CO, OH, OW, oy, sv);
#else
    size_t at = ((size_t)n * CO * OH + oy) * OW + dco[a]; /* dy's and ym's offset */
    floatV dv = OW >= VW ? vloadV(0, dy + at + sv) : loadV_tail(dy + at, OW);
    if (relu) dv = RELU_BWD(OW >= VW ? vloadV(0, ym + at + sv) : loadV_tail(ym + at, OW), dv);
#endif
    return OW >= VW ? dv * m : dv;
}

/* Row oy of image n, from column sv, into the accumulators. The tap
 * offsets are compile-time constants (-DKW) and m masks only the vector
 * that slides back (a constant 1 in the others): the two together ran
 * faster on AVX2 than offsets computed at run time and a mask
 * multiplied into every vector. */
INLINE void bwdw_vec(int cb, int C, int HP, int WPP, int OH, int OW, int CO, int co0, int n, int oy, int sv,
                     floatV m, __global const float *xn, __global const float *dy, int relu,
                     __global const float *ym, __global const uchar *argmax, const size_t *dco,
                     floatV acc[MAX_CB][TG], floatV *bsum)
{
    size_t plane = (size_t)HP * WPP;
    floatV d[MAX_CB];
#pragma unroll
    for (int a = 0; a < cb; a++) {
        d[a] = bwdw_dy(a, OH, OW, CO, co0, n, oy, sv, m, dy, relu, ym, argmax, dco);
        bsum[a] += d[a];
    }
#pragma unroll
    for (int u = 0; u < NT; u++) {
        int c = u / (KW * KW), i = (u / KW) % KW, j = u % KW; /* tap u = (c*KW + i)*KW + j */
        floatV xv = vloadV(0, xn + c * plane + (size_t)(oy + i) * WPP + j + sv);
#pragma unroll
        for (int a = 0; a < cb; a++) acc[a][u] = fma(d[a], xv, acc[a][u]);
    }
}

/* Rows oy and oy + 1 of one channel (cb 1), from column sv: each x vector
 * of rows oy+1 .. oy+KW-1 serves both rows, so KW+1 row loads per tap
 * column instead of 2*KW. Each accumulator takes row oy's term, then row
 * oy+1's, as bwdw_vec row by row would. */
INLINE void bwdw_vec2(int C, int HP, int WPP, int OH, int OW, int CO, int co0, int n, int oy, int sv, floatV m,
                      __global const float *xn, __global const float *dy, int relu, __global const float *ym,
                      __global const uchar *argmax, const size_t *dco, floatV acc[MAX_CB][TG], floatV *bsum)
{
    size_t plane = (size_t)HP * WPP;
    floatV d0 = bwdw_dy(0, OH, OW, CO, co0, n, oy, sv, m, dy, relu, ym, argmax, dco);
    floatV d1 = bwdw_dy(0, OH, OW, CO, co0, n, oy + 1, sv, m, dy, relu, ym, argmax, dco);
    bsum[0] += d0;
    bsum[0] += d1;
#pragma unroll
    for (int c = 0; c < NT / (KW * KW); c++)
#pragma unroll
        for (int r = 0; r <= KW; r++)
#pragma unroll
            for (int j = 0; j < KW; j++) {
                floatV xv = vloadV(0, xn + c * plane + (size_t)(oy + r) * WPP + j + sv);
                if (r < KW) acc[0][(c * KW + r) * KW + j] = fma(d0, xv, acc[0][(c * KW + r) * KW + j]);
                if (r > 0) acc[0][(c * KW + r - 1) * KW + j] = fma(d1, xv, acc[0][(c * KW + r - 1) * KW + j]);
            }
}

/* Channels co0 .. co0+cb-1 over the chunk's images, into part and dbpart. */
INLINE void bwdw_channels(int cb, int co0, int chunk, int N, int C, int CO, int HP, int WPP, int OH, int OW,
                          int imgs, __global const float *xp, ulong xp_off, __global const float *dy, int relu,
                          __global const float *ym, __global const uchar *argmax, __global float *part,
                          ulong part_off, int has_db, __global float *dbpart, ulong dbpart_off)
{
    size_t dco[MAX_CB];
#pragma unroll
    for (int a = 0; a < cb; a++) dco[a] = (size_t)min(co0 + a, CO - 1) * OH * OW;
    floatV acc[MAX_CB][TG], bsum[MAX_CB];
#pragma unroll
    for (int a = 0; a < cb; a++) {
        bsum[a] = (floatV)0.0f;
#pragma unroll
        for (int u = 0; u < NT; u++) acc[a][u] = (floatV)0.0f;
    }
    int npos = (OW + VW - 1) / VW;
    int last = max(0, OW - VW);
#if VW == 16
    intV lane = (intV)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#else
    intV lane = (intV)(0, 1, 2, 3, 4, 5, 6, 7);
#endif
    /* the last vector's lanes below (npos-1)*VW belong to the one before */
    floatV mlast = select((floatV)0.0f, (floatV)1.0f, lane + last >= (npos - 1) * VW);
    int n0 = chunk * imgs, n1 = min(N, n0 + imgs);
    for (int n = n0; n < n1; n++) {
        __global const float *xn = xp + xp_off + (size_t)n * C * HP * WPP;
        /* the whole vectors, then the one that slides back */
        int whole = OW >= VW && OW % VW ? npos - 1 : npos;
        int oy = 0;
        if (cb == 1) /* row pairs */
            for (; oy + 1 < OH; oy += 2) {
                for (int v = 0; v < whole; v++)
                    bwdw_vec2(C, HP, WPP, OH, OW, CO, co0, n, oy, v * VW, (floatV)1.0f, xn, dy, relu, ym, argmax,
                              dco, acc, bsum);
                if (whole < npos)
                    bwdw_vec2(C, HP, WPP, OH, OW, CO, co0, n, oy, last, mlast, xn, dy, relu, ym, argmax, dco, acc,
                              bsum);
            }
        for (; oy < OH; oy++) {
            for (int v = 0; v < whole; v++)
                bwdw_vec(cb, C, HP, WPP, OH, OW, CO, co0, n, oy, v * VW, (floatV)1.0f, xn, dy, relu, ym, argmax, dco,
                         acc, bsum);
            if (whole < npos)
                bwdw_vec(cb, C, HP, WPP, OH, OW, CO, co0, n, oy, last, mlast, xn, dy, relu, ym, argmax, dco, acc,
                         bsum);
        }
    }
#pragma unroll
    for (int a = 0; a < cb; a++) {
        int co = co0 + a;
        if (co >= CO) break;
        __global float *pp = part + part_off + ((size_t)chunk * CO + co) * NT;
#pragma unroll
        for (int u = 0; u < NT; u++) pp[u] = lane_sum(acc[a][u]);
        if (has_db) dbpart[dbpart_off + (size_t)chunk * CO + co] = lane_sum(bsum[a]);
    }
}

/* Work-item (g, chunk): the channel blocks of group g (groups of
 * ceil(ceil(CO/cb)/groups) blocks), one after the other, over the chunk's
 * images: with a chunk of one image, its dy planes are read in memory
 * order and its x plane stays in L1. */
INLINE void direct_bwd_weights(int cb, int N, int C, int CO, int HP, int WPP, int OH, int OW, int imgs, int groups,
                               int chunks, __global const float *xp, ulong xp_off, __global const float *dy,
                               int relu, __global const float *ym, __global const uchar *argmax,
                               __global float *part, ulong part_off, int has_db, __global float *dbpart,
                               ulong dbpart_off)
{
    int g = get_global_id(0), chunk = get_global_id(1);
    if (g >= groups || chunk >= chunks) return;
    int blocks = (CO + cb - 1) / cb, per = (blocks + groups - 1) / groups;
    for (int b = g * per; b < min(blocks, g * per + per); b++)
        bwdw_channels(cb, b * cb, chunk, N, C, CO, HP, WPP, OH, OW, imgs, xp, xp_off, dy, relu, ym, argmax, part,
                      part_off, has_db, dbpart, dbpart_off);
}

#define BWDW_DIRECT_ARGS                                                                        \
    int N, int C, int CO, int HP, int WPP, int OH, int OW, int imgs, int groups,                \
        int chunks, __global const float *xp, ulong xp_off, __global const float *dy, int relu, \
        __global const float *ym, __global const uchar *argmax, __global float *part, ulong part_off,   \
        int has_db,                                                                             \
        __global float *dbpart, ulong dbpart_off
#define BWDW_DIRECT_PASS                                                                        \
    N, C, CO, HP, WPP, OH, OW, imgs, groups, chunks, xp, xp_off, dy, relu, ym, argmax, part,   \
        part_off, has_db, dbpart, dbpart_off
#if CB < 1 || CB > MAX_CB
#error "CB must be 1, 2 or 3"
#endif
#if !defined(KW) || !defined(NT) || KW < 1 || NT < KW * KW || NT > TG || NT % (KW * KW)
#error "KW (the kernel size) and NT (the taps, c*KW*KW <= TG) must be defined"
#endif
__kernel void conv_direct_bwd_weights(BWDW_DIRECT_ARGS) { direct_bwd_weights(CB, BWDW_DIRECT_PASS); }
#endif
