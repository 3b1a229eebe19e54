#include "options.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/args.h"
#include "cltrain_diag.h"
#include "ranges.h"
#include "optim/optim.h"
#include "optim/schedule.h"

void cli_options_default(cli_options *o)
{
    memset(o, 0, sizeof *o);
    o->model = "lenet";
    o->data = "fashion-mnist";
    o->split = CLT_SPLIT_EQUAL;
    o->batch_size = 256;
    o->epochs = 10;
    o->lr = 0.2;
    o->init = CLT_INIT_NORMAL;
    o->shuffle = 1;
    run_learning_default(&o->learn);
}

/* One row per option, in --help order: it drives getopt, --help and which
 * command takes what. `arg` names the value (NULL: a flag); a '\n' in
 * `help` goes on under the descriptions. */
typedef struct cli_row {
    enum cli_opt opt;
    const char *name, *arg, *help;
} cli_row;

static const cli_row rows[] = {
    {O_MODEL, "model", "NAME|SPEC",
     "builtin (lenet, lenet-max, resnet18) or layer spec such as\n"
     "conv:20:3,relu,avgpool:2,flatten,dense:10 (default lenet)"},
    {O_DATA, "data", "NAME|DIR|FILE.npz",
     "fashion-mnist, mnist, a directory of IDX files, of CIFAR-10/100 binary files,\n"
     "of train.npz and test.npz or of {train,test}_{images,labels}.npy, or an .npz\n"
     "(default fashion-mnist)"},
    {O_TEST_DATA, "test-data", "DIR|FILE.npz", "the test set from elsewhere (default: --data's test split;\nwithout one, no test accuracy)"},
    {O_LAYOUT, "layout", "auto|nchw|nhwc", "where 4-D NumPy images keep their channels (default auto:\na last axis of 1, 3 or 4 is channels-last)"},
    {O_LABEL, "label", "fine|coarse", "CIFAR-100's 100 fine or 20 coarse classes (default fine)"},
    {O_IMAGE_SIZE, "image-size", "S", "image folders: the shorter side resized to S (bilinear), then the\ncentre S x S (default: all images must have one size)"},
    {O_CHANNELS, "channels", "N", "image folders: 1 (grey) or 3 (RGB) (default: the most any image has)"},
    {O_NORMALIZE, "normalize", "none|auto|M,..:S,..", "per-channel (x - M) / S after x/255; auto: the training set's\nmean and std (default none)"},
    {O_AUGMENT, "augment", "none|crop:P[,flip]|flip", "training only: a random crop after P pixels of zero padding,\nand a random horizontal flip (default none)"},
    {O_VAL_SPLIT, "val-split", "F", "hold out fraction F of each class of the training set and\nevaluate on it (default: the test set)"},
    {O_DEVICES, "devices", "LIST|all", "device indices as cltrain-smi numbers them (default: all GPUs, else all CPUs)"},
    {O_SPLIT, "split", "equal|auto|W0,W1,...", "how a batch is shared between devices (default equal)"},
    {O_BATCH, "batch-size", "N", "samples per optimizer step over all devices (default 256)"},
    {O_LR, "lr", "X", "learning rate (default 0.2)"},
    {O_MOM, "momentum", "X", "SGD momentum (default 0)"},
    {O_WD, "weight-decay", "X", "weight decay: L2 for sgd and adam, decoupled for adamw\n(default 0; adamw 0.01)"},
    {O_OPTIM, "optimizer", "sgd|adam|adamw", "optimizer, PyTorch's semantics (default sgd)"},
    {O_NESTEROV, "nesterov", NULL, "Nesterov momentum (sgd with --momentum > 0)"},
    {O_BETAS, "betas", "B1,B2", "adam/adamw moment decay rates (default 0.9,0.999)"},
    {O_EPS, "eps", "E", "adam/adamw denominator term (default 1e-8)"},
    {O_CLIP, "clip-grad-norm", "X", "scale the gradient to global L2 norm at most X (default: no clipping)"},
    {O_SMOOTH, "label-smoothing", "E", "cross-entropy against (1-E) one-hot + E uniform (default 0)"},
    {O_SCHED, "lr-schedule", "constant|step|multistep|cosine", "learning-rate schedule, evaluated every step (default constant)"},
    {O_LR_STEP, "lr-step", "EPOCHS", "step schedule: multiply the rate by --lr-gamma every EPOCHS epochs"},
    {O_MILESTONES, "lr-milestones", "E1,E2,...", "multistep schedule: multiply by --lr-gamma after epochs E1, E2, ..."},
    {O_GAMMA, "lr-gamma", "G", "step and multistep decay factor (default 0.1)"},
    {O_LR_MIN, "lr-min", "X", "cosine schedule: the rate at the last step (default 0)"},
    {O_WARM_STEPS, "warmup-steps", "N", "linear warmup: step i of the first N runs at (i+1)/N of the rate"},
    {O_WARM_EPOCHS, "warmup-epochs", "N", "linear warmup over the first N epochs"},
    {O_SCALE_LR, "scale-lr", NULL, "linear scaling rule: --lr (and --lr-min) times the number of devices"},
    {O_EPOCHS, "epochs", "N", "epochs (default 10)"},
    {O_STEPS, "steps", "N", "stop after N optimizer steps in total (overrides --epochs)"},
    {O_SEED, "seed", "N", "initialisation and shuffling seed (default 0)"},
    {O_INIT, "init", "normal|xavier", "weight initialisation (default normal: N(0, 0.01^2); xavier for resnet18)"},
    {O_LTRAIN, "limit-train", "N", "use the first N training samples (default all)"},
    {O_LTEST, "limit-test", "N", "use the first N test samples (default all)"},
    {O_NOSHUF, "no-shuffle", NULL, "file order instead of a shuffled order per epoch"},
    {O_DROP, "drop-last", NULL, "drop the last partial batch of each epoch"},
    {O_CSV, "log-csv", "FILE", "append one CSV line per epoch"},
    {O_PLOT, "plot", "FILE.svg", "loss and accuracy curves as an SVG, rewritten each epoch"},
    {O_TRACE, "trace", "FILE.json", "a trace of the steps (Chrome trace-event JSON: Perfetto, chrome://tracing)"},
    {O_TENSORBOARD, "tensorboard", "DIR", "TensorBoard event files in DIR (one run per directory; --resume\ncontinues them): per epoch the losses, accuracies, rate and\nsamples/s, per step the training loss"},
    {O_INIT_FROM, "init-from", "FILE.npz", "start from these parameters (PyTorch state_dict names, e.g. 0.weight)"},
    {O_EXPORT, "export-npz", "FILE.npz", "write the parameters at the end (numpy.load reads them)"},
    {O_SAVE, "save", "FILE", "checkpoint at each epoch end, at the end, and on Ctrl-C"},
    {O_RESUME, "resume", "FILE", "continue a checkpointed run exactly where it stopped"},
    {O_ONNX, "onnx", "FILE.onnx", "write the net's inference graph as an ONNX model (opset 17)"},
    {O_SYNC_BN, "sync-bn", NULL, "batch norm over the whole batch across devices (default: per device)"},
    {O_PRECISION, "precision", "tf32|fp32", "convolutions: tf32 on NVIDIA GPUs' tensor cores where the device passed\n"
                                            "its probe, as PyTorch's default, else fp32; fp32: full fp32 always\n"
                                            "(default tf32; dense layers are fp32 either way)"},
    {O_JSON, "json", NULL, "one JSON object per epoch on stdout instead of the text line"},
    {O_QUIET, "quiet", NULL, "no progress bar and no per-epoch line"},
    {O_AGAIN, "again", NULL, "measure again the shapes the cache already keeps, replacing their choices"},
    {O_TOP, "top", "K", "the K most likely classes of each sample, with their probabilities (default 1)"},
    {O_OUTPUT, "output", "FILE.csv", "write the predictions to FILE (atomically) instead of standard output"},
};
#define N_ROWS (sizeof rows / sizeof rows[0])
_Static_assert(N_ROWS == O_END - O_MODEL, "one row per enum cli_opt");

