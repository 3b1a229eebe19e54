/* The shuffle PRNG: reference values pin the exact sequence (so every
 * machine shuffles alike), bounded draws are unbiased, and permutations are
 * permutations. Reference values come from an independent Python
 * implementation of the documented algorithm. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "data/shuffle.h"

static void test_reference_values(void)
{
    /* xoshiro256** from state {1,2,3,4}: the published reference outputs. */
    clt_rng r = {{1, 2, 3, 4}};
    const uint64_t xo[4] = {11520u, 0u, 1509978240u, 1215971899390074240u};
    for (int i = 0; i < 4; i++) {
        uint64_t v = clt_rng_next(&r);
        CHECK(v == xo[i], "xoshiro256** output %d: %llu, want %llu", i, (unsigned long long)v,
              (unsigned long long)xo[i]);
    }
    /* Seeding from (seed, stream). */
    const uint64_t want[2][3] = {
        {0xb55abad8a877cbe8ull, 0xf1e6ff8b459b4e4eull, 0x1d47772c3653ca47ull},
        {0x1b93085f185db1efull, 0x1a904c21b4d2237eull, 0xa17e170ed27fddcaull},
    };
    clt_rng_init(&r, 0, 0);
    for (int i = 0; i < 3; i++) CHECK(clt_rng_next(&r) == want[0][i], "seed 0 stream 0 output %d", i);
    clt_rng_init(&r, 42, 1);
    for (int i = 0; i < 3; i++) CHECK(clt_rng_next(&r) == want[1][i], "seed 42 stream 1 output %d", i);

    const int64_t p42_0[10] = {3, 1, 7, 0, 4, 9, 5, 8, 2, 6};
    const int64_t p42_1[10] = {1, 0, 4, 3, 9, 7, 6, 8, 2, 5};
    const int64_t p7_0[10] = {6, 0, 7, 2, 4, 1, 5, 3, 8, 9};
    int64_t p[10];
    clt_shuffle_permutation(p, 10, 42, 0);
    CHECK(memcmp(p, p42_0, sizeof p) == 0, "permutation (seed 42, epoch 0) differs from reference");
    clt_shuffle_permutation(p, 10, 42, 1);
    CHECK(memcmp(p, p42_1, sizeof p) == 0, "permutation (seed 42, epoch 1) differs from reference");
    clt_shuffle_permutation(p, 10, 7, 0);
    CHECK(memcmp(p, p7_0, sizeof p) == 0, "permutation (seed 7, epoch 0) differs from reference");
}

static int is_permutation(const int64_t *p, int64_t n)
{
    char *seen = calloc((size_t)n + 1, 1);
    int ok = 1;
    for (int64_t i = 0; i < n && ok; i++) {
        if (p[i] < 0 || p[i] >= n || seen[p[i]]) ok = 0;
        else seen[p[i]] = 1;
    }
    free(seen);
    return ok;
}

static void test_permutations(void)
{
    const int64_t sizes[] = {0, 1, 2, 3, 17, 1000, 60000};
    int64_t *a = malloc(60000 * sizeof *a), *b = malloc(60000 * sizeof *b);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int64_t n = sizes[k];
        for (int64_t e = 0; e < 3; e++) {
            clt_shuffle_permutation(a, n, 1234, e);
            CHECK(is_permutation(a, n), "n=%lld epoch %lld: not a permutation", (long long)n, (long long)e);
            clt_shuffle_permutation(b, n, 1234, e);
            CHECK(memcmp(a, b, (size_t)n * sizeof *a) == 0, "n=%lld: same (seed, epoch), different order",
                  (long long)n);
        }
        if (n < 1000) continue;
        clt_shuffle_permutation(a, n, 1234, 0);
        clt_shuffle_permutation(b, n, 1234, 1);
        CHECK(memcmp(a, b, (size_t)n * sizeof *a) != 0, "n=%lld: epochs 0 and 1 give one order", (long long)n);
        clt_shuffle_permutation(b, n, 1235, 0);
        CHECK(memcmp(a, b, (size_t)n * sizeof *a) != 0, "n=%lld: seeds 1234 and 1235 give one order",
              (long long)n);
        int64_t fixed = 0;
        for (int64_t i = 0; i < n; i++) fixed += a[i] == i;
        CHECK(fixed < 10, "n=%lld: %lld fixed points, not shuffled", (long long)n, (long long)fixed);
    }
    free(a);
    free(b);
}

/* Counts within 6 standard deviations of the expectation (deterministic
 * for the fixed seeds, so this cannot flake). */
static int near(double count, double expect, double p)
{
    double sd = sqrt(expect * (1 - p)); /* binomial: n p (1 - p) */
    return fabs(count - expect) <= 6 * sd;
}

static void test_uniformity(void)
{
    clt_rng r;
    clt_rng_init(&r, 99, 0);
    long counts[3] = {0, 0, 0};
    const long draws = 300000;
    for (long i = 0; i < draws; i++) counts[clt_rng_below(&r, 3)]++;
    for (int v = 0; v < 3; v++)
        CHECK(near((double)counts[v], draws / 3.0, 1 / 3.0), "value %d drawn %ld times of %ld", v,
              counts[v], draws);

    /* Large bounds: the rejection threshold is near 2^63; values stay below
     * the bound and both halves of the range occur. */
    const uint64_t big = ((uint64_t)1 << 63) + 1;
    int high = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t v = clt_rng_below(&r, big);
        CHECK(v < big, "draw %llu not below %llu", (unsigned long long)v, (unsigned long long)big);
        high += v >= ((uint64_t)1 << 62);
    }
    CHECK(high > 400 && high < 600, "%d of 1000 draws in the upper half of [0, 2^63]", high);
    for (int i = 0; i < 100; i++) CHECK(clt_rng_below(&r, 1) == 0, "below(1) must be 0");
    for (int i = 0; i < 100; i++) (void)clt_rng_below(&r, UINT64_MAX);

    /* Every permutation of 3 equally likely across epochs. */
    long perms[6] = {0};
    const long trials = 60000;
    int64_t p[3];
    for (long e = 0; e < trials; e++) {
        clt_shuffle_permutation(p, 3, 5, e);
        perms[p[0] * 2 + (p[1] > p[2])]++;
    }
    for (int k = 0; k < 6; k++)
        CHECK(near((double)perms[k], trials / 6.0, 1 / 6.0), "permutation %d seen %ld times of %ld", k,
              perms[k], trials);
    /* Where element 0 lands in a permutation of 10. */
    long pos[10] = {0};
    int64_t q[10];
    for (long e = 0; e < trials; e++) {
        clt_shuffle_permutation(q, 10, 11, e);
        for (int i = 0; i < 10; i++)
            if (q[i] == 0) pos[i]++;
    }
    for (int i = 0; i < 10; i++)
        CHECK(near((double)pos[i], trials / 10.0, 0.1), "element 0 at position %d %ld times", i, pos[i]);
}

int main(void)
{
    test_reference_values();
    test_permutations();
    test_uniformity();
    return test_result();
}
