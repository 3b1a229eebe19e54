/* cltrain bench ops: every op of LeNet and ResNet-18 (28x28) at its real
 * shapes, as the builtin models list them (nn/model_ops.h), timed through
 * the raw launchers (bench_case.c) against the device's own measured peaks
 * (bench_peak.c): compute ops (convolution, dense) as GFLOP/s and a
 * fraction of the FMA peak, memory-bound ops (pooling, activation, loss,
 * optimizer step) as GB/s and a fraction of the copy bandwidth.
 *
 * Timing: one warm-up call (first-use builds), one probe call, then N calls
 * in up to three rounds, each enqueued back to back and drained; ms/call is
 * the mean of the fastest round, as the peaks count their best run. N is
 * --repeat, or as many calls as fit in about BENCH_BUDGET_S seconds
 * (3..200). The FMA and copy peaks are measured before the ops and again
 * after each model, and the highest figure counts, so a peak taken while
 * something else loaded the device does not inflate the fractions; the
 * tables are printed once a device's peaks are final (bench_ops_report.c). */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/args.h"
#include "bench_case.h"
#include "bench_ops.h"
#include "log.h"
#include "options.h"

const bench_model bench_models[BENCH_N_MODELS] = {
    {"lenet", {"lenet", "lenet-max"}, 2, 0, NULL},
    {"resnet18", {"resnet18"}, 1, 32,
     "one row per distinct shape; bn is the training-mode batch norm (statistics, then apply)"},
};

/* A row's note: what the op is for when that is not plain. */
static const char *op_note(const bench_model *m, const clt_op_case *c, int pass)
{
    if (c->kind == CLT_OP_CONV && pass == 1 && c->c <= 3) return "first layer: not needed in training";
    if (c->kind == CLT_OP_ADD) return "in training, fused into the bn before it; backward: the identity";
    if (c->fused_into == CLT_OP_CONV && c->kind == CLT_OP_POOL)
        return "on CPU devices, fused into the conv before it where its shape allows";
    if (c->fused_into == CLT_OP_CONV) return "in training, fused into the conv before it";
    if (c->fused_into == CLT_OP_DENSE) return "in training on CPU devices, fused into the dense before it";
    if (c->fused_into == CLT_OP_BN) return "in training, fused into the bn before it (after a residual add too)";
    return c->spec > 0 ? m->specs[c->spec] : NULL; /* an op only the variant runs */
}

static bench_row *row_add(bench_device *d)
{
    if (d->n_rows == d->cap_rows) {
        int cap = d->cap_rows ? 2 * d->cap_rows : 64;
        bench_row *r = realloc(d->rows, (size_t)cap * sizeof *r);
        if (!r) return NULL;
        d->rows = r;
        d->cap_rows = cap;
    }
    bench_row *r = &d->rows[d->n_rows++];
    memset(r, 0, sizeof *r);
    return r;
}

/* Progress on a terminal's stderr while a device is measured (the table is
 * printed once its peaks are final). */
