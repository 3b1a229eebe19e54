/* The real Fashion-MNIST from the Debian package (dataset-fashion-mnist);
 * skipped (exit 77) where it is not installed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

#define DIR "/usr/share/datasets/fashion-mnist"

static void check_split(clt_subset split, int64_t n, int first_label)
{
    clt_dataset *ds = NULL;
    REQUIRE_OK(clt_dataset_load("fashion-mnist", split, 0, &ds));
    int c, h, w;
    clt_dataset_shape(ds, &c, &h, &w);
    CHECK(clt_dataset_size(ds) == n, "%lld samples, want %lld", (long long)clt_dataset_size(ds),
          (long long)n);
    CHECK(c == 1 && h == 28 && w == 28, "shape %dx%dx%d", c, h, w);
    CHECK(clt_dataset_classes(ds) == 10, "%d classes", clt_dataset_classes(ds));
    const int32_t *lb = clt_dataset_labels(ds);
    float *im = malloc((size_t)n * 784 * sizeof(float));
    REQUIRE(im, "memory");
    REQUIRE_OK(clt_dataset_read(ds, 0, n, im, NULL));
    CHECK(lb[0] == first_label, "first label %d, want %d", lb[0], first_label);
    int64_t per_class[10] = {0};
    for (int64_t i = 0; i < n; i++) {
        if (lb[i] < 0 || lb[i] > 9) {
            CHECK(0, "label %d at %lld", lb[i], (long long)i);
            break;
        }
        per_class[lb[i]]++;
    }
    /* Fashion-MNIST is balanced: n/10 of each class. */
    for (int k = 0; k < 10; k++)
        CHECK(per_class[k] == n / 10, "class %d: %lld samples", k, (long long)per_class[k]);
    float lo = 1, hi = 0;
    for (size_t i = 0; i < (size_t)n * 784; i++) {
        if (im[i] < lo) lo = im[i];
        if (im[i] > hi) hi = im[i];
    }
    CHECK(lo == 0.0f && hi == 1.0f, "pixel range [%g, %g], want [0, 1]", lo, hi);

    /* A limit keeps the first samples. */
    clt_dataset *few = NULL;
    static float few_im[100 * 784];
    CHECK_OK(clt_dataset_load("fashion-mnist", split, 100, &few));
    CHECK(clt_dataset_size(few) == 100, "limit 100 gives %lld", (long long)clt_dataset_size(few));
    if (few)
        CHECK(clt_dataset_read(few, 0, 100, few_im, NULL) == CLT_OK &&
                  memcmp(few_im, im, 100 * 784 * sizeof(float)) == 0 &&
                  memcmp(clt_dataset_labels(few), lb, 100 * sizeof(int32_t)) == 0,
              "limited dataset is not the first 100 samples");
    clt_dataset_destroy(few);

    /* One shuffled, prefetched epoch sees every sample once. */
    clt_batcher_config cfg;
    clt_batcher_config_default(&cfg);
    cfg.seed = 1;
    clt_batcher *b = NULL;
    REQUIRE_OK(clt_batcher_create(ds, &cfg, &b));
    int64_t seen = 0, per_class_b[10] = {0};
    clt_batch bt;
    for (;;) {
        CHECK_OK(clt_batcher_next(b, &bt));
        if (bt.count == 0) break;
        for (int k = 0; k < bt.count; k++) per_class_b[bt.labels[k]]++;
        seen += bt.count;
    }
    CHECK(seen == n, "one epoch gave %lld samples", (long long)seen);
    for (int k = 0; k < 10; k++) CHECK(per_class_b[k] == n / 10, "epoch class %d: %lld", k,
                                       (long long)per_class_b[k]);
    clt_batcher_destroy(b);
    free(im);
    clt_dataset_destroy(ds);
}

int main(void)
{
    struct stat st;
    if (stat(DIR, &st) != 0) {
        fprintf(stderr, "skip: %s not installed (apt-get install dataset-fashion-mnist)\n", DIR);
        return 77;
    }
    unsetenv("CLTRAIN_DATA"); /* the system copy, whatever the caller's environment */
    check_split(CLT_SUBSET_TRAIN, 60000, 9);
    check_split(CLT_SUBSET_TEST, 10000, 9);
    return test_result();
}
