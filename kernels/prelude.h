/* Put before every kernels/NAME.cl when it is built (tools/embed_kernels.py
 * embeds it; CLTRAIN_KERNEL_DIR sources get it too), then #line 1.
 *
 * Vectors of 16 floats pass between inlined helpers and builtins only, so
 * clang's note on CPUs without AVX-512 (a float16 argument "changes the
 * ABI") concerns no real call: silenced, not a warning of ours. */
#if defined(__clang__) && defined(__has_warning)
#if __has_warning("-Wpsabi") /* NVIDIA's older clang has no such group */
#pragma clang diagnostic ignored "-Wpsabi"
#endif
#endif

/* A ReLU fused into an op's store (RELU_FWD) or into its read of dy
 * (RELU_BWD, from the forward's output y): kernels/activation.cl's
 * expressions, so a fused net computes what the separate layer does, bit
 * for bit. They take scalars and vectors alike (the scalar widens). */
#define RELU_FWD(v) ((v) < 0.0f ? 0.0f : (v))
#define RELU_BWD(y, dy) ((y) > 0.0f ? (dy) : 0.0f)

/* A 2x2 pooling fused into a convolution's store (conv_direct.cl,
 * conv_layout_pool.cl), over vectors of type FT whose int vectors are IT:
 * POOL_MAX_STEP moves best to o where o is greater or NaN (pool.cl's
 * raster order: the first maximum, or the last NaN) and pos to the cell
 * at there; POOL_CELLS_ABOVE_0 is a window row's cells > 0 (RELU_BWD's
 * test), bit 0 the even column e, bit 1 the odd one o (the second row
 * shifts them to 2 and 3). */
#define POOL_MAX_STEP(IT, best, pos, o, at)                                                        \
    do {                                                                                           \
        IT t_ = isgreater((o), (best)) | isnan(o);                                                 \
        (best) = select((best), (o), t_);                                                          \
        (pos) = select((pos), (IT)(at), t_);                                                       \
    } while (0)
#define POOL_CELLS_ABOVE_0(FT, e, o) ((isgreater((e), (FT)0.0f) & 1) | (isgreater((o), (FT)0.0f) & 2))

/* Helpers are forced inline so register-block sizes (literals at each call)
 * fold into constants. */
#if defined(__clang__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE inline
#endif

/* Vectors of a width VW that a parameterised source gets from -DVW. */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatV CAT(float, VW)
#define intV CAT(int, VW)
#define vloadV CAT(vload, VW)
#define vstoreV CAT(vstore, VW)

/* The sum of a vector's lanes in a fixed order (halving); lane_sum is the
 * one of width VW. */
INLINE float lane_sum4(float4 s)
{
    float2 s2 = s.lo + s.hi;
    return s2.x + s2.y;
}
INLINE float lane_sum8(float8 s) { return lane_sum4(s.lo + s.hi); }
INLINE float lane_sum16(float16 s) { return lane_sum8(s.lo + s.hi); }
#define lane_sum CAT(lane_sum, VW)

/* DEFINE_TRANSPOSE(NAME, VEC, N, ROUNDS) defines NAME, the in-register
 * transpose of an N x N block of VEC vectors (conv_layout.cl,
 * conv_layout_pool.cl): afterwards r[u].s[q] is the old r[q].s[u]. Each
 * round maps element (row i, column j), as the bits of i then j, to j0
 * i(top..1) i0 j(top..1) (a rotation by one bit); ROUNDS = log2(N) rounds
 * swap the halves. Every output vector is one two-source shuffle of .even
 * / .odd halves (standard swizzles), no scalar gathers. */
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

