/* Inverted dropout with a counter-based generator: element e of sample s
 * (its index in the whole batch, not in a device's shard) at optimizer step
 * t keeps its value, scaled by 1 / (1 - p), when the top 32 bits of
 * hash(seed, t, s, e) reach `thresh` = p * 2^32. The mask depends on the
 * key alone, so a sample gets the same mask on whichever device it lands,
 * and the backward recomputes it instead of storing it. Forward and
 * backward are the same map: y = keep ? x * scale : 0. */

/* splitmix64's finaliser: a bijection that mixes every input bit. */
ulong dropout_mix(ulong z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9UL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebUL;
    return z ^ (z >> 31);
}

__kernel void dropout_apply(__global const float *x, __global float *y, const ulong per_sample, const ulong n,
                            const ulong seed, const ulong step, const ulong first_sample, const uint thresh,
                            const float scale)
{
    size_t i = get_global_id(0);
    if (i >= n) return;
    ulong sample = first_sample + i / per_sample, elem = i % per_sample;
    ulong h = dropout_mix(seed ^ dropout_mix(step ^ dropout_mix(sample ^ dropout_mix(elem + 0x9e3779b97f4a7c15UL))));
    y[i] = (uint)(h >> 32) >= thresh ? x[i] * scale : 0.0f;
}
