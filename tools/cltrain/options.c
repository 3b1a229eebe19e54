#include "options.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../common/args.h"

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
}

static void help(const char *cmd)
{
    printf("Usage: cltrain %s [options]\n\n", cmd);
    printf("  --model NAME|SPEC      builtin (lenet, lenet-max) or layer spec such as\n"
           "                         conv:20:3,relu,avgpool:2,flatten,dense:10 (default lenet)\n"
           "  --data NAME|DIR        fashion-mnist, mnist, or a directory of IDX files (default fashion-mnist)\n"
           "  --devices LIST|all     device indices as cltrain-smi numbers them (default: all GPUs, else all CPUs)\n"
           "  --split equal|auto|W0,W1,...  how a batch is shared between devices (default equal)\n"
           "  --batch-size N         samples per optimizer step over all devices (default 256)\n"
           "  --lr X                 learning rate (default 0.2)\n"
           "  --momentum X           SGD momentum (default 0)\n"
           "  --weight-decay X       L2 weight decay (default 0)\n"
           "  --epochs N             epochs (default 10)\n"
           "  --steps N              stop after N optimizer steps in total (overrides --epochs)\n"
           "  --seed N               initialisation and shuffling seed (default 0)\n"
           "  --init normal|xavier   weight initialisation (default normal: N(0, 0.01^2); xavier for resnet18)\n"
           "  --limit-train N        use the first N training samples (default all)\n"
           "  --limit-test N         use the first N test samples (default all)\n"
           "  --no-shuffle           file order instead of a shuffled order per epoch\n"
           "  --drop-last            drop the last partial batch of each epoch\n"
           "  --log-csv FILE         append one CSV line per epoch\n"
           "  --plot FILE.svg        loss and accuracy curves as an SVG, rewritten each epoch\n"
           "  --init-from FILE.npz   start from these parameters (PyTorch state_dict names, e.g. 0.weight)\n"
           "  --export-npz FILE.npz  write the parameters at the end (numpy.load reads them)\n"
           "  --save FILE            checkpoint at each epoch end, at the end, and on Ctrl-C\n"
           "  --resume FILE          continue a checkpointed run exactly where it stopped\n"
           "  --sync-bn              batch norm over the whole batch across devices (default: per device)\n"
           "  --json                 one JSON object per epoch on stdout instead of the text line\n"
           "  --quiet                no progress bar and no per-epoch line\n"
           "  -h, --help             this help\n");
}

