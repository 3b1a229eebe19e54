/* Minibatch iterator with double-buffered prefetch.
 *
 * Batch positions run (epoch, 0), ..., (epoch, B-1), then an end-of-epoch
 * mark (epoch, B) that needs no data, then (epoch+1, 0), ... With prefetch,
 * one worker thread fills the data-bearing positions in that order into two
 * slots; the caller takes them in the same order, so the slot it waits for is
 * always the oldest one filled. A slot the caller holds is never touched by
 * the worker until the caller's next call. Seek bumps a generation number:
 * a slot still being filled for an older generation is freed when done, so
 * both buffers serve the new position at once. Every shared field is
 * guarded by one mutex; waits use condition variables (no polling). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "data/dataset.h"
#include "core/config.h"
#include "core/error.h"
#include "data/shuffle.h"

enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_READY, SLOT_HELD };

typedef struct slot {
    float *images;
    float *spare;  /* one sample, for augmentation */
    int32_t *labels;
    int count;
    clt_status status; /* a failed fill (a lazy dataset's file): given to the caller with its detail */
    char *detail;
    int64_t epoch, index;
    uint64_t gen;
    enum slot_state state;
} slot;

struct clt_batcher {
    clt_batcher_config cfg;
    const clt_dataset *ds;
    int64_t n, per_epoch;
    size_t sample; /* floats per sample */
    int nslots;    /* 2 with prefetch, 1 without */
    slot slots[2];
    /* Owned by whichever thread fills: the worker, or the caller without
     * prefetch. */
    int64_t *perm;
    int64_t perm_epoch;
    /* The caller's position. */
    int64_t epoch, index;
    /* Shared with the worker, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t work; /* a slot was freed, a seek happened, or stop */
    pthread_cond_t ready;/* a slot became ready */
    int64_t fill_epoch, fill_index;
    uint64_t gen;
    int stop;
    int sync_init;  /* mu and the condition variables exist */
    int started;    /* the worker thread runs */
    pthread_t thread;
};

void clt_batcher_config_default(clt_batcher_config *cfg)
{
    if (!cfg) return;
    memset(cfg, 0, sizeof *cfg);
    cfg->batch_size = 256;
    cfg->shuffle = 1;
    cfg->drop_last = 0;
    cfg->seed = 0;
    cfg->prefetch = 1;
}

/* Copies batch (epoch, index) into s. Runs outside the lock. A failure
 * stays in the slot with a copy of its detail (thread-local, and this may
 * be the worker's thread) until the caller takes the batch. */
static void fill(clt_batcher *b, slot *s)
{
    int64_t bs = b->cfg.batch_size, start = s->index * bs;
    int64_t count = b->n - start < bs ? b->n - start : bs;
    if (b->cfg.shuffle && b->perm_epoch != s->epoch) {
        clt_shuffle_permutation(b->perm, b->n, b->cfg.seed, s->epoch);
        b->perm_epoch = s->epoch;
    }
    clt_augment aug = {b->cfg.augment_pad, b->cfg.augment_flip, b->cfg.seed, s->epoch};
    free(s->detail);
    s->detail = NULL;
    s->status = clt_dataset_gather(b->ds, b->cfg.shuffle ? b->perm + start : NULL, start, count, &aug, s->spare,
                                   s->images, s->labels);
    if (s->status != CLT_OK) s->detail = strdup(clt_last_error());
    s->count = (int)count;
}

static slot *find_slot(clt_batcher *b, enum slot_state state)
{
    for (int i = 0; i < b->nslots; i++)
        if (b->slots[i].state == state) return &b->slots[i];
    return NULL;
}

/* Under mu: the ready slot holding batch (epoch, index), if any. */
static slot *find_ready(clt_batcher *b, int64_t epoch, int64_t index)
{
    for (int i = 0; i < b->nslots; i++) {
        slot *s = &b->slots[i];
        if (s->state == SLOT_READY && s->epoch == epoch && s->index == index) return s;
    }
    return NULL;
}

