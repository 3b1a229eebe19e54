/* cltrain eval: test loss and accuracy of saved parameters, split across
 * the devices, with each class's accuracy and the confusion matrix. */
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
    {O_INIT_FROM, "evaluate these parameters (PyTorch state_dict names, e.g. 0.weight); a file\n"
                  "cltrain wrote (--export-npz) gives its model and normalisation too"},
    {O_RESUME, "evaluate this checkpoint's parameters, on its model and data unless --model\n"
               "or --data is given"},
    {O_MODEL, NULL},
    {O_DATA, NULL},
    {O_TEST_DATA, "the test set, when --data has none (an .npz of one pair, say)"},
    {O_LAYOUT, NULL},
    {O_LABEL, NULL},
    {O_IMAGE_SIZE, NULL},
    {O_CHANNELS, NULL},
    {O_NORMALIZE, "per-channel (x - M) / S after x/255 (default: the net file's); auto:\nthe training set's mean and std"},
    {O_VAL_SPLIT, "evaluate on this fraction of each class of the training set, held out\nwith --seed (default: the checkpoint's)"},
    {O_SEED, NULL},
    {O_DEVICES, NULL},
    {O_SPLIT, "how the test set is shared between devices (default equal; auto is equal here)"},
    {O_BATCH, "samples per forward pass on each device (default 256)"},
    {O_LTEST, NULL},
    {O_JSON, "one JSON object on stdout instead of the text line"},
    {O_PRECISION, NULL},
    {O_END, NULL},
};

/* The normalisation a net's file carries, for its test set (--init-from
 * without --normalize: the net trained on inputs normalised so). */
static int file_normalization(const clt_net *net, clt_dataset *test)
{
    int c;
    clt_net_input_shape(net, &c, NULL, NULL);
    float *mean = malloc(2 * (size_t)c * sizeof *mean);
    int rc = 0;
    if (!mean) {
        fprintf(stderr, "cltrain: out of memory\n");
        rc = 1;
    } else if (clt_net_normalization(net, mean, mean + c) && clt_dataset_set_normalization(test, mean, mean + c) != CLT_OK) {
        fprintf(stderr, "cltrain: --init-from: its normalisation: %s\n", clt_last_error());
        rc = 1;
    }
    free(mean);
    return rc;
}

/* Class k's name, or its index. */
static const char *class_label(const clt_net *net, int k, char *buf, size_t cap)
{
    const char *name = clt_net_class_name(net, k);
    if (name) return name;
    snprintf(buf, cap, "%d", k);
    return buf;
}

/* Row k of the confusion matrix: its samples and how many were right. */
static int64_t row_total(const int64_t *confusion, int classes, int k)
{
    int64_t sum = 0;
    for (int j = 0; j < classes; j++) sum += confusion[(size_t)k * (size_t)classes + (size_t)j];
    return sum;
}

/* Up to this many classes the terminal gets the whole matrix. */
#define MATRIX_MAX 20

static void print_text(const clt_net *net, double loss, double acc, int64_t n, const int64_t *confusion)
{
    int classes = clt_net_classes(net);
    char buf[32];
    printf("test loss %.4f, test acc %.4f on %lld samples\n", loss, acc, (long long)n);
    printf("%-24s %8s %9s\n", "class", "samples", "accuracy");
    for (int k = 0; k < classes; k++) {
        int64_t total = row_total(confusion, classes, k), right = confusion[(size_t)k * (size_t)classes + (size_t)k];
        printf("%-24.24s %8lld ", class_label(net, k, buf, sizeof buf), (long long)total);
        if (total) printf("%9.4f\n", (double)right / (double)total);
        else printf("%9s\n", "-");
    }
    if (classes > MATRIX_MAX) {
        printf("(the confusion matrix of %d classes is in --json)\n", classes);
        return;
    }
    printf("confusion matrix (rows: label, columns: predicted class)\n%6s", "");
    for (int j = 0; j < classes; j++) printf(" %6d", j);
    putchar('\n');
    for (int k = 0; k < classes; k++) {
        printf("%6d", k);
        for (int j = 0; j < classes; j++) printf(" %6lld", (long long)confusion[(size_t)k * (size_t)classes + (size_t)j]);
        putchar('\n');
    }
}

