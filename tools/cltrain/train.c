/* cltrain train: the tutorials' training loop over every selected device,
 * with checkpoints, resume, .npz import/export and reports. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "log.h"
#include "optim/optim.h"
#include "optim/schedule.h"
#include "options.h"
#include "outputs.h"
#include "plot.h"
#include "report.h"
#include "cltrain_diag.h"
#include "runmeta.h"
#include "stop.h"
#include "tensorboard.h"
#include "world.h"

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
        fprintf(stderr, "cltrain: %s: the model recorded there, \"%.200s%s\", is refused: %s\n", model_from, model,
                strlen(model) > 200 ? "..." : "", clt_last_error());
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
    cfg.precision = (clt_precision)o->precision;
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
    if (!CLI_GIVEN(o, O_TEST_DATA)) o->test_data = m->test_data && m->test_data[0] ? m->test_data : NULL;
    if (!CLI_GIVEN(o, O_LAYOUT)) o->layout = m->layout;
    if (!CLI_GIVEN(o, O_LABEL)) o->coarse = m->coarse;
    if (!CLI_GIVEN(o, O_NORMALIZE) && m->normalize && m->normalize[0]) o->normalize = m->normalize;
    if (!CLI_GIVEN(o, O_AUGMENT) && m->augment && m->augment[0] && parse_augment("cltrain", m->augment, &o->aug_pad,
                                                                                 &o->aug_flip))
        return 1;
    if (CLI_GIVEN(o, O_VAL_SPLIT) && o->val_split != m->val_split) {
        fprintf(stderr, "cltrain: --val-split %g conflicts with the checkpoint's %g (%s): the training set would "
                "change\n", o->val_split, m->val_split, path);
        return 2;
    }
    o->val_split = m->val_split;
    if (!CLI_GIVEN(o, O_IMAGE_SIZE)) o->image_size = m->image_size;
    if (!CLI_GIVEN(o, O_CHANNELS)) o->channels = m->channels;
    if (!CLI_GIVEN(o, O_PRECISION)) o->precision = m->precision;
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

/* The optimizer's state arrays per parameter (a checkpoint holds them). */
static int optimizer_slots(const cli_options *o)
{
    clt_optim_settings s = {.kind = (clt_optimizer)o->learn.optimizer, .momentum = (float)o->momentum};
    return clt_optim_find(s.kind)->slots(&s);
}

/* A training run between its set-up and its end. */
typedef struct run {
    const cli_options *o;
    const cli_world *world;
    clt_trainer *t;
    clt_batcher *b;
    const clt_dataset *test;
    const int *devs;
    int n_devs;
    const clt_schedule *sched;
    plot_data *plot;
    int64_t per_epoch;
    int64_t steps;       /* optimizer steps done */
    int64_t saved_steps; /* the steps in the checkpoint at --save; -1 while this run wrote none */
    double lr;           /* of the last step */
    int stop_sig;        /* the stop every process agreed on (stop.h), or 0 */
    int tty;             /* a progress bar */
    clt_tfevents *tb;    /* --tensorboard, or NULL */
} run;

/* One epoch's sums over the steps it made. */
typedef struct epoch_sums {
    double t0, t1, loss; /* t1: when its last step ended */
    int64_t correct, seen, next_batch;
    int stopped; /* by a stop or the --steps target, not by the epoch's end */
} epoch_sums;

/* The optimizer settings in the words of the options, for a diverged run. */
static void learning_words(const cli_options *o, char *buf, size_t cap)
{
    const run_learning *l = &o->learn;
    const char *name = clt_optim_find((clt_optimizer)l->optimizer)->name;
    if (l->optimizer == CLT_OPTIMIZER_SGD)
        snprintf(buf, cap, "--optimizer %s --lr %g --momentum %g --weight-decay %g", name, o->lr, o->momentum,
                 o->weight_decay);
    else
        snprintf(buf, cap, "--optimizer %s --lr %g --betas %g,%g --eps %g --weight-decay %g", name, o->lr, l->beta1,
                 l->beta2, l->eps, o->weight_decay);
}