static void *worker(void *arg)
{
    clt_batcher *b = arg;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        slot *s = NULL;
        while (!b->stop && !(b->per_epoch > 0 && (s = find_slot(b, SLOT_FREE))))
            pthread_cond_wait(&b->work, &b->mu);
        if (b->stop) break;
        s->state = SLOT_FILLING;
        s->gen = b->gen;
        s->epoch = b->fill_epoch;
        s->index = b->fill_index;
        if (++b->fill_index == b->per_epoch) { /* the end mark needs no data */
            b->fill_index = 0;
            b->fill_epoch++;
        }
        pthread_mutex_unlock(&b->mu);
        fill(b, s);
        pthread_mutex_lock(&b->mu);
        s->state = s->gen == b->gen ? SLOT_READY : SLOT_FREE;
        pthread_cond_signal(&b->ready);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

static clt_status alloc_buffer(clt_batcher *b, void **out, size_t n, size_t size, const char *what)
{
    size_t bytes;
    if (!b->cfg.alloc) return clt_aligned_alloc(out, n, size, what);
    *out = NULL;
    if (!clt_mul_size(n, size, &bytes))
        return clt_fail(CLT_ERR_NO_MEMORY, "%s: size %zu x %zu overflows", what, n, size);
    *out = b->cfg.alloc(b->cfg.alloc_user, bytes);
    if (!*out)
        return clt_fail(CLT_ERR_NO_MEMORY, "%s: the configured allocator returned NULL for %zu bytes",
                        what, bytes);
    return CLT_OK;
}

static void free_buffer(clt_batcher *b, void *p)
{
    if (!p) return;
    if (b->cfg.alloc) b->cfg.release(b->cfg.alloc_user, p);
    else clt_aligned_free(p);
}

static clt_status check_config(const clt_dataset *ds, const clt_batcher_config *cfg)
{
    if (!ds) return clt_fail(CLT_ERR_INVALID_ARG, "clt_batcher_create: dataset is NULL");
    CLT_TRY(clt_config_check_reserved(cfg->reserved, sizeof cfg->reserved, "clt_batcher_create"));
    if (cfg->batch_size <= 0)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_batcher_create: batch_size must be > 0 (got %d)",
                        cfg->batch_size);
    if (cfg->augment_pad < 0 || cfg->augment_pad > 1024 || (cfg->augment_flip != 0 && cfg->augment_flip != 1))
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_batcher_create: augment_pad %d (0..1024) or augment_flip %d (0 or 1)",
                        cfg->augment_pad, cfg->augment_flip);
    if (!cfg->alloc != !cfg->release)
        return clt_fail(CLT_ERR_INVALID_ARG,
                        "clt_batcher_create: alloc and release must both be set or both be NULL");
    return CLT_OK;
}

static clt_status setup(clt_batcher *b, const clt_dataset *ds)
{
    int c, h, w;
    clt_dataset_shape(ds, &c, &h, &w);
    b->sample = (size_t)c * (size_t)h * (size_t)w;
    b->ds = ds;
    b->n = clt_dataset_size(ds);
    int64_t bs = b->cfg.batch_size;
    b->per_epoch = b->cfg.drop_last ? b->n / bs : (b->n + bs - 1) / bs;
    b->perm_epoch = -1;
    if (b->cfg.shuffle && b->n > 0)
        CLT_TRY(clt_calloc((void **)&b->perm, (size_t)b->n, sizeof(int64_t), "batcher permutation"));
    /* A slot never needs more than the whole dataset. */
    size_t cap = (size_t)(b->n < bs ? (b->n > 0 ? b->n : 1) : bs), floats;
    if (!clt_mul_size(cap, b->sample, &floats))
        return clt_fail(CLT_ERR_NO_MEMORY, "batch buffer: size %zu x %zu overflows", cap, b->sample);
    b->nslots = b->cfg.prefetch ? 2 : 1;
    for (int i = 0; i < b->nslots; i++) {
        CLT_TRY(alloc_buffer(b, (void **)&b->slots[i].images, floats, sizeof(float), "batch images"));
        CLT_TRY(alloc_buffer(b, (void **)&b->slots[i].labels, cap, sizeof(int32_t), "batch labels"));
        if (b->cfg.augment_pad || b->cfg.augment_flip)
            CLT_TRY(clt_aligned_alloc((void **)&b->slots[i].spare, b->sample, sizeof(float), "augmentation"));
    }
    if (!b->cfg.prefetch) return CLT_OK;
    if (pthread_mutex_init(&b->mu, NULL) != 0)
        return clt_fail(CLT_ERR_INTERNAL, "batcher: cannot create a mutex");
    if (pthread_cond_init(&b->work, NULL) != 0) {
        pthread_mutex_destroy(&b->mu);
        return clt_fail(CLT_ERR_INTERNAL, "batcher: cannot create a condition variable");
    }
    if (pthread_cond_init(&b->ready, NULL) != 0) {
        pthread_cond_destroy(&b->work);
        pthread_mutex_destroy(&b->mu);
        return clt_fail(CLT_ERR_INTERNAL, "batcher: cannot create a condition variable");
    }
    b->sync_init = 1;
    int err = pthread_create(&b->thread, NULL, worker, b);
    if (err != 0)
        return clt_fail(CLT_ERR_INTERNAL, "batcher: cannot start the prefetch thread: %s",
                        strerror(err));
    b->started = 1;
    return CLT_OK;
}

