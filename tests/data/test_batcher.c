/* Batch iterator: order, epochs and end marks, partial batches, drop_last,
 * shuffle determinism, seek, prefetch on/off equivalence, custom allocator.
 * Image i of the test dataset carries its index in its pixels, so every
 * batch can be decoded back to sample indices. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "idx_write.h"

#define N 23
#define ROWS 2
#define COLS 3
#define S (ROWS * COLS)

static char dir[4096];

/* Sample index of image k of a batch, from its first pixel; -1 when the
 * pixels are not exactly those of one dataset image. */
static int sample_of(const clt_batch *b, int k)
{
    const float *im = b->images + (size_t)k * S;
    for (int i = 0; i < N; i++) {
        int ok = 1;
        for (int p = 0; p < S && ok; p++) ok = im[p] == (float)tw_pixel(i, p) / 255.0f;
        if (ok) return b->labels[k] == i % 10 ? i : -1;
    }
    return -1;
}

static clt_batcher *make(const clt_dataset *ds, int bs, int shuffle, int drop_last, uint64_t seed,
                         int prefetch)
{
    clt_batcher_config cfg;
    clt_batcher_config_default(&cfg);
    cfg.batch_size = bs;
    cfg.shuffle = shuffle;
    cfg.drop_last = drop_last;
    cfg.seed = seed;
    cfg.prefetch = prefetch;
    clt_batcher *b = NULL;
    REQUIRE_OK(clt_batcher_create(ds, &cfg, &b));
    return b;
}

/* One epoch's sample order (including end mark checks); returns batches. */
static int epoch_order(clt_batcher *b, int64_t epoch, int *order, int *n_out, int bs, int drop_last)
{
    int n = 0, batches = 0;
    clt_batch bt;
    for (;;) {
        RESERVED_DIRTY(bt);
        CHECK_OK(clt_batcher_next(b, &bt));
        CHECK(RESERVED_ZERO(bt), "clt_batcher_next zeroes reserved");
        CHECK(bt.epoch == epoch, "batch epoch %lld, want %lld", (long long)bt.epoch, (long long)epoch);
        if (bt.count == 0) {
            CHECK(bt.index == batches && bt.images == NULL && bt.labels == NULL,
                  "end mark: index %lld after %d batches", (long long)bt.index, batches);
            break;
        }
        CHECK(bt.index == batches, "batch index %lld, want %d", (long long)bt.index, batches);
        int last_full = (batches + 1) * bs <= N;
        CHECK(bt.count == (last_full ? bs : N - batches * bs), "batch %d has %d samples", batches,
              bt.count);
        CHECK(!drop_last || bt.count == bs, "drop_last gave a partial batch of %d", bt.count);
        for (int k = 0; k < bt.count; k++) order[n++] = sample_of(&bt, k);
        batches++;
        if (batches > N + 1) break;
    }
    *n_out = n;
    return batches;
}

static int all_once(const int *order, int n, int *seen_count)
{
    int seen[N] = {0}, ok = 1;
    for (int i = 0; i < n; i++) {
        if (order[i] < 0 || order[i] >= N || seen[order[i]]) ok = 0;
        else seen[order[i]] = 1;
    }
    *seen_count = 0;
    for (int i = 0; i < N; i++) *seen_count += seen[i];
    return ok;
}