static void step_failed(const run *r, int64_t epoch, clt_status s)
{
    const cli_options *o = r->o;
    char who[32] = "", settings[256] = "";
    if (r->world->size > 1) snprintf(who, sizeof who, "rank %d: ", r->world->rank);
    if (s == CLT_ERR_NUMERIC) {
        learning_words(o, settings, sizeof settings);
        fprintf(stderr, "cltrain: %sepoch %lld, step %lld: %s; this run: %s\n", who, (long long)epoch,
                (long long)r->steps, clt_last_error(), settings);
    } else {
        fprintf(stderr, "cltrain: %sepoch %lld, step %lld: %s\n", who, (long long)epoch, (long long)r->steps,
                clt_last_error());
    }
    if (r->saved_steps >= 0 && r->world->rank == 0)
        fprintf(stderr, "cltrain: the last checkpoint, after step %lld, is in %s (--resume continues from it)\n",
                (long long)r->saved_steps, o->save);
}

/* The steps of epoch e until it ends, the --steps target is met or a stop
 * is asked; 0, or 1 after a message. */
static int run_steps(run *r, int64_t e, epoch_sums *sum)
{
    const cli_options *o = r->o;
    clt_batch batch;
    for (;;) {
        sum->t1 = clt_now();
        r->stop_sig = cli_world_max(r->world, stop_requested());
        if (r->stop_sig || (o->steps && r->steps >= o->steps)) {
            sum->stopped = 1;
            return 0;
        }
        if (clt_batcher_next(r->b, &batch) != CLT_OK) return fail("reading a batch");
        if (batch.count == 0) return 0;
        double l;
        int64_t k;
        r->lr = clt_schedule_lr(r->sched, r->steps);
        clt_status s = clt_trainer_set_lr(r->t, (float)r->lr);
        if (s == CLT_OK) s = clt_trainer_step(r->t, batch.images, batch.labels, batch.count, &l, &k);
        r->steps++;
        if (s != CLT_OK) {
            step_failed(r, e, s);
            return 1;
        }
        sum->next_batch = batch.index + 1;
        sum->loss += l, sum->correct += k, sum->seen += batch.count;
        if (o->plot && plot_add_step(r->plot, l / (double)batch.count)) return 1;
        if (r->tb && tboard_step(r->tb, o->tensorboard, r->steps, l / (double)batch.count)) return 1;
        if (r->tty) {
            double dt = clt_now() - sum->t0;
            report_progress(sum->next_batch, r->per_epoch, sum->loss / (double)sum->seen, (double)sum->seen / dt, dt);
        }
    }
}

/* A checkpoint where the next run continues (epoch, batch), unless the
 * one at --save already holds this state; 0 or 1 after a message. */
static int save_state(run *r, int64_t epoch, int64_t batch)
{
    const cli_options *o = r->o;
    if (!o->save || r->saved_steps == r->steps) return 0;
    char augment[32] = "";
    if (o->aug_pad || o->aug_flip)
        snprintf(augment, sizeof augment, o->aug_pad ? "crop:%d%s" : "flip", o->aug_pad, o->aug_flip ? ",flip" : "");
    run_meta m = {epoch, batch, r->steps, o->seed, o->batch_size, o->limit_train, o->shuffle, o->drop_last,
                  o->lr, o->momentum, o->weight_decay, (char *)o->data,
                  o->steps ? 0 : o->epochs, o->steps, o->learn, (char *)o->test_data, o->layout, o->coarse,
                  (char *)o->normalize, augment, o->val_split, o->image_size, o->channels, o->precision};
    char *text = run_meta_format(&m);
    if (!text) {
        fprintf(stderr, "cltrain: --save %s: out of memory\n", o->save);
        return 1;
    }
    clt_status s = clt_trainer_save_checkpoint(r->t, o->save, text);
    free(text);
    if (s != CLT_OK) {
        fprintf(stderr, "cltrain: --save %s: %s", o->save, clt_last_error());
        if (r->saved_steps >= 0) fprintf(stderr, " (the checkpoint after step %lld stays)", (long long)r->saved_steps);
        fputc('\n', stderr);
        return 1;
    }
    r->saved_steps = r->steps;
    return 0;
}

/* What an epoch's end writes beside the checkpoint: the evaluation (not
 * after a stop: it could take longer than a stop may wait), the line, the
 * CSV row and the plot. 0 or 1 after a message (the checkpoint is saved by
 * then). */