/* Elementwise kernels (sgd.cl, adam.cl, activation.cl, elementwise.cl) take EW consecutive
 * elements per work-item, built with -DEW (runtime/launch.c,
 * clt_launch_elementwise): EW 1 on GPUs, whose neighbouring work-items
 * then read neighbouring floats; the native vector width on CPU devices,
 * where PoCL did not vectorise the one-float kernels (an SGD step over 20M
 * floats measured far slower than with float8 loads and stores).
 * EW_FOR(n, off, BODY) runs BODY(T, i) on the work-item's elements of [off,
 * off + n): once with T = floatE (EW floats from i) when all EW lie below
 * n, else once per float (T = float) for the last ones. BODY's loads and
 * stores go through LD(T, p) and ST(T, v, p); its arithmetic is the same
 * expression for both types, so every element gets the same roundings. */
#ifndef EW
#define EW 1
#endif
#if EW == 1
#define floatE float
#else
#define floatE CAT(float, EW)
#endif
#define LD_float(p) (*(p))
#define LD_float4(p) vload4(0, p)
#define LD_float8(p) vload8(0, p)
#define LD_float16(p) vload16(0, p)
#define ST_float(v, p) (*(p) = (v))
#define ST_float4(v, p) vstore4(v, 0, p)
#define ST_float8(v, p) vstore8(v, 0, p)
#define ST_float16(v, p) vstore16(v, 0, p)
#define LD(T, p) CAT(LD_, T)(p)
#define ST(T, v, p) CAT(ST_, T)(v, p)
#define EW_FOR(n, off, BODY)                                                                       \
    size_t i0_ = get_global_id(0) * (size_t)EW;                                                    \
    if (i0_ + EW <= (n)) {                                                                         \
        BODY(floatE, (off) + i0_)                                                                  \
    } else {                                                                                       \
        for (size_t e_ = i0_; e_ < (n); e_++) BODY(float, (off) + e_)                              \
    }

/* The gradient an optimizer kernel (sgd.cl, adam.cl) reads: its argument
 * list takes GRADS where one gradient buffer g would be, and LDG(T, i)
 * loads element i. Built with -DNGRAD=n (n > 1), GRADS is n replicas'
 * buffers g0 .. g(n-1) and a scale, and LDG their sum in device order
 * times the scale, ((g0 + g1) + ...) * gscale: the roundings of the host
 * sum (parallel/reduce.c), so the update is bit for bit the one that reads
 * the host's sum (parallel/peers.c). */
#ifndef NGRAD
#define NGRAD 1
#endif
#define GRADS_1 __global const float *g0
#define GRADS_2 GRADS_1, __global const float *g1
#define GRADS_3 GRADS_2, __global const float *g2
#define GRADS_4 GRADS_3, __global const float *g3
#define GRADS_5 GRADS_4, __global const float *g4
#define GRADS_6 GRADS_5, __global const float *g5
#define GRADS_7 GRADS_6, __global const float *g6
#define GRADS_8 GRADS_7, __global const float *g7
#define GSUM_1(T, i) LD(T, g0 + (i))
#define GSUM_2(T, i) GSUM_1(T, i) + LD(T, g1 + (i))
#define GSUM_3(T, i) GSUM_2(T, i) + LD(T, g2 + (i))
#define GSUM_4(T, i) GSUM_3(T, i) + LD(T, g3 + (i))
#define GSUM_5(T, i) GSUM_4(T, i) + LD(T, g4 + (i))
#define GSUM_6(T, i) GSUM_5(T, i) + LD(T, g5 + (i))
#define GSUM_7(T, i) GSUM_6(T, i) + LD(T, g6 + (i))
#define GSUM_8(T, i) GSUM_7(T, i) + LD(T, g7 + (i))
#if NGRAD == 1
#define GRADS GRADS_1
#define LDG(T, i) GSUM_1(T, i)
#else
#define GRADS CAT(GRADS_, NGRAD), const float gscale
#define LDG(T, i) ((CAT(GSUM_, NGRAD)(T, i)) * gscale)
#endif

