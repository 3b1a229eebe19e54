/* Elementwise kernels over flat float buffers: scaling and the residual
 * add, EW floats per work-item (kernels/prelude.h). */

/* x[off + i] *= a for i < n. */
#define EW_SCALE(T, i) ST(T, LD(T, x + (i)) * a, x + (i));
__kernel void elementwise_scale(__global float *x, const ulong off, const float a, const int n)
{
    EW_FOR((size_t)n, off, EW_SCALE)
}

/* Residual connection: y = a + b (y may be a or b). */
#define EW_ADD(T, i) ST(T, LD(T, a + (i)) + LD(T, b + (i)), y + (i));
__kernel void elementwise_add(__global const float *a, __global const float *b, __global float *y,
                              const ulong n)
{
    EW_FOR(n, 0, EW_ADD)
}