static int report_end(run *r, int64_t e, const epoch_sums *sum)
{
    const cli_options *o = r->o;
    r->stop_sig = cli_world_max(r->world, stop_requested()); /* one asked during the save counts */
    /* without a test set (a source of one split) nothing is evaluated */
    epoch_report rep = {e, r->steps, sum->loss / (double)sum->seen, (double)sum->correct / (double)sum->seen, 0,
                        sum->t1 - sum->t0, 0, r->lr, !r->stop_sig && r->test, r->stop_sig != 0, 0};
    rep.samples_per_s = (double)sum->seen / rep.seconds;
    if (rep.evaluated && clt_trainer_evaluate(r->t, r->test, (int)o->batch_size, &rep.test_loss, &rep.test_acc) != CLT_OK)
        return fail("evaluating the test set");
    report_epoch(o, &rep, r->devs, r->n_devs, r->world->size);
    /* a closed pipe stops the run, saved; during a stop (SIGHUP: the
     * terminal is gone) the output is lost anyway and the stop says so */
    int err = stop_check_output(stdout), bad = 0;
    if (err && err != EPIPE && !r->stop_sig) {
        fprintf(stderr, "cltrain: writing to standard output failed: %s\n", strerror(err));
        bad = 1;
    }
    bad |= o->log_csv && report_csv(o->log_csv, &rep);
    bad |= r->tb && tboard_epoch(r->tb, o->tensorboard, &rep);
    if (!r->stop_sig && o->plot)
        bad |= plot_add_epoch(r->plot, (plot_point){(double)r->steps, rep.loss, rep.train_acc,
                                                    rep.evaluated ? rep.test_acc : NAN}) ||
               plot_write_svg(o->plot, r->plot);
    return bad;
}