static void test_file_order(const clt_dataset *ds, int prefetch)
{
    clt_batcher *b = make(ds, 5, 0, 0, 0, prefetch);
    CHECK(clt_batcher_batches_per_epoch(b) == 5, "23 / 5 -> %lld batches",
          (long long)clt_batcher_batches_per_epoch(b));
    int order[N + 8], n = 0, seen = 0;
    for (int64_t e = 0; e < 3; e++) {
        int batches = epoch_order(b, e, order, &n, 5, 0);
        CHECK(batches == 5 && n == N, "epoch %lld: %d batches, %d samples", (long long)e, batches, n);
        for (int i = 0; i < n; i++) CHECK(order[i] == i, "file order: position %d holds %d", i, order[i]);
        CHECK(all_once(order, n, &seen), "file order: a sample repeats");
    }
    clt_batcher_destroy(b);

    b = make(ds, 5, 0, 1, 0, prefetch);
    CHECK(clt_batcher_batches_per_epoch(b) == 4, "drop_last: %lld batches",
          (long long)clt_batcher_batches_per_epoch(b));
    int batches = epoch_order(b, 0, order, &n, 5, 1);
    CHECK(batches == 4 && n == 20, "drop_last: %d batches, %d samples", batches, n);
    clt_batcher_destroy(b);

    /* Batch larger than the dataset: one batch of everything. */
    b = make(ds, 100, 1, 0, 3, prefetch);
    batches = epoch_order(b, 0, order, &n, 100, 0);
    CHECK(batches == 1 && n == N && all_once(order, n, &seen), "batch of 100 over %d samples", N);
    clt_batcher_destroy(b);
    /* ... and with drop_last: no batch at all, only end marks. */
    b = make(ds, 100, 1, 1, 3, prefetch);
    CHECK(clt_batcher_batches_per_epoch(b) == 0, "drop_last with batch > N");
    for (int64_t e = 0; e < 3; e++) {
        clt_batch bt;
        CHECK_OK(clt_batcher_next(b, &bt));
        CHECK(bt.count == 0 && bt.epoch == e && bt.index == 0, "empty epoch %lld", (long long)e);
    }
    clt_batcher_destroy(b);
}

static void test_shuffle(const clt_dataset *ds, int prefetch)
{
    int a[N + 8], b2[N + 8], n = 0, m = 0, seen = 0;
    clt_batcher *x = make(ds, 4, 1, 0, 77, prefetch), *y = make(ds, 4, 1, 0, 77, prefetch);
    clt_batcher *z = make(ds, 4, 1, 0, 78, prefetch);
    int prev[N + 8];
    for (int64_t e = 0; e < 4; e++) {
        epoch_order(x, e, a, &n, 4, 0);
        epoch_order(y, e, b2, &m, 4, 0);
        CHECK(n == N && all_once(a, n, &seen) && seen == N, "epoch %lld: each sample once (%d seen)",
              (long long)e, seen);
        CHECK(n == m && memcmp(a, b2, sizeof(int) * (size_t)n) == 0, "same seed, different order");
        epoch_order(z, e, b2, &m, 4, 0);
        CHECK(memcmp(a, b2, sizeof(int) * (size_t)n) != 0, "seeds 77 and 78 give one order in epoch %lld",
              (long long)e);
        if (e > 0) CHECK(memcmp(a, prev, sizeof(int) * (size_t)n) != 0, "epochs %lld and %lld alike",
                         (long long)e - 1, (long long)e);
        memcpy(prev, a, sizeof prev);
    }
    clt_batcher_destroy(x);
    clt_batcher_destroy(y);
    clt_batcher_destroy(z);

    /* drop_last with shuffle: 5 full batches of 4, distinct samples. */
    x = make(ds, 4, 1, 1, 5, prefetch);
    int batches = epoch_order(x, 0, a, &n, 4, 1);
    CHECK(batches == 5 && n == 20 && all_once(a, n, &seen), "shuffled drop_last");
    clt_batcher_destroy(x);
}

static int same_batch(const clt_batch *p, const clt_batch *q)
{
    if (p->count != q->count || p->epoch != q->epoch || p->index != q->index) return 0;
    if (!p->count) return 1;
    return memcmp(p->images, q->images, sizeof(float) * S * (size_t)p->count) == 0 &&
           memcmp(p->labels, q->labels, sizeof(int32_t) * (size_t)p->count) == 0;
}

/* The sequence of batches, copied out. */
typedef struct rec {
    float images[N * S];
    int32_t labels[N];
    clt_batch b;
} rec;

static void record(clt_batcher *b, rec *out, int n)
{
    for (int i = 0; i < n; i++) {
        CHECK_OK(clt_batcher_next(b, &out[i].b));
        if (out[i].b.count) {
            memcpy(out[i].images, out[i].b.images, sizeof(float) * S * (size_t)out[i].b.count);
            memcpy(out[i].labels, out[i].b.labels, sizeof(int32_t) * (size_t)out[i].b.count);
        }
        out[i].b.images = out[i].images;
        out[i].b.labels = out[i].labels;
    }
}

