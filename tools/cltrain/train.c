/* cltrain train: the tutorials' training loop over every selected device,
 * with checkpoints, resume, .npz import/export and reports. */
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/json.h"
#include "../common/number.h"
#include "core/clock.h"
#include "log.h"
#include "optim/schedule.h"
#include "options.h"
#include "outputs.h"
#include "plot.h"
#include "cltrain_diag.h"
#include "runmeta.h"
#include "world.h"

/* The signal (SIGINT or SIGTERM) that asked to stop: the loop stops after
 * the current step. A signal handler can only talk through such a flag. */
static volatile sig_atomic_t interrupted;

static void on_stop_signal(int sig)
{
    interrupted = sig;
}

typedef struct epoch_report {
    int64_t epoch, steps;
    double loss, train_acc, test_acc, seconds, samples_per_s;
    double lr; /* of the epoch's last step */
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

/* devs: this process's; under mpirun the count of processes follows. */
static void report(const cli_options *o, const epoch_report *r, const int *devs, int n, int processes)
{
    if (o->json) {
        printf("{\"epoch\": %lld, \"steps\": %lld, \"loss\": %.6f, \"train_acc\": %.6f, \"test_acc\": %.6f, "
               "\"seconds\": %.4f, \"samples_per_s\": " NUMBER_MACHINE_FMT ", \"lr\": %.9g, \"devices\": [",
               (long long)r->epoch, (long long)r->steps, r->loss, r->train_acc, r->test_acc, r->seconds,
               r->samples_per_s, r->lr);
        device_names(stdout, devs, n, 1);
        if (processes > 1) printf("], \"processes\": %d}\n", processes);
        else printf("]}\n");
    } else if (!o->quiet) {
        char rate[32], secs[32];
        printf("epoch %lld: loss %.4f, train acc %.4f, test acc %.4f, lr %.4g, %s s/epoch, %s samples/s on [",
               (long long)r->epoch, r->loss, r->train_acc, r->test_acc, r->lr,
               format_number(secs, sizeof secs, r->seconds), format_number(rate, sizeof rate, r->samples_per_s));
        device_names(stdout, devs, n, 0);
        if (processes > 1) printf("] (process 0 of %d)\n", processes);
        else printf("]\n");
    }
    fflush(stdout);
}

static int append_csv(const char *path, const epoch_report *r)
{
    FILE *f = cli_open_append("--log-csv", path);
    if (!f) return 1;
    if (ftell(f) == 0) fprintf(f, "epoch,steps,loss,train_acc,test_acc,seconds,samples_per_s,lr\n");
    fprintf(f, "%lld,%lld,%.6f,%.6f,%.6f,%.4f," NUMBER_MACHINE_FMT ",%.9g\n", (long long)r->epoch, (long long)r->steps,
            r->loss, r->train_acc, r->test_acc, r->seconds, r->samples_per_s, r->lr);
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (bad) fprintf(stderr, "cltrain: --log-csv %s: write failed\n", path);
    return bad;
}

static void progress(int64_t done, int64_t total, double loss, double sps, double elapsed)
{
    int width = 30, filled = total ? (int)(width * done / total) : 0;
    double eta = sps > 0 && total > done ? elapsed / (double)done * (double)(total - done) : 0;
    char rate[32];
    fprintf(stdout, "\r[%.*s%*s] %lld/%lld  loss %.4f  %s samples/s  ETA %.0f s ", filled,
            "##############################", width - filled, "", (long long)done, (long long)total, loss,
            format_number(rate, sizeof rate, sps), eta);
    fflush(stdout);
}

/* The run's schedule: --lr (times the devices with --scale-lr), the
 * warmup in steps, cosine over the whole run. 0 or 2 after a message. */
static int make_schedule(const cli_options *o, int64_t per_epoch, int n_devs, clt_schedule *s)
{
    const run_learning *l = &o->learn;
    double scale = l->scale_lr ? n_devs : 1;
    memset(s, 0, sizeof *s);
    s->kind = (clt_schedule_kind)l->lr_schedule;
    s->lr = o->lr * scale;
    s->lr_min = l->lr_min * scale;
    s->gamma = l->lr_gamma;
    s->step_epochs = l->lr_step;
    s->n_milestones = l->n_milestones;
    memcpy(s->milestones, l->milestones, sizeof s->milestones);
    s->steps_per_epoch = per_epoch;
    s->warmup_steps = l->warmup_steps ? l->warmup_steps : l->warmup_epochs * per_epoch;
    s->total_steps = o->steps ? o->steps : o->epochs * per_epoch;
    if (clt_schedule_check(s) != CLT_OK) {
        fprintf(stderr, "cltrain: --lr-schedule: %s\n", clt_last_error());
        return 2;
    }
    return 0;
}

static int fail(const char *what)
{
    fprintf(stderr, "cltrain: %s: %s\n", what, clt_last_error());
    return 1;
}

int cli_make_trainer(const cli_options *o, const char *model, const char *model_from, const int *shape,
                     const int *devs, int n_devs, clt_trainer **out)
{
    int c = shape[0], h = shape[1], w = shape[2];
    if (clt_spec_check(model, c, h, w, NULL, 0) != CLT_OK) {
        if (!model_from) {
            fprintf(stderr, "cltrain: --model %.200s%s: %s\n", model, strlen(model) > 200 ? "..." : "", clt_last_error());
            return 2;
        }
        fprintf(stderr, "cltrain: --resume %s: the model recorded in the checkpoint, \"%.200s%s\", is refused: %s\n",
                model_from, model, strlen(model) > 200 ? "..." : "", clt_last_error());
        return 1;
    }
    clt_trainer_config cfg;
    clt_trainer_config_default(&cfg);
    cfg.spec = model;
    cfg.channels = c, cfg.height = h, cfg.width = w;
    cfg.devices = devs;
    cfg.n_devices = n_devs;
    cfg.split = o->split;
    cfg.weights = o->weights;
    cfg.lr = (float)o->lr;
    cfg.momentum = (float)o->momentum;
    cfg.weight_decay = (float)o->weight_decay;
    cfg.optimizer = (clt_optimizer)o->learn.optimizer;
    cfg.nesterov = o->learn.nesterov;
    cfg.beta1 = (float)o->learn.beta1;
    cfg.beta2 = (float)o->learn.beta2;
    cfg.eps = (float)o->learn.eps;
    cfg.clip_grad_norm = (float)o->learn.clip_grad_norm;
    cfg.label_smoothing = (float)o->learn.label_smoothing;
    cfg.seed = (uint64_t)o->seed;
    cfg.init = cli_init_for(o, model);
    cfg.sync_bn = o->sync_bn;
    cfg.mpi_comm = o->mpi_comm;
    cfg.log = cli_log;
    cfg.log_user = cli_log_user();
    if (clt_trainer_create(&cfg, out) != CLT_OK) return fail("setting up the devices");
    if (o->init_from) {
        if (clt_net_load_npz(clt_trainer_net(*out, 0), o->init_from) != CLT_OK ||
            clt_trainer_broadcast_params(*out) != CLT_OK) {
            clt_trainer_destroy(*out);
            *out = NULL;
            return fail("--init-from");
        }
    }
    return 0;
}

/* "3 epochs", "1 step" */
static const char *target_text(char *buf, size_t cap, int64_t epochs, int64_t steps)
{
    int64_t n = steps ? steps : epochs;
    snprintf(buf, cap, "%lld %s%s", (long long)n, steps ? "step" : "epoch", n == 1 ? "" : "s");
    return buf;
}

/* The run ends where the checkpoint says (a record from before targets were
 * kept has none: the command line's or the default 10 epochs apply); an
 * explicit --epochs or --steps replaces that end, saying so. */
static void apply_target(cli_options *o, const char *path, const run_meta *m)
{
    if (!m->target_epochs && !m->target_steps) return;
    if (!CLI_GIVEN(o, O_EPOCHS) && !CLI_GIVEN(o, O_STEPS)) {
        if (m->target_epochs) o->epochs = m->target_epochs;
        o->steps = m->target_steps;
        return;
    }
    if (o->steps == m->target_steps && (o->steps || o->epochs == m->target_epochs)) return;
    if (o->rank != 0) return; /* process 0 says it for all */
    char theirs[48];
    fprintf(stderr, "cltrain: %s %lld replaces the end recorded in %s (%s)\n", o->steps ? "--steps" : "--epochs",
            (long long)(o->steps ? o->steps : o->epochs), path,
            target_text(theirs, sizeof theirs, m->target_epochs, m->target_steps));
}

/* --resume: settings that fix the data order come from the checkpoint; a
 * conflicting command-line value is an error, the learning settings may be
 * changed on purpose. */
static int apply_resume(cli_options *o, const char *path, run_meta *m, char **model)
{
    if (run_meta_read_checkpoint(path, model, m)) return 1;
    struct {
        int opt;
        const char *name;
        int64_t mine, theirs;
    } fixed[] = {{O_SEED, "--seed", o->seed, m->seed},
                 {O_BATCH, "--batch-size", o->batch_size, m->batch_size},
                 {O_LTRAIN, "--limit-train", o->limit_train, m->limit_train},
                 {O_NOSHUF, "--no-shuffle", !o->shuffle, !m->shuffle},
                 {O_DROP, "--drop-last", o->drop_last, m->drop_last}};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (CLI_GIVEN(o, fixed[i].opt) && fixed[i].mine != fixed[i].theirs) {
            fprintf(stderr, "cltrain: %s %lld conflicts with the checkpoint's %lld (%s): the data order would change\n",
                    fixed[i].name, (long long)fixed[i].mine, (long long)fixed[i].theirs, path);
            return 2;
        }
    o->seed = m->seed, o->batch_size = m->batch_size, o->limit_train = m->limit_train;
    o->shuffle = m->shuffle, o->drop_last = m->drop_last;
    if (!CLI_GIVEN(o, O_LR)) o->lr = m->lr;
    if (!CLI_GIVEN(o, O_MOM)) o->momentum = m->momentum;
    if (!CLI_GIVEN(o, O_WD)) o->weight_decay = m->weight_decay;
    if (!CLI_GIVEN(o, O_DATA)) o->data = m->data;
    /* the optimizer and schedule options the command line does not set:
     * the checkpoint's */
    run_learning *l = &o->learn;
    const run_learning *c = &m->learn;
    if (!CLI_GIVEN(o, O_OPTIM)) l->optimizer = c->optimizer;
    if (!CLI_GIVEN(o, O_NESTEROV)) l->nesterov = c->nesterov;
    if (!CLI_GIVEN(o, O_SCALE_LR)) l->scale_lr = c->scale_lr;
    if (!CLI_GIVEN(o, O_BETAS)) l->beta1 = c->beta1, l->beta2 = c->beta2;
    if (!CLI_GIVEN(o, O_EPS)) l->eps = c->eps;
    if (!CLI_GIVEN(o, O_CLIP)) l->clip_grad_norm = c->clip_grad_norm;
    if (!CLI_GIVEN(o, O_SMOOTH)) l->label_smoothing = c->label_smoothing;
    if (!CLI_GIVEN(o, O_SCHED)) l->lr_schedule = c->lr_schedule;
    if (!CLI_GIVEN(o, O_LR_STEP)) l->lr_step = c->lr_step;
    if (!CLI_GIVEN(o, O_WARM_STEPS)) l->warmup_steps = c->warmup_steps;
    if (!CLI_GIVEN(o, O_WARM_EPOCHS)) l->warmup_epochs = c->warmup_epochs;
    if (!CLI_GIVEN(o, O_MILESTONES)) {
        memcpy(l->milestones, c->milestones, sizeof l->milestones);
        l->n_milestones = c->n_milestones;
    }
    if (!CLI_GIVEN(o, O_GAMMA)) l->lr_gamma = c->lr_gamma;
    if (!CLI_GIVEN(o, O_LR_MIN)) l->lr_min = c->lr_min;
    apply_target(o, path, m);
    return 0;
}

static int save_checkpoint(clt_trainer *t, const cli_options *o, int64_t epoch, int64_t batch, int64_t steps)
{
    run_meta m = {epoch, batch, steps, o->seed, o->batch_size, o->limit_train, o->shuffle, o->drop_last,
                  o->lr, o->momentum, o->weight_decay, (char *)o->data,
                  o->steps ? 0 : o->epochs, o->steps, o->learn};
    char *text = run_meta_format(&m);
    if (!text) {
        fprintf(stderr, "cltrain: --save %s: out of memory\n", o->save);
        return 1;
    }
    clt_status s = clt_trainer_save_checkpoint(t, o->save, text);
    free(text);
    if (s != CLT_OK) {
        fprintf(stderr, "cltrain: --save %s: %s\n", o->save, clt_last_error());
        return 1;
    }
    return 0;
}

int cli_train(int argc, char **argv, const cli_world *world)
{
    cli_options o;
    cli_options_default(&o);
    int rc = cli_parse(&o, "train", NULL, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    if (world->size > 1) {
        o.mpi_comm = world->comm;
        o.rank = world->rank;
        if (world->rank != 0) { /* process 0 alone prints and writes (and checks where) */
            o.quiet = 1;
            o.json = 0;
            o.save = o.log_csv = o.plot = o.export_npz = o.trace = NULL;
        }
    }
    if (cli_check_outputs(&o)) return 1;
    run_meta start = {.epoch = 1};
    char *resumed_model = NULL;
    if (o.resume && (rc = apply_resume(&o, o.resume, &start, &resumed_model))) {
        free(resumed_model);
        free(start.data);
        return rc;
    }
    if ((rc = cli_check_learning(&o))) {
        free(resumed_model);
        free(start.data);
        return rc;
    }
    const char *model = resumed_model && !CLI_GIVEN(&o, O_MODEL) ? resumed_model : o.model;
    int devs[CLT_MAX_DEVICES], n_devs = 0;
    clt_dataset *train = NULL, *test = NULL;
    clt_trainer *t = NULL;
    clt_batcher *b = NULL;
    plot_data plot = {.title = model};
    if ((rc = cli_resolve_devices(&o, devs, &n_devs))) goto done;
    if (!CLI_GIVEN(&o, O_DEVICES) && !getenv("CLTRAIN_DEVICES") && (rc = cli_world_devices(world, devs, &n_devs)))
        goto done;
    if (clt_dataset_load(o.data, CLT_SUBSET_TRAIN, o.limit_train, &train) != CLT_OK ||
        clt_dataset_load(o.data, CLT_SUBSET_TEST, o.limit_test, &test) != CLT_OK) {
        rc = fail("--data");
        goto done;
    }
    int shape[3];
    if ((rc = cli_check_shapes(&o, train, test, shape))) goto done;
    if ((rc = cli_make_trainer(&o, model, resumed_model && model == resumed_model ? o.resume : NULL, shape, devs,
                               n_devs, &t)))
        goto done;
    if (o.resume && clt_trainer_load_checkpoint(t, o.resume, NULL) != CLT_OK) {
        rc = fail("--resume");
        goto done;
    }
    if (o.trace && clt_trainer_trace(t, 1) != CLT_OK) {
        rc = fail("--trace");
        goto done;
    }
    clt_batcher_config bc;
    clt_batcher_config_default(&bc);
    bc.batch_size = (int)o.batch_size;
    bc.shuffle = o.shuffle;
    bc.drop_last = o.drop_last;
    bc.seed = (uint64_t)o.seed;
    if (clt_batcher_create(train, &bc, &b) != CLT_OK) {
        rc = fail("batching the training data");
        goto done;
    }
    int64_t per_epoch = clt_batcher_batches_per_epoch(b);
    plot.steps_per_epoch = per_epoch;
    plot.first_step = start.steps;
    if (per_epoch == 0) {
        fprintf(stderr, "cltrain: --batch-size %lld with --drop-last leaves no batch of %lld samples\n",
                (long long)o.batch_size, (long long)clt_dataset_size(train));
        rc = 2;
        goto done;
    }
    if (start.batch > per_epoch || clt_batcher_seek(b, start.epoch - 1, start.batch) != CLT_OK) {
        fprintf(stderr, "cltrain: --resume %s: the checkpoint continues at batch %lld of epoch %lld, but --data %s "
                "holds %lld batch%s per epoch (%lld training samples in batches of %lld%s)\n", o.resume,
                (long long)start.batch, (long long)start.epoch, o.data, (long long)per_epoch, per_epoch == 1 ? "" : "es",
                (long long)clt_dataset_size(train), (long long)o.batch_size, o.drop_last ? ", the last dropped" : "");
        rc = 1;
        goto done;
    }
    clt_schedule sched;
    /* --scale-lr: the devices of every process */
    if ((rc = make_schedule(&o, per_epoch, cli_world_sum(world, n_devs), &sched))) goto done;
    double lr = clt_schedule_lr(&sched, start.steps);
    /* resuming a finished run trains nothing, and says so */
    int finished = o.resume && (o.steps ? start.steps >= o.steps : start.epoch > o.epochs);
    if (finished && o.rank == 0) {
        char target[48];
        fprintf(stderr, "cltrain: --resume %s: the run is complete: %lld steps done (%lld full epoch%s), its end is %s; "
                "a larger --epochs or --steps trains on\n", o.resume, (long long)start.steps,
                (long long)(start.epoch - 1), start.epoch == 2 ? "" : "s",
                target_text(target, sizeof target, o.epochs, o.steps));
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C or SIGTERM ends the process at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* Under mpirun the output is a pseudo-terminal of the launcher's
     * whatever mpirun's own output is (a log file, a pipe): no progress bar. */
    int tty = isatty(STDOUT_FILENO) && !o.quiet && !o.json && world->size == 1;
    int64_t total_steps = start.steps;
    int64_t last_epoch = o.steps ? INT64_MAX : o.epochs;
    /* a checkpoint of this run exists (the one resumed, when it is saved over) */
    int saved = o.resume && o.save && strcmp(o.resume, o.save) == 0;
    int stop_sig = 0; /* interrupted, agreed by every process (the largest signal) */
    for (int64_t e = start.epoch; !rc && !finished && e <= last_epoch && !stop_sig; e++) {
        double t0 = clt_now(), loss = 0;
        int64_t correct = 0, seen = 0, done_batches = 0, next_batch = e == start.epoch ? start.batch : 0;
        int stopped = 0;
        clt_batch batch;
        for (;;) {
            stop_sig = cli_world_max(world, (int)interrupted);
            if (stop_sig || (o.steps && total_steps >= o.steps)) {
                stopped = 1;
                break;
            }
            if (clt_batcher_next(b, &batch) != CLT_OK) {
                rc = fail("reading a batch");
                break;
            }
            if (batch.count == 0) break;
            double l;
            int64_t k;
            lr = clt_schedule_lr(&sched, total_steps);
            clt_status s = clt_trainer_set_lr(t, (float)lr);
            if (s == CLT_OK) s = clt_trainer_step(t, batch.images, batch.labels, batch.count, &l, &k);
            total_steps++;
            if (s != CLT_OK) {
                char who[32] = "";
                if (world->size > 1) snprintf(who, sizeof who, "rank %d: ", world->rank);
                fprintf(stderr, "cltrain: %sepoch %lld, step %lld: %s%s%s\n", who, (long long)e, (long long)total_steps,
                        clt_last_error(), saved ? "; last good checkpoint: " : "", saved ? o.save : "");
                rc = 1;
                break;
            }
            next_batch = batch.index + 1;
            loss += l, correct += k, seen += batch.count, done_batches++;
            if (o.plot && plot_add_step(&plot, l / (double)batch.count)) {
                rc = 1;
                break;
            }
            if (tty) progress(next_batch, per_epoch, loss / (double)seen, (double)seen / (clt_now() - t0), clt_now() - t0);
        }
        if (tty) printf("\r%*s\r", 100, "");
        if (rc) break;
        if (seen > 0) {
            epoch_report r = {e, total_steps, loss / (double)seen, (double)correct / (double)seen, 0, clt_now() - t0, 0, lr};
            r.samples_per_s = (double)seen / r.seconds;
            if (clt_trainer_evaluate(t, test, (int)o.batch_size, NULL, &r.test_acc) != CLT_OK) {
                rc = fail("evaluating the test set");
                break;
            }
            report(&o, &r, devs, n_devs, world->size);
            if (o.log_csv && append_csv(o.log_csv, &r)) rc = 1;
            if (o.plot && (plot_add_epoch(&plot, (plot_point){(double)total_steps, r.loss, r.train_acc, r.test_acc}) ||
                           plot_write_svg(o.plot, &plot))) {
                rc = 1;
                break;
            }
        }
        /* Checkpoint where the next run must continue. */
        int complete = !stopped || next_batch >= per_epoch;
        if (o.save && !rc) {
            rc = save_checkpoint(t, &o, complete ? e + 1 : e, complete ? 0 : next_batch, total_steps);
            saved = !rc;
        }
        if (stopped) break;
    }
    if (!rc && o.export_npz && clt_net_save_npz(clt_trainer_net(t, 0), o.export_npz) != CLT_OK)
        rc = fail("--export-npz");
    if (stop_sig && !rc) {
        if (world->rank == 0)
            fprintf(stderr, "cltrain: %s after step %lld%s%s\n", stop_sig == SIGTERM ? "terminated (SIGTERM)" : "interrupted",
                    (long long)total_steps, o.save ? "; checkpoint saved to " : "", o.save ? o.save : "");
        rc = 128 + stop_sig; /* as a shell reports a death by that signal: 130, 143 */
    }
done:
    if (o.trace && t && clt_trainer_write_trace(t, o.trace) != CLT_OK) rc = rc ? rc : fail("--trace");
    plot_free(&plot);
    clt_batcher_destroy(b);
    clt_trainer_destroy(t);
    clt_dataset_destroy(train);
    clt_dataset_destroy(test);
    free(resumed_model);
    free(start.data);
    return rc;
}