/* Epochs from `start` until the end, a stop or a failure; 0 or 1. */
static int run_epochs(run *r, const run_meta *start)
{
    const cli_options *o = r->o;
    int64_t last_epoch = o->steps ? INT64_MAX : o->epochs;
    for (int64_t e = start->epoch; e <= last_epoch; e++) {
        epoch_sums sum = {.t0 = clt_now(), .next_batch = e == start->epoch ? start->batch : 0};
        int rc = run_steps(r, e, &sum);
        if (r->tty) report_progress_clear();
        if (rc) return rc;
        int complete = !sum.stopped || sum.next_batch >= r->per_epoch;
        /* the checkpoint first: what follows can fail or be cut short */
        if ((rc = save_state(r, complete ? e + 1 : e, complete ? 0 : sum.next_batch))) return rc;
        if (sum.seen > 0 && (rc = report_end(r, e, &sum))) {
            if (r->saved_steps >= 0)
                fprintf(stderr, "cltrain: the checkpoint after step %lld is saved in %s (--resume continues from it)\n",
                        (long long)r->saved_steps, o->save);
            return rc;
        }
        if (sum.stopped) return 0;
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
            o.save = o.log_csv = o.plot = o.export_npz = o.trace = o.tensorboard = NULL;
        }
    }
    cli_outputs held = {.n = 0};
    if (cli_check_outputs(&o, &held)) return 1;
    run_meta start = {.epoch = 1};
    char *resumed_model = NULL;
    int devs[CLT_MAX_DEVICES], n_devs = 0;
    clt_dataset *train = NULL, *test = NULL;
    clt_trainer *t = NULL;
    clt_batcher *b = NULL;
    plot_data plot = {.title = o.model};
    clt_tfevents *tb = NULL;
    if (o.resume && (rc = apply_resume(&o, o.resume, &start, &resumed_model))) goto done;
    if ((rc = cli_check_learning(&o))) goto done;
    if ((rc = tboard_open(&o, o.resume ? start.steps : -1, &tb))) goto done;
    const char *model = resumed_model && !CLI_GIVEN(&o, O_MODEL) ? resumed_model : o.model;
    plot.title = model;
    if ((rc = cli_resolve_devices(&o, devs, &n_devs))) goto done;
    if (!CLI_GIVEN(&o, O_DEVICES) && !getenv("CLTRAIN_DEVICES") && (rc = cli_world_devices(world, devs, &n_devs)))
        goto done;
    char norm[4096];
    if ((rc = cli_load_run_data(&o, &train, &test, norm, sizeof norm))) goto done;
    o.normalize = norm; /* the values, as the run record keeps them */
    int shape[3];
    if ((rc = cli_check_shapes(&o, train, test, shape))) goto done;
    int resumed = resumed_model && model == resumed_model;
    char sized[1024]; /* a builtin's last layer takes the data's classes (the checkpoint keeps the spec) */
    if (!resumed) model = cli_model_for_classes(model, clt_dataset_classes(train), sized, sizeof sized);
    if ((rc = cli_make_trainer(&o, model, resumed ? o.resume : NULL, shape, devs, n_devs, &t))) goto done;
    if (o.resume && clt_trainer_load_checkpoint(t, o.resume, NULL) != CLT_OK) {
        rc = fail("--resume");
        goto done;
    }
    if ((rc = cli_describe_net(clt_trainer_net(t, 0), train))) goto done;
    if ((rc = cli_check_space(&o, clt_trainer_net(t, 0), optimizer_slots(&o)))) goto done;
    if (clt_trainer_check_memory(t, (int)o.batch_size) != CLT_OK) {
        fprintf(stderr, "cltrain: --batch-size %lld: %s\n", (long long)o.batch_size, clt_last_error());
        rc = 1;
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
    bc.augment_pad = o.aug_pad;
    bc.augment_flip = o.aug_flip;
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
    /* resuming a finished run trains nothing, and says so */
    int finished = o.resume && (o.steps ? start.steps >= o.steps : start.epoch > o.epochs);
    if (finished && o.rank == 0) {
        char target[48];
        fprintf(stderr, "cltrain: --resume %s: the run is complete: %lld steps done (%lld full epoch%s), its end is %s; "
                "a larger --epochs or --steps trains on\n", o.resume, (long long)start.steps,
                (long long)(start.epoch - 1), start.epoch == 2 ? "" : "s",
                target_text(target, sizeof target, o.epochs, o.steps));
    }
    stop_arm();
    stop_forward_to(t);
    run r = {&o, world, t, b, test, devs, n_devs, &sched, &plot, per_epoch, start.steps, -1,
             clt_schedule_lr(&sched, start.steps), 0,
             /* Under mpirun the output is a pseudo-terminal of the launcher's
              * whatever mpirun's own output is (a log file, a pipe): no
              * progress bar. */
             isatty(STDOUT_FILENO) && !o.quiet && !o.json && world->size == 1, tb};
    /* the checkpoint resumed is the one saved over: it holds this state */
    if (o.resume && o.save && strcmp(o.resume, o.save) == 0) r.saved_steps = start.steps;
    if (!finished) rc = run_epochs(&r, &start);
    if (!rc && o.export_npz && clt_net_save_npz(clt_trainer_net(t, 0), o.export_npz) != CLT_OK)
        rc = fail("--export-npz");
    int late = stop_requested(), stopped_by = r.stop_sig;
    if (r.stop_sig && !rc) {
        if (world->rank == 0) {
            fprintf(stderr, "cltrain: %s after step %lld", stop_words(r.stop_sig), (long long)r.steps);
            if (o.save) fprintf(stderr, "; checkpoint saved to %s\n", o.save);
            else fprintf(stderr, " (no --save: the run's state is not kept)\n");
        }
        rc = 128 + r.stop_sig; /* as a shell reports a death by that signal: 130, 143 */
    } else if (late && !rc && world->size == 1) {
        /* asked to stop while the last step's outputs were written: they
         * are complete, and the caller learns of its stop */
        fprintf(stderr, "cltrain: %s as the run ended; its outputs are written\n", stop_words(late));
        rc = 128 + late;
    }
    /* every process waits for process 0's save before any leaves (a
     * launcher that sees one process leave may kill the others); one that
     * failed leaves through MPI_Abort instead, which ends them all */
    if (stopped_by && rc == 128 + stopped_by) cli_world_barrier(world);
done:
    stop_forward_to(NULL);
    if (o.trace && t && clt_trainer_write_trace(t, o.trace) != CLT_OK) rc = rc ? rc : fail("--trace");
    plot_free(&plot);
    clt_tfevents_close(tb);
    clt_batcher_destroy(b);
    clt_trainer_destroy(t);
    clt_dataset_destroy(train);
    clt_dataset_destroy(test);
    free(resumed_model);
    free(start.data);
    free(start.test_data);
    free(start.normalize);
    free(start.augment);
    cli_release_outputs(&held);
    return rc;
}