int cli_parse(cli_options *o, const char *cmd, int argc, char **argv)
{
    static const struct option longs[] = {
        {"model", required_argument, NULL, O_MODEL},       {"data", required_argument, NULL, O_DATA},
        {"devices", required_argument, NULL, O_DEVICES},   {"split", required_argument, NULL, O_SPLIT},
        {"batch-size", required_argument, NULL, O_BATCH},  {"lr", required_argument, NULL, O_LR},
        {"momentum", required_argument, NULL, O_MOM},      {"weight-decay", required_argument, NULL, O_WD},
        {"epochs", required_argument, NULL, O_EPOCHS},     {"steps", required_argument, NULL, O_STEPS},
        {"seed", required_argument, NULL, O_SEED},         {"init", required_argument, NULL, O_INIT},
        {"limit-train", required_argument, NULL, O_LTRAIN}, {"limit-test", required_argument, NULL, O_LTEST},
        {"no-shuffle", no_argument, NULL, O_NOSHUF},       {"drop-last", no_argument, NULL, O_DROP},
        {"json", no_argument, NULL, O_JSON},               {"quiet", no_argument, NULL, O_QUIET},
        {"log-csv", required_argument, NULL, O_CSV},       {"plot", required_argument, NULL, O_PLOT},
        {"init-from", required_argument, NULL, O_INIT_FROM}, {"export-npz", required_argument, NULL, O_EXPORT},
        {"save", required_argument, NULL, O_SAVE},         {"resume", required_argument, NULL, O_RESUME},
        {"sync-bn", no_argument, NULL, O_SYNC_BN},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *prog = "cltrain";
    double d;
    int rc = 0;
    optind = 1;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, ":h", longs, NULL);
        if (c == -1) break;
        if (c >= O_MODEL && c < O_END) o->given[c - O_MODEL] = 1;
        switch (c) {
        case O_MODEL: o->model = optarg; break;
        case O_DATA: o->data = optarg; break;
        case O_DEVICES: rc = arg_devices(prog, "--devices", optarg, o->devices, CLI_MAX_DEVICES, &o->n_devices, &o->all_devices); break;
        case O_SPLIT:
            if (!strcmp(optarg, "equal")) o->split = CLT_SPLIT_EQUAL;
            else if (!strcmp(optarg, "auto")) o->split = CLT_SPLIT_AUTO;
            else {
                o->split = CLT_SPLIT_WEIGHTS;
                rc = arg_floats(prog, "--split", optarg, o->weights, CLI_MAX_DEVICES, &o->n_weights);
            }
            break;
        case O_BATCH: rc = arg_int(prog, "--batch-size", optarg, 1, 1 << 20, &o->batch_size); break;
        case O_LR: rc = arg_float(prog, "--lr", optarg, 0, 1e6, &o->lr); break;
        case O_MOM: rc = arg_float(prog, "--momentum", optarg, 0, 0.999999, &o->momentum); break;
        case O_WD: rc = arg_float(prog, "--weight-decay", optarg, 0, 1e6, &o->weight_decay); break;
        case O_EPOCHS: rc = arg_int(prog, "--epochs", optarg, 1, 1000000, &o->epochs); break;
        case O_STEPS: rc = arg_int(prog, "--steps", optarg, 1, INT64_MAX / 2, &o->steps); break;
        case O_SEED: rc = arg_int(prog, "--seed", optarg, 0, INT64_MAX, &o->seed); break;
        case O_INIT:
            if (!strcmp(optarg, "normal")) o->init = CLT_INIT_NORMAL;
            else if (!strcmp(optarg, "xavier")) o->init = CLT_INIT_XAVIER;
            else rc = usage_error(prog, "--init: \"%s\" is not normal or xavier", optarg);
            break;
        case O_LTRAIN: rc = arg_int(prog, "--limit-train", optarg, 1, INT32_MAX, &o->limit_train); break;
        case O_LTEST: rc = arg_int(prog, "--limit-test", optarg, 1, INT32_MAX, &o->limit_test); break;
        case O_NOSHUF: o->shuffle = 0; break;
        case O_DROP: o->drop_last = 1; break;
        case O_JSON: o->json = 1; break;
        case O_QUIET: o->quiet = 1; break;
        case O_CSV: o->log_csv = optarg; break;
        case O_PLOT: o->plot = optarg; break;
        case O_INIT_FROM: o->init_from = optarg; break;
        case O_EXPORT: o->export_npz = optarg; break;
        case O_SAVE: o->save = optarg; break;
        case O_RESUME: o->resume = optarg; break;
        case O_SYNC_BN: o->sync_bn = 1; break;
        case 'h': help(cmd); return -1;
        case ':': return usage_error(prog, "option %s needs a value", argv[optind - 1]);
        default: return usage_error(prog, "unknown option \"%s\" for cltrain %s", argv[optind - 1], cmd);
        }
        if (rc) return rc;
    }
    if (optind < argc) return usage_error(prog, "unexpected argument \"%s\"", argv[optind]);
    if (o->init_from && o->resume) return usage_error(prog, "--init-from and --resume exclude each other");
    (void)d;
    if (o->split == CLT_SPLIT_WEIGHTS) {
        int n = o->n_devices;
        if (n == 0) return usage_error(prog, "--split with weights needs --devices naming as many devices");
        if (n != o->n_weights)
            return usage_error(prog, "--split gives %d weights for %d devices", o->n_weights, n);
        float sum = 0;
        for (int i = 0; i < n; i++) sum += o->weights[i];
        if (!(sum > 0)) return usage_error(prog, "--split: the weights sum to 0");
    }
    return 0;
}

int cli_resolve_devices(const cli_options *o, int *list, int *n)
{
    int count = 0;
    if (clt_device_count(&count) != CLT_OK) {
        fprintf(stderr, "cltrain: %s\n", clt_last_error());
        return 1;
    }
    if (count == 0) {
        fprintf(stderr, "cltrain: no OpenCL device found (install a driver; on Debian pocl-opencl-icd gives a CPU device)\n");
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
        *n = count < CLI_MAX_DEVICES ? count : CLI_MAX_DEVICES;
        for (int i = 0; i < *n; i++) list[i] = i;
    } else if (clt_device_default(list, CLI_MAX_DEVICES, n) != CLT_OK) {
        fprintf(stderr, "cltrain: %s\n", clt_last_error());
        return 1;
    }
    return 0;
}