enum { HELP_COLUMN = 25 };

static const cli_row *row_of(int opt)
{
    for (size_t i = 0; i < N_ROWS; i++)
        if ((int)rows[i].opt == opt) return &rows[i];
    return NULL;
}

const char *cli_option_name(enum cli_opt opt)
{
    const cli_row *r = row_of(opt);
    return r ? r->name : "?";
}

/* Options only the commands whose accept list names them take (train,
 * which passes none, takes every other option). */
static int listed_only(enum cli_opt opt) { return opt == O_AGAIN || opt == O_TOP || opt == O_OUTPUT || opt == O_ONNX; }

/* Whether the command takes the option; *help (if not NULL) gets the text
 * to show for it. */
static int takes(const cli_accept *accepts, const cli_row *r, const char **help)
{
    const char *text = r->help;
    int found = !accepts && !listed_only(r->opt);
    for (; accepts && !found && accepts->opt != O_END; accepts++)
        if (accepts->opt == r->opt) {
            found = 1;
            if (accepts->help) text = accepts->help;
        }
    if (help) *help = text;
    return found;
}

static void help(const char *cmd, const cli_accept *accepts)
{
    printf("Usage: cltrain %s [options]\n\n", cmd);
    for (size_t i = 0; i < N_ROWS; i++) {
        const char *text;
        if (!takes(accepts, &rows[i], &text)) continue;
        int w = printf("  --%s%s%s", rows[i].name, rows[i].arg ? " " : "", rows[i].arg ? rows[i].arg : "");
        printf("%*s", w < HELP_COLUMN - 1 ? HELP_COLUMN - w : 2, "");
        for (; *text; text++)
            if (*text == '\n') printf("\n%*s", HELP_COLUMN, "");
            else putchar(*text);
        const opt_range *range = opt_range_of(rows[i].opt);
        char span[64];
        if (range) /* a list's arg names its values: each lies in the range */
            printf("; %s in %s", strchr(rows[i].arg, ',') ? "each" : rows[i].arg, opt_range_text(range, span, sizeof span));
        putchar('\n');
    }
    printf("  %-*s%s\n", HELP_COLUMN - 2, "-h, --help", "this help");
}

