/* The host's TF32 arithmetic (runtime/tf32.c) on known values, and the
 * device probe (runtime/tf32_probe.c): on a device without tensor cores it
 * says no cleanly, and the probe's product in its OpenCL C twin (TC 2)
 * matches the host, so the fragment layout the twin shares with the PTX
 * path is the host's. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "runtime/device.h"
#include "runtime/tf32.h"
#include "runtime/tf32_probe.h"

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void test_round(void)
{
    static const struct {
        uint32_t in, want;
    } cases[] = {
        {0x3f800000, 0x3f800000}, /* 1 */
        {0x3f801000, 0x3f802000}, /* 1 + 2^-11, a tie: away from zero (round-to-even would give 1) */
        {0xbf801000, 0xbf802000}, /* its negative: away from zero too */
        {0x3f800fff, 0x3f800000}, /* just below the tie */
        {0x3f801001, 0x3f802000}, /* just above */
        {0x3f803000, 0x3f804000}, /* 1 + 3 * 2^-11: a tie above an odd TF32, away (even would agree) */
        {0x3f805000, 0x3f806000}, /* 1 + 5 * 2^-11: a tie above an even TF32 (even would stay) */
        {0x3fffffff, 0x40000000}, /* the carry moves into the exponent */
        {0x7f7fffff, 0x7f800000}, /* past the largest TF32: infinity */
        {0x7f7fe000, 0x7f7fe000}, /* the largest TF32 stays */
        {0x7f800000, 0x7f800000}, /* infinity */
        {0xff800000, 0xff800000},
        {0x00001000, 0x00002000}, /* a denormal tie */
        {0x00000fff, 0x00000000}, /* a denormal below it: zero */
        {0x80000000, 0x80000000}, /* -0 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t got = bits(clt_tf32_round(from_bits(cases[i].in)));
        CHECK(got == cases[i].want, "round(0x%08x) = 0x%08x, want 0x%08x", cases[i].in, got, cases[i].want);
    }
    CHECK(isnan(clt_tf32_round(from_bits(0x7f800001))), "a NaN with low mantissa bits only must stay NaN");
    CHECK(isnan(clt_tf32_round(NAN)), "NaN");
}

static void test_product(void)
{
    /* (1 + 2^-11) rounds to 1 + 2^-10, -(1 + 2^-11) to -(1 + 2^-10), 3 stays */
    const float a[2 * 3] = {1.0f + 0x1p-11f, 2.0f, 0.0f, -(1.0f + 0x1p-11f), 0.0f, 3.0f};
    const float b[3 * 2] = {1.0f, 2.0f, 0.5f, 0.0f, 1.0f, 1.0f + 0x1p-11f};
    double c[4];
    clt_tf32_product(2, 2, 3, a, b, c);
    const double want[4] = {1.0 + 0x1p-10 + 1.0, 2.0 + 0x1p-9, -(1.0 + 0x1p-10) + 3.0,
                            -2.0 - 0x1p-9 + 3.0 * (1.0 + 0x1p-10)};
    for (int i = 0; i < 4; i++) CHECK(c[i] == want[i], "c[%d] = %.17g, want %.17g", i, c[i], want[i]);
    float got[4] = {(float)want[0], (float)want[1], (float)want[2], (float)want[3]};
    CHECK(clt_tf32_matches(2, 2, 3, a, b, c, got), "the exact product must match");
    /* the same product with unrounded operands (what fp32 gives) is off by a tie's 2^-11 */
    got[0] = 1.0f + 0x1p-11f + 1.0f;
    CHECK(!clt_tf32_matches(2, 2, 3, a, b, c, got), "an fp32 product must not match the TF32 one");
}

/* Other roundings of the operands (magnitude bits, as tf32.c's). */
static float round_trunc(float x) { return from_bits(bits(x) & ~0x1fffu); }
static float round_even(float x)
{
    uint32_t u = bits(x);
    return from_bits((u + 0xfffu + ((u >> 13) & 1)) & ~0x1fffu);
}
static float round_none(float x) { return x; }

