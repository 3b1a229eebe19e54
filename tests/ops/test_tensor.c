/* The tensor API: create (zeros), accessors, upload/download, fill, reshape,
 * copy on one device and between two, int32 tensors, init_normal statistics
 * and reproducibility across seeds and devices, init_xavier bounds, and the
 * errors (zero-size, wrong counts, mismatched shapes and dtypes, NULLs). */
#include <stdint.h>
#include <string.h>

#include "op_harness.h"
#include "ref_misc.h"

static uint64_t rng = 0x5eed0006;

static void check_basics(const op_env *e)
{
    clt_device *dev = e->dev;
    int64_t shape[4] = {2, 3, 5, 7};
    clt_tensor *t = NULL;
    REQUIRE_OK(clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 4, shape, &t));
    CHECK(clt_tensor_device(t) == dev, "device");
    CHECK(clt_tensor_dtype(t) == CLT_DTYPE_FLOAT32, "dtype");
    CHECK(clt_tensor_ndim(t) == 4 && clt_tensor_numel(t) == 210, "ndim %d numel %lld", clt_tensor_ndim(t),
          (long long)clt_tensor_numel(t));
    CHECK(clt_tensor_dim(t, 0) == 2 && clt_tensor_dim(t, 3) == 7 && clt_tensor_dim(t, -1) == 7 &&
              clt_tensor_dim(t, -4) == 2,
          "dims");
    CHECK(clt_tensor_dim(t, 4) == 0 && clt_tensor_dim(t, -5) == 0, "dims out of range give 0");
    /* Created as zeros. */
    float *z = ref_misc_download(t);
    int zeros = 1;
    for (int i = 0; i < 210; i++) zeros &= z[i] == 0.0f;
    CHECK(zeros, "new tensor is not zeros");
    /* Upload / download round trip, bit exact (NaN, -0, denormal, inf too). */
    float host[210], back[210];
    ref_misc_fill(host, 210, &rng, -100, 100);
    host[0] = -0.0f, host[1] = NAN, host[2] = INFINITY, host[3] = 1e-40f;
    CHECK_OK(clt_tensor_upload(t, host, 210));
    CHECK_OK(clt_tensor_download(t, back, 210));
    CHECK(memcmp(host, back, sizeof host) == 0, "round trip changed bits");
    /* Fill. */
    CHECK_OK(clt_tensor_fill(t, -2.5f));
    CHECK_OK(clt_tensor_download(t, back, 210));
    int filled = 1;
    for (int i = 0; i < 210; i++) filled &= back[i] == -2.5f;
    CHECK(filled, "fill");
    /* Reshape keeps the data and the count. */
    CHECK_OK(clt_tensor_upload(t, host, 210));
    int64_t flat[2] = {6, 35};
    CHECK_OK(clt_tensor_reshape(t, 2, flat));
    CHECK(clt_tensor_ndim(t) == 2 && clt_tensor_dim(t, 1) == 35 && clt_tensor_numel(t) == 210, "reshape shape");
    CHECK_OK(clt_tensor_download(t, back, 210));
    CHECK(memcmp(host, back, sizeof host) == 0, "reshape moved data");
    int64_t bad[2] = {6, 36};
    clt_status s = clt_tensor_reshape(t, 2, bad);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("(6, 35)", "(6, 36)", "210"), "reshape count: %s %s",
          clt_status_name(s), clt_last_error());
    CHECK(clt_tensor_dim(t, 1) == 35, "failed reshape changed the shape");
    int64_t zero[2] = {0, 210};
    s = clt_tensor_reshape(t, 2, zero);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("< 1", NULL, NULL), "reshape to zero size: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_tensor_reshape(NULL, 2, flat);
    CHECK(s == CLT_ERR_INVALID_ARG, "reshape NULL: %s", clt_status_name(s));
    /* Copy on one device. */
    clt_tensor *u = NULL;
    REQUIRE_OK(clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 2, flat, &u));
    CHECK_OK(clt_tensor_copy(u, t));
    CHECK_OK(clt_tensor_download(u, back, 210));
    CHECK(memcmp(host, back, sizeof host) == 0, "same-device copy");
    CHECK_OK(clt_tensor_copy(u, u)); /* self copy is a no-op */
    free(z);
    clt_tensor_destroy(t);
    clt_tensor_destroy(u);
}