/* --betas B1,B2: two numbers, each in --betas' range. */
static int arg_betas(const char *prog, const char *text, double *b1, double *b2)
{
    char buf[128];
    if (strlen(text) >= sizeof buf) return usage_error(prog, "--betas: \"%.40s...\" is too long", text);
    strcpy(buf, text);
    char *comma = strchr(buf, ',');
    if (!comma || strchr(comma + 1, ','))
        return usage_error(prog, "--betas: \"%s\" is not two values B1,B2", text);
    *comma = 0;
    double b[2];
    if (opt_parse_number(O_BETAS, buf, &b[0]) || opt_parse_number(O_BETAS, comma + 1, &b[1])) return 2;
    *b1 = b[0], *b2 = b[1];
    return 0;
}

/* --lr-milestones E1,E2,...: increasing epochs >= 1. */
static int arg_milestones(const char *prog, const char *text, int64_t *list, int *n)
{
    *n = 0;
    char buf[512];
    if (strlen(text) >= sizeof buf) return usage_error(prog, "--lr-milestones: list too long");
    strcpy(buf, text);
    size_t len = strlen(buf);
    if (strstr(buf, ",,") || (len && (buf[0] == ',' || buf[len - 1] == ',')))
        return usage_error(prog, "--lr-milestones: \"%s\" has an empty entry", text);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n == CLT_SCHEDULE_MILESTONES)
            return usage_error(prog, "--lr-milestones: more than %d milestones", CLT_SCHEDULE_MILESTONES);
        if (opt_parse_int(O_MILESTONES, tok, &list[*n])) return 2;
        if (*n && list[*n] <= list[*n - 1])
            return usage_error(prog, "--lr-milestones: %lld does not come after %lld (epochs must increase)",
                               (long long)list[*n], (long long)list[*n - 1]);
        (*n)++;
    }
    if (*n == 0) return usage_error(prog, "--lr-milestones: \"%s\" names no epoch", text);
    return 0;
}