/* The buffers an optimizer kernel writes (x: w, and its state v, m), in
 * every replica: built with -DNOUT=n (n > 1), each has n - 1 companions
 * x_1 .. x_(n-1), other replicas' copies, at the end of the argument list
 * (COPIES(x), in the order the buffers come), and ST_ALL(T, v, x, i)
 * stores v into x and its companions. NOUT 1: x alone. */
#ifndef NOUT
#define NOUT 1
#endif
#define COPIES_1(x)
#define COPIES_2(x) , __global float *x##_1
#define COPIES_3(x) COPIES_2(x), __global float *x##_2
#define COPIES_4(x) COPIES_3(x), __global float *x##_3
#define COPIES_5(x) COPIES_4(x), __global float *x##_4
#define COPIES_6(x) COPIES_5(x), __global float *x##_5
#define COPIES_7(x) COPIES_6(x), __global float *x##_6
#define COPIES_8(x) COPIES_7(x), __global float *x##_7
#define STC_1(T, v, x, i)
#define STC_2(T, v, x, i) ST(T, v, x##_1 + (i));
#define STC_3(T, v, x, i) STC_2(T, v, x, i) ST(T, v, x##_2 + (i));
#define STC_4(T, v, x, i) STC_3(T, v, x, i) ST(T, v, x##_3 + (i));
#define STC_5(T, v, x, i) STC_4(T, v, x, i) ST(T, v, x##_4 + (i));
#define STC_6(T, v, x, i) STC_5(T, v, x, i) ST(T, v, x##_5 + (i));
#define STC_7(T, v, x, i) STC_6(T, v, x, i) ST(T, v, x##_6 + (i));
#define STC_8(T, v, x, i) STC_7(T, v, x, i) ST(T, v, x##_7 + (i));
#define COPIES(x) CAT(COPIES_, NOUT)(x)
#define ST_ALL(T, v, x, i)                                                                         \
    {                                                                                              \
        T st_ = (v);                                                                               \
        ST(T, st_, x + (i));                                                                       \
        CAT(STC_, NOUT)(T, st_, x, i)                                                              \
    }

/* A stride-2 weight gradient reads pixels (2*oy + i, 2*ox + j): in raster
 * order every other pixel of a row, and the cache lines between them. Its
 * x copy keeps each channel's pixels in four phase planes instead (even
 * rows and columns, even rows and odd columns, odd and even, odd and odd;
 * each in raster order), where those reads are contiguous. The position
 * of pixel (h, w) of an H x W image in that order (conv_layout.cl's copy
 * and conv_lanes.cl's weight gradient, two programs, share it): */
INLINE int lanes_phase(int H, int W, int h, int w)
{
    int r0 = (H + 1) / 2, r1 = H / 2, c0 = (W + 1) / 2, c1 = W / 2;
    int base = (h & 1) ? r0 * W + ((w & 1) ? r1 * c0 : 0) : ((w & 1) ? r0 * c0 : 0);
    return base + (h >> 1) * ((w & 1) ? c1 : c0) + (w >> 1);
}

/* TF32 tensor-core products (-DTC; conv_implicit.cl, tf32_probe.cl):
 * operands rounded to TF32 as cvt.rna does (nearest, ties away from zero,
 * 10 mantissa bits; src/runtime/tf32.c is the host's twin), products of
 * 16x8 by 8x8 accumulated in fp32. TC 1 issues PTX mma.sync m16n8k8
 * (sm_80 and later) through inline assembly, which only NVIDIA's OpenCL
 * compiler passes through: the host builds TC 1 only on a device whose
 * probe (runtime/tf32_probe.c) found it NVIDIA with compute capability 8.0
 * or more, and the probe's product checks the fragment layout below
 * before any convolution may use it. TC 2 computes the same in OpenCL C
 * (any device; the tests' path on PoCL): same tiles, same rounding, so the
 * tile mapping is tested where there is no tensor core.
 *
 * Fragments come from local tiles stored k-major (element (m, k) of A at
 * sa[k * lda + m], (k, n) of B at sb[k * ldb + n]), already rounded. A
 * lane (0..31 of a warp) with g = lane / 4, t = lane % 4 holds, as PTX's
 * m16n8k8 .tf32 layout says: A rows g, g + 8 at k t, t + 4 (a0..a3); B k
 * t, t + 4 at column g (b0, b1); C rows g, g + 8 at columns 2t, 2t + 1
 * (c0..c3). TC 2's "fragments" are the whole rows and columns its lane's
 * C needs (16 floats each). */
