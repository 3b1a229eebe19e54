/* Dataset sources beyond IDX: the caller's arrays (clt_dataset_from_memory,
 * 8-bit and float, NCHW and NHWC) and CIFAR-10/100 binary files written
 * here in the published record format, each against the values the test
 * wrote, and every refusal. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "idx_write.h"

static char root[4096];

static char *path_in(const char *dir, const char *name)
{
    static char bufs[8][4096];
    static int next;
    char *p = bufs[next++ % 8];
    if (snprintf(p, 4096, "%s/%s", dir, name) >= 4096) exit(1);
    return p;
}

/* Every sample's floats and labels through clt_dataset_read. */
static void read_all(const clt_dataset *ds, float **im, int32_t **lb)
{
    int c, h, w;
    clt_dataset_shape(ds, &c, &h, &w);
    int64_t n = clt_dataset_size(ds);
    *im = malloc((size_t)n * (size_t)(c * h * w) * sizeof(float));
    *lb = malloc((size_t)n * sizeof(int32_t));
    REQUIRE(*im && *lb, "memory");
    REQUIRE_OK(clt_dataset_read(ds, 0, n, *im, *lb));
}

/* Value of sample i, channel c, pixel p (0..255). */
static uint8_t pix(int64_t i, int c, int p) { return (uint8_t)(i * 37 + c * 101 + p * 7); }

static void test_memory(void)
{
    enum { N = 5, C = 3, H = 2, W = 3, HW = H * W };
    uint8_t nchw[N * C * HW], nhwc[N * HW * C];
    float fhwc[N * HW * C];
    int32_t labels[N] = {0, 3, 1, 2, 3};
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++)
            for (int p = 0; p < HW; p++) {
                nchw[(i * C + c) * HW + p] = pix(i, c, p);
                nhwc[(i * HW + p) * C + c] = pix(i, c, p);
                fhwc[(i * HW + p) * C + c] = (float)pix(i, c, p) * 0.5f - 3.0f;
            }
    const void *sources[3] = {nchw, nhwc, fhwc};
    clt_pixel_type types[3] = {CLT_PIXELS_U8, CLT_PIXELS_U8, CLT_PIXELS_F32};
    clt_layout layouts[3] = {CLT_LAYOUT_NCHW, CLT_LAYOUT_NHWC, CLT_LAYOUT_NHWC};
    for (int v = 0; v < 3; v++) {
        clt_dataset_desc d;
        clt_dataset_desc_default(&d);
        d.n = N, d.channels = C, d.height = H, d.width = W, d.classes = 4;
        d.type = types[v], d.layout = layouts[v], d.images = sources[v], d.labels = labels;
        clt_dataset *ds = NULL;
        REQUIRE_OK(clt_dataset_from_memory(&d, &ds));
        int c, h, w;
        clt_dataset_shape(ds, &c, &h, &w);
        CHECK(c == C && h == H && w == W && clt_dataset_size(ds) == N && clt_dataset_classes(ds) == 4,
              "variant %d: shape %dx%dx%d", v, c, h, w);
        float *im;
        int32_t *lb;
        read_all(ds, &im, &lb);
        int bad = 0;
        for (int i = 0; i < N; i++) {
            bad |= lb[i] != labels[i];
            for (int ch = 0; ch < C; ch++)
                for (int p = 0; p < HW; p++) {
                    float want = v < 2 ? (float)pix(i, ch, p) / 255.0f : (float)pix(i, ch, p) * 0.5f - 3.0f;
                    bad |= im[(i * C + ch) * HW + p] != want;
                }
        }
        CHECK(!bad, "variant %d: values or labels differ", v);
        /* a range from the middle */
        float two[2 * C * HW];
        CHECK_OK(clt_dataset_read(ds, 3, 2, two, NULL));
        CHECK(memcmp(two, im + 3 * C * HW, sizeof two) == 0, "variant %d: read from sample 3", v);
        CHECK_FAIL(clt_dataset_read(ds, 4, 2, two, NULL), CLT_ERR_INVALID_ARG, "samples 4..5", "of 5");
        free(im);
        free(lb);
        clt_dataset_destroy(ds);
    }
    /* The library copies: changing the arrays afterwards changes nothing. */
    clt_dataset_desc d;
    clt_dataset_desc_default(&d);
    d.n = N, d.channels = C, d.height = H, d.width = W, d.classes = 4, d.images = nchw, d.labels = labels;
    clt_dataset *ds = NULL;
    REQUIRE_OK(clt_dataset_from_memory(&d, &ds));
    nchw[0] ^= 0xff;
    labels[0] = 2;
    float first[C * HW];
    int32_t l0;
    CHECK_OK(clt_dataset_read(ds, 0, 1, first, &l0));
    CHECK(first[0] == (float)pix(0, 0, 0) / 255.0f && l0 == 0, "the dataset kept the caller's arrays");
    nchw[0] ^= 0xff;
    labels[0] = 0;
    clt_dataset_destroy(ds);

    /* Refusals. */
    clt_dataset_desc bad = d;
    bad.labels = (int32_t[N]){0, 1, 4, 0, 0};
    CHECK_FAIL(clt_dataset_from_memory(&bad, &ds), CLT_ERR_INVALID_ARG, "label 4 of sample 2", "4 classes");
    bad = d;
    bad.labels = (int32_t[N]){0, -1, 0, 0, 0};
    CHECK_FAIL(clt_dataset_from_memory(&bad, &ds), CLT_ERR_INVALID_ARG, "label -1 of sample 1");
    bad = d;
    fhwc[(3 * HW + 1) * C + 2] = NAN;
    bad.type = CLT_PIXELS_F32, bad.layout = CLT_LAYOUT_NHWC, bad.images = fhwc;
    CHECK_FAIL(clt_dataset_from_memory(&bad, &ds), CLT_ERR_INVALID_ARG, "sample 3", "finite");
    bad = d;
    bad.n = 0;
    CHECK_FAIL(clt_dataset_from_memory(&bad, &ds), CLT_ERR_INVALID_ARG, "n is 0");
    bad = d;
    bad.height = 0;
    CHECK_FAIL(clt_dataset_from_memory(&bad, &ds), CLT_ERR_INVALID_ARG, "3 x 0 x 3");
    bad = d;
    bad.classes = 0;
    CHECK_FAIL(clt_dataset_from_memory(&bad, &ds), CLT_ERR_INVALID_ARG, "classes is 0");
    bad = d;
    bad.layout = (clt_layout)7;
    CHECK_FAIL(clt_dataset_from_memory(&bad, &ds), CLT_ERR_INVALID_ARG, "layout 7");
    bad.layout = CLT_LAYOUT_AUTO;
    CHECK_FAIL(clt_dataset_from_memory(&bad, &ds), CLT_ERR_INVALID_ARG, "layout 0", "NHWC");
    bad = d;
    bad.images = NULL;
    CHECK_FAIL(clt_dataset_from_memory(&bad, &ds), CLT_ERR_INVALID_ARG, "NULL");
    bad = d;
    bad.reserved[10] = 1;
    CHECK_FAIL(clt_dataset_from_memory(&bad, &ds), CLT_ERR_INVALID_ARG, "reserved");
    CHECK_FAIL(clt_dataset_from_memory(NULL, &ds), CLT_ERR_INVALID_ARG, "NULL");
    CHECK(ds == NULL, "a refused dataset is NULL");
}

