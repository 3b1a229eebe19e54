/* The data of a run, and the sample shape its net is built for, checked
 * before the first step: a test set of another shape would otherwise fail
 * only after a whole epoch of training. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/model.h"
#include "options.h"

int cli_check_shapes(const cli_options *o, const clt_dataset *train, const clt_dataset *test, int *shape)
{
    clt_dataset_shape(train ? train : test, &shape[0], &shape[1], &shape[2]);
    if (!train || !test) return 0;
    int t[3];
    clt_dataset_shape(test, &t[0], &t[1], &t[2]);
    if (t[0] == shape[0] && t[1] == shape[1] && t[2] == shape[2]) return 0;
    fprintf(stderr, "cltrain: --data %s: the training samples are %dx%dx%d (channels x height x width) but the test "
            "samples are %dx%dx%d: one net cannot take both\n", o->data, shape[0], shape[1], shape[2], t[0], t[1], t[2]);
    return 1;
}

int cli_load_split(const cli_options *o, const char *source, clt_subset subset, int any_split, int64_t limit,
                const char *option, clt_dataset **out)
{
    clt_load_options opt;
    clt_load_options_default(&opt);
    opt.layout = (clt_layout)o->layout;
    opt.coarse = o->coarse;
    opt.limit = limit;
    opt.any_split = any_split;
    opt.image_size = (int)o->image_size;
    opt.channels = (int)o->channels;
    if (clt_dataset_load_with(source, subset, &opt, out) == CLT_OK) {
        int64_t skipped = clt_dataset_skipped_files(*out);
        if (skipped && o->rank == 0)
            fprintf(stderr, "cltrain: %s %s: %lld file(s) that are not .png, .jpg or .jpeg skipped\n", option, source,
                    (long long)skipped);
        if (*out && clt_dataset_decodes_files(*out) && o->rank == 0)
            fprintf(stderr, "cltrain: %s %s: %lld images decoded batch by batch as they are read (too many to hold "
                    "decoded; CLTRAIN_DATA_DECODE=eager holds them)\n", option, source,
                    (long long)clt_dataset_size(*out));
        return 0;
    }
    fprintf(stderr, "cltrain: %s: %s\n", option, clt_last_error());
    return 1;
}

/* --normalize's values for ds's channels into mean and std (explicit, or
 * measured for "auto"); 0, 2 after a usage message. */
static int normalization(const cli_options *o, const clt_dataset *ds, int c, float *mean, float *std)
{
    if (!strcmp(o->normalize, "auto")) {
        double *m = malloc(2 * (size_t)c * sizeof *m);
        if (!m || clt_dataset_channel_stats(ds, m, m + c) != CLT_OK) {
            fprintf(stderr, "cltrain: --normalize auto: %s\n", m ? clt_last_error() : "out of memory");
            free(m);
            return 1;
        }
        for (int k = 0; k < c; k++) mean[k] = (float)m[k], std[k] = (float)m[c + k];
        free(m);
        return 0;
    }
    const char *p = o->normalize;
    char *end;
    for (int k = 0; k < 2 * c; k++) {
        float v = strtof(p, &end);
        char want = k == c - 1 ? ':' : k == 2 * c - 1 ? 0 : ',';
        if (end == p || *end != want) {
            fprintf(stderr, "cltrain: --normalize %s: none, auto, or %d means and %d standard deviations as "
                    "M0,..:S0,.. for the data's %d channel(s)\n", o->normalize, c, c, c);
            return 2;
        }
        (k < c ? mean : std)[k % c] = v;
        p = end + (want != 0);
    }
    return 0;
}

