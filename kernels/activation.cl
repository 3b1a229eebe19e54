/* Elementwise activations: forward from x, backward from the forward output
 * y, EW floats per work-item (kernels/prelude.h); counts are 64-bit. */

#define ACT_RELU_FWD(T, i) ST(T, RELU_FWD(LD(T, x + (i))), y + (i)); /* NaN stays NaN, as PyTorch */
__kernel void activation_relu_fwd(__global const float *x, __global float *y, const ulong n)
{
    EW_FOR(n, 0, ACT_RELU_FWD)
}

#define ACT_SIGMOID_FWD(T, i) ST(T, 1.0f / (1.0f + exp(-LD(T, x + (i)))), y + (i));
__kernel void activation_sigmoid_fwd(__global const float *x, __global float *y, const ulong n)
{
    EW_FOR(n, 0, ACT_SIGMOID_FWD)
}

#define ACT_TANH_FWD(T, i) ST(T, tanh(LD(T, x + (i))), y + (i));
__kernel void activation_tanh_fwd(__global const float *x, __global float *y, const ulong n)
{
    EW_FOR(n, 0, ACT_TANH_FWD)
}

/* dx = dy * (y > 0) (zero, not NaN, where y <= 0, as PyTorch's threshold). */
#define ACT_RELU_BWD(T, i) ST(T, RELU_BWD(LD(T, y + (i)), LD(T, dy + (i))), dx + (i));
__kernel void activation_relu_bwd(__global const float *y, __global const float *dy,
                                  __global float *dx, const ulong n)
{
    EW_FOR(n, 0, ACT_RELU_BWD)
}

#define ACT_SIGMOID_BWD(T, i)                                                                      \
    {                                                                                              \
        T v = LD(T, y + (i));                                                                      \
        ST(T, LD(T, dy + (i)) * (1.0f - v) * v, dx + (i)); /* ATen's order */                      \
    }
__kernel void activation_sigmoid_bwd(__global const float *y, __global const float *dy,
                                     __global float *dx, const ulong n)
{
    EW_FOR(n, 0, ACT_SIGMOID_BWD)
}

#define ACT_TANH_BWD(T, i)                                                                         \
    {                                                                                              \
        T v = LD(T, y + (i));                                                                      \
        ST(T, LD(T, dy + (i)) * (1.0f - v * v), dx + (i));                                         \
    }
__kernel void activation_tanh_bwd(__global const float *y, __global const float *dy,
                                  __global float *dx, const ulong n)
{
    EW_FOR(n, 0, ACT_TANH_BWD)
}
