/* A validation set held out of a training set: the same seeded fraction of
 * every class, the rest kept, each in the source's order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "data/dataset.h"
#include "data/image_files.h"
#include "data/shuffle.h"

/* The samples of ds marked (or not) in `held`, in order, as a dataset with
 * ds's class names. */
static clt_status take(const clt_dataset *ds, const uint8_t *held, int want, int64_t n, clt_dataset **out)
{
    if (ds->files) { /* a lazy folder's part: its files */
        clt_image_files *files;
        CLT_TRY(clt_image_files_subset(ds->files, held, want, n, &files));
        CLT_TRY(clt_dataset_alloc_files(n, ds->channels, ds->height, ds->width, ds->classes, files, out));
    } else {
        CLT_TRY(clt_dataset_alloc(n, ds->channels, ds->height, ds->width, ds->classes, ds->u8, out));
    }
    size_t bytes = clt_dataset_sample_size(ds) * (ds->u8 ? 1 : sizeof(float));
    for (int64_t i = 0, k = 0; i < ds->n; i++) {
        if (held[i] != want) continue;
        if (!ds->files)
            memcpy((uint8_t *)(*out)->pixels + (size_t)k * bytes, (const uint8_t *)ds->pixels + (size_t)i * bytes, bytes);
        (*out)->labels[k++] = ds->labels[i];
    }
    if (ds->n_class_names) {
        (*out)->class_names = calloc((size_t)ds->n_class_names, sizeof *(*out)->class_names);
        if (!(*out)->class_names) return clt_fail(CLT_ERR_NO_MEMORY, "class names");
        (*out)->n_class_names = ds->n_class_names;
        for (int c = 0; c < ds->n_class_names; c++)
            if (!((*out)->class_names[c] = strdup(ds->class_names[c]))) return clt_fail(CLT_ERR_NO_MEMORY, "class names");
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
    /* every class's samples, in order, from one pass: counts, then offsets */
    uint8_t *held = calloc((size_t)ds->n, 1);
    int64_t *members = malloc((size_t)ds->n * sizeof *members), *perm = malloc((size_t)ds->n * sizeof *perm);
    int64_t *start = calloc((size_t)ds->classes + 1, sizeof *start), *fill = calloc((size_t)ds->classes, sizeof *fill);
    if (!held || !members || !perm || !start || !fill) {
        free(held), free(members), free(perm), free(start), free(fill);
        return clt_fail(CLT_ERR_NO_MEMORY, "%s: %lld samples", op, (long long)ds->n);
    }
    for (int64_t i = 0; i < ds->n; i++) start[ds->labels[i] + 1]++;
    for (int c = 0; c < ds->classes; c++) start[c + 1] += start[c];
    for (int64_t i = 0; i < ds->n; i++) members[start[ds->labels[i]] + fill[ds->labels[i]]++] = i;
    int64_t n_held = 0;
    for (int c = 0; c < ds->classes; c++) {
        int64_t m = start[c + 1] - start[c];
        if (m == 0) continue;
        /* the class's own permutation: stream c of the seed */
        clt_shuffle_permutation(perm, m, seed, c);
        int64_t take_n = (int64_t)llround(fraction * (double)m);
        for (int64_t j = 0; j < take_n; j++) held[members[start[c] + perm[j]]] = 1;
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
    free(held), free(members), free(perm), free(start), free(fill);
    return s;
}