static void check_int32(const op_env *e)
{
    clt_device *dev = e->dev;
    int64_t shape[1] = {9};
    clt_tensor *t = NULL;
    REQUIRE_OK(clt_tensor_create(dev, CLT_DTYPE_INT32, 1, shape, &t));
    CHECK(clt_tensor_dtype(t) == CLT_DTYPE_INT32, "int32 dtype");
    int32_t host[9] = {0, 1, -1, INT32_MAX, INT32_MIN, 42, 7, -123456, 9}, back[9];
    CHECK_OK(clt_tensor_download(t, back, 9));
    CHECK(back[0] == 0 && back[8] == 0, "int32 tensor not zeroed");
    CHECK_OK(clt_tensor_upload(t, host, 9));
    CHECK_OK(clt_tensor_download(t, back, 9));
    CHECK(memcmp(host, back, sizeof host) == 0, "int32 round trip");
    CHECK_OK(clt_tensor_fill(t, 7.0f));
    CHECK_OK(clt_tensor_download(t, back, 9));
    int ok = 1;
    for (int i = 0; i < 9; i++) ok &= back[i] == 7;
    CHECK(ok, "int32 fill gives integer 7, got %d", back[0]);
    /* Copy needs equal dtypes. */
    clt_tensor *f = NULL;
    REQUIRE_OK(clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 1, shape, &f));
    clt_status s = clt_tensor_copy(f, t);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("clt_tensor_copy", "int32", NULL), "dtype mismatch copy: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_tensor_init_normal(t, 1, 0.0f, 1.0f);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("float32", NULL, NULL), "init of int32: %s %s",
          clt_status_name(s), clt_last_error());
    clt_tensor_destroy(t);
    clt_tensor_destroy(f);
}

/* Copies between the two devices, float and int32, both ways. */
static void check_cross_device(const op_env *e)
{
    clt_device *d0 = e->dev, *d1 = e->dev1;
    if (!d1) {
        fprintf(stderr, "note: one device only; the copies between devices are not tested\n");
        return;
    }
    int64_t shape[3] = {3, 17, 11};
    size_t n = 3 * 17 * 11;
    float *host = ref_misc_alloc(n, 4);
    ref_misc_fill(host, n, &rng, -1, 1);
    clt_tensor *a = ref_misc_tensor(d0, CLT_DTYPE_FLOAT32, 3, shape, host);
    clt_tensor *b = ref_misc_tensor(d1, CLT_DTYPE_FLOAT32, 3, shape, NULL);
    clt_tensor *c = ref_misc_tensor(d0, CLT_DTYPE_FLOAT32, 3, shape, NULL);
    CHECK(clt_tensor_device(b) == d1, "tensor on device 1");
    CHECK_OK(clt_tensor_copy(b, a));
    float *got = ref_misc_download(b);
    CHECK(memcmp(got, host, n * 4) == 0, "copy device 0 -> 1");
    CHECK_OK(clt_tensor_fill(a, 0.0f));
    CHECK_OK(clt_tensor_copy(c, b));
    free(got);
    got = ref_misc_download(c);
    CHECK(memcmp(got, host, n * 4) == 0, "copy device 1 -> 0");
    int64_t other[3] = {3, 11, 17};
    clt_tensor *d = ref_misc_tensor(d1, CLT_DTYPE_FLOAT32, 3, other, NULL);
    clt_status s = clt_tensor_copy(d, a);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("(3, 11, 17)", "(3, 17, 11)", NULL), "copy shape mismatch: %s %s",
          clt_status_name(s), clt_last_error());
    int32_t ih[5] = {5, -4, 3, INT32_MAX, 1}, ib[5];
    int64_t five = 5;
    clt_tensor *i0 = ref_misc_tensor(d0, CLT_DTYPE_INT32, 1, &five, ih);
    clt_tensor *i1 = ref_misc_tensor(d1, CLT_DTYPE_INT32, 1, &five, NULL);
    CHECK_OK(clt_tensor_copy(i1, i0));
    CHECK_OK(clt_tensor_download(i1, ib, 5));
    CHECK(memcmp(ih, ib, sizeof ih) == 0, "int32 copy between devices");
    free(host), free(got);
    clt_tensor_destroy(a), clt_tensor_destroy(b), clt_tensor_destroy(c), clt_tensor_destroy(d);
    clt_tensor_destroy(i0), clt_tensor_destroy(i1);
}