static void progress(const bench_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(const bench_opts *o, const char *fmt, ...)
{
    if (!o->tty) return;
    char line[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
}

/* Times every pass of one op case; rows are appended. Returns nonzero when
 * something failed. */
static int bench_op(clt_device *dev, bench_device *d, const bench_model *m, const clt_op_case *c, int64_t repeat)
{
    bench_case *bc = NULL;
    clt_status init = bench_case_create(dev, c, &bc);
    char shape[96] = "", init_error[320] = "";
    if (init != CLT_OK) snprintf(init_error, sizeof init_error, "%s", clt_last_error());
    bench_case_shape(c, shape, sizeof shape);
    int failed = 0;
    const char *const *passes = bench_case_passes(c->kind);
    for (int p = 0; passes[p]; p++) {
        bench_row *r = row_add(d);
        if (!r) {
            fprintf(stderr, "cltrain: out of memory\n");
            bench_case_destroy(bc);
            return 1;
        }
        r->model = m->name, r->pass = passes[p], r->batch = c->n;
        snprintf(r->op, sizeof r->op, "%s", c->name);
        snprintf(r->shape, sizeof r->shape, "%s", shape);
        r->note = op_note(m, c, p);
        double sec = 0;
        if (init != CLT_OK) snprintf(r->error, sizeof r->error, "%s", init_error);
        else if (bench_case_time(bc, p, repeat, BENCH_BUDGET_S, BENCH_MAX_CALLS, &sec, &r->calls) != CLT_OK)
            snprintf(r->error, sizeof r->error, "%s", clt_last_error()); /* the next pass may still work */
        if (r->error[0]) {
            fprintf(stderr, "cltrain: bench ops: device %d, %s %s %s: %s\n", d->index, m->name, c->name, passes[p],
                    r->error);
            failed = 1;
        } else {
            r->ms = 1e3 * sec;
            bench_case_kernel(bc, p, r->kernel, sizeof r->kernel);
            bench_case_work(dev, c, p, &r->flop, &r->bytes);
            r->own_flop = bench_case_own_flop(c, r->kernel);
        }
    }
    bench_case_destroy(bc);
    return failed;
}

/* The ops of one model at `batch`, then its peaks again. */
static int bench_model_ops(clt_device *dev, bench_device *d, int mi, int batch, const bench_opts *o)
{
    const bench_model *m = &bench_models[mi];
    clt_op_cases cases;
    if (clt_op_cases_build(m->specs, m->n_specs, 1, 28, 28, batch, &cases) != CLT_OK) {
        fprintf(stderr, "cltrain: bench ops: %s: %s\n", m->name, clt_last_error());
        return 1;
    }
    d->params[mi] = cases.params;
    int rc = 0;
    for (int i = 0; i < cases.count; i++) {
        progress(o, "device %d: %s %s", d->index, m->name, cases.cases[i].name);
        rc |= bench_op(dev, d, m, &cases.cases[i], o->repeat);
    }
    clt_op_cases_free(&cases);
    /* The peaks again after the ops: the highest measurement counts. */
    if (d->peaks_ok) {
        progress(o, "device %d: measuring peaks again", d->index);
        if (bench_peaks_refresh(dev, &d->peaks) != CLT_OK) {
            snprintf(d->error, sizeof d->error, "%s", clt_last_error());
            fprintf(stderr, "cltrain: bench ops: device %d: %s\n", d->index, clt_last_error());
            rc = 1;
        }
    }
    return rc;
}

static int bench_one_device(int index, bench_device *d, const bench_opts *o)
{
    d->index = index;
    clt_device *dev = NULL;
    if (clt_device_open(index, &dev) != CLT_OK) {
        snprintf(d->error, sizeof d->error, "%s", clt_last_error());
        fprintf(stderr, "cltrain: bench ops: device %d: %s\n", index, clt_last_error());
        clt_device_query(index, &d->info);
        return 1;
    }
    d->opened = 1;
    clt_device_set_log(dev, cli_log, cli_log_user());
    d->info = *clt_device_get_info(dev);
    d->tf32 = clt_device_tf32(dev);
    d->compute_capability = clt_device_compute_capability(dev);
    clt_device_settings s = *clt_device_get_settings(dev);
    if (o->fp32) s.tf32 = CLT_TF32_OFF; /* the tuner offers no TF32 tile (ops/conv_implicit.c) */
    if (clt_device_set_settings(dev, &s) != CLT_OK) {
        fprintf(stderr, "cltrain: bench ops: device %d: %s\n", index, clt_last_error());
        clt_device_destroy(dev);
        return 1;
    }
    int rc = 0;
    progress(o, "device %d: measuring peaks", index);
    if (bench_peaks_measure(dev, &d->peaks) == CLT_OK) {
        d->peaks_ok = 1;
    } else {
        snprintf(d->error, sizeof d->error, "%s", clt_last_error());
        fprintf(stderr, "cltrain: bench ops: device %d: %s\n", index, clt_last_error());
        rc = 1;
    }
    int is_cpu = d->info.type == CLT_DEVICE_CPU;
    for (int mi = 0; mi < BENCH_N_MODELS; mi++) {
        if (!(o->model_mask & (1 << mi))) continue;
        const bench_model *m = &bench_models[mi];
        d->batch[mi] = o->batch ? (int)o->batch : is_cpu && m->cpu_batch ? m->cpu_batch : 256;
        rc |= bench_model_ops(dev, d, mi, d->batch[mi], o);
    }
    if (o->tty) fprintf(stderr, "\r\033[K");
    if (!o->json) bench_report_text(d, o);
    clt_device_destroy(dev);
    return rc;
}

static void help(void)
{
    printf("Usage: cltrain bench ops [--devices LIST|all] [--model lenet|resnet18|all] [--batch-size N]\n"
           "                         [--repeat N] [--precision tf32|fp32] [--json]\n\n"
           "Times every op of LeNet and ResNet-18 (28x28 inputs) at its real shapes on each device:\n"
           "convolution forward, backward-data and backward-weights, pooling, ReLU, batch norm, the\n"
           "residual add, dense, softmax cross-entropy and the SGD step. Compute ops are reported\n"
           "in GFLOP/s against the device's FMA peak, memory-bound ops in GB/s against its\n"
           "streaming-copy bandwidth; both peaks, and host<->device bandwidth from pinned and\n"
           "unpinned memory, are measured by the same command (FMA and copy before the ops and\n"
           "again after each model; the best measurement counts, and measurements more than 5%%\n"
           "apart are reported: other load or a clock change, so compare ops within that run).\n\n"
           "  --devices LIST|all   device indices as cltrain-smi numbers them (default: all GPUs, else all CPUs)\n"
           "  --model NAME         lenet, resnet18 or all (default all)\n"
           "  --batch-size N       samples per call (default 256; 32 for resnet18 on CPU devices)\n"
           "  --repeat N           timed calls per op after a warm-up (default: as many as fit in ~0.2 s, 3..200)\n"
           "  --precision P        tf32 (default): convolutions may run TF32 tiles where the device passed its\n"
           "                       TF32 probe (the tuner times them beside the fp32 ones); fp32: fp32 only\n"
           "  --json               one JSON object on stdout instead of the tables\n"
           "  -h, --help           this help\n");
}

static int parse(bench_opts *o, int argc, char **argv)
{
    enum { OPS_DEVICES = 256, OPS_MODEL, OPS_BATCH, OPS_REPEAT, OPS_JSON, OPS_PRECISION };
    static const struct option longs[] = {
        {"devices", required_argument, NULL, OPS_DEVICES}, {"model", required_argument, NULL, OPS_MODEL},
        {"batch-size", required_argument, NULL, OPS_BATCH}, {"repeat", required_argument, NULL, OPS_REPEAT},
        {"json", no_argument, NULL, OPS_JSON},             {"precision", required_argument, NULL, OPS_PRECISION},
        {"help", no_argument, NULL, 'h'},                  {NULL, 0, NULL, 0}};
    const char *prog = "cltrain";
    memset(o, 0, sizeof *o);
    o->model_mask = (1 << BENCH_N_MODELS) - 1;
    optind = 1;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, ":h", longs, NULL), rc = 0;
        if (c == -1) break;
        switch (c) {
        case OPS_DEVICES:
            rc = arg_devices(prog, "--devices", optarg, o->devices, CLT_MAX_DEVICES, &o->n_devices, &o->all_devices);
            break;
        case OPS_MODEL:
            if (!strcmp(optarg, "all")) {
                o->model_mask = (1 << BENCH_N_MODELS) - 1;
                break;
            }
            o->model_mask = 0;
            for (int m = 0; m < BENCH_N_MODELS; m++)
                if (!strcmp(optarg, bench_models[m].name)) o->model_mask = 1 << m;
            if (!o->model_mask) rc = usage_error(prog, "--model: \"%s\" is not lenet, resnet18 or all", optarg);
            break;
        case OPS_BATCH: rc = arg_int(prog, "--batch-size", optarg, 1, 1 << 16, &o->batch); break;
        case OPS_REPEAT: rc = arg_int(prog, "--repeat", optarg, 1, 100000, &o->repeat); break;
        case OPS_JSON: o->json = 1; break;
        case OPS_PRECISION:
            if (strcmp(optarg, "tf32") && strcmp(optarg, "fp32"))
                rc = usage_error(prog, "--precision: \"%s\" is not tf32 or fp32", optarg);
            o->fp32 = !strcmp(optarg, "fp32");
            break;
        case 'h': help(); return -1;
        case ':': return usage_error(prog, "option %s needs a value", argv[optind - 1]);
        default: return usage_error(prog, "unknown option \"%s\" for cltrain bench ops", argv[optind - 1]);
        }
        if (rc) return rc;
    }
    if (optind < argc) return usage_error(prog, "unexpected argument \"%s\"", argv[optind]);
    o->tty = isatty(STDERR_FILENO);
    return 0;
}

int cli_bench_ops(int argc, char **argv)
{
    bench_opts o;
    int rc = parse(&o, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    cli_options co;
    cli_options_default(&co);
    memcpy(co.devices, o.devices, sizeof co.devices);
    co.n_devices = o.n_devices;
    co.all_devices = o.all_devices;
    int devs[CLT_MAX_DEVICES], n = 0;
    if ((rc = cli_resolve_devices(&co, devs, &n))) return rc;
    bench_device *res = calloc((size_t)n, sizeof *res);
    if (!res) {
        fprintf(stderr, "cltrain: out of memory\n");
        return 1;
    }
    for (int i = 0; i < n; i++) rc |= bench_one_device(devs[i], &res[i], &o);
    if (o.json) bench_report_json(res, n, &o);
    for (int i = 0; i < n; i++) free(res[i].rows);
    free(res);
    return rc ? 1 : 0;
}
