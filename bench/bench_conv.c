/* Convolution benchmark: GFLOP/s of forward, backward-data and
 * backward-weights for the LeNet and ResNet-18 (28x28) shapes, for each
 * algorithm (the device settings' lanes / implicit / gemm), on one device.
 *
 *   bench_conv [--device I] [--batch N] [--iters K] [--algo lanes|implicit|gemm|winograd|both|all]
 *              [--pass fwd|bwd-data|bwd-weights]... [--peak GFLOPS] [--split]
 *              [--shape n,c,h,w,co,k,s,p]...
 *
 * Without --shape it runs every distinct convolution of the builtin models
 * lenet and resnet18 (their op cases, nn/model_ops.h) at batch N (256),
 * without --pass all three passes.
 * Prints one line per shape and algorithm: GFLOP/s of the best of K runs
 * after a warm-up (other work on a shared machine only ever slows a run
 * down) and, in brackets, of the median; with --peak (the FMA peak that
 * `cltrain bench ops` measures) also the best as a percentage of it. Each
 * run is timed from the call to the drained queue, so the layout copies and
 * weight transposes of the lanes algorithm and the im2col of the gemm
 * algorithm are included. Backward-weights includes the bias gradient.
 * --split adds, for passes the lanes algorithm runs, its kernel alone (the
 * tuner's timing: the same work buffer each run, zeroed once) and the
 * share of the pass's best time that is not that kernel: the layout copies
 * and weight transposes around it, and the bias gradient. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cltrain.h"
#include "nn/model_ops.h"
#include "ops/conv_algo.h"
#include "ops/conv_lanes.h"
#include "runtime/device.h"
#include "runtime/launch.h"

typedef struct shape {
    char name[48];
    int n, c, h, w, co, k, s, p;
} shape;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define TRY(expr)                                                                          \
    do {                                                                                   \
        clt_status s_ = (expr);                                                            \
        if (s_ != CLT_OK) {                                                                \
            fprintf(stderr, "%s: %s: %s\n", #expr, clt_status_name(s_), clt_last_error()); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

/* The distinct convolutions of each builtin model at batch n, named by
 * model, case and geometry; at most cap. */
static int builtin_shapes(int n, shape *out, int cap)
{
    static const char *const models[] = {"lenet", "resnet18"};
    int count = 0;
    for (int m = 0; m < 2; m++) {
        clt_op_cases cases;
        TRY(clt_op_cases_build(&models[m], 1, 1, 28, 28, n, &cases));
        for (int i = 0; i < cases.count && count < cap; i++) {
            const clt_op_case *c = &cases.cases[i];
            if (c->kind != CLT_OP_CONV) continue;
            shape *sh = &out[count++];
            snprintf(sh->name, sizeof sh->name, "%s %s %d->%d %dx%d k%d s%d", models[m], c->name, c->c, c->co, c->h,
                     c->w, c->k, c->stride);
            sh->n = c->n, sh->c = c->c, sh->h = c->h, sh->w = c->w;
            sh->co = c->co, sh->k = c->k, sh->s = c->stride, sh->p = c->pad;
        }
        clt_op_cases_free(&cases);
    }
    return count;
}

enum { FWD, BWD_DATA, BWD_WEIGHTS, PASSES };

static double run_pass(int pass, clt_device *dev, clt_tensor *x, clt_tensor *w, clt_tensor *b,
                       clt_tensor *y, clt_tensor *dx, clt_tensor *dw, clt_tensor *db, int s, int p)
{
    double t = now();
    if (pass == FWD) TRY(clt_conv2d_forward(x, w, b, s, p, y));
    if (pass == BWD_DATA) TRY(clt_conv2d_backward(x, w, y, s, p, dx, NULL, NULL));
    if (pass == BWD_WEIGHTS) TRY(clt_conv2d_backward(x, w, y, s, p, NULL, dw, db));
    TRY(clt_device_finish(dev));
    return now() - t;
}

/* Best seconds of `pass`'s lanes kernel alone over iters runs after a
 * warm-up; 0 when the lanes algorithm does not run that pass. */