int cli_check_learning(cli_options *o)
{
    const char *prog = "cltrain";
    int sgd = o->learn.optimizer == CLT_OPTIMIZER_SGD;
    const char *name = clt_optim_find(o->learn.optimizer)->name;
    if (!sgd && (o->momentum > 0 || o->learn.nesterov))
        return usage_error(prog, "%s applies to --optimizer sgd, not %s (it has --betas)",
                           o->momentum > 0 ? "--momentum" : "--nesterov", name);
    if (o->learn.nesterov && !(o->momentum > 0)) return usage_error(prog, "--nesterov needs --momentum > 0");
    if (sgd && (CLI_GIVEN(o, O_BETAS) || CLI_GIVEN(o, O_EPS)))
        return usage_error(prog, "%s applies to --optimizer adam or adamw, not sgd",
                           CLI_GIVEN(o, O_BETAS) ? "--betas" : "--eps");
    if (o->learn.optimizer == CLT_OPTIMIZER_ADAMW && !CLI_GIVEN(o, O_WD) && !o->resume) o->weight_decay = 0.01;
    static const struct {
        int opt, schedule;
        const char *name;
    } only[] = {{O_LR_STEP, CLT_SCHEDULE_STEP, "--lr-step"},
                {O_MILESTONES, CLT_SCHEDULE_MULTISTEP, "--lr-milestones"},
                {O_LR_MIN, CLT_SCHEDULE_COSINE, "--lr-min"}};
    for (size_t i = 0; i < sizeof only / sizeof only[0]; i++) {
        if (CLI_GIVEN(o, only[i].opt) && o->learn.lr_schedule != only[i].schedule)
            return usage_error(prog, "%s applies to --lr-schedule %s, not %s", only[i].name, clt_schedule_name(only[i].schedule),
                               clt_schedule_name(o->learn.lr_schedule));
    }
    if (CLI_GIVEN(o, O_GAMMA) && o->learn.lr_schedule != CLT_SCHEDULE_STEP && o->learn.lr_schedule != CLT_SCHEDULE_MULTISTEP)
        return usage_error(prog, "--lr-gamma applies to --lr-schedule step or multistep, not %s", clt_schedule_name(o->learn.lr_schedule));
    if (o->learn.lr_schedule == CLT_SCHEDULE_STEP && o->learn.lr_step < 1)
        return usage_error(prog, "--lr-schedule step needs --lr-step EPOCHS");
    if (o->learn.lr_schedule == CLT_SCHEDULE_MULTISTEP && o->learn.n_milestones < 1)
        return usage_error(prog, "--lr-schedule multistep needs --lr-milestones E1,E2,...");
    if (o->learn.lr_schedule == CLT_SCHEDULE_COSINE && o->learn.lr_min > o->lr)
        return usage_error(prog, "--lr-min %g is above --lr %g", o->learn.lr_min, o->lr);
    if (o->learn.warmup_steps && o->learn.warmup_epochs)
        return usage_error(prog, "--warmup-steps and --warmup-epochs exclude each other");
    return 0;
}

int parse_augment(const char *prog, const char *text, int *pad, int *flip)
{
    *pad = 0, *flip = 0;
    if (!strcmp(text, "none")) return 0;
    char *end;
    if (!strncmp(text, "crop:", 5)) {
        long p = strtol(text + 5, &end, 10);
        if (end == text + 5 || p < 1 || p > 1024 || (*end && strcmp(end, ",flip"))) {
            fprintf(stderr, "%s: --augment %s: crop:P with P in 1..1024, optionally followed by ,flip\n", prog, text);
            return 2;
        }
        *pad = (int)p;
        *flip = *end != 0;
        return 0;
    }
    if (!strcmp(text, "flip")) {
        *flip = 1;
        return 0;
    }
    fprintf(stderr, "%s: --augment %s: none, crop:P, crop:P,flip or flip\n", prog, text);
    return 2;
}

