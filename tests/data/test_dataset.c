/* Datasets: from IDX pairs (values, shape, limit, every mismatch) and by
 * name or directory, CLTRAIN_DATA included, with the not-found message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "idx_write.h"

static char root[4096];

static char *join(const char *a, const char *b)
{
    static char bufs[8][4096];
    static int next;
    char *p = bufs[next++ % 8];
    if (snprintf(p, 4096, "%s/%s", a, b) >= 4096) exit(1);
    return p;
}

/* Directories live in their own buffers: join()'s are reused. */
static char *mkdir_in(const char *parent, const char *name)
{
    static char dirs[16][4096];
    static int next;
    char *p = dirs[next++ % 16];
    if (snprintf(p, 4096, "%s/%s", parent, name) >= 4096) exit(1);
    if (mkdir(p, 0755) != 0) {
        perror(p);
        exit(1);
    }
    return p;
}

/* Image i has pixels tw_pixel(i, p); labels follow tw_write_dataset. */
static void check_contents(const clt_dataset *ds, int64_t n, int rows, int cols, int label_shift,
                           const char *what)
{
    int c = -1, h = -1, w = -1;
    clt_dataset_shape(ds, &c, &h, &w);
    CHECK(clt_dataset_size(ds) == n, "%s: size %lld, want %lld", what, (long long)clt_dataset_size(ds),
          (long long)n);
    CHECK(c == 1 && h == rows && w == cols, "%s: shape %dx%dx%d", what, c, h, w);
    CHECK(clt_dataset_classes(ds) == 10, "%s: %d classes", what, clt_dataset_classes(ds));
    float *im = malloc((size_t)(n > 0 ? n : 1) * (size_t)(rows * cols) * sizeof(float));
    int32_t *read_lb = malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
    REQUIRE(im && read_lb, "memory");
    CHECK_OK(clt_dataset_read(ds, 0, n, im, read_lb));
    const int32_t *lb = clt_dataset_labels(ds);
    CHECK(memcmp(lb, read_lb, (size_t)n * sizeof(int32_t)) == 0, "%s: read labels differ", what);
    int bad = 0;
    for (int64_t i = 0; i < n && !bad; i++) {
        if (lb[i] != (i + label_shift) % 10) bad = 1;
        for (long p = 0; p < rows * cols; p++)
            if (im[i * rows * cols + p] != (float)tw_pixel(i, p) / 255.0f) bad = 1;
    }
    CHECK(!bad, "%s: image or label values differ", what);
    free(im);
    free(read_lb);
}

