/* The data of a run, and the sample shape its net is built for, checked
 * before the first step: a test set of another shape would otherwise fail
 * only after a whole epoch of training. */
#include <stdio.h>

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

int cli_load_data(const cli_options *o, clt_subset subset, clt_dataset **out)
{
    *out = NULL;
    clt_load_options opt;
    clt_load_options_default(&opt);
    opt.layout = (clt_layout)o->layout;
    opt.coarse = o->coarse;
    opt.limit = subset == CLT_SUBSET_TRAIN ? o->limit_train : o->limit_test;
    int elsewhere = subset == CLT_SUBSET_TEST && o->test_data;
    opt.any_split = elsewhere; /* a test set given on its own is one */
    const char *source = elsewhere ? o->test_data : o->data;
    if (clt_dataset_load_with(source, subset, &opt, out) == CLT_OK) return 0;
    fprintf(stderr, "cltrain: %s: %s\n", elsewhere ? "--test-data" : "--data", clt_last_error());
    return 1;
}
