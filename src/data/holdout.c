/* A validation set held out of a training set: the same seeded fraction of
 * every class, the rest kept, each in the source's order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "data/dataset.h"
#include "data/shuffle.h"

/* The samples of ds marked (or not) in `held`, in order, as a dataset. */
static clt_status take(const clt_dataset *ds, const uint8_t *held, int want, int64_t n, clt_dataset **out)
{
    CLT_TRY(clt_dataset_alloc(n, ds->channels, ds->height, ds->width, ds->classes, ds->u8, out));
    size_t bytes = clt_dataset_sample_size(ds) * (ds->u8 ? 1 : sizeof(float));
    for (int64_t i = 0, k = 0; i < ds->n; i++) {
        if (held[i] != want) continue;
        memcpy((uint8_t *)(*out)->pixels + (size_t)k * bytes, (const uint8_t *)ds->pixels + (size_t)i * bytes, bytes);
        (*out)->labels[k++] = ds->labels[i];
    }
    return CLT_OK;
}

clt_status clt_dataset_holdout(const clt_dataset *ds, double fraction, uint64_t seed, clt_dataset **kept,
                               clt_dataset **held_out)
{
    const char *op = "clt_dataset_holdout";
    if (!kept || !held_out) return clt_fail(CLT_ERR_INVALID_ARG, "%s: NULL argument", op);
    *kept = *held_out = NULL;
    if (!ds) return clt_fail(CLT_ERR_INVALID_ARG, "%s: dataset is NULL", op);
    if (!(fraction > 0 && fraction < 1))
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: fraction %g (between 0 and 1)", op, fraction);
    uint8_t *held = calloc((size_t)ds->n, 1);
    int64_t *members = malloc((size_t)ds->n * sizeof *members), *perm = malloc((size_t)ds->n * sizeof *perm);
    if (!held || !members || !perm) {
        free(held), free(members), free(perm);
        return clt_fail(CLT_ERR_NO_MEMORY, "%s: %lld samples", op, (long long)ds->n);
    }
    int64_t n_held = 0;
    for (int c = 0; c < ds->classes; c++) {
        int64_t m = 0;
        for (int64_t i = 0; i < ds->n; i++)
            if (ds->labels[i] == c) members[m++] = i;
        /* the class's own permutation: stream c of the seed */
        clt_shuffle_permutation(perm, m, seed, c);
        int64_t take_n = (int64_t)llround(fraction * (double)m);
        for (int64_t j = 0; j < take_n; j++) held[members[perm[j]]] = 1;
        n_held += take_n;
    }
    clt_status s = CLT_OK;
    if (n_held == 0 || n_held == ds->n)
        s = clt_fail(CLT_ERR_INVALID_ARG, "%s: a fraction of %g of %lld samples holds out %lld: nothing would be %s",
                     op, fraction, (long long)ds->n, (long long)n_held, n_held ? "left to train on" : "held out");
    if (s == CLT_OK) s = take(ds, held, 0, ds->n - n_held, kept);
    if (s == CLT_OK) s = take(ds, held, 1, n_held, held_out);
    if (s != CLT_OK) {
        clt_dataset_destroy(*kept), clt_dataset_destroy(*held_out);
        *kept = *held_out = NULL;
    }
    free(held), free(members), free(perm);
    return s;
}