static void check_init(const op_env *e)
{
    clt_device *d0 = e->dev, *d1 = e->dev1;
    enum { N = 200000 };
    int64_t shape[2] = {400, 500};
    clt_tensor *t = ref_misc_tensor(d0, CLT_DTYPE_FLOAT32, 2, shape, NULL);
    const float mean = 0.5f, sd = 2.0f;
    CHECK_OK(clt_tensor_init_normal(t, 1234, mean, sd));
    float *a = ref_misc_download(t);
    double s1 = 0, s2 = 0;
    int within1 = 0;
    for (int i = 0; i < N; i++) {
        s1 += a[i];
        within1 += fabs(a[i] - mean) < sd;
    }
    double m = s1 / N;
    for (int i = 0; i < N; i++) s2 += (a[i] - m) * (a[i] - m);
    double sdev = sqrt(s2 / (N - 1));
    /* 5 standard errors: sd/sqrt(N) for the mean, sd/sqrt(2N) for the std. */
    CHECK(fabs(m - mean) < 5 * sd / sqrt(N), "init_normal mean %g, want %g", m, mean);
    CHECK(fabs(sdev - sd) < 5 * sd / sqrt(2.0 * N), "init_normal std %g, want %g", sdev, sd);
    CHECK(fabs(within1 / (double)N - 0.682689) < 0.005, "init_normal: %.4f within one std (normal: 0.6827)",
          within1 / (double)N);
    /* Same seed same values; another seed other values. */
    CHECK_OK(clt_tensor_init_normal(t, 1234, mean, sd));
    float *b = ref_misc_download(t);
    CHECK(memcmp(a, b, N * 4) == 0, "same seed gave different values");
    CHECK_OK(clt_tensor_init_normal(t, 1235, mean, sd));
    float *c = ref_misc_download(t);
    int same = 0;
    for (int i = 0; i < N; i++) same += a[i] == c[i];
    CHECK(same < 100, "another seed: %d of %d values equal", same, N);
    /* Bit-identical on the other device. */
    if (d1) {
        clt_tensor *t1 = ref_misc_tensor(d1, CLT_DTYPE_FLOAT32, 2, shape, NULL);
        CHECK_OK(clt_tensor_init_normal(t1, 1234, mean, sd));
        float *a1 = ref_misc_download(t1);
        CHECK(memcmp(a, a1, N * 4) == 0, "init_normal differs between devices");
        free(a1);
        clt_tensor_destroy(t1);
    }
    /* std 0 gives the mean exactly. */
    CHECK_OK(clt_tensor_init_normal(t, 9, 0.25f, 0.0f));
    float *k = ref_misc_download(t);
    CHECK(k[0] == 0.25f && k[N - 1] == 0.25f, "std 0");
    clt_status s = clt_tensor_init_normal(t, 9, 0.0f, -1.0f);
    CHECK(s == CLT_ERR_INVALID_ARG, "negative std: %s", clt_status_name(s));
    s = clt_tensor_init_normal(NULL, 9, 0.0f, 1.0f);
    CHECK(s == CLT_ERR_INVALID_ARG, "init NULL: %s", clt_status_name(s));

    /* Xavier: U(-a, a), a = gain sqrt(6 / (fan_in + fan_out)). */
    const double bound = 1.5 * sqrt(6.0 / (500 + 400));
    CHECK_OK(clt_tensor_init_xavier(t, 77, 500, 400, 1.5f));
    float *x = ref_misc_download(t);
    double lo = 0, hi = 0, xs = 0, xs2 = 0;
    for (int i = 0; i < N; i++) {
        lo = fmin(lo, x[i]), hi = fmax(hi, x[i]);
        xs += x[i], xs2 += (double)x[i] * x[i];
    }
    CHECK(lo >= -bound && hi <= bound, "xavier range [%g, %g] outside +-%g", lo, hi, bound);
    CHECK(lo < -0.999 * bound && hi > 0.999 * bound, "xavier range [%g, %g] does not reach +-%g", lo, hi, bound);
    CHECK(fabs(xs / N) < 5 * bound / sqrt(3.0 * N), "xavier mean %g", xs / N);
    double var = xs2 / N, want = bound * bound / 3;
    CHECK(fabs(var - want) < 0.01 * want, "xavier variance %g, want %g", var, want);
    CHECK_OK(clt_tensor_init_xavier(t, 77, 500, 400, 1.5f));
    float *x2 = ref_misc_download(t);
    CHECK(memcmp(x, x2, N * 4) == 0, "xavier same seed differs");
    s = clt_tensor_init_xavier(t, 77, 0, 400, 1.0f);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("fan_in 0", NULL, NULL), "xavier fan_in 0: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_tensor_init_xavier(t, 77, 10, 10, -1.0f);
    CHECK(s == CLT_ERR_INVALID_ARG, "xavier negative gain: %s", clt_status_name(s));
    free(a), free(b), free(c), free(k), free(x), free(x2);
    clt_tensor_destroy(t);
}