clt_status clt_batcher_create(const clt_dataset *ds, const clt_batcher_config *cfg, clt_batcher **out)
{
    if (!out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_batcher_create: out is NULL");
    *out = NULL;
    clt_batcher_config defaults;
    if (!cfg) {
        clt_batcher_config_default(&defaults);
        cfg = &defaults;
    }
    CLT_TRY(check_config(ds, cfg));
    clt_batcher *b;
    CLT_TRY(clt_calloc((void **)&b, 1, sizeof *b, "batcher"));
    b->cfg = *cfg;
    clt_status s = setup(b, ds);
    if (s != CLT_OK) {
        clt_batcher_destroy(b);
        return s;
    }
    *out = b;
    return CLT_OK;
}

void clt_batcher_destroy(clt_batcher *b)
{
    if (!b) return;
    if (b->started) {
        pthread_mutex_lock(&b->mu);
        b->stop = 1;
        pthread_cond_signal(&b->work);
        pthread_mutex_unlock(&b->mu);
        pthread_join(b->thread, NULL);
    }
    if (b->sync_init) {
        pthread_cond_destroy(&b->ready);
        pthread_cond_destroy(&b->work);
        pthread_mutex_destroy(&b->mu);
    }
    for (int i = 0; i < 2; i++) {
        free_buffer(b, b->slots[i].images);
        free_buffer(b, b->slots[i].labels);
        clt_aligned_free(b->slots[i].spare);
        free(b->slots[i].detail);
    }
    free(b->perm);
    free(b);
}

int64_t clt_batcher_batches_per_epoch(const clt_batcher *b) { return b ? b->per_epoch : 0; }

/* Under mu: hands the caller's slot back to the worker. */
static void release_held(clt_batcher *b)
{
    slot *s = find_slot(b, SLOT_HELD);
    if (!s) return;
    s->state = SLOT_FREE;
    pthread_cond_signal(&b->work);
}

clt_status clt_batcher_seek(clt_batcher *b, int64_t epoch, int64_t index)
{
    if (!b) return clt_fail(CLT_ERR_INVALID_ARG, "clt_batcher_seek: batcher is NULL");
    if (epoch < 0 || index < 0 || index > b->per_epoch)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_batcher_seek: position (epoch %lld, batch %lld) out "
                        "of range (epoch >= 0, 0 <= batch <= %lld)", (long long)epoch,
                        (long long)index, (long long)b->per_epoch);
    b->epoch = epoch;
    b->index = index;
    if (!b->started) return CLT_OK;
    pthread_mutex_lock(&b->mu);
    release_held(b);
    for (int i = 0; i < b->nslots; i++)
        if (b->slots[i].state == SLOT_READY) b->slots[i].state = SLOT_FREE;
    b->gen++; /* a slot being filled now is dropped when done */
    b->fill_epoch = index < b->per_epoch ? epoch : epoch + 1;
    b->fill_index = index < b->per_epoch ? index : 0;
    pthread_cond_signal(&b->work);
    pthread_mutex_unlock(&b->mu);
    return CLT_OK;
}

clt_status clt_batcher_next(clt_batcher *b, clt_batch *batch)
{
    if (!b || !batch) return clt_fail(CLT_ERR_INVALID_ARG, "clt_batcher_next: NULL argument");
    memset(batch, 0, sizeof *batch);
    batch->epoch = b->epoch;
    batch->index = b->index;
    if (b->started) {
        pthread_mutex_lock(&b->mu);
        release_held(b);
    }
    if (b->index >= b->per_epoch) { /* end-of-epoch mark */
        if (b->started) pthread_mutex_unlock(&b->mu);
        b->epoch++;
        b->index = 0;
        return CLT_OK;
    }
    slot *s;
    if (b->started) {
        while (!(s = find_ready(b, b->epoch, b->index))) pthread_cond_wait(&b->ready, &b->mu);
        s->state = SLOT_HELD;
        pthread_mutex_unlock(&b->mu);
    } else {
        s = &b->slots[0];
        s->epoch = b->epoch;
        s->index = b->index;
        fill(b, s);
    }
    b->index++;
    if (s->status != CLT_OK) { /* the batch is taken all the same: a seek back tries it again */
        clt_status failed = clt_fail(s->status, "%s", s->detail ? s->detail : "reading a batch failed");
        if (b->started) {
            pthread_mutex_lock(&b->mu);
            release_held(b);
            pthread_mutex_unlock(&b->mu);
        }
        return failed;
    }
    batch->images = s->images;
    batch->labels = s->labels;
    batch->count = s->count;
    return CLT_OK;
}
