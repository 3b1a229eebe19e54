/* Benchmark: load time of Fashion-MNIST (read, gunzip, convert to float)
 * and batch throughput with and without prefetch. Prints results; skipped
 * (77) when the dataset is not installed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cltrain.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void)
{
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
    return 0;
}
