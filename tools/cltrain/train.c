/* cltrain train: the tutorials' training loop over every selected device. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/json.h"
#include "options.h"
#include "plot.h"

/* Set by SIGINT: the loop stops after the current step. A signal handler
 * can only talk through such a flag. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct epoch_report {
    int64_t epoch, steps;
    double loss, train_acc, test_acc, seconds, samples_per_s;
} epoch_report;

static void device_names(FILE *f, const int *devs, int n, int json)
{
    for (int i = 0; i < n; i++) {
        clt_device_info info;
        if (clt_device_query(devs[i], &info) != CLT_OK) snprintf(info.name, sizeof info.name, "?");
        if (json) {
            fprintf(f, "%s{\"index\": %d, \"name\": ", i ? ", " : "", devs[i]);
            json_string(f, info.name);
            fprintf(f, "}");
        } else {
            fprintf(f, "%s%d: %s", i ? ", " : "", devs[i], info.name);
        }
    }
}

static void report(const cli_options *o, const epoch_report *r, const int *devs, int n)
{
    if (o->json) {
        printf("{\"epoch\": %lld, \"steps\": %lld, \"loss\": %.6f, \"train_acc\": %.6f, \"test_acc\": %.6f, "
               "\"seconds\": %.4f, \"samples_per_s\": %.1f, \"devices\": [",
               (long long)r->epoch, (long long)r->steps, r->loss, r->train_acc, r->test_acc, r->seconds,
               r->samples_per_s);
        device_names(stdout, devs, n, 1);
        printf("]}\n");
    } else if (!o->quiet) {
        printf("epoch %lld: loss %.4f, train acc %.4f, test acc %.4f, %.2f s/epoch, %.0f samples/s on [",
               (long long)r->epoch, r->loss, r->train_acc, r->test_acc, r->seconds, r->samples_per_s);
        device_names(stdout, devs, n, 0);
        printf("]\n");
    }
    fflush(stdout);
}

static int append_csv(const char *path, const epoch_report *r)
{
    FILE *f = fopen(path, "a");
    if (!f) {
        fprintf(stderr, "cltrain: --log-csv %s: cannot open for appending\n", path);
        return 1;
    }
    if (ftell(f) == 0) fprintf(f, "epoch,steps,loss,train_acc,test_acc,seconds,samples_per_s\n");
    fprintf(f, "%lld,%lld,%.6f,%.6f,%.6f,%.4f,%.1f\n", (long long)r->epoch, (long long)r->steps, r->loss,
            r->train_acc, r->test_acc, r->seconds, r->samples_per_s);
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (bad) fprintf(stderr, "cltrain: --log-csv %s: write failed\n", path);
    return bad;
}

static void progress(int64_t done, int64_t total, double loss, double sps, double elapsed)
{
    int width = 30, filled = total ? (int)(width * done / total) : 0;
    double eta = sps > 0 && total > done ? elapsed / (double)done * (double)(total - done) : 0;
    fprintf(stdout, "\r[%.*s%*s] %lld/%lld  loss %.4f  %.0f samples/s  ETA %.0f s ", filled,
            "##############################", width - filled, "", (long long)done, (long long)total, loss, sps, eta);
    fflush(stdout);
}

static int fail(const char *what)
{
    fprintf(stderr, "cltrain: %s: %s\n", what, clt_last_error());
    return 1;
}

int cli_train(int argc, char **argv)
{
    cli_options o;
    cli_options_default(&o);
    int rc = cli_parse(&o, "train", argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    int devs[CLI_MAX_DEVICES], n_devs = 0;
    if ((rc = cli_resolve_devices(&o, devs, &n_devs))) return rc;

    clt_dataset *train = NULL, *test = NULL;
    if (clt_dataset_load(o.data, CLT_SPLIT_TRAIN, o.limit_train, &train) != CLT_OK) return fail("--data");
    if (clt_dataset_load(o.data, CLT_SPLIT_TEST, o.limit_test, &test) != CLT_OK) {
        clt_dataset_destroy(train);
        return fail("--data");
    }
    int c, h, w;
    clt_dataset_shape(train, &c, &h, &w);
    if (clt_spec_check(o.model, c, h, w, NULL, 0) != CLT_OK) {
        fprintf(stderr, "cltrain: --model %s: %s\n", o.model, clt_last_error());
        clt_dataset_destroy(train);
        clt_dataset_destroy(test);
        return 2;
    }
    clt_trainer_config cfg;
    clt_trainer_config_default(&cfg);
    cfg.spec = o.model;
    cfg.channels = c, cfg.height = h, cfg.width = w;
    cfg.devices = devs;
    cfg.n_devices = n_devs;
    cfg.split = o.split;
    cfg.weights = o.weights;
    cfg.lr = (float)o.lr;
    cfg.momentum = (float)o.momentum;
    cfg.weight_decay = (float)o.weight_decay;
    cfg.seed = (uint64_t)o.seed;
    cfg.init = o.init;
    clt_trainer *t = NULL;
    clt_batcher *b = NULL;
    clt_batcher_config bc;
    clt_batcher_config_default(&bc);
    bc.batch_size = (int)o.batch_size;
    bc.shuffle = o.shuffle;
    bc.drop_last = o.drop_last;
    bc.seed = (uint64_t)o.seed;
    rc = 0;
    if (clt_trainer_create(&cfg, &t) != CLT_OK) rc = fail("setting up the devices");
    else if (clt_batcher_create(train, &bc, &b) != CLT_OK) rc = fail("batching the training data");
    int64_t per_epoch = b ? clt_batcher_batches_per_epoch(b) : 0;
    if (!rc && per_epoch == 0) {
        fprintf(stderr, "cltrain: --batch-size %lld with --drop-last leaves no batch of %lld samples\n",
                (long long)o.batch_size, (long long)clt_dataset_size(train));
        rc = 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    int tty = isatty(STDOUT_FILENO) && !o.quiet && !o.json;
    plot_point *points = NULL;
    int n_points = 0;
    int64_t total_steps = 0, epochs = o.steps ? (o.steps + per_epoch - 1) / (per_epoch ? per_epoch : 1) : o.epochs;
    for (int64_t e = 1; !rc && e <= epochs && !interrupted; e++) {
        double t0 = now(), loss = 0;
        int64_t correct = 0, seen = 0, done = 0;
        clt_batch batch;
        for (;;) {
            if (interrupted || (o.steps && total_steps >= o.steps)) break;
            if (clt_batcher_next(b, &batch) != CLT_OK) {
                rc = fail("reading a batch");
                break;
            }
            if (batch.count == 0) break;
            double l;
            int64_t k;
            clt_status s = clt_trainer_step(t, batch.images, batch.labels, batch.count, &l, &k);
            total_steps++;
            if (s != CLT_OK) {
                fprintf(stderr, "cltrain: epoch %lld, step %lld: %s\n", (long long)e, (long long)total_steps,
                        clt_last_error());
                rc = 1;
                break;
            }
            loss += l, correct += k, seen += batch.count, done++;
            if (tty) progress(done, per_epoch, loss / (double)seen, (double)seen / (now() - t0), now() - t0);
        }
        if (tty) printf("\r%*s\r", 100, "");
        if (rc || seen == 0) break;
        epoch_report r = {e, total_steps, loss / (double)seen, (double)correct / (double)seen, 0, now() - t0, 0};
        r.samples_per_s = (double)seen / r.seconds;
        if (clt_trainer_evaluate(t, test, (int)o.batch_size, NULL, &r.test_acc) != CLT_OK) {
            rc = fail("evaluating the test set");
            break;
        }
        report(&o, &r, devs, n_devs);
        if (o.log_csv && append_csv(o.log_csv, &r)) rc = 1;
        if (o.plot) {
            plot_point *grown = realloc(points, (size_t)(n_points + 1) * sizeof *points);
            if (!grown) {
                fprintf(stderr, "cltrain: out of memory\n");
                rc = 1;
                break;
            }
            points = grown;
            points[n_points++] = (plot_point){(double)e, r.loss, r.train_acc, r.test_acc};
            if (plot_write_svg(o.plot, points, n_points, o.model)) rc = 1;
        }
    }
    if (interrupted && !rc) {
        fprintf(stderr, "cltrain: interrupted after step %lld\n", (long long)total_steps);
        rc = 130;
    }
    free(points);
    clt_batcher_destroy(b);
    clt_trainer_destroy(t);
    clt_dataset_destroy(train);
    clt_dataset_destroy(test);
    return rc;
}
