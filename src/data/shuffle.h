/* Machine-independent shuffling: our own PRNG, so a seed means the same
 * order on every platform and C library. */
#ifndef CLT_DATA_SHUFFLE_H
#define CLT_DATA_SHUFFLE_H

#include <stdint.h>

/* xoshiro256** (Blackman and Vigna), 64-bit output. */
typedef struct clt_rng {
    uint64_t s[4];
} clt_rng;

/* Seeds the generator from (seed, stream): the state of stream e does not
 * depend on streams 0..e-1, so epoch e's permutation costs O(N) to rebuild. */
void clt_rng_init(clt_rng *r, uint64_t seed, uint64_t stream);
uint64_t clt_rng_next(clt_rng *r);
/* Uniform in [0, bound), bound > 0, without modulo bias. */
uint64_t clt_rng_below(clt_rng *r, uint64_t bound);
/* perm = a uniformly random permutation of 0..n-1 from (seed, epoch). */
void clt_shuffle_permutation(int64_t *perm, int64_t n, uint64_t seed, int64_t epoch);

#endif