static void test_from_idx(void)
{
    char *d = mkdir_in(root, "pair");
    tw_write_dataset(d, 0, 25, 5, 4, 3);
    char im[4096], lb[4096];
    if (snprintf(im, sizeof im, "%s", join(d, "train-images-idx3-ubyte")) >= (int)sizeof im) exit(1);
    if (snprintf(lb, sizeof lb, "%s", join(d, "train-labels-idx1-ubyte")) >= (int)sizeof lb) exit(1);
    clt_dataset *ds = NULL;
    CHECK_OK(clt_dataset_from_idx(im, lb, 10, 0, &ds));
    if (ds) check_contents(ds, 25, 4, 3, 0, "from_idx");
    clt_dataset_destroy(ds);
    CHECK_OK(clt_dataset_from_idx(im, lb, 10, 7, &ds));
    if (ds) check_contents(ds, 7, 4, 3, 0, "limit 7");
    clt_dataset_destroy(ds);
    CHECK_OK(clt_dataset_from_idx(im, lb, 10, 1000, &ds));
    if (ds) check_contents(ds, 25, 4, 3, 0, "limit above size");
    clt_dataset_destroy(ds);

    /* Pixel 0 and 255 map exactly to 0 and 1. */
    uint8_t px[2] = {0, 255}, l2[2] = {0, 1};
    uint32_t d3[3] = {2, 1, 1}, d1[1] = {2};
    tw_write_idx(join(d, "ends-images"), 1, 3, d3, px);
    tw_write_idx(join(d, "ends-labels"), 1, 1, d1, l2);
    CHECK_OK(clt_dataset_from_idx(join(d, "ends-images"), join(d, "ends-labels"), 2, 0, &ds));
    float two[2] = {-1, -1};
    if (ds) CHECK(clt_dataset_read(ds, 0, 2, two, NULL) == CLT_OK && two[0] == 0.0f && two[1] == 1.0f, "0 and 255");
    clt_dataset_destroy(ds);

    /* idx4: N x rows x cols x channels, each pixel's channels together (NHWC) -> NCHW. */
    uint8_t px4[2 * 2 * 1 * 3];
    for (int i = 0; i < 12; i++) px4[i] = (uint8_t)(i * 20);
    uint32_t d4[4] = {2, 2, 1, 3};
    tw_write_idx(join(d, "rgb-images"), 1, 4, d4, px4);
    CHECK_OK(clt_dataset_from_idx(join(d, "rgb-images"), join(d, "ends-labels"), 2, 0, &ds));
    int c4 = 0, h4 = 0, w4 = 0;
    clt_dataset_shape(ds, &c4, &h4, &w4);
    float rgb[12];
    CHECK(ds && c4 == 3 && h4 == 2 && w4 == 1 && clt_dataset_read(ds, 0, 2, rgb, NULL) == CLT_OK, "idx4 shape %dx%dx%d",
          c4, h4, w4);
    /* sample 0, channel 1, pixel 1 is byte (0 * 2 + 1) * 3 + 1 = 4 of the file; sample 1, channel 2,
     * pixel 0 byte (1 * 2 + 0) * 3 + 2 = 8 */
    if (ds) CHECK(rgb[1 * 2 + 1] == (float)(4 * 20) / 255.0f && rgb[6 + 2 * 2 + 0] == (float)(8 * 20) / 255.0f,
                  "idx4 values are not the NCHW of the file's NHWC");
    clt_dataset_destroy(ds);

    /* Wrong ranks: labels given as images and the other way round. */
    CHECK_FAIL(clt_dataset_from_idx(lb, lb, 10, 0, &ds), CLT_ERR_FORMAT, lb, "must be an idx3 file");
    CHECK_FAIL(clt_dataset_from_idx(im, im, 10, 0, &ds), CLT_ERR_FORMAT, im, "must be an idx1 file");
    CHECK(ds == NULL, "*out set on failure");
    /* Labels beyond the class count (labels run 0..9). */
    CHECK_FAIL(clt_dataset_from_idx(im, lb, 9, 0, &ds), CLT_ERR_FORMAT, lb,
               "label 9 of sample 9 is out of range for 9 classes");
    /* Count mismatch: 25 training images against 5 test labels. */
    char tl[4096];
    if (snprintf(tl, sizeof tl, "%s", join(d, "t10k-labels-idx1-ubyte")) >= (int)sizeof tl) exit(1);
    CHECK_FAIL(clt_dataset_from_idx(im, tl, 10, 0, &ds), CLT_ERR_FORMAT, im, tl, "25 images", "5 labels",
               "count mismatch");
    /* No images, empty image size. */
    uint32_t none[3] = {0, 4, 3}, flat[3] = {3, 0, 3}, zero1[1] = {0};
    tw_write_idx(join(d, "none"), 0, 3, none, NULL);
    tw_write_idx(join(d, "flat"), 0, 3, flat, NULL);
    tw_write_idx(join(d, "none-labels"), 0, 1, zero1, NULL);
    CHECK_FAIL(clt_dataset_from_idx(join(d, "none"), join(d, "none-labels"), 10, 0, &ds), CLT_ERR_FORMAT,
               "none", "holds no images");
    CHECK_FAIL(clt_dataset_from_idx(join(d, "flat"), lb, 10, 0, &ds), CLT_ERR_FORMAT, "flat",
               "unusable image size 0 x 3");
    /* A broken file is reported as such through the dataset call. */
    tw_write_raw(join(d, "broken"), "\0\0\x08\x03\0\0", 6);
    CHECK_FAIL(clt_dataset_from_idx(join(d, "broken"), lb, 10, 0, &ds), CLT_ERR_FORMAT, "broken",
               "truncated IDX header");
    CHECK_FAIL(clt_dataset_from_idx(im, join(d, "missing"), 10, 0, &ds), CLT_ERR_NOT_FOUND, "missing");
    /* Arguments. */
    CHECK_FAIL(clt_dataset_from_idx(im, lb, 0, 0, &ds), CLT_ERR_INVALID_ARG, "classes");
    CHECK_FAIL(clt_dataset_from_idx(im, lb, 10, -1, &ds), CLT_ERR_INVALID_ARG, "limit");
    CHECK_FAIL(clt_dataset_from_idx(NULL, lb, 10, 0, &ds), CLT_ERR_INVALID_ARG, "NULL");
    CHECK_FAIL(clt_dataset_from_idx(im, lb, 10, 0, NULL), CLT_ERR_INVALID_ARG, "NULL");

    /* NULL-safe accessors. */
    clt_dataset_destroy(NULL);
    int c = 5;
    clt_dataset_shape(NULL, &c, NULL, NULL);
    CHECK(c == 0 && clt_dataset_size(NULL) == 0 && clt_dataset_read(NULL, 0, 1, &(float){0}, NULL) != CLT_OK &&
              clt_dataset_labels(NULL) == NULL && clt_dataset_classes(NULL) == 0,
          "NULL dataset accessors");
}

