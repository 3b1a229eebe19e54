/* Elementwise activations (forward from x, backward from the forward output
 * y), and the row-bias broadcast / column sums the dense layer uses around
 * its GEMMs. One work-item per element; counts are 64-bit. */

__kernel void clt_relu_fwd(__global const float *x, __global float *y, const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) {
        float v = x[i];
        y[i] = v < 0.0f ? 0.0f : v; /* NaN stays NaN, as PyTorch */
    }
}

__kernel void clt_sigmoid_fwd(__global const float *x, __global float *y, const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) y[i] = 1.0f / (1.0f + exp(-x[i]));
}

__kernel void clt_tanh_fwd(__global const float *x, __global float *y, const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) y[i] = tanh(x[i]);
}

/* dx = dy * (y > 0) (zero, not NaN, where y <= 0, as PyTorch's threshold). */
__kernel void clt_relu_bwd(__global const float *y, __global const float *dy, __global float *dx,
                           const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

__kernel void clt_sigmoid_bwd(__global const float *y, __global const float *dy, __global float *dx,
                              const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) {
        float v = y[i];
        dx[i] = dy[i] * (1.0f - v) * v; /* ATen's order */
    }
}

__kernel void clt_tanh_bwd(__global const float *y, __global const float *dy, __global float *dx,
                           const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) {
        float v = y[i];
        dx[i] = dy[i] * (1.0f - v * v);
    }
}

/* y[r, j] = b[j] for an (rows, cols) matrix; total = rows * cols. */
__kernel void clt_bias_rows(__global const float *b, __global float *y, const int cols,
                            const int total)
{
    int i = get_global_id(0);
    if (i < total) y[i] = b[i % cols];
}

/* db[j] = sum over r of dy[r, j], rows in order (deterministic). Adjacent
 * work-items read adjacent columns, so each row is read coalesced. */
__kernel void clt_bias_cols_sum(__global const float *dy, __global float *db, const int rows,
                                const int cols)
{
    int j = get_global_id(0);
    if (j >= cols) return;
    float sum = 0.0f;
    for (int r = 0; r < rows; r++) sum += dy[(size_t)r * cols + j];
    db[j] = sum;
}
