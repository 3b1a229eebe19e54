/* A 2x2 stride-2 pooling fused after a lanes convolution (ops/epilogue.h),
 * in the copies out of and into its lanes layouts (conv_layout.cl says
 * what they are; src/ops/conv_lanes_copy.c launches these): average or
 * (max) max, PH = OH/2, PW = OW/2 windows (a last odd row or column of the
 * convolution is in none), PQ = PH*PW of them per channel, their cells
 * numbered 0-3 in raster order. Its own program: a net without such a
 * pooling never builds it, and it takes none of conv_layout.cl's -DTQ and
 * -DNT variants. */

#define LANES 16

DEFINE_TRANSPOSE(transpose16, float16, LANES, 4)

/* Forward: the pooled output of the pixel-major layout at src_off (row
 * p*CH + ch, rows NP floats apart, plus bias[ch], then a fused ReLU when
 * relu) into dst (N, CH, PH, PW), as pool.cl pools: the average ((((0 +
 * y00) + y01) + y10) + y11) / 4, or the maximum in raster order taking a
 * value > the best or NaN. A byte per window into cells: max, the
 * maximum's cell; average with relu, bit q set where cell q is > 0
 * (RELU_BWD's test). One work-item per 16 windows x 16 lanes of one
 * channel: 4 row loads per window, then in-register transposes give each
 * image's 16 windows. Global: (ceil(PQ/16), CH*NP/16). */
__kernel void conv_layout_pool_from_lanes(int N, int CH, int OH, int OW, int NP, __global const float *src,
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
 * cells and ym (LeNet's conv2 at batch 256 on PoCL: faster per step than
 * two calls). A run-time test here costs nothing measurable, where a -D
 * variant cost a second build of its program (a measurable part of a cold
 * start, when conv_layout.cl held it); but the same test around a second
 * store in conv_layout_to_lanes_t's unrolled tile (conv_layout.cl) made
 * PoCL's build of that kernel much slower even with the second layout
 * off. Global: (ceil(CH*PQ/16), NL/16). */
__kernel void conv_layout_pool_to_lanes(int N, int CH, int OH, int OW, int ps, int cs, int NP,
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