int cli_load_run_data(const cli_options *o, clt_dataset **train, clt_dataset **test, char *norm, size_t cap)
{
    *test = NULL;
    norm[0] = 0;
    int auto_norm = o->normalize && !strcmp(o->normalize, "auto");
    /* train NULL (an evaluation): the training set only where it decides */
    clt_dataset *own = NULL;
    if (!train && (o->val_split > 0 || auto_norm)) train = &own;
    int rc = 0;
    if (train) *train = NULL;
    if (o->val_split > 0 && o->test_data) {
        fprintf(stderr, "cltrain: --val-split and --test-data: evaluate on one of them\n");
        return 2;
    }
    if (train) rc = cli_load_split(o, o->data, CLT_SUBSET_TRAIN, 0, o->limit_train, "--data", train);
    if (!rc && o->val_split > 0) {
        clt_dataset *kept, *held;
        if (clt_dataset_holdout(*train, o->val_split, (uint64_t)o->seed, &kept, &held) != CLT_OK) {
            fprintf(stderr, "cltrain: --val-split %g: %s\n", o->val_split, clt_last_error());
            rc = 1;
        } else {
            clt_dataset_destroy(*train);
            *train = kept, *test = held;
        }
    } else if (!rc) {
        const char *source = o->test_data ? o->test_data : o->data;
        rc = cli_load_split(o, source, CLT_SUBSET_TEST, o->test_data != NULL, o->limit_test,
                  o->test_data ? "--test-data" : "--data", test);
        if (!rc && o->test_data && !*test) {
            fprintf(stderr, "cltrain: --test-data %s: no samples found there\n", o->test_data);
            rc = 1;
        }
    }
    if (rc || !o->normalize || !strcmp(o->normalize, "none") || (!train && !*test)) {
        clt_dataset_destroy(own);
        return rc;
    }
    const clt_dataset *measured = train ? *train : *test;
    int c;
    clt_dataset_shape(measured, &c, NULL, NULL);
    float *mean = malloc(2 * (size_t)c * sizeof *mean), *std = mean ? mean + c : NULL;
    if (!mean) {
        clt_dataset_destroy(own);
        fprintf(stderr, "cltrain: --normalize: out of memory\n");
        return 1;
    }
    rc = normalization(o, measured, c, mean, std);
    if (!rc && ((train && clt_dataset_set_normalization(*train, mean, std) != CLT_OK) ||
                (*test && clt_dataset_set_normalization(*test, mean, std) != CLT_OK))) {
        fprintf(stderr, "cltrain: --normalize %s: %s\n", o->normalize, clt_last_error());
        rc = 2;
    }
    /* the values as the record keeps them: float32 round-trips in %.9g */
    for (int k = 0, at = 0; !rc && k < 2 * c; k++) {
        int w = snprintf(norm + at, cap - (size_t)at, "%s%.9g", k == 0 ? "" : k == c ? ":" : ",",
                         (double)(k < c ? mean[k] : std[k - c]));
        if (w < 0 || (size_t)w >= cap - (size_t)at) {
            fprintf(stderr, "cltrain: --normalize: %d channels are more than the run record keeps\n", c);
            rc = 2;
        }
        at += w > 0 ? w : 0;
    }
    free(mean);
    clt_dataset_destroy(own);
    return rc;
}

const char *cli_model_for_classes(const char *model, int classes, char *buf, size_t cap)
{
    const char *spec = clt_model_builtin(model);
    const char *tail = ",dense:10";
    size_t n = spec ? strlen(spec) : 0, t = strlen(tail);
    if (!spec || classes < 1 || classes == 10 || n < t || strcmp(spec + n - t, tail) != 0) return model;
    if (snprintf(buf, cap, "%.*s,dense:%d", (int)(n - t), spec, classes) >= (int)cap) return model;
    return buf;
}

int cli_describe_net(clt_net *net, const clt_dataset *ds)
{
    int c, k = clt_net_classes(net);
    clt_dataset_shape(ds, &c, NULL, NULL);
    float *mean = malloc(2 * (size_t)c * sizeof *mean);
    const char **names = calloc((size_t)k, sizeof *names);
    if (!mean || !names) {
        free(mean);
        free(names);
        fprintf(stderr, "cltrain: out of memory\n");
        return 1;
    }
    int has = clt_dataset_normalization(ds, mean, mean + c), named = clt_dataset_classes(ds) == k;
    for (int i = 0; i < k && named; i++) named = (names[i] = clt_dataset_class_name(ds, i)) != NULL;
    int rc = 0;
    if (clt_net_set_normalization(net, has ? mean : NULL, has ? mean + c : NULL) != CLT_OK ||
        clt_net_set_class_names(net, named ? names : NULL) != CLT_OK) {
        fprintf(stderr, "cltrain: the data's %s cannot go with the net: %s\n", has ? "normalisation or class names" :
                "class names", clt_last_error());
        rc = 1;
    }
    free(mean);
    free(names);
    return rc;
}