static void test_prefetch_equal_and_seek(const clt_dataset *ds)
{
    enum { STEPS = 40 }; /* 6 epochs of 5 batches + marks and more */
    static rec sync_run[STEPS], async_run[STEPS];
    clt_batcher *s = make(ds, 5, 1, 0, 2024, 0), *a = make(ds, 5, 1, 0, 2024, 1);
    record(s, sync_run, STEPS);
    record(a, async_run, STEPS);
    for (int i = 0; i < STEPS; i++)
        CHECK(same_batch(&sync_run[i].b, &async_run[i].b), "step %d: prefetch on and off differ", i);
    clt_batcher_destroy(s);
    clt_batcher_destroy(a);

    /* Seek to every position of the first epochs, with and without
     * prefetch, fresh and after some batches were taken (in flight). */
    for (int prefetch = 0; prefetch < 2; prefetch++) {
        clt_batcher *b = make(ds, 5, 1, 0, 2024, prefetch);
        for (int i = STEPS - 1; i >= 0; i -= 3) {
            clt_batch got;
            CHECK_OK(clt_batcher_seek(b, sync_run[i].b.epoch, sync_run[i].b.index));
            CHECK_OK(clt_batcher_next(b, &got));
            CHECK(same_batch(&got, &sync_run[i].b), "prefetch %d: seek to (%lld, %lld) differs", prefetch,
                  (long long)sync_run[i].b.epoch, (long long)sync_run[i].b.index);
            /* The batches after a seek continue the sequence. */
            for (int j = i + 1; j < STEPS && j < i + 4; j++) {
                CHECK_OK(clt_batcher_next(b, &got));
                CHECK(same_batch(&got, &sync_run[j].b), "prefetch %d: step %d after seek to %d differs",
                      prefetch, j, i);
            }
        }
        CHECK_FAIL(clt_batcher_seek(b, -1, 0), CLT_ERR_INVALID_ARG, "out of range");
        CHECK_FAIL(clt_batcher_seek(b, 0, 6), CLT_ERR_INVALID_ARG, "out of range");
        CHECK_FAIL(clt_batcher_seek(b, 0, -1), CLT_ERR_INVALID_ARG, "out of range");
        /* Far epochs cost no more than near ones: no replay of the past. */
        clt_batch got;
        CHECK_OK(clt_batcher_seek(b, 1000000000, 2));
        CHECK_OK(clt_batcher_next(b, &got));
        CHECK(got.epoch == 1000000000 && got.index == 2 && got.count == 5, "far seek");
        clt_batcher_destroy(b);
    }
}

typedef struct alloc_log {
    int allocs, releases;
    void *ptrs[8];
    size_t sizes[8];
    int fail_after; /* -1: never */
} alloc_log;

static void *log_alloc(void *user, size_t bytes)
{
    alloc_log *l = user;
    if (l->fail_after >= 0 && l->allocs >= l->fail_after) return NULL;
    void *p = malloc(bytes);
    if (l->allocs < 8) {
        l->ptrs[l->allocs] = p;
        l->sizes[l->allocs] = bytes;
    }
    l->allocs++;
    return p;
}

static void log_release(void *user, void *p)
{
    alloc_log *l = user;
    l->releases++;
    free(p);
}

static int inside(const alloc_log *l, const void *p)
{
    for (int i = 0; i < l->allocs && i < 8; i++)
        if ((const char *)p >= (const char *)l->ptrs[i] && (const char *)p < (const char *)l->ptrs[i] + l->sizes[i])
            return 1;
    return 0;
}

