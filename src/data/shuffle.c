/* Per-epoch permutations (see shuffle.h).
 *
 * Seeding: x = splitmix64(seed) ^ splitmix64(epoch ^ K) with a fixed odd
 * constant K; the four xoshiro256** state words are the next four outputs of
 * a splitmix64 sequence started at x (the seeding its authors recommend; it
 * never yields the all-zero state in practice). Only 64-bit integer
 * arithmetic is used, so the result is identical everywhere.
 *
 * Shuffle: Fisher-Yates from the top, j uniform in [0, i]. Bounded draws
 * reject the low (2^64 mod bound) values, so every j is exactly equally
 * likely (plain modulo would favour small j). */
#include "data/shuffle.h"

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* One splitmix64 step: advances *state and returns the mixed value. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void clt_rng_init(clt_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t a = seed, b = stream ^ 0xD1B54A32D192ED03ull;
    uint64_t x = splitmix64(&a) ^ splitmix64(&b);
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

uint64_t clt_rng_next(clt_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t clt_rng_below(clt_rng *r, uint64_t bound)
{
    /* (2^64 - bound) mod bound == 2^64 mod bound: the count of values to
     * reject so the rest split into equal classes. */
    uint64_t threshold = (0 - bound) % bound;
    for (;;) {
        uint64_t x = clt_rng_next(r);
        if (x >= threshold) return x % bound;
    }
}

void clt_shuffle_permutation(int64_t *perm, int64_t n, uint64_t seed, int64_t epoch)
{
    clt_rng r;
    clt_rng_init(&r, seed, (uint64_t)epoch);
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)clt_rng_below(&r, (uint64_t)i + 1);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}