static double kernel_alone(clt_device *dev, const clt_conv_plan *plan, int pass, int iters)
{
    const char *algo = clt_conv_plan_algo(plan, pass);
    if (!algo || strcmp(algo, "lanes")) return 0;
    size_t bytes;
    TRY(clt_conv_lanes_time_pass(dev, &plan->lanes, pass, NULL, &bytes));
    cl_mem scratch;
    TRY(clt_device_scratch(dev, bytes, &scratch));
    /* written once, so that no read lands on pages never touched (which
     * the host may map to one shared zero page, always in cache) */
    TRY(clt_device_zero(dev, scratch, 0, bytes, "clEnqueueFillBuffer (bench_conv)"));
    double best = 0;
    for (int i = -1; i < iters; i++) {
        double t = now();
        TRY(clt_conv_lanes_time_pass(dev, &plan->lanes, pass, scratch, &bytes));
        TRY(clt_device_finish(dev));
        t = now() - t;
        if (i >= 0 && (best == 0 || t < best)) best = t;
    }
    return best;
}

static void bench(clt_device *dev, const shape *sh, const char *algo, int iters, unsigned passes,
                  double peak, int split)
{
    clt_device_settings set = *clt_device_get_settings(dev);
    set.conv_algo = strcmp(algo, "lanes") == 0      ? CLT_CONV_ALGO_LANES
                    : strcmp(algo, "gemm") == 0     ? CLT_CONV_ALGO_GEMM
                    : strcmp(algo, "winograd") == 0 ? CLT_CONV_ALGO_WINOGRAD
                                                    : CLT_CONV_ALGO_IMPLICIT;
    TRY(clt_device_set_settings(dev, &set));
    int oh = (sh->h + 2 * sh->p - sh->k) / sh->s + 1, ow = (sh->w + 2 * sh->p - sh->k) / sh->s + 1;
    int64_t xs[4] = {sh->n, sh->c, sh->h, sh->w}, ws[4] = {sh->co, sh->c, sh->k, sh->k};
    int64_t bs[1] = {sh->co}, ys[4] = {sh->n, sh->co, oh, ow};
    clt_tensor *x, *w, *b, *y, *dx, *dw, *db;
    TRY(clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 4, xs, &x));
    TRY(clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 4, ws, &w));
    TRY(clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 1, bs, &b));
    TRY(clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 4, ys, &y));
    TRY(clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 4, xs, &dx));
    TRY(clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 4, ws, &dw));
    TRY(clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 1, bs, &db));
    TRY(clt_tensor_init_normal(x, 1, 0.5f, 0.25f));
    TRY(clt_tensor_init_normal(w, 2, 0.0f, 0.01f));
    double flops = 2.0 * sh->n * sh->co * oh * ow * (double)sh->c * sh->k * sh->k;
    double gf[PASSES];
    double ms[PASSES], med[PASSES], kern[PASSES] = {0};
    clt_conv_plan *plan = NULL;
    if (split) {
        clt_conv_geom g;
        TRY(clt_conv_geom_init(&g, sh->n, sh->c, sh->h, sh->w, sh->co, sh->k, sh->s, sh->p));
        TRY(clt_conv_plan_ensure(dev, &g, &plan));
    }
    for (int pass = 0; pass < PASSES; pass++) {
        if (!(passes & (1u << pass))) continue;
        double *t = malloc((size_t)iters * sizeof *t);
        run_pass(pass, dev, x, w, b, y, dx, dw, db, sh->s, sh->p); /* warm-up, kernel builds */
        for (int i = 0; i < iters; i++) t[i] = run_pass(pass, dev, x, w, b, y, dx, dw, db, sh->s, sh->p);
        qsort(t, (size_t)iters, sizeof *t, cmp_double);
        ms[pass] = t[0] * 1e3;
        gf[pass] = flops / t[0] * 1e-9;
        med[pass] = flops / t[iters / 2] * 1e-9;
        if (plan) kern[pass] = kernel_alone(dev, plan, pass, iters) * 1e3;
        free(t);
    }
    printf("%-36s n=%-4d %-8s", sh->name, sh->n, algo);
    static const char *const names[PASSES] = {"fwd", "bwd-data", "bwd-weights"};
    for (int pass = 0; pass < PASSES; pass++) {
        if (!(passes & (1u << pass))) continue;
        printf(" | %s %6.1f GF/s (%6.1f) %8.2f ms", names[pass], gf[pass], med[pass], ms[pass]);
        if (peak > 0) printf(" %5.1f%%", 100.0 * gf[pass] / peak);
        if (kern[pass] > 0)
            printf(" [kernel %.2f ms, %.0f%% else]", kern[pass],
                   kern[pass] < ms[pass] ? 100.0 * (ms[pass] - kern[pass]) / ms[pass] : 0.0);
    }
    printf("\n");
    fflush(stdout);
    clt_conv_plan_destroy(plan);
    clt_tensor_destroy(x), clt_tensor_destroy(w), clt_tensor_destroy(b), clt_tensor_destroy(y);
    clt_tensor_destroy(dx), clt_tensor_destroy(dw), clt_tensor_destroy(db);
}

