/* Elementwise kernels over flat float buffers: scaling and the residual add. */

/* x[off + i] *= a for i < n. */
__kernel void elementwise_scale(__global float *x, const ulong off, const float a, const int n)
{
    int i = get_global_id(0);
    if (i < n) x[off + i] *= a;
}

/* Residual connection: y = a + b (y may be a or b). */
__kernel void elementwise_add(__global const float *a, __global const float *b, __global float *y,
                              const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) y[i] = a[i] + b[i];
}