/* The probe's operands tell cvt.rna from the roundings a device might do
 * instead: their products miss the host's on most elements. */
static void test_probe_operands(void)
{
    enum { M = CLT_TF32_PROBE_M, N = CLT_TF32_PROBE_N, K = CLT_TF32_PROBE_K };
    float a[M * K], b[K * N], ra[M * K], rb[K * N];
    double ref[M * N], alt[M * N];
    clt_tf32_probe_operands(a, b);
    clt_tf32_product(M, N, K, a, b, ref);
    static float (*const other[3])(float) = {round_trunc, round_even, round_none};
    static const char *const names[3] = {"truncated", "rounded to even", "unrounded"};
    for (int r = 0; r < 3; r++) {
        for (int i = 0; i < M * K; i++) ra[i] = other[r](a[i]);
        for (int i = 0; i < K * N; i++) rb[i] = other[r](b[i]);
        for (int i = 0; i < M * N; i++) {
            double s = 0;
            for (int t = 0; t < K; t++) s += (double)ra[i / N * K + t] * rb[t * N + i % N];
            alt[i] = s;
        }
        int missed = 0;
        for (int i = 0; i < M * N; i++) {
            /* element i alone: the 1 x 1 product of its row and column */
            float row[K], col[K], got = (float)alt[i];
            for (int t = 0; t < K; t++) row[t] = a[i / N * K + t], col[t] = b[t * N + i % N];
            missed += !clt_tf32_matches(1, 1, K, row, col, &ref[i], &got);
        }
        CHECK(missed > M * N * 3 / 4, "%s operands match the TF32 product on %d of %d elements", names[r],
              M * N - missed, M * N);
    }
}

static void test_probe(void)
{
    int count = 0;
    if (clt_device_count(&count) != CLT_OK || count == 0) {
        printf("no OpenCL device: the probe's device half skipped\n");
        return;
    }
    for (int d = 0; d < count; d++) {
        clt_device *dev = NULL;
        REQUIRE_OK(clt_device_open(d, &dev));
        const clt_device_info *in = clt_device_get_info(dev);
        if (!strstr(in->vendor, "NVIDIA"))
            CHECK(!clt_device_tf32(dev) && !clt_device_tf32_kernels(dev), "device %d (%s): TF32 without NVIDIA", d,
                  in->name);
        printf("device %d (%s): TF32 %s, compute capability %d\n", d, in->name,
               clt_device_tf32(dev) ? "yes" : "no", clt_device_compute_capability(dev));
        int ok = 0;
        CHECK_OK(clt_tf32_probe_run(dev, 2, &ok));
        CHECK(ok, "device %d: the emulated product differs from the host's", d);
        if (clt_device_tf32(dev)) { /* the PTX path: the probe passed at open, so it must again */
            CHECK_OK(clt_tf32_probe_run(dev, 1, &ok));
            CHECK(ok, "device %d: the mma product differs from the host's", d);
        }
        clt_device_settings s = *clt_device_get_settings(dev);
        s.tf32 = CLT_TF32_EMULATE;
        CHECK_OK(clt_device_set_settings(dev, &s));
        CHECK(clt_device_tf32_kernels(dev) == 2, "emulate must give TC 2");
        s.tf32 = CLT_TF32_OFF;
        CHECK_OK(clt_device_set_settings(dev, &s));
        CHECK(clt_device_tf32_kernels(dev) == 0, "off must give no TF32 kernels");
        s.tf32 = 7;
        CHECK(clt_device_set_settings(dev, &s) == CLT_ERR_INVALID_ARG, "tf32 7 must be refused");
        clt_device_destroy(dev);
    }
}

int main(void)
{
    test_round();
    test_product();
    test_probe_operands();
    test_probe();
    return test_result();
}
