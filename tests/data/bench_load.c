/* Benchmark: load time of Fashion-MNIST (read, gunzip, convert to float)
 * and batch throughput with and without prefetch; then the loader's
 * throughput on CIFAR-shaped colour samples (3 x 32 x 32 bytes, made in
 * memory) with the CIFAR recipe's augmentation (crop:4,flip) and
 * normalisation, on one core without prefetch. Prints results; skipped
 * (77) when Fashion-MNIST is not installed.
 * bench_data_load FOLDER: an image folder's load, decoded at load (eager)
 * and header by header (lazy), then the lazy batches' decoding, in images
 * per second of wall and of CPU time (one core works: CPU time tells the
 * rate on a machine others share). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cltrain.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_time(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)r.ru_utime.tv_sec + (double)r.ru_stime.tv_sec + (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
}

static void rate(const char *what, int64_t n, double wall, double cpu)
{
    printf("  %s: %.0f images/s, %.0f images/CPU-s\n", what, (double)n / wall, (double)n / cpu);
}

static int folder(const char *root)
{
    const char *modes[] = {"eager", "lazy"};
    for (int m = 0; m < 2; m++) {
        setenv("CLTRAIN_DATA_DECODE", modes[m], 1);
        clt_dataset *ds = NULL;
        double t0 = now(), c0 = cpu_time();
        if (clt_dataset_load_with(root, CLT_SUBSET_TRAIN, NULL, &ds) != CLT_OK) {
            fprintf(stderr, "%s\n", clt_last_error());
            return 1;
        }
        int64_t n = clt_dataset_size(ds);
        int c, h, w;
        clt_dataset_shape(ds, &c, &h, &w);
        printf("%s (%lld images of %dx%dx%d), %s:\n", root, (long long)n, c, h, w, modes[m]);
        rate("load", n, now() - t0, cpu_time() - c0);
        float *im = malloc(sizeof(float) * 128 * (size_t)c * (size_t)h * (size_t)w);
        t0 = now(), c0 = cpu_time();
        for (int64_t i = 0; im && i < n; i += 128)
            if (clt_dataset_read(ds, i, n - i < 128 ? n - i : 128, im, NULL) != CLT_OK) {
                fprintf(stderr, "%s\n", clt_last_error());
                return 1;
            }
        rate("batches of 128 read", n, now() - t0, cpu_time() - c0);
        free(im);
        clt_dataset_destroy(ds);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1) return folder(argv[1]);
    clt_dataset *train = NULL, *test = NULL;
    double t0 = now();
    clt_status s = clt_dataset_load("fashion-mnist", CLT_SUBSET_TRAIN, 0, &train);
    double t1 = now();
    if (s == CLT_OK) s = clt_dataset_load("fashion-mnist", CLT_SUBSET_TEST, 0, &test);
    double t2 = now();
    if (s != CLT_OK) {
        fprintf(stderr, "skip: %s\n", clt_last_error());
        return s == CLT_ERR_NOT_FOUND ? 77 : 1;
    }
    printf("fashion-mnist load: train %.3f s, test %.3f s, total %.3f s\n", t1 - t0, t2 - t1, t2 - t0);
    for (int prefetch = 0; prefetch < 2; prefetch++) {
        clt_batcher_config cfg;
        clt_batcher_config_default(&cfg);
        cfg.prefetch = prefetch;
        clt_batcher *b = NULL;
        if (clt_batcher_create(train, &cfg, &b) != CLT_OK) return 1;
        clt_batch bt;
        int64_t samples = 0;
        double b0 = now();
        for (int e = 0; e < 3; e++)
            for (;;) {
                if (clt_batcher_next(b, &bt) != CLT_OK) return 1;
                if (!bt.count) break;
                samples += bt.count;
            }
        double b1 = now();
        printf("batcher (batch 256, shuffle, prefetch %d): %.0f samples/s\n", prefetch,
               (double)samples / (b1 - b0));
        clt_batcher_destroy(b);
    }
    clt_dataset_destroy(train);
    clt_dataset_destroy(test);

    enum { N = 50000, SAMPLE = 3 * 32 * 32 };
    uint8_t *px = malloc((size_t)N * SAMPLE);
    int32_t *lb = malloc((size_t)N * sizeof *lb);
    if (!px || !lb) return 1;
    for (size_t i = 0; i < (size_t)N * SAMPLE; i++) px[i] = (uint8_t)(i * 2654435761u >> 24);
    for (int i = 0; i < N; i++) lb[i] = i % 10;
    clt_dataset_desc d;
    clt_dataset_desc_default(&d);
    d.n = N, d.channels = 3, d.height = d.width = 32, d.images = px, d.labels = lb, d.classes = 10;
    clt_dataset *colour = NULL;
    if (clt_dataset_from_memory(&d, &colour) != CLT_OK) return 1;
    free(px);
    free(lb);
    const char *names[] = {"plain", "crop:4,flip + normalize"};
    for (int recipe = 0; recipe < 2; recipe++) {
        float mean[3] = {0.49f, 0.48f, 0.45f}, std[3] = {0.25f, 0.24f, 0.26f};
        if (clt_dataset_set_normalization(colour, recipe ? mean : NULL, recipe ? std : NULL) != CLT_OK) return 1;
        clt_batcher_config cfg;
        clt_batcher_config_default(&cfg);
        cfg.batch_size = 128, cfg.prefetch = 0, cfg.augment_pad = recipe ? 4 : 0, cfg.augment_flip = recipe;
        clt_batcher *b = NULL;
        if (clt_batcher_create(colour, &cfg, &b) != CLT_OK) return 1;
        clt_batch bt;
        int64_t samples = 0;
        double b0 = now();
        for (;;) {
            if (clt_batcher_next(b, &bt) != CLT_OK) return 1;
            if (!bt.count) break;
            samples += bt.count;
        }
        double b1 = now();
        printf("3x32x32 bytes, batch 128, one core (%s): %.0f samples/s\n", names[recipe], (double)samples / (b1 - b0));
        clt_batcher_destroy(b);
    }
    clt_dataset_destroy(colour);
    return 0;
}
