/* SGD with momentum and weight decay, PyTorch semantics:
 *   g' = g + wd * w;  v = m * v + g' (v = g' when m == 0);  w -= lr * v,
 * or with Nesterov momentum w -= lr * (g' + m * v). Every kernel updates
 * floats [off, off + n) of its buffers.
 * Written with correctly rounded operations only (fma, *, +; no contraction
 * left to the compiler), so every conforming device computes bit-identical
 * parameters, and the roundings are those of PyTorch's CPU kernels
 * (PyTorch skips the decay term when wd == 0; add with alpha is a fused
 * multiply-add in its vectorised CPU kernels; mul_ then add_ for the
 * momentum buffer is two roundings). */
#pragma OPENCL FP_CONTRACT OFF

/* m == 0, no velocity buffer. */
__kernel void sgd_plain(__global float *w, __global const float *g, const float lr,
                        const float wd, const ulong off, const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) {
        i += off;
        float p = w[i];
        float gp = wd != 0.0f ? fma(wd, p, g[i]) : g[i];
        w[i] = fma(-lr, gp, p);
    }
}

/* m == 0 with a velocity buffer: v = g' (v is not read). */
__kernel void sgd_store(__global float *w, __global const float *g, __global float *v,
                        const float lr, const float wd, const ulong off, const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) {
        i += off;
        float p = w[i];
        float gp = wd != 0.0f ? fma(wd, p, g[i]) : g[i];
        v[i] = gp;
        w[i] = fma(-lr, gp, p);
    }
}

/* nesterov != 0: w -= lr (g' + m v), as PyTorch's d_p.add(buf, alpha=m)
 * (a fused multiply-add). */
__kernel void sgd_momentum(__global float *w, __global const float *g, __global float *v,
                           const float lr, const float m, const float wd, const int nesterov, const ulong off,
                           const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) {
        i += off;
        float p = w[i];
        float gp = wd != 0.0f ? fma(wd, p, g[i]) : g[i];
        float vi = m * v[i];
        vi = vi + gp;
        v[i] = vi;
        w[i] = fma(-lr, nesterov ? fma(m, vi, gp) : vi, p);
    }
}