/* n CIFAR records (kind 10 or 100) for samples first.. into path. */
static void write_cifar(const char *path, int kind, int64_t first, int n)
{
    size_t rec = (size_t)(kind == 100 ? 2 : 1) + 3072;
    uint8_t *buf = malloc(rec * (size_t)n);
    REQUIRE(buf, "memory");
    for (int r = 0; r < n; r++) {
        uint8_t *at = buf + (size_t)r * rec;
        int64_t i = first + r;
        if (kind == 100) {
            at[0] = (uint8_t)(i % 20);       /* coarse */
            at[1] = (uint8_t)(i * 7 % 100);  /* fine */
        } else {
            at[0] = (uint8_t)(i % 10);
        }
        for (int c = 0; c < 3; c++)
            for (int p = 0; p < 1024; p++) at[rec - 3072 + (size_t)c * 1024 + (size_t)p] = pix(i, c, p);
    }
    tw_write_raw(path, buf, rec * (size_t)n);
    free(buf);
}

/* ds holds samples first.. with CIFAR labels of `kind` (fine for 100). */
static void check_cifar(const clt_dataset *ds, int kind, int fine, int64_t first, int64_t n, const char *what)
{
    int c, h, w;
    clt_dataset_shape(ds, &c, &h, &w);
    CHECK(c == 3 && h == 32 && w == 32 && clt_dataset_size(ds) == n, "%s: %lld samples of %dx%dx%d", what,
          (long long)clt_dataset_size(ds), c, h, w);
    CHECK(clt_dataset_classes(ds) == (kind == 10 ? 10 : fine ? 100 : 20), "%s: %d classes", what,
          clt_dataset_classes(ds));
    if (clt_dataset_size(ds) != n) return;
    float *im;
    int32_t *lb;
    read_all(ds, &im, &lb);
    int bad = 0;
    for (int64_t k = 0; k < n && !bad; k++) {
        int64_t i = first + k;
        int want = kind == 10 ? (int)(i % 10) : fine ? (int)(i * 7 % 100) : (int)(i % 20);
        bad |= lb[k] != want;
        for (int ch = 0; ch < 3; ch++)
            for (int p = 0; p < 1024; p++) bad |= im[(k * 3 + ch) * 1024 + p] != (float)pix(i, ch, p) / 255.0f;
    }
    CHECK(!bad, "%s: pixels or labels differ from the records written", what);
    free(im);
    free(lb);
}

