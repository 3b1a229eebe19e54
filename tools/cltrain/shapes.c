/* The sample shape a run's net is built for, checked before the first
 * step: a test set of another shape would otherwise fail only after a whole
 * epoch of training. */
#include <stdio.h>

#include "options.h"

int cli_check_shapes(const cli_options *o, const clt_dataset *train, const clt_dataset *test, int *shape)
{
    clt_dataset_shape(train ? train : test, &shape[0], &shape[1], &shape[2]);
    if (!train) return 0;
    int t[3];
    clt_dataset_shape(test, &t[0], &t[1], &t[2]);
    if (t[0] == shape[0] && t[1] == shape[1] && t[2] == shape[2]) return 0;
    fprintf(stderr, "cltrain: --data %s: the training samples are %dx%dx%d (channels x height x width) but the test "
            "samples are %dx%dx%d: one net cannot take both\n", o->data, shape[0], shape[1], shape[2], t[0], t[1], t[2]);
    return 1;
}