int main(int argc, char **argv)
{
    int device = 0, batch = 0, iters = 5, split = 0;
    unsigned passes = 0;
    double peak = 0;
    const char *algo = "both";
    shape custom[32];
    int ncustom = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) device = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--algo") && i + 1 < argc) algo = argv[++i];
        else if (!strcmp(argv[i], "--peak") && i + 1 < argc) peak = atof(argv[++i]);
        else if (!strcmp(argv[i], "--split")) split = 1;
        else if (!strcmp(argv[i], "--pass") && i + 1 < argc) {
            const char *ps = argv[++i];
            if (!strcmp(ps, "fwd")) passes |= 1u << FWD;
            else if (!strcmp(ps, "bwd-data")) passes |= 1u << BWD_DATA;
            else if (!strcmp(ps, "bwd-weights")) passes |= 1u << BWD_WEIGHTS;
            else {
                fprintf(stderr, "--pass wants fwd, bwd-data or bwd-weights, not \"%s\"\n", ps);
                return 2;
            }
        }
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc && ncustom < 32) {
            shape *s = &custom[ncustom];
            snprintf(s->name, sizeof s->name, "custom");
            if (sscanf(argv[++i], "%d,%d,%d,%d,%d,%d,%d,%d", &s->n, &s->c, &s->h, &s->w, &s->co,
                       &s->k, &s->s, &s->p) != 8) {
                fprintf(stderr, "--shape wants n,c,h,w,co,k,s,p\n");
                return 2;
            }
            ncustom++;
        } else {
            fprintf(stderr,
                    "usage: bench_conv [--device I] [--batch N] [--iters K] [--algo lanes|implicit|gemm|winograd|both|all] "
                    "[--pass fwd|bwd-data|bwd-weights]... [--peak GFLOPS] [--split] "
                    "[--shape n,c,h,w,co,k,s,p]...\n");
            return 2;
        }
    }
    if (iters < 1) iters = 1;
    if (!passes) passes = (1u << PASSES) - 1;
    if (strcmp(algo, "lanes") && strcmp(algo, "implicit") && strcmp(algo, "gemm") && strcmp(algo, "winograd") &&
        strcmp(algo, "both") && strcmp(algo, "all")) {
        fprintf(stderr, "--algo wants lanes, implicit, gemm, winograd, both (lanes and gemm) or all, not \"%s\"\n",
                algo);
        return 2;
    }
    clt_device *dev;
    TRY(clt_device_open(device, &dev));
    const clt_device_info *info = clt_device_get_info(dev);
    printf("device %d: %s (%s, %d compute units)\n", device, info->name, info->platform_version,
           info->compute_units);
    shape builtin[64];
    const shape *list = ncustom ? custom : builtin;
    int count = ncustom ? ncustom : builtin_shapes(batch > 0 ? batch : 256, builtin, 64);
    for (int i = 0; i < count; i++) {
        shape sh = list[i];
        if (batch > 0) sh.n = batch;
        int all = !strcmp(algo, "all"), both = all || !strcmp(algo, "both");
        if (both || !strcmp(algo, "lanes")) bench(dev, &sh, "lanes", iters, passes, peak, split);
        if (all || !strcmp(algo, "implicit")) bench(dev, &sh, "implicit", iters, passes, peak, split);
        if (both || !strcmp(algo, "gemm")) bench(dev, &sh, "gemm", iters, passes, peak, split);
        if (all || !strcmp(algo, "winograd")) bench(dev, &sh, "winograd", iters, passes, peak, split);
    }
    clt_device_destroy(dev);
    return 0;
}
