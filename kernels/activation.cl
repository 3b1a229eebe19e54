/* Elementwise activations: forward from x, backward from the forward output
 * y. One work-item per element; counts are 64-bit. */

__kernel void activation_relu_fwd(__global const float *x, __global float *y, const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) {
        float v = x[i];
        y[i] = RELU_FWD(v); /* NaN stays NaN, as PyTorch */
    }
}

__kernel void activation_sigmoid_fwd(__global const float *x, __global float *y, const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) y[i] = 1.0f / (1.0f + exp(-x[i]));
}

__kernel void activation_tanh_fwd(__global const float *x, __global float *y, const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) y[i] = tanh(x[i]);
}

/* dx = dy * (y > 0) (zero, not NaN, where y <= 0, as PyTorch's threshold). */
__kernel void activation_relu_bwd(__global const float *y, __global const float *dy,
                                  __global float *dx, const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) dx[i] = RELU_BWD(y[i], dy[i]);
}

__kernel void activation_sigmoid_bwd(__global const float *y, __global const float *dy,
                                     __global float *dx, const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) {
        float v = y[i];
        dx[i] = dy[i] * (1.0f - v) * v; /* ATen's order */
    }
}

__kernel void activation_tanh_bwd(__global const float *y, __global const float *dy,
                                  __global float *dx, const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) {
        float v = y[i];
        dx[i] = dy[i] * (1.0f - v * v);
    }
}
