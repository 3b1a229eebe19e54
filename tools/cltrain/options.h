/* Options shared by cltrain's commands. */
#ifndef CLT_CLI_OPTIONS_H
#define CLT_CLI_OPTIONS_H

#include <stdint.h>

#include "cltrain.h"
#include "runmeta.h"

/* Long options; `given` records which ones the command line set. */
enum cli_opt {
    O_MODEL = 256, O_DATA, O_DEVICES, O_SPLIT, O_BATCH, O_LR, O_MOM, O_WD, O_EPOCHS, O_STEPS, O_SEED, O_INIT,
    O_LTRAIN, O_LTEST, O_NOSHUF, O_DROP, O_JSON, O_QUIET, O_CSV, O_PLOT, O_INIT_FROM, O_EXPORT, O_SAVE, O_RESUME,
    O_SYNC_BN, O_OPTIM, O_NESTEROV, O_BETAS, O_EPS, O_CLIP, O_SCHED, O_LR_STEP, O_MILESTONES, O_GAMMA, O_LR_MIN,
    O_WARM_STEPS, O_WARM_EPOCHS, O_SCALE_LR, O_SMOOTH, O_TRACE, O_TENSORBOARD, O_AGAIN, O_TEST_DATA, O_LAYOUT, O_LABEL, O_NORMALIZE,
    O_AUGMENT, O_VAL_SPLIT, O_IMAGE_SIZE, O_CHANNELS, O_TOP, O_OUTPUT, O_ONNX, O_PRECISION, O_END
};
#define CLI_GIVEN(o, opt) ((o)->given[(opt) - O_MODEL])

typedef struct cli_options {
    const char *model;
    const char *data;
    const char *test_data;  /* NULL: the test split of --data, if it has one */
    int layout;             /* clt_layout of NumPy images */
    int coarse;             /* CIFAR-100's coarse labels */
    const char *normalize;  /* NULL or "none", "auto", or "M0,M1,..:S0,S1,.." (cli_load_run_data resolves it) */
    int aug_pad, aug_flip;  /* --augment crop:P,flip */
    double val_split;       /* 0: none; else the fraction of each class held out to evaluate on */
    int64_t image_size;     /* image folders: 0, or the side images are resized and cropped to */
    int64_t channels;       /* image folders: 0 (the most any image has), 1 or 3 */
    int devices[CLT_MAX_DEVICES];
    int n_devices;          /* 0: the default selection */
    int all_devices;
    clt_split_policy split;
    float weights[CLT_MAX_DEVICES];
    int n_weights;
    int64_t batch_size, epochs, steps, seed, limit_train, limit_test;
    double lr, momentum, weight_decay;
    clt_init init;
    int shuffle, drop_last, json, quiet;
    int again;              /* tune: measure again what the cache keeps */
    int64_t top;            /* predict: classes shown per sample */
    const char *output;     /* predict: the CSV file (NULL: standard output) */
    int files_ok;           /* not an option: the command takes file arguments after the options */
    char **files;           /* those arguments (cli_parse) */
    int n_files;
    const char *log_csv;
    const char *plot;
    const char *trace; /* Chrome trace-event JSON of the steps */
    const char *tensorboard; /* the run directory of TensorBoard event files */
    const char *init_from, *export_npz, *save, *resume;
    const char *onnx;       /* export: the ONNX model to write */
    int sync_bn;
    int precision;          /* clt_precision (--precision) */
    run_learning learn;     /* optimizer, clipping, schedule (cli_check_learning) */
    void *mpi_comm;         /* not an option: the run's MPI_Comm under mpirun (world.h) */
    int rank;               /* not an option: this process's rank (0 alone); notices come from 0 */
    unsigned char given[O_END - O_MODEL];
} cli_options;

/* An option a command takes. `help` replaces the generic --help text where
 * the option means something narrower for the command (NULL: the generic). */
typedef struct cli_accept {
    enum cli_opt opt;
    const char *help;
} cli_accept;

void cli_options_default(cli_options *o);
/* --augment's text into the crop's padding and the flip; 0, or 2 after a
 * message. */