static void check_errors(const op_env *e)
{
    clt_device *dev = e->dev;
    clt_tensor *t = NULL;
    int64_t zero[3] = {2, 0, 3}, neg[2] = {2, -1}, ok[2] = {2, 3}, big[7] = {1, 1, 1, 1, 1, 1, 1};
    clt_status s = clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 3, zero, &t);
    CHECK(s == CLT_ERR_SHAPE && t == NULL && ref_misc_error_has("(2, 0, 3)", "zero-size", NULL),
          "zero-size tensor: %s %s", clt_status_name(s), clt_last_error());
    s = clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 2, neg, &t);
    CHECK(s == CLT_ERR_SHAPE && t == NULL, "negative dimension: %s", clt_status_name(s));
    s = clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 0, ok, &t);
    CHECK(s == CLT_ERR_SHAPE && t == NULL && ref_misc_error_has("0 dimensions", NULL, NULL), "0-D: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 7, big, &t);
    CHECK(s == CLT_ERR_SHAPE && t == NULL && ref_misc_error_has("7 dimensions", NULL, NULL), "7-D: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 2, NULL, &t);
    CHECK(s == CLT_ERR_INVALID_ARG && t == NULL, "NULL shape: %s", clt_status_name(s));
    s = clt_tensor_create(NULL, CLT_DTYPE_FLOAT32, 2, ok, &t);
    CHECK(s == CLT_ERR_INVALID_ARG && t == NULL && ref_misc_error_has("device is NULL", NULL, NULL),
          "NULL device: %s %s", clt_status_name(s), clt_last_error());
    s = clt_tensor_create(dev, (clt_dtype)5, 2, ok, &t);
    CHECK(s == CLT_ERR_INVALID_ARG && t == NULL && ref_misc_error_has("dtype 5", NULL, NULL), "bad dtype: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 2, ok, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG, "NULL out: %s", clt_status_name(s));
    int64_t huge[2] = {(int64_t)1 << 30, (int64_t)1 << 30};
    s = clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 2, huge, &t);
    CHECK(s != CLT_OK && t == NULL, "2^60 elements: %s", clt_status_name(s));

    REQUIRE_OK(clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 2, ok, &t));
    float host[7] = {0};
    s = clt_tensor_upload(t, host, 7);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("7 host elements", "(2, 3)", "6"), "upload count: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_tensor_download(t, host, 5);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("5 host elements", NULL, NULL), "download count: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_tensor_upload(t, NULL, 6);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("NULL", NULL, NULL), "upload NULL host: %s",
          clt_status_name(s));
    s = clt_tensor_download(NULL, host, 6);
    CHECK(s == CLT_ERR_INVALID_ARG, "download NULL tensor: %s", clt_status_name(s));
    s = clt_tensor_fill(NULL, 1.0f);
    CHECK(s == CLT_ERR_INVALID_ARG, "fill NULL: %s", clt_status_name(s));
    s = clt_tensor_copy(NULL, t);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("dst is NULL", NULL, NULL), "copy NULL dst: %s",
          clt_last_error());
    s = clt_tensor_copy(t, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("src is NULL", NULL, NULL), "copy NULL src: %s",
          clt_last_error());
    /* Accessors and destroy accept NULL. */
    CHECK(clt_tensor_numel(NULL) == 0 && clt_tensor_ndim(NULL) == 0 && clt_tensor_dim(NULL, 0) == 0 &&
              clt_tensor_device(NULL) == NULL,
          "NULL accessors");
    clt_tensor_destroy(NULL);
    clt_tensor_destroy(t);
}

static const op_test tests[] = {
    {"basics", check_basics}, {"int32", check_int32}, {"cross-device", check_cross_device},
    {"init", check_init},     {"errors", check_errors},
};
OP_HARNESS_MAIN(tests)
