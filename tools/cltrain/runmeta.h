/* The training-loop state a checkpoint carries besides the tensors: where
 * the run stands and the settings that fix the data order. */
#ifndef CLT_CLI_RUNMETA_H
#define CLT_CLI_RUNMETA_H

#include <stddef.h>
#include <stdint.h>

#include "optim/schedule.h"

/* The optimizer, clipping and learning-rate schedule of a run (version 3
 * on; older records hold SGD's lr, momentum and weight decay only). */
typedef struct run_learning {
    int optimizer;          /* clt_optimizer */
    int nesterov, scale_lr;
    double beta1, beta2, eps, clip_grad_norm, label_smoothing;
    int lr_schedule;        /* clt_schedule_kind */
    int64_t lr_step, warmup_steps, warmup_epochs;
    int64_t milestones[CLT_SCHEDULE_MILESTONES];
    int n_milestones;
    double lr_gamma, lr_min;
} run_learning;

/* The defaults: SGD, betas 0.9, 0.999, eps 1e-8, constant rate, gamma 0.1. */
void run_learning_default(run_learning *l);

typedef struct run_meta {
    int64_t epoch;       /* 1-based epoch to continue in */
    int64_t batch;       /* index of the next batch in that epoch */
    int64_t steps;       /* optimizer steps done */
    int64_t seed, batch_size, limit_train;
    int shuffle, drop_last;
    double lr, momentum, weight_decay;
    char *data;          /* owned (run_meta_parse) or borrowed (formatting) */
    /* Version 2 on: where the run ends (one of the two, the other 0; both
     * 0 in a version 1 record). */
    int64_t target_epochs, target_steps;
    run_learning learn;
    /* Version 4 on: the data beside --data (older records: none, auto, fine). */
    char *test_data;     /* "" or NULL: none; owned as data */
    int layout, coarse;
    char *normalize;     /* "" or NULL: none; else the values, "M0,..:S0,.."; owned as data */
    char *augment;       /* "" or NULL: none; else as --augment takes it; owned as data */
    double val_split;    /* 0: none */
    int64_t image_size, channels; /* image folders; 0: none, the most */
    /* "precision" ("tf32" or "fp32"; --precision), where the record has it:
     * an older reader ignores it, and a record without it reads as tf32 */
    int precision;       /* clt_precision */
} run_meta;

/* The run record version this cltrain writes; it reads this one and older. */
#define RUN_META_VERSION 4

/* Reads a checkpoint's model spec (malloc'd) and its run record (parsed
 * into m; free m->data); 0, or 1 after a message naming the file. */
int run_meta_read_checkpoint(const char *path, char **model, run_meta *m);
/* The model spec a net's file names (an exported .npz or a checkpoint):
 * *model malloc'd, or NULL where the file has none (parameters alone); 0,
 * or 1 after a message naming `opt` when the file cannot be read. */
int run_meta_file_spec(const char *path, const char *opt, char **model);
/* JSON text of m, malloc'd (NULL when out of memory). */
char *run_meta_format(const run_meta *m);
/* Parses text written by run_meta_format (any version up to
 * RUN_META_VERSION; a newer one is refused); 0 on success, else prints a
 * message naming `path` and the field and returns 1. Free m->data. */
int run_meta_parse(const char *text, const char *path, run_meta *m);

#endif