static void print_json(const clt_net *net, double loss, double acc, int64_t n, const int64_t *confusion)
{
    int classes = clt_net_classes(net);
    char buf[32];
    printf("{\"test_loss\": %.6f, \"test_acc\": %.6f, \"samples\": %lld, \"classes\": [", loss, acc, (long long)n);
    for (int k = 0; k < classes; k++) {
        if (k) fputs(", ", stdout);
        json_string(stdout, class_label(net, k, buf, sizeof buf));
    }
    fputs("], \"class_acc\": [", stdout);
    for (int k = 0; k < classes; k++) {
        int64_t total = row_total(confusion, classes, k);
        if (total) printf("%s%.6f", k ? ", " : "", (double)confusion[(size_t)k * (size_t)classes + (size_t)k] / (double)total);
        else printf("%snull", k ? ", " : "");
    }
    fputs("], \"confusion\": [", stdout);
    for (int k = 0; k < classes; k++) {
        fputs(k ? ", [" : "[", stdout);
        for (int j = 0; j < classes; j++)
            printf("%s%lld", j ? ", " : "", (long long)confusion[(size_t)k * (size_t)classes + (size_t)j]);
        putchar(']');
    }
    fputs("]}\n", stdout);
}

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
    if (o.resume && !CLI_GIVEN(&o, O_PRECISION)) o.precision = meta.precision;
    int devs[CLT_MAX_DEVICES], n_devs = 0;
    clt_dataset *test = NULL;
    clt_trainer *t = NULL;
    double loss = 0, acc = 0;
    int64_t n = 0, *confusion = NULL;
    int32_t *predicted = NULL;
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
    /* after the data and devices, as before the file named its model */
    if (o.init_from && !CLI_GIVEN(&o, O_MODEL) && run_meta_file_spec(o.init_from, "--init-from", &model)) {
        rc = 1;
        goto done;
    }
    int own = model && !CLI_GIVEN(&o, O_MODEL); /* the model the file names */
    char sized[1024]; /* --init-from a builtin: its last layer takes the data's classes, as train made it */
    const char *net = own ? model : cli_model_for_classes(o.model, clt_dataset_classes(test), sized, sizeof sized);
    if ((rc = cli_make_trainer(&o, net, own ? (o.resume ? o.resume : o.init_from) : NULL, shape, devs, n_devs, &t)))
        goto done;
    if (o.resume && clt_trainer_load_checkpoint(t, o.resume, NULL) != CLT_OK) {
        fprintf(stderr, "cltrain: --resume: %s\n", clt_last_error());
        rc = 1;
        goto done;
    }
    if (o.init_from && !CLI_GIVEN(&o, O_NORMALIZE) && (rc = file_normalization(clt_trainer_net(t, 0), test)))
        goto done;
    n = clt_dataset_size(test);
    int classes = clt_net_classes(clt_trainer_net(t, 0));
    predicted = malloc((size_t)n * sizeof *predicted);
    confusion = calloc((size_t)classes * (size_t)classes, sizeof *confusion);
    if (!predicted || !confusion) {
        fprintf(stderr, "cltrain: eval: out of memory for %lld samples of %d classes\n", (long long)n, classes);
        rc = 1;
        goto done;
    }
    if (clt_trainer_evaluate_predicted(t, test, (int)o.batch_size, &loss, &acc, predicted) != CLT_OK) {
        fprintf(stderr, "cltrain: evaluating: %s\n", clt_last_error());
        rc = 1;
        goto done;
    }
    const int32_t *labels = clt_dataset_labels(test);
    for (int64_t i = 0; i < n; i++) confusion[(size_t)labels[i] * (size_t)classes + (size_t)predicted[i]]++;
    if (o.json) print_json(clt_trainer_net(t, 0), loss, acc, n, confusion);
    else print_text(clt_trainer_net(t, 0), loss, acc, n, confusion);
done:
    free(predicted);
    free(confusion);
    clt_trainer_destroy(t);
    clt_dataset_destroy(test);
    free(model);
    free(meta.data);
    free(meta.test_data);
    free(meta.normalize);
    free(meta.augment);
    return rc;
}
