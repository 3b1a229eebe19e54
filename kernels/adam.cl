/* Adam and AdamW, PyTorch semantics (torch.optim.Adam / AdamW, single
 * tensor path), over floats [off, off + n) of w, g, m and v:
 *   AdamW: w *= 1 - lr wd (decay); Adam: g' = g + wd w (L2)
 *   m = lerp(m, g', 1 - b1);  v = b2 v + (1 - b2) g' g'
 *   w -= step_size * m / (sqrt(v) / bc2_sqrt + eps)
 * with step_size = lr / (1 - b1^t) and bc2_sqrt = sqrt(1 - b2^t) computed
 * on the host in double as PyTorch does. No contraction is left to the
 * compiler, so every conforming device computes the same bits. */
#pragma OPENCL FP_CONTRACT OFF

#define ADAM_STEP(T, i)                                                                            \
    {                                                                                              \
        T p = LD(T, w + (i)), gi = LDG(T, i);                                                      \
        if (decay != 1.0f) p = p * decay; /* AdamW: param.mul_(1 - lr * wd) */                     \
        T gp = wd != 0.0f ? fma((T)wd, p, gi) : gi;                                                \
        T mi = LD(T, m + (i));                                                                     \
        /* torch.lerp(m, g', c1) */                                                                \
        mi = fabs(c1) < 0.5f ? fma((T)c1, gp - mi, mi) : gp - (gp - mi) * (1.0f - c1);             \
        T vi = LD(T, v + (i)) * b2;                                                                \
        vi = vi + (c2 * gp) * gp;                                                                  \
        ST_ALL(T, mi, m, i);                                                                       \
        ST_ALL(T, vi, v, i);                                                                       \
        T denom = sqrt(vi) / bc2_sqrt + eps;                                                       \
        ST_ALL(T, p + (-step_size) * (mi / denom), w, i);                                          \
    }
__kernel void adam_step(__global float *w, GRADS, __global float *m, __global float *v,
                        const float step_size, const float bc2_sqrt, const float c1, const float b2,
                        const float c2, const float eps, const float wd, const float decay, const ulong off,
                        const ulong n COPIES(w) COPIES(m) COPIES(v))
{
    EW_FOR(n, off, ADAM_STEP)
}