int cli_parse(cli_options *o, const char *cmd, const cli_accept *accepts, int argc, char **argv)
{
    struct option longs[N_ROWS + 2];
    for (size_t i = 0; i < N_ROWS; i++)
        longs[i] = (struct option){rows[i].name, rows[i].arg ? required_argument : no_argument, NULL, rows[i].opt};
    longs[N_ROWS] = (struct option){"help", no_argument, NULL, 'h'};
    longs[N_ROWS + 1] = (struct option){NULL, 0, NULL, 0};
    const char *prog = "cltrain";
    int rc = 0;
    optind = 1;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, ":h", longs, NULL);
        if (c == -1) break;
        /* with a missing or unwanted value, optopt still names the option */
        const cli_row *r = row_of(c == ':' || c == '?' ? optopt : c);
        if (r && !takes(accepts, r, NULL)) {
            fprintf(stderr, "%s: --%s does not apply to cltrain %s (see cltrain %s --help)\n", prog, r->name, cmd, cmd);
            return 2;
        }
        if (c >= O_MODEL && c < O_END) o->given[c - O_MODEL] = 1;
        switch (c) {
        case O_MODEL: o->model = optarg; break;
        case O_DATA: o->data = optarg; break;
        case O_TEST_DATA: o->test_data = optarg; break;
        case O_LAYOUT:
            if (!strcmp(optarg, "auto")) o->layout = CLT_LAYOUT_AUTO;
            else if (!strcmp(optarg, "nchw")) o->layout = CLT_LAYOUT_NCHW;
            else if (!strcmp(optarg, "nhwc")) o->layout = CLT_LAYOUT_NHWC;
            else {
                fprintf(stderr, "%s: --layout %s: auto, nchw or nhwc\n", prog, optarg);
                rc = 2;
            }
            break;
        case O_NORMALIZE: o->normalize = optarg; break;
        case O_AUGMENT: rc = parse_augment(prog, optarg, &o->aug_pad, &o->aug_flip); break;
        case O_IMAGE_SIZE: rc = opt_parse_int(O_IMAGE_SIZE, optarg, &o->image_size); break;
        case O_CHANNELS:
            rc = opt_parse_int(O_CHANNELS, optarg, &o->channels);
            if (!rc && o->channels == 2) {
                fprintf(stderr, "%s: --channels 2: 1 (grey) or 3 (RGB)\n", prog);
                rc = 2;
            }
            break;
        case O_VAL_SPLIT: rc = opt_parse_number(O_VAL_SPLIT, optarg, &o->val_split); break;
        case O_LABEL:
            if (!strcmp(optarg, "fine") || !strcmp(optarg, "coarse")) o->coarse = !strcmp(optarg, "coarse");
            else {
                fprintf(stderr, "%s: --label %s: fine or coarse (CIFAR-100)\n", prog, optarg);
                rc = 2;
            }
            break;
        case O_DEVICES: rc = arg_devices(prog, "--devices", optarg, o->devices, CLT_MAX_DEVICES, &o->n_devices, &o->all_devices); break;
        case O_SPLIT:
            if (!strcmp(optarg, "equal")) o->split = CLT_SPLIT_EQUAL;
            else if (!strcmp(optarg, "auto")) o->split = CLT_SPLIT_AUTO;
            else {
                o->split = CLT_SPLIT_WEIGHTS;
                rc = arg_floats(prog, "--split", optarg, o->weights, CLT_MAX_DEVICES, &o->n_weights);
            }
            break;
        case O_BATCH: rc = opt_parse_int(O_BATCH, optarg, &o->batch_size); break;
        case O_LR: rc = opt_parse_number(O_LR, optarg, &o->lr); break;
        case O_MOM: rc = opt_parse_number(O_MOM, optarg, &o->momentum); break;
        case O_WD: rc = opt_parse_number(O_WD, optarg, &o->weight_decay); break;
        case O_EPOCHS: rc = opt_parse_int(O_EPOCHS, optarg, &o->epochs); break;
        case O_STEPS: rc = opt_parse_int(O_STEPS, optarg, &o->steps); break;
        case O_SEED: rc = opt_parse_int(O_SEED, optarg, &o->seed); break;
        case O_INIT:
            if (!strcmp(optarg, "normal")) o->init = CLT_INIT_NORMAL;
            else if (!strcmp(optarg, "xavier")) o->init = CLT_INIT_XAVIER;
            else rc = usage_error(prog, "--init: \"%s\" is not normal or xavier", optarg);
            break;
        case O_LTRAIN: rc = opt_parse_int(O_LTRAIN, optarg, &o->limit_train); break;
        case O_LTEST: rc = opt_parse_int(O_LTEST, optarg, &o->limit_test); break;
        case O_NOSHUF: o->shuffle = 0; break;
        case O_DROP: o->drop_last = 1; break;
        case O_JSON: o->json = 1; break;
        case O_QUIET: o->quiet = 1; break;
        case O_AGAIN: o->again = 1; break;
        case O_CSV: o->log_csv = optarg; break;
        case O_PLOT: o->plot = optarg; break;
        case O_TRACE: o->trace = optarg; break;
        case O_TENSORBOARD: o->tensorboard = optarg; break;
        case O_INIT_FROM: o->init_from = optarg; break;
        case O_EXPORT: o->export_npz = optarg; break;
        case O_SAVE: o->save = optarg; break;
        case O_RESUME: o->resume = optarg; break;
        case O_ONNX: o->onnx = optarg; break;
        case O_SYNC_BN: o->sync_bn = 1; break;
        case O_PRECISION:
            if (!strcmp(optarg, "tf32") || !strcmp(optarg, "fp32"))
                o->precision = !strcmp(optarg, "fp32") ? CLT_PRECISION_FP32 : CLT_PRECISION_DEFAULT;
            else rc = usage_error(prog, "--precision: \"%s\" is not tf32 or fp32", optarg);
            break;
        case O_OPTIM:
            if (clt_optim_named(optarg) < 0) rc = usage_error(prog, "--optimizer: \"%s\" is not sgd, adam or adamw", optarg);
            else o->learn.optimizer = (clt_optimizer)clt_optim_named(optarg);
            break;
        case O_NESTEROV: o->learn.nesterov = 1; break;
        case O_BETAS: rc = arg_betas(prog, optarg, &o->learn.beta1, &o->learn.beta2); break;
        case O_EPS: rc = opt_parse_number(O_EPS, optarg, &o->learn.eps); break;
        case O_CLIP: rc = opt_parse_number(O_CLIP, optarg, &o->learn.clip_grad_norm); break;
        case O_SCHED:
            o->learn.lr_schedule = clt_schedule_named(optarg);
            if (o->learn.lr_schedule < 0)
                rc = usage_error(prog, "--lr-schedule: \"%s\" is not constant, step, multistep or cosine", optarg);
            break;
        case O_LR_STEP: rc = opt_parse_int(O_LR_STEP, optarg, &o->learn.lr_step); break;
        case O_MILESTONES: rc = arg_milestones(prog, optarg, o->learn.milestones, &o->learn.n_milestones); break;
        case O_GAMMA: rc = opt_parse_number(O_GAMMA, optarg, &o->learn.lr_gamma); break;
        case O_LR_MIN: rc = opt_parse_number(O_LR_MIN, optarg, &o->learn.lr_min); break;
        case O_WARM_STEPS: rc = opt_parse_int(O_WARM_STEPS, optarg, &o->learn.warmup_steps); break;
        case O_WARM_EPOCHS: rc = opt_parse_int(O_WARM_EPOCHS, optarg, &o->learn.warmup_epochs); break;
        case O_SCALE_LR: o->learn.scale_lr = 1; break;
        case O_TOP: rc = opt_parse_int(O_TOP, optarg, &o->top); break;
        case O_OUTPUT: o->output = optarg; break;
        case O_SMOOTH: rc = opt_parse_number(O_SMOOTH, optarg, &o->learn.label_smoothing); break;
        case 'h': help(cmd, accepts); return -1;
        case ':': return usage_error(prog, "option %s needs a value", argv[optind - 1]);
        default: return usage_error(prog, "unknown option \"%s\" for cltrain %s", argv[optind - 1], cmd);
        }
        if (rc) return rc;
    }
    if (optind < argc && !o->files_ok) return usage_error(prog, "unexpected argument \"%s\"", argv[optind]);
    o->files = argv + optind;
    o->n_files = argc - optind;
    if (o->init_from && o->resume) return usage_error(prog, "--init-from and --resume exclude each other");
    if (o->split == CLT_SPLIT_WEIGHTS) {
        int n = o->n_devices;
        if (n == 0 && !o->all_devices)
            return usage_error(prog, "--split with weights needs --devices naming as many devices (or all)");
        if (n && n != o->n_weights)
            return usage_error(prog, "--split gives %d weights for %d devices", o->n_weights, n);
        float sum = 0;
        for (int i = 0; i < o->n_weights; i++) sum += o->weights[i];
        if (!(sum > 0)) return usage_error(prog, "--split: the weights sum to 0");
    }
    return 0;
}

