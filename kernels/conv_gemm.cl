/* The "gemm" algorithm's copies (src/ops/conv_gemm.c; GPUs and
 * accelerators): im2col over a chunk of images into a (C*K*K, images*P)
 * matrix for CLBlast's SGEMM, a gather-style col2im, and the transposes
 * between NCHW and (CO, images*P). */

/* col[(c*K + i)*K + j][q] for q = (n - n0)*P + oy*OW + ox, n in [n0, n0+nb):
 * x[n][c][oy*S-PAD+i][ox*S-PAD+j] or 0. Global: (nb*P, C*K*K). */
__kernel void conv_gemm_im2col(int C, int H, int W, int K, int S, int PAD, int OH, int OW,
                               int n0, int nb, __global const float *x, __global float *col,
                               ulong col_off)
{
    int q = get_global_id(0);
    int r = get_global_id(1);
    int P = OH * OW;
    if (q >= nb * P || r >= C * K * K) return;
    int n = n0 + q / P;
    int p = q % P;
    int oy = p / OW, ox = p % OW;
    int j = r % K;
    int i = (r / K) % K;
    int c = r / (K * K);
    int h = oy * S - PAD + i, w = ox * S - PAD + j;
    float v = 0.0f;
    if (h >= 0 && h < H && w >= 0 && w < W) v = x[(((size_t)n * C + c) * H + h) * W + w];
    col[col_off + (size_t)r * nb * P + q] = v;
}

/* Gather col2im: dx[n][c][y][x] = sum over the taps that reach (y, x) of
 * dcol[(c*K + i)*K + j][(n - n0)*P + oy*OW + ox]; each dx element is written
 * once (no atomics, deterministic). Global: (W, nb*C*H). */
__kernel void conv_gemm_col2im(int C, int H, int W, int K, int S, int PAD, int OH, int OW,
                               int n0, int nb, __global const float *dcol, ulong dcol_off,
                               __global float *dx)
{
    int xx = get_global_id(0);
    int row = get_global_id(1); /* ((n - n0)*C + c)*H + y */
    if (xx >= W || row >= nb * C * H) return;
    int yy = row % H;
    int c = (row / H) % C;
    int nl = row / (H * C);
    size_t P = (size_t)OH * OW, Q = (size_t)nb * P;
    float s = 0.0f;
    for (int i = (yy + PAD) % S; i < K; i += S) {
        int oy = (yy + PAD - i) / S;
        if (oy < 0) break; /* i grows, oy shrinks */
        if (oy >= OH) continue;
        for (int j = (xx + PAD) % S; j < K; j += S) {
            int ox = (xx + PAD - j) / S;
            if (ox < 0) break;
            if (ox >= OW) continue;
            s += dcol[dcol_off + ((size_t)(c * K + i) * K + j) * Q + nl * P + (size_t)oy * OW + ox];
        }
    }
    dx[(((size_t)(n0 + nl) * C + c) * H + yy) * W + xx] = s;
}

/* dyt[co][q] = dy[n][co][p] for q = (n - n0)*P + p (relu: through a fused
 * ReLU's derivative from its output ym). Global: (nb*P, CO). */
__kernel void conv_gemm_nchw_to_cq(int CO, int P, int n0, int nb, __global const float *dy, int relu,
                                   __global const float *ym, __global float *dyt, ulong dyt_off)
{
    int q = get_global_id(0);
    int co = get_global_id(1);
    if (q >= nb * P || co >= CO) return;
    int n = n0 + q / P, p = q % P;
    size_t at = ((size_t)n * CO + co) * P + p;
    dyt[dyt_off + (size_t)co * nb * P + q] = relu ? RELU_BWD(ym[at], dy[at]) : dy[at];
}

/* y[n][co][p] = yt[co][q] + b[co], then a fused ReLU when relu. Global:
 * (nb*P, CO). */
__kernel void conv_gemm_cq_to_nchw(int CO, int P, int n0, int nb, __global const float *yt,
                                   ulong yt_off, __global const float *bias, int has_bias,
                                   int relu, __global float *y)
{
    int q = get_global_id(0);
    int co = get_global_id(1);
    if (q >= nb * P || co >= CO) return;
    int n = n0 + q / P, p = q % P;
    float v = yt[yt_off + (size_t)co * nb * P + q];
    if (has_bias) v += bias[co];
    y[((size_t)n * CO + co) * P + p] = relu ? RELU_FWD(v) : v;
}
