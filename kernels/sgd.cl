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
#define SGD_PLAIN(T, i)                                                                            \
    {                                                                                              \
        T p = LD(T, w + (i)), gi = LDG(T, i);                                                      \
        T gp = wd != 0.0f ? fma((T)wd, p, gi) : gi;                                                \
        ST_ALL(T, fma((T)(-lr), gp, p), w, i);                                                     \
    }
__kernel void sgd_plain(__global float *w, GRADS, const float lr,
                        const float wd, const ulong off, const ulong n COPIES(w))
{
    EW_FOR(n, off, SGD_PLAIN)
}

/* m == 0 with a velocity buffer: v = g' (v is not read). */
#define SGD_STORE(T, i)                                                                            \
    {                                                                                              \
        T p = LD(T, w + (i)), gi = LDG(T, i);                                                      \
        T gp = wd != 0.0f ? fma((T)wd, p, gi) : gi;                                                \
        ST_ALL(T, gp, v, i);                                                                       \
        ST_ALL(T, fma((T)(-lr), gp, p), w, i);                                                     \
    }
__kernel void sgd_store(__global float *w, GRADS, __global float *v,
                        const float lr, const float wd, const ulong off, const ulong n COPIES(w) COPIES(v))
{
    EW_FOR(n, off, SGD_STORE)
}

/* nesterov != 0: w -= lr (g' + m v), as PyTorch's d_p.add(buf, alpha=m)
 * (a fused multiply-add). */
#define SGD_MOMENTUM(T, i)                                                                         \
    {                                                                                              \
        T p = LD(T, w + (i)), gi = LDG(T, i);                                                      \
        T gp = wd != 0.0f ? fma((T)wd, p, gi) : gi;                                                \
        T vi = m * LD(T, v + (i));                                                                 \
        vi = vi + gp;                                                                              \
        ST_ALL(T, vi, v, i);                                                                       \
        ST_ALL(T, fma((T)(-lr), nesterov ? fma((T)m, vi, gp) : vi, p), w, i);                      \
    }
__kernel void sgd_momentum(__global float *w, GRADS, __global float *v,
                           const float lr, const float m, const float wd, const int nesterov, const ulong off,
                           const ulong n COPIES(w) COPIES(v))
{
    EW_FOR(n, off, SGD_MOMENTUM)
}