clt_init cli_init_for(const cli_options *o, const char *model)
{
    return CLI_GIVEN(o, O_INIT) || strcmp(model, "resnet18") ? o->init : CLT_INIT_XAVIER;
}

int cli_resolve_devices(const cli_options *o, int *list, int *n)
{
    int count = 0;
    if (clt_device_count(&count) != CLT_OK) {
        fprintf(stderr, "cltrain: %s\n", clt_last_error());
        return 1;
    }
    if (count == 0) {
        const char *env = getenv("CLTRAIN_DEVICES");
        if (env) /* the devices may well be there, hidden */
            fprintf(stderr, "cltrain: CLTRAIN_DEVICES=\"%s\" leaves no device visible (unset it to see them all, "
                    "or list indices such as 0,2; cltrain-smi numbers them)\n", env);
        else {
            char why[2048];
            if (clt_no_device_reason(why, sizeof why) != CLT_OK) why[0] = 0;
            /* the reason says what to mend, an install where no driver loads */
            fprintf(stderr, "cltrain: no OpenCL device found%s%s\n%s", why[0] ? ":\n" : "", why,
                    why[0] ? "" : "cltrain: install a driver (on Debian pocl-opencl-icd gives a CPU device)\n");
        }
        return 1;
    }
    if (o->n_devices) {
        for (int i = 0; i < o->n_devices; i++) {
            if (o->devices[i] >= count)
                return usage_error("cltrain", "--devices: device %d does not exist (devices 0..%d, see cltrain-smi)",
                                   o->devices[i], count - 1);
            list[i] = o->devices[i];
        }
        *n = o->n_devices;
    } else if (o->all_devices) {
        *n = count < CLT_MAX_DEVICES ? count : CLT_MAX_DEVICES;
        for (int i = 0; i < *n; i++) list[i] = i;
        if (o->split == CLT_SPLIT_WEIGHTS && o->n_weights != *n)
            return usage_error("cltrain", "--split gives %d weights for the %d devices of --devices all", o->n_weights,
                               *n);
    } else if (clt_device_default(list, CLT_MAX_DEVICES, n) != CLT_OK) {
        fprintf(stderr, "cltrain: %s\n", clt_last_error());
        return 1;
    }
    return 0;
}