static void test_load_dir(void)
{
    char *plain = mkdir_in(root, "plain"), *gz = mkdir_in(root, "gz");
    tw_write_dataset(plain, 0, 30, 12, 5, 5);
    tw_write_dataset(gz, 1, 31, 13, 6, 2);
    clt_dataset *ds = NULL;
    CHECK_OK(clt_dataset_load(plain, CLT_SUBSET_TRAIN, 0, &ds));
    if (ds) check_contents(ds, 30, 5, 5, 0, "plain train");
    clt_dataset_destroy(ds);
    CHECK_OK(clt_dataset_load(plain, CLT_SUBSET_TEST, 0, &ds));
    if (ds) check_contents(ds, 12, 5, 5, 3, "plain test");
    clt_dataset_destroy(ds);
    CHECK_OK(clt_dataset_load(gz, CLT_SUBSET_TRAIN, 10, &ds));
    if (ds) check_contents(ds, 10, 6, 2, 0, "gz train, limit 10");
    clt_dataset_destroy(ds);
    CHECK_OK(clt_dataset_load(gz, CLT_SUBSET_TEST, 0, &ds));
    if (ds) check_contents(ds, 13, 6, 2, 3, "gz test");
    clt_dataset_destroy(ds);

    /* Both forms present: the plain file is taken. */
    char *mixed = mkdir_in(root, "mixed");
    tw_write_dataset(mixed, 1, 8, 2, 2, 2);
    tw_write_dataset(mixed, 0, 9, 2, 2, 2);
    CHECK_OK(clt_dataset_load(mixed, CLT_SUBSET_TRAIN, 0, &ds));
    CHECK(clt_dataset_size(ds) == 9, "plain and .gz: took %lld samples, want the plain 9",
          (long long)clt_dataset_size(ds));
    clt_dataset_destroy(ds);

    /* A directory with only the training files. */
    char *half = mkdir_in(root, "half");
    tw_write_dataset(half, 0, 4, 4, 2, 2);
    unlink(join(half, "t10k-images-idx3-ubyte"));
    unlink(join(half, "t10k-labels-idx1-ubyte"));
    CHECK_OK(clt_dataset_load(half, CLT_SUBSET_TRAIN, 0, &ds));
    clt_dataset_destroy(ds);
    CHECK_FAIL(clt_dataset_load(half, CLT_SUBSET_TEST, 0, &ds), CLT_ERR_NOT_FOUND, half, "test split",
               "no t10k-images-idx3-ubyte[.gz] and no t10k-labels-idx1-ubyte[.gz]");
    unlink(join(half, "train-labels-idx1-ubyte"));
    CHECK_FAIL(clt_dataset_load(half, CLT_SUBSET_TRAIN, 0, &ds), CLT_ERR_NOT_FOUND, half,
               "no train-labels-idx1-ubyte[.gz]");

    char *nowhere = join(root, "does-not-exist");
    CHECK_FAIL(clt_dataset_load(nowhere, CLT_SUBSET_TRAIN, 0, &ds), CLT_ERR_NOT_FOUND, nowhere,
               "does not exist", "apt-get install dataset-fashion-mnist", "CLTRAIN_DATA");
    CHECK(ds == NULL, "*out set on failure");
    /* A bad file in a found directory: the file's own error. */
    char *broken = mkdir_in(root, "broken");
    tw_write_dataset(broken, 0, 4, 4, 2, 2);
    tw_write_raw(join(broken, "train-images-idx3-ubyte"), "\1\2\3\4\5", 5);
    CHECK_FAIL(clt_dataset_load(broken, CLT_SUBSET_TRAIN, 0, &ds), CLT_ERR_FORMAT,
               "train-images-idx3-ubyte", "bad magic");
    CHECK_FAIL(clt_dataset_load(plain, (clt_subset)7, 0, &ds), CLT_ERR_INVALID_ARG, "split");
    CHECK_FAIL(clt_dataset_load(plain, CLT_SUBSET_TRAIN, -5, &ds), CLT_ERR_INVALID_ARG, "limit");
    CHECK_FAIL(clt_dataset_load(plain, CLT_SUBSET_TRAIN, 0, NULL), CLT_ERR_INVALID_ARG, "NULL");
}