int parse_augment(const char *prog, const char *text, int *pad, int *flip);
/* The option's long name without the dashes ("batch-size"). */
const char *cli_option_name(enum cli_opt opt);
/* Parses argv (after the command word). `accepts` lists the options the
 * command takes, ended by O_END (NULL: all of them); any other is a usage
 * error, and --help lists only these. Returns 0, 2 on a usage error, or -1
 * when --help was printed. `cmd` names the command for messages. */
int cli_parse(cli_options *o, const char *cmd, const cli_accept *accepts, int argc, char **argv);
/* The optimizer and schedule options fit together (after --resume merged
 * the checkpoint's); AdamW's weight decay defaults to PyTorch's 0.01.
 * Returns 0 or 2 after a usage message. */
int cli_check_learning(cli_options *o);
/* The device list to use: the given one, all devices, or the default. */
int cli_resolve_devices(const cli_options *o, int *list, int *n);

/* The weight initialisation for the model: --init, else Xavier for
 * resnet18 (as the Gluon tutorial has it) and the default for the rest. */
clt_init cli_init_for(const cli_options *o, const char *model);
/* Creates the trainer for the options (devices resolved, model for
 * samples of shape[3] = channels, height, width) and loads --init-from;
 * prints the error and returns non-zero on failure. `model_from` names the
 * checkpoint the model was read from (NULL: --model gave it): a model that
 * does not parse is then a bad file (1), not a usage error (2). */
int cli_make_trainer(const cli_options *o, const char *model, const char *model_from, const int *shape,
                     const int *devs, int n_devs, clt_trainer **out);
/* The sample shape the net is built for, into shape[3]: train's (test's
 * when train is NULL), which the test set's must equal (a checkpoint's is
 * checked as it loads); a mismatch is printed, naming both shapes, and
 * returns 1. */
int cli_check_shapes(const cli_options *o, const clt_dataset *train, const clt_dataset *test, int *shape);
/* The run's data: the training set of --data (less what --val-split holds
 * out), and the set it is evaluated on: what --val-split held out, else
 * --test-data's, else --data's test split (NULL when it has none); with
 * --layout, --label, the limits and --normalize, whose values (measured
 * on the training set for "auto") go into norm as "M0,..:S0,.." ("" for
 * none; cap bytes) for the run record. train NULL (an evaluation): the
 * training set is read only where --val-split or --normalize auto needs
 * it. 0, 1 after a message naming the option, or 2 for a usage error. */
/* A builtin model (lenet, lenet-max, resnet18) for data of `classes`
 * classes: its spec with the last layer's 10 outputs made `classes` (into
 * buf); the model itself for 10 classes, a spec, or a full buf. */
const char *cli_model_for_classes(const char *model, int classes, char *buf, size_t cap);
/* One split of a source with the run's options (*out NULL: the source has
 * none), saying what a folder skipped and whether it decodes batch by
 * batch; 0, or 1 after a message naming `option`. */
int cli_load_split(const cli_options *o, const char *source, clt_subset subset, int any_split, int64_t limit,
                   const char *option, clt_dataset **out);
/* Gives the net (replica 0 of a trainer: what its files keep) the data's
 * normalisation and class names; 0, or 1 after a message. */
int cli_describe_net(clt_net *net, const clt_dataset *ds);
int cli_load_run_data(const cli_options *o, clt_dataset **train, clt_dataset **test, char *norm, size_t cap);
struct cli_world;
/* world: this process among an mpirun launch's (world.h). */
int cli_train(int argc, char **argv, const struct cli_world *world);
int cli_eval(int argc, char **argv);
int cli_predict(int argc, char **argv);
/* cltrain export (export.c). */
int cli_export(int argc, char **argv);
int cli_bench(int argc, char **argv, const struct cli_world *world);
/* cltrain bench ops (bench_ops.c); argv[0] is "ops". */
int cli_bench_ops(int argc, char **argv);
/* cltrain tune (tune.c). */
int cli_tune(int argc, char **argv);

#endif