static void test_cifar10(void)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path_in(root, "cifar-10-batches-bin")); /* path_in's buffers rotate */
    REQUIRE(mkdir(dir, 0755) == 0, "mkdir");
    static const char *const names[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                        "data_batch_4.bin", "data_batch_5.bin"};
    for (int f = 0; f < 5; f++) write_cifar(path_in(dir, names[f]), 10, f * 3, 3);
    write_cifar(path_in(dir, "test_batch.bin"), 10, 1000, 4);
    clt_dataset *ds = NULL;
    REQUIRE_OK(clt_dataset_from_cifar(dir, CLT_SUBSET_TRAIN, 1, 0, &ds));
    check_cifar(ds, 10, 1, 0, 15, "CIFAR-10 train");
    clt_dataset_destroy(ds);
    REQUIRE_OK(clt_dataset_from_cifar(dir, CLT_SUBSET_TRAIN, 1, 7, &ds)); /* across a file boundary */
    check_cifar(ds, 10, 1, 0, 7, "CIFAR-10 train, limit 7");
    clt_dataset_destroy(ds);
    REQUIRE_OK(clt_dataset_load(dir, CLT_SUBSET_TEST, 0, &ds)); /* recognised by clt_dataset_load */
    check_cifar(ds, 10, 1, 1000, 4, "CIFAR-10 test through clt_dataset_load");
    clt_dataset_destroy(ds);

    /* A torn record, a bad label, a missing file. */
    tw_write_raw(path_in(dir, "test_batch.bin"), "\x01\x02\x03", 3);
    CHECK_FAIL(clt_dataset_from_cifar(dir, CLT_SUBSET_TEST, 1, 0, &ds), CLT_ERR_FORMAT, "test_batch.bin",
               "3 bytes", "3073 bytes");
    uint8_t rec[3073] = {10};
    tw_write_raw(path_in(dir, "test_batch.bin"), rec, sizeof rec);
    CHECK_FAIL(clt_dataset_from_cifar(dir, CLT_SUBSET_TEST, 1, 0, &ds), CLT_ERR_FORMAT, "record 0", "label 10",
               "10 classes");
    remove(path_in(dir, "data_batch_3.bin"));
    CHECK_FAIL(clt_dataset_from_cifar(dir, CLT_SUBSET_TRAIN, 1, 0, &ds), CLT_ERR_NOT_FOUND, "data_batch_3.bin");
    CHECK_FAIL(clt_dataset_from_cifar(root, CLT_SUBSET_TRAIN, 1, 0, &ds), CLT_ERR_NOT_FOUND, "data_batch_1.bin",
               "train.bin");
    CHECK_FAIL(clt_dataset_from_cifar(dir, CLT_SUBSET_TRAIN, 1, -1, &ds), CLT_ERR_INVALID_ARG, "limit");
    CHECK(ds == NULL, "a refused dataset is NULL");
}

static void test_cifar100(void)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path_in(root, "cifar-100-binary"));
    REQUIRE(mkdir(dir, 0755) == 0, "mkdir");
    write_cifar(path_in(dir, "train.bin"), 100, 0, 30);
    write_cifar(path_in(dir, "test.bin"), 100, 500, 6);
    clt_dataset *ds = NULL;
    REQUIRE_OK(clt_dataset_from_cifar(dir, CLT_SUBSET_TRAIN, 1, 0, &ds));
    check_cifar(ds, 100, 1, 0, 30, "CIFAR-100 train, fine");
    clt_dataset_destroy(ds);
    REQUIRE_OK(clt_dataset_from_cifar(dir, CLT_SUBSET_TEST, 0, 0, &ds));
    check_cifar(ds, 100, 0, 500, 6, "CIFAR-100 test, coarse");
    clt_dataset_destroy(ds);
    REQUIRE_OK(clt_dataset_load(dir, CLT_SUBSET_TRAIN, 0, &ds));
    check_cifar(ds, 100, 1, 0, 30, "CIFAR-100 through clt_dataset_load (fine)");
    clt_dataset_destroy(ds);
    uint8_t rec[3074] = {20, 5};
    tw_write_raw(path_in(dir, "test.bin"), rec, sizeof rec);
    CHECK_FAIL(clt_dataset_from_cifar(dir, CLT_SUBSET_TEST, 1, 0, &ds), CLT_ERR_FORMAT, "coarse label 20");
    CHECK_FAIL(clt_dataset_from_cifar(dir, CLT_SUBSET_TEST, 0, 0, &ds), CLT_ERR_FORMAT, "coarse label 20",
               "20 classes");
}

int main(void)
{
    tw_mkdtemp(root, sizeof root, "sources");
    test_memory();
    test_cifar10();
    test_cifar100();
    if (!test_failures) tw_rmtree(root);
    return test_result();
}