static void test_cltrain_data(void)
{
    clt_dataset *ds = NULL;
    char *env = mkdir_in(root, "env");
    tw_write_dataset(env, 1, 11, 3, 3, 3);
    char *sub = mkdir_in(env, "fashion-mnist");
    tw_write_dataset(sub, 1, 14, 4, 2, 3);

    /* NULL: the directory $CLTRAIN_DATA. */
    setenv("CLTRAIN_DATA", env, 1);
    CHECK_OK(clt_dataset_load(NULL, CLT_SUBSET_TRAIN, 0, &ds));
    if (ds) check_contents(ds, 11, 3, 3, 0, "NULL with CLTRAIN_DATA");
    clt_dataset_destroy(ds);
    /* A name: $CLTRAIN_DATA/<name> first, then $CLTRAIN_DATA itself. */
    CHECK_OK(clt_dataset_load("fashion-mnist", CLT_SUBSET_TEST, 0, &ds));
    if (ds) check_contents(ds, 4, 2, 3, 3, "fashion-mnist from $CLTRAIN_DATA/fashion-mnist");
    clt_dataset_destroy(ds);
    CHECK_OK(clt_dataset_load("mnist", CLT_SUBSET_TRAIN, 0, &ds));
    if (ds) check_contents(ds, 11, 3, 3, 0, "mnist from $CLTRAIN_DATA");
    clt_dataset_destroy(ds);

    /* Missing: the message lists every place looked at and the way out. */
    char *empty = mkdir_in(root, "empty");
    setenv("CLTRAIN_DATA", empty, 1);
    struct stat st;
    if (stat("/usr/share/datasets/mnist", &st) != 0) {
        CHECK_FAIL(clt_dataset_load("mnist", CLT_SUBSET_TRAIN, 0, &ds), CLT_ERR_NOT_FOUND,
                   "dataset mnist (train split) not found", join(empty, "mnist"),
                   "($CLTRAIN_DATA/mnist): does not exist", "($CLTRAIN_DATA): no train-images",
                   "/usr/share/datasets/mnist: does not exist", "set CLTRAIN_DATA");
    }
    if (stat("/usr/share/datasets/fashion-mnist", &st) != 0) {
        CHECK_FAIL(clt_dataset_load(NULL, CLT_SUBSET_TEST, 0, &ds), CLT_ERR_NOT_FOUND,
                   "(from $CLTRAIN_DATA)", empty);
        unsetenv("CLTRAIN_DATA");
        CHECK_FAIL(clt_dataset_load(NULL, CLT_SUBSET_TEST, 0, &ds), CLT_ERR_NOT_FOUND,
                   "dataset fashion-mnist (test split) not found",
                   "/usr/share/datasets/fashion-mnist", "apt-get install dataset-fashion-mnist",
                   "tools/setup");
    }
    /* CLTRAIN_DATA naming a file, or nothing, is refused naming it, even
     * where the system's copy exists (a typo must not pass for it). */
    tw_write_raw(join(root, "a-file"), "x", 1);
    setenv("CLTRAIN_DATA", join(root, "a-file"), 1);
    CHECK_FAIL(clt_dataset_load("mnist", CLT_SUBSET_TRAIN, 0, &ds), CLT_ERR_NOT_FOUND, "CLTRAIN_DATA=",
               "a-file", "not a directory");
    setenv("CLTRAIN_DATA", join(root, "typo"), 1);
    CHECK_FAIL(clt_dataset_load("fashion-mnist", CLT_SUBSET_TRAIN, 0, &ds), CLT_ERR_NOT_FOUND, "typo",
               "does not exist");
    unsetenv("CLTRAIN_DATA");
}

int main(void)
{
    tw_mkdtemp(root, sizeof root, "dataset");
    test_from_idx();
    test_load_dir();
    test_cltrain_data();
    if (!test_failures) tw_rmtree(root);
    return test_result();
}
