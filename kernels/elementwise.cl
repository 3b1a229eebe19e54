/* Elementwise kernels over flat float buffers, and the residual add. */

__kernel void elementwise_fill(__global float *x, const float value, const int n)
{
    int i = get_global_id(0);
    if (i < n) x[i] = value;
}

__kernel void elementwise_scale(__global float *x, const float a, const int n)
{
    int i = get_global_id(0);
    if (i < n) x[i] *= a;
}

/* y += a * x */
__kernel void elementwise_axpy(__global float *y, __global const float *x, const float a,
                               const int n)
{
    int i = get_global_id(0);
    if (i < n) y[i] += a * x[i];
}

/* Residual connection: y = a + b (y may be a or b). */
__kernel void elementwise_add(__global const float *a, __global const float *b, __global float *y,
                              const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) y[i] = a[i] + b[i];
}
