/* cltrain bench train: samples/s on 1..k devices, the scaling ratio, and
 * where a step's time goes. Synthetic data: only speed is measured. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/args.h"
#include "../common/json.h"
#include "../common/number.h"
#include "cltrain_diag.h"
#include "core/clock.h"
#include "bench.h"
#include "nn/model.h"
#include "log.h"
#include "nn/net.h"

int cli_bench_run(const cli_options *o, const int *devs, int k, const float *images, const int32_t *labels, int steps,
                  const char *trace, void *comm, bench_row *row)
{
    clt_trainer_config cfg;
    clt_trainer_config_default(&cfg);
    cfg.spec = o->model;
    cfg.devices = devs;
    cfg.n_devices = k;
    cfg.split = o->split;
    cfg.weights = o->weights; /* the first k */
    cfg.lr = 0.01f;
    cfg.init = cli_init_for(o, o->model);
    cfg.precision = (clt_precision)o->precision;
    cfg.mpi_comm = comm;
    cfg.log = cli_log;
    cfg.log_user = cli_log_user();
    clt_trainer *t = NULL;
    if (clt_trainer_create(&cfg, &t) != CLT_OK) {
        fprintf(stderr, "cltrain: bench on %d device(s): %s\n", k, clt_last_error());
        return 1;
    }
    int b = (int)o->batch_size, rc = 0;
    memset(row, 0, sizeof *row);
    row->k = k;
    row->params = clt_net_floats(clt_trainer_net(t, 0), CLT_NET_GRADS); /* what a step sums */
    for (int s = 0; s < 3 && !rc; s++) /* warm-up: first-use compilation, caches */
        if (clt_trainer_step(t, images, labels, b, NULL, NULL) != CLT_OK) rc = 1;
    if (!rc && trace && clt_trainer_trace(t, 1) != CLT_OK) rc = 1;
    double t0 = clt_now();
    clt_trainer_device_stats st[CLT_MAX_DEVICES];
    for (int s = 0; s < steps && !rc; s++) {
        if (clt_trainer_step(t, images, labels, b, NULL, NULL) != CLT_OK || clt_trainer_stats(t, st, k) != CLT_OK) {
            rc = 1;
            break;
        }
        for (int i = 0; i < k; i++) {
            row->compute_s += st[i].compute_s / k;
            row->transfer_s += st[i].transfer_s / k;
            row->reduce_s += st[i].reduce_s / k;
            row->idle_s += st[i].idle_s / k;
            row->hidden_s += st[i].hidden_s / k;
            row->exposed_s += st[i].exposed_s / k;
        }
    }
    double elapsed = clt_now() - t0;
    if (!rc && trace && clt_trainer_write_trace(t, trace) != CLT_OK) rc = 1;
    if (rc) {
        fprintf(stderr, "cltrain: bench on %d device(s): %s\n", k, clt_last_error());
        clt_trainer_destroy(t);
        return rc;
    }
    row->step_s = elapsed / steps;
    row->samples_per_s = (double)b * steps / elapsed;
    row->compute_s /= steps;
    row->transfer_s /= steps;
    row->reduce_s /= steps;
    row->idle_s /= steps;
    row->hidden_s /= steps;
    row->exposed_s /= steps;
    clt_trainer_destroy(t);
    return rc;
}

int cli_synthetic_batch(const char *model, size_t b, float **images, int32_t **labels)
{
    clt_model m; /* its classes: the labels must lie below them */
    if (clt_model_parse(model, 1, 28, 28, &m) != CLT_OK) {
        fprintf(stderr, "cltrain: --model %.200s: %s\n", model, clt_last_error());
        return 2;
    }
    int classes = m.classes;
    clt_model_free(&m);
    *images = malloc(b * 784 * sizeof(float));
    *labels = malloc(b * sizeof(int32_t));
    if (!*images || !*labels) {
        free(*images), free(*labels);
        fprintf(stderr, "cltrain: out of memory\n");
        return 1;
    }
    uint32_t r = 1;
    for (size_t i = 0; i < b * 784; i++) r = r * 1664525u + 1013904223u, (*images)[i] = (float)(r >> 8) / 16777216.0f;
    for (size_t i = 0; i < b; i++) (*labels)[i] = (int32_t)(i % (size_t)classes);
    return 0;
}

/* What a step's speed depends on here; the data is synthetic and the
 * learning settings are fixed. */
static const cli_accept bench_options[] = {
    {O_MODEL, NULL},
    {O_DEVICES, "device indices as cltrain-smi numbers them; runs on the first 1, 2, ..., k\n"
                "(default: all GPUs, else all CPUs)"},
    {O_SPLIT, "how a batch is shared between devices; weights: the first k for k devices\n(default equal)"},
    {O_BATCH, NULL},
    {O_STEPS, "timed steps per device count, after 3 warm-up steps (default 20, at most 100000)"},
    {O_INIT, NULL},
    {O_JSON, "one JSON object on stdout instead of the table"},
    {O_TRACE, "a trace of the timed steps on all k devices (Chrome trace-event JSON)"},
    {O_PRECISION, NULL},
    {O_END, NULL},
};

