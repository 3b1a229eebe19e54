/* What every convolution algorithm shares (src/ops/conv_common.c launches
 * these): the bias gradient and the fixed-order sum of per-chunk partials.
 * The algorithms have programs of their own: conv_layout.cl,
 * conv_layout_pool.cl and conv_lanes.cl (CPU devices), conv_direct.cl
 * (first layers on CPU devices), conv_gemm.cl (GPUs).
 *
 * Conventions of all of them: NCHW, float32, cross-correlation, zero
 * padding, square kernel K, stride S, padding PAD. No atomics anywhere;
 * every output element is written once (or, for sums over chunks, summed
 * in a fixed order), so results are deterministic. Offsets into the
 * device's shared scratch buffer are passed as ulong element offsets. */

#define LANES 16

/* out[e] = sum over chunk of part[chunk][e], chunks in order; 16 elements
 * per work-item. Global: ceil(n / 16). */
__kernel void conv_sum_chunks(int n, int chunks, __global const float *part, ulong part_off,
                              __global float *out)
{
    int e0 = get_global_id(0) * LANES;
    if (e0 >= n) return;
    __global const float *p = part + part_off;
    if (e0 + LANES <= n) {
        float16 s = vload16(0, p + e0);
        for (int k = 1; k < chunks; k++) s += vload16(0, p + (size_t)k * n + e0);
        vstore16(s, 0, out + e0);
    } else {
        for (int e = e0; e < n; e++) {
            float s = p[e];
            for (int k = 1; k < chunks; k++) s += p[(size_t)k * n + e];
            out[e] = s;
        }
    }
}

/* dy of pixel q of plane `plane` (of P pixels) where a 2x2 stride-2
 * pooling was fused after the convolution (OW > 0: its rows are OW wide;
 * ops/epilogue.h): pool.cl's backward of the pooling's dy, through a fused
 * ReLU's derivative; 0 in no window. Average: the window's dy / 4, 0 where
 * the cell's bit is clear (relu). Max: the window's dy on its maximum's
 * cell (relu: through the derivative at the pooled output ym), 0 on the
 * others. */
INLINE float pooled_dy(__global const float *dy, int relu, int max, __global const uchar *cells,
                       __global const float *ym, size_t plane, int OH, int OW, int q)
{
    int y = q / OW, x = q - y * OW, PW = OW / 2, cell = (y & 1) * 2 + (x & 1);
    if (y >= OH / 2 * 2 || x >= PW * 2) return 0.0f;
    size_t at = (plane * (OH / 2) + y / 2) * PW + x / 2;
    if (max) return cells[at] != cell ? 0.0f : relu ? RELU_BWD(ym[at], dy[at]) : dy[at];
    float d = dy[at] / 4.0f;
    return relu && !((cells[at] >> cell) & 1) ? 0.0f : d;
}

/* part[chunk][co] = sum over images [chunk*imgs, (chunk+1)*imgs) and their
 * pixels of dy[n][co][.] (relu: read through a fused ReLU's derivative
 * from its output ym; OW > 0: dy is a fused pooling's, max or average,
 * pooled_dy): 16 running sums over the pixels of each image, fixed order,
 * the same with a pooling fused or not. Global: (CO, chunks);
 * conv_sum_chunks finishes db. */
__kernel void conv_bias_grad(int N, int CO, int P, int imgs, __global const float *dy, int relu,
                             __global const float *ym, __global float *part, ulong part_off, int OW, int max,
                             __global const uchar *cells)
{
    int co = get_global_id(0);
    int chunk = get_global_id(1);
    int n0 = chunk * imgs;
    if (co >= CO || n0 >= N) return;
    int n1 = min(N, n0 + imgs), OH = OW > 0 ? P / OW : 0;
    float total = 0.0f;
    for (int n = n0; n < n1; n++) {
        size_t plane = (size_t)n * CO + co, at = plane * P;
        __global const float *p = dy + at, *m = ym + at;
        float16 s = (float16)0.0f;
        int q = 0;
        for (; q + LANES <= P; q += LANES) {
            float16 v;
            if (OW > 0) {
                float t[LANES];
                for (int l = 0; l < LANES; l++) t[l] = pooled_dy(dy, relu, max, cells, ym, plane, OH, OW, q + l);
                v = vload16(0, t);
            } else v = relu ? RELU_BWD(vload16(0, m + q), vload16(0, p + q)) : vload16(0, p + q);
            s += v;
        }
        float8 s8 = s.lo + s.hi;
        float4 s4 = s8.lo + s8.hi;
        float2 s2 = s4.lo + s4.hi;
        float t = s2.x + s2.y;
        for (; q < P; q++)
            t += OW > 0 ? pooled_dy(dy, relu, max, cells, ym, plane, OH, OW, q) : relu ? RELU_BWD(m[q], p[q]) : p[q];
        total += t;
    }
    part[part_off + (size_t)chunk * CO + co] = total;
}