static void test_allocator(const clt_dataset *ds)
{
    for (int prefetch = 0; prefetch < 2; prefetch++) {
        alloc_log l = {0, 0, {0}, {0}, -1};
        clt_batcher_config cfg;
        clt_batcher_config_default(&cfg);
        cfg.batch_size = 4;
        cfg.prefetch = prefetch;
        cfg.alloc = log_alloc;
        cfg.release = log_release;
        cfg.alloc_user = &l;
        clt_batcher *b = NULL;
        CHECK_OK(clt_batcher_create(ds, &cfg, &b));
        CHECK(l.allocs == (prefetch ? 4 : 2), "prefetch %d: %d allocations", prefetch, l.allocs);
        for (int i = 0; i < 12; i++) {
            clt_batch bt;
            CHECK_OK(clt_batcher_next(b, &bt));
            if (bt.count)
                CHECK(inside(&l, bt.images) && inside(&l, bt.labels), "batch buffers not from the allocator");
        }
        clt_batcher_destroy(b);
        CHECK(l.releases == l.allocs, "%d allocations, %d releases", l.allocs, l.releases);

        /* The allocator failing part way: an error, and what was taken is given back. */
        alloc_log f = {0, 0, {0}, {0}, 1};
        cfg.alloc_user = &f;
        b = NULL;
        CHECK_FAIL(clt_batcher_create(ds, &cfg, &b), CLT_ERR_NO_MEMORY, "allocator returned NULL");
        CHECK(b == NULL && f.releases == f.allocs && f.allocs == 1, "after failure: %d allocs %d releases",
              f.allocs, f.releases);
    }
    clt_batcher_config cfg;
    clt_batcher_config_default(&cfg);
    CHECK(cfg.batch_size == 256 && cfg.shuffle == 1 && cfg.drop_last == 0 && cfg.seed == 0 &&
              cfg.prefetch == 1 && cfg.alloc == NULL && cfg.release == NULL,
          "defaults");
    clt_batcher *b = NULL;
    cfg.alloc = log_alloc;
    CHECK_FAIL(clt_batcher_create(ds, &cfg, &b), CLT_ERR_INVALID_ARG, "alloc and release");
    cfg.alloc = NULL;
    cfg.batch_size = 0;
    CHECK_FAIL(clt_batcher_create(ds, &cfg, &b), CLT_ERR_INVALID_ARG, "batch_size must be > 0");
    CHECK_FAIL(clt_batcher_create(NULL, &cfg, &b), CLT_ERR_INVALID_ARG, "dataset is NULL");
    CHECK_FAIL(clt_batcher_next(NULL, NULL), CLT_ERR_INVALID_ARG, "NULL");
    /* NULL config means defaults. */
    CHECK_OK(clt_batcher_create(ds, NULL, &b));
    CHECK(clt_batcher_batches_per_epoch(b) == 1, "defaults: one batch of 256 over %d", N);
    clt_batcher_destroy(b);
    clt_batcher_destroy(NULL);
}

/* Create and destroy while the worker is mid-batch, and take batches of one
 * across many epochs: shutdown and hand-over under churn. */
static void test_churn(const clt_dataset *ds)
{
    for (int i = 0; i < 200; i++) {
        clt_batcher *b = make(ds, 1 + i % 7, i & 1, i & 2, (uint64_t)i, 1);
        clt_batch bt;
        for (int k = 0; k < i % 5; k++) CHECK_OK(clt_batcher_next(b, &bt));
        if (i % 3 == 0) CHECK_OK(clt_batcher_seek(b, i, 0));
        clt_batcher_destroy(b);
    }
    clt_batcher *b = make(ds, 1, 1, 0, 9, 1);
    long sum = 0, count = 0;
    for (int e = 0; e < 50; e++) {
        clt_batch bt;
        for (;;) {
            CHECK_OK(clt_batcher_next(b, &bt));
            if (!bt.count) break;
            sum += sample_of(&bt, 0);
            count++;
        }
    }
    CHECK(count == 50L * N && sum == 50L * N * (N - 1) / 2, "50 epochs of batch 1: %ld samples, sum %ld",
          count, sum);
    clt_batcher_destroy(b);
}

int main(void)
{
    tw_mkdtemp(dir, sizeof dir, "batcher");
    tw_write_dataset(dir, 0, N, 3, ROWS, COLS);
    clt_dataset *ds = NULL;
    REQUIRE_OK(clt_dataset_load(dir, CLT_SUBSET_TRAIN, 0, &ds));
    for (int prefetch = 0; prefetch < 2; prefetch++) {
        test_file_order(ds, prefetch);
        test_shuffle(ds, prefetch);
    }
    test_prefetch_equal_and_seek(ds);
    test_allocator(ds);
    test_churn(ds);
    clt_dataset_destroy(ds);
    tw_rmtree(dir);
    return test_result();
}