int cli_bench(int argc, char **argv, const cli_world *world)
{
    if (argc >= 2 && strcmp(argv[1], "ops") == 0) return cli_bench_ops(argc - 1, argv + 1);
    if (argc < 2 || strcmp(argv[1], "train") != 0) {
        if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
            printf("Usage: cltrain bench train [--model M] [--devices LIST|all] [--split equal|auto|W0,W1,...]\n"
                   "                           [--batch-size N] [--steps N] [--init normal|xavier] [--json]\n"
                   "Samples/s of training steps on the first 1, 2, ..., k devices of the list, the scaling\n"
                   "ratio against one device, and a step's time split into compute (upload, forward,\n"
                   "backward until the device finished it), transfer (gradients device to host and back),\n"
                   "reduce (host summation), idle (waiting for the slowest device), hidden (the part of\n"
                   "transfer + reduce done during backward) and exposed (step - compute: what the step\n"
                   "adds after backward). Scaling efficiency: k devices' samples/s / the sum of each\n"
                   "device's alone (measured too).\n\n"
                   "Usage: cltrain bench ops [--devices LIST|all] [--model lenet|resnet18|all] [--batch-size N]\n"
                   "                         [--repeat N] [--json]\n"
                   "Time per call of every op of LeNet and ResNet-18 at its real shapes, in GFLOP/s or GB/s\n"
                   "and as a fraction of the device's FMA and copy peaks, which it measures itself, with\n"
                   "host<->device bandwidth (see cltrain bench ops --help).\n");
            return 0;
        }
        fprintf(stderr, "cltrain: bench needs a subcommand: train or ops (see cltrain bench --help)\n");
        return 2;
    }
    cli_options o;
    cli_options_default(&o);
    int rc = cli_parse(&o, "bench train", bench_options, argc - 1, argv + 1);
    if (rc) return rc < 0 ? 0 : rc;
    if (o.split == CLT_SPLIT_WEIGHTS && !(o.weights[0] > 0))
        return usage_error("cltrain", "--split: the first device runs alone first, so its weight must be above 0");
    int devs[CLT_MAX_DEVICES], n = 0;
    if ((rc = cli_resolve_devices(&o, devs, &n))) return rc;
    if (!CLI_GIVEN(&o, O_DEVICES) && !getenv("CLTRAIN_DEVICES") && (rc = cli_world_devices(world, devs, &n)))
        return rc;
    if (o.steps > 100000) return usage_error("cltrain", "--steps %lld: at most 100000 timed steps", (long long)o.steps);
    int steps = o.steps ? (int)o.steps : 20;
    if (clt_spec_check(o.model, 1, 28, 28, NULL, 0) != CLT_OK) {
        fprintf(stderr, "cltrain: --model %.200s%s: %s\n", o.model, strlen(o.model) > 200 ? "..." : "",
                clt_last_error());
        return 2;
    }
    float *images;
    int32_t *labels;
    if ((rc = cli_synthetic_batch(o.model, (size_t)o.batch_size, &images, &labels))) return rc;
    if (world->size > 1) {
        rc = cli_bench_world(&o, devs, n, images, labels, steps, world);
        free(images);
        free(labels);
        return rc;
    }
    bench_row rows[CLT_MAX_DEVICES] = {{0}};
    int done = 0;
    for (int k = 1; k <= n && !rc; k++) {
        rc = cli_bench_run(&o, devs, k, images, labels, steps, k == n ? o.trace : NULL, NULL, &rows[k - 1]);
        done += !rc;
    }
    /* Scaling efficiency: k devices against the sum of each alone (the fair
     * figure for unequal devices); devs[0] alone is rows[0]. */
    double alone = done == n ? rows[0].samples_per_s : 0;
    for (int j = 1; j < n && !rc; j++) {
        bench_row one = {0};
        rc = cli_bench_run(&o, devs + j, 1, images, labels, steps, NULL, NULL, &one);
        alone += one.samples_per_s;
    }
    double efficiency = !rc && n > 1 ? rows[n - 1].samples_per_s / alone : 0;
    if (o.json) {
        printf("{\"model\": ");
        json_string(stdout, o.model);
        printf(", \"batch_size\": %lld, \"steps\": %d, \"runs\": [", (long long)o.batch_size, steps);
        for (int i = 0; i < done; i++)
            printf("%s\n  {\"devices\": %d, \"samples_per_s\": " NUMBER_MACHINE_FMT ", \"scaling\": %.3f, \"step_s\": %.5f, "
                   "\"compute_s\": %.5f, \"transfer_s\": %.5f, \"reduce_s\": %.5f, \"idle_s\": %.5f, "
                   "\"hidden_s\": %.5f, \"exposed_s\": %.5f}",
                   i ? "," : "", rows[i].k, rows[i].samples_per_s, rows[i].samples_per_s / rows[0].samples_per_s,
                   rows[i].step_s, rows[i].compute_s, rows[i].transfer_s, rows[i].reduce_s, rows[i].idle_s,
                   rows[i].hidden_s, rows[i].exposed_s);
        printf("\n], \"alone_sum_samples_per_s\": %.1f, \"efficiency\": %.4f}\n", alone, efficiency);
    } else {
        printf("model %s, batch %lld, %d timed steps\n", o.model, (long long)o.batch_size, steps);
        printf("%-8s %12s %8s %10s %10s %10s %10s %10s %10s %10s\n", "devices", "samples/s", "scaling", "step ms",
               "compute", "transfer", "reduce", "idle", "hidden", "exposed");
        char rate[32];
        for (int i = 0; i < done; i++)
            printf("%-8d %12s %7.2fx %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f\n", rows[i].k,
                   format_number(rate, sizeof rate, rows[i].samples_per_s), rows[i].samples_per_s / rows[0].samples_per_s, 1e3 * rows[i].step_s, 1e3 * rows[i].compute_s,
                   1e3 * rows[i].transfer_s, 1e3 * rows[i].reduce_s, 1e3 * rows[i].idle_s, 1e3 * rows[i].hidden_s,
                   1e3 * rows[i].exposed_s);
        if (efficiency > 0)
            printf("scaling efficiency: %s samples/s on %d devices / %.0f (each alone, summed) = %.1f%%\n",
                   format_number(rate, sizeof rate, rows[n - 1].samples_per_s), n, alone, 100 * efficiency);
    }
    free(images);
    free(labels);
    return rc;
}
