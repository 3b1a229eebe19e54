/* cltrain eval: test loss and accuracy of saved parameters, split across
 * the devices. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/json.h"
#include "options.h"
#include "runmeta.h"

/* What eval reads: the parameters, the model they fit, the test data and
 * how it is shared. Learning settings, seed and init have no effect (every
 * parameter and statistic is loaded), nor has --sync-bn (no training pass). */
static const cli_accept eval_options[] = {
    {O_INIT_FROM, "evaluate these parameters (PyTorch state_dict names, e.g. 0.weight)"},
    {O_RESUME, "evaluate this checkpoint's parameters, on its model and data unless --model\n"
               "or --data is given"},
    {O_MODEL, NULL},
    {O_DATA, NULL},
    {O_TEST_DATA, "the test set, when --data has none (an .npz of one pair, say)"},
    {O_LAYOUT, NULL},
    {O_LABEL, NULL},
    {O_IMAGE_SIZE, NULL},
    {O_CHANNELS, NULL},
    {O_NORMALIZE, "per-channel (x - M) / S after x/255 (default: the checkpoint's); auto:\nthe training set's mean and std"},
    {O_VAL_SPLIT, "evaluate on this fraction of each class of the training set, held out\nwith --seed (default: the checkpoint's)"},
    {O_SEED, NULL},
    {O_DEVICES, NULL},
    {O_SPLIT, "how the test set is shared between devices (default equal; auto is equal here)"},
    {O_BATCH, "samples per forward pass on each device (default 256)"},
    {O_LTEST, NULL},
    {O_JSON, "one JSON object on stdout instead of the text line"},
    {O_END, NULL},
};

int cli_eval(int argc, char **argv)
{
    cli_options o;
    cli_options_default(&o);
    int rc = cli_parse(&o, "eval", eval_options, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    if (!o.init_from && !o.resume) {
        fprintf(stderr, "cltrain: eval needs --init-from FILE.npz or --resume CHECKPOINT (see cltrain eval --help)\n");
        return 2;
    }
    char *model = NULL;
    run_meta meta = {0};
    /* the checkpoint names its model */
    if (o.resume && run_meta_read_checkpoint(o.resume, &model, &meta)) return 1;
    if (o.resume) /* the trainer the checkpoint came from: its optimizer state loads */
        o.learn = meta.learn, o.momentum = meta.momentum, o.weight_decay = meta.weight_decay;
    if (o.resume && !CLI_GIVEN(&o, O_DATA) && meta.data && meta.data[0]) o.data = meta.data; /* the run's test set */
    if (o.resume && !CLI_GIVEN(&o, O_TEST_DATA) && meta.test_data && meta.test_data[0]) o.test_data = meta.test_data;
    if (o.resume && !CLI_GIVEN(&o, O_LAYOUT)) o.layout = meta.layout;
    if (o.resume && !CLI_GIVEN(&o, O_LABEL)) o.coarse = meta.coarse;
    if (o.resume && !CLI_GIVEN(&o, O_NORMALIZE) && meta.normalize && meta.normalize[0]) o.normalize = meta.normalize;
    int devs[CLT_MAX_DEVICES], n_devs = 0;
    clt_dataset *test = NULL;
    clt_trainer *t = NULL;
    double loss = 0, acc = 0;
    if (o.resume && CLI_GIVEN(&o, O_VAL_SPLIT) && o.val_split != meta.val_split) {
        fprintf(stderr, "cltrain: --val-split %g differs from the checkpoint's %g (%s): the held-out samples would "
                "include trained ones\n", o.val_split, meta.val_split, o.resume);
        rc = 2;
        goto done;
    }
    /* the held-out set the run trained beside: its fraction, seed and training set */
    if (o.resume && meta.val_split > 0)
        o.val_split = meta.val_split, o.seed = meta.seed, o.limit_train = meta.limit_train;
    if (o.resume && !CLI_GIVEN(&o, O_IMAGE_SIZE)) o.image_size = meta.image_size;
    if (o.resume && !CLI_GIVEN(&o, O_CHANNELS)) o.channels = meta.channels;
    if ((rc = cli_resolve_devices(&o, devs, &n_devs))) goto done;
    char norm[4096];
    if ((rc = cli_load_run_data(&o, NULL, &test, norm, sizeof norm))) goto done;
    if (!test) {
        fprintf(stderr, "cltrain: --data %s has no test split: name the test set with --test-data\n", o.data);
        rc = 2;
        goto done;
    }
    int shape[3];
    if ((rc = cli_check_shapes(&o, NULL, test, shape))) goto done;
    int own = model && !CLI_GIVEN(&o, O_MODEL); /* the checkpoint's model */
    char sized[1024]; /* --init-from a builtin: its last layer takes the data's classes, as train made it */
    const char *net = own ? model : cli_model_for_classes(o.model, clt_dataset_classes(test), sized, sizeof sized);
    if ((rc = cli_make_trainer(&o, net, own ? o.resume : NULL, shape, devs, n_devs, &t))) goto done;
    if (o.resume && clt_trainer_load_checkpoint(t, o.resume, NULL) != CLT_OK) {
        fprintf(stderr, "cltrain: --resume: %s\n", clt_last_error());
        rc = 1;
        goto done;
    }
    if (clt_trainer_evaluate(t, test, (int)o.batch_size, &loss, &acc) != CLT_OK) {
        fprintf(stderr, "cltrain: evaluating: %s\n", clt_last_error());
        rc = 1;
        goto done;
    }
    if (o.json)
        printf("{\"test_loss\": %.6f, \"test_acc\": %.6f, \"samples\": %lld}\n", loss, acc,
               (long long)clt_dataset_size(test));
    else
        printf("test loss %.4f, test acc %.4f on %lld samples\n", loss, acc, (long long)clt_dataset_size(test));
done:
    clt_trainer_destroy(t);
    clt_dataset_destroy(test);
    free(model);
    free(meta.data);
    free(meta.test_data);
    free(meta.normalize);
    free(meta.augment);
    return rc;
}
