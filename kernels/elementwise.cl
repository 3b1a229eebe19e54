/* Elementwise kernels over flat float buffers. */

__kernel void clt_fill(__global float *x, const float value, const int n)
{
    int i = get_global_id(0);
    if (i < n) x[i] = value;
}

__kernel void clt_scale(__global float *x, const float a, const int n)
{
    int i = get_global_id(0);
    if (i < n) x[i] *= a;
}

/* y += a * x */
__kernel void clt_axpy(__global float *y, __global const float *x, const float a, const int n)
{
    int i = get_global_id(0);
    if (i < n) y[i] += a * x[i];
}