#if defined(TC) && TC == 1
/* NVIDIA's compiler defines its extensions' macros (the probe requires
 * cl_nv_device_attribute_query); clang's NVPTX target (tools/ptx/check)
 * __NVPTX__. Elsewhere the PTX would not assemble: refuse it here. */
#if !defined(__NVPTX__) && !defined(cl_nv_device_attribute_query) && !defined(cl_nv_pragma_unroll)
#error "TC=1 (PTX mma) needs NVIDIA's OpenCL compiler"
#endif
/* NVIDIA's OpenCL compiler takes inline PTX as asm (as hashcat's and
 * KataGo's kernels write it); clang's OpenCL mode knows only __asm__ */
#ifdef __NVPTX__
#define PTX_ASM __asm__
#else
#define PTX_ASM asm
#endif
#define TF32_FA 4
#define TF32_FB 2
INLINE float tf32_round(float x)
{
    uint r;
    PTX_ASM volatile("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return as_float(r);
}
INLINE void tf32_frag_a(__local const float *sa, int lda, int lane, uint *a)
{
    int g = lane >> 2, t = lane & 3;
    a[0] = as_uint(sa[t * lda + g]);
    a[1] = as_uint(sa[t * lda + g + 8]);
    a[2] = as_uint(sa[(t + 4) * lda + g]);
    a[3] = as_uint(sa[(t + 4) * lda + g + 8]);
}
INLINE void tf32_frag_b(__local const float *sb, int ldb, int lane, uint *b)
{
    int g = lane >> 2, t = lane & 3;
    b[0] = as_uint(sb[t * ldb + g]);
    b[1] = as_uint(sb[(t + 4) * ldb + g]);
}
INLINE void tf32_mma(float *c, const uint *a, const uint *b)
{
    PTX_ASM volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#elif defined(TC) && TC == 2
#define TF32_FA 16
#define TF32_FB 16
INLINE float tf32_round(float x)
{
    uint u = as_uint(x);
    if ((u & 0x7f800000u) == 0x7f800000u) return x; /* inf and NaN stay */
    return as_float((u + 0x1000u) & ~0x1fffu);       /* the magnitude's bits: ties away from zero */
}
/* a[k], a[8 + k]: rows g and g + 8 at k = 0..7 */
INLINE void tf32_frag_a(__local const float *sa, int lda, int lane, uint *a)
{
    for (int k = 0; k < 8; k++) {
        a[k] = as_uint(sa[k * lda + (lane >> 2)]);
        a[8 + k] = as_uint(sa[k * lda + (lane >> 2) + 8]);
    }
}
/* b[k], b[8 + k]: columns 2t and 2t + 1 at k = 0..7 */
INLINE void tf32_frag_b(__local const float *sb, int ldb, int lane, uint *b)
{
    for (int k = 0; k < 8; k++) {
        b[k] = as_uint(sb[k * ldb + 2 * (lane & 3)]);
        b[8 + k] = as_uint(sb[k * ldb + 2 * (lane & 3) + 1]);
    }
}
INLINE void tf32_mma(float *c, const uint *a, const uint *b)
{
    for (int r = 0; r < 4; r++) {
        const uint *ar = a + 8 * (r >> 1), *bc = b + 8 * (r & 1);
        float s = c[r];
        for (int k = 0; k < 8; k++) s = fma(as_float(ar[k]), as_float(bc[k]), s);
        c[r] = s;
    }
}
#endif
