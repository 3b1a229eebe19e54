/* Learning-rate schedules, evaluated on the host before every optimizer
 * step (the same value on every device): a pure function of the step
 * number. Epoch-based schedules (step, multistep) change the rate at epoch
 * boundaries as PyTorch's StepLR / MultiStepLR stepped once per epoch;
 * cosine follows CosineAnnealingLR per step, from the end of the warmup to
 * the last step, down to lr_min. A linear warmup over the first
 * warmup_steps steps multiplies the schedule's rate by
 * (step + 1) / warmup_steps. */
#ifndef CLT_OPTIM_SCHEDULE_H
#define CLT_OPTIM_SCHEDULE_H

#include <stdint.h>

#include "cltrain.h"

typedef enum clt_schedule_kind {
    CLT_SCHEDULE_CONSTANT,
    CLT_SCHEDULE_STEP,      /* lr * gamma^floor(epoch / step_epochs) */
    CLT_SCHEDULE_MULTISTEP, /* lr * gamma^(milestones passed: those <= epoch) */
    CLT_SCHEDULE_COSINE     /* lr_min + (lr - lr_min) (1 + cos(pi t / T)) / 2 */
} clt_schedule_kind;

#define CLT_SCHEDULE_MILESTONES 16

typedef struct clt_schedule {
    clt_schedule_kind kind;
    double lr;                 /* the base rate */
    double gamma;              /* step, multistep */
    int64_t step_epochs;       /* step: > 0 */
    int64_t milestones[CLT_SCHEDULE_MILESTONES]; /* multistep: increasing epochs (0-based epoch index) */
    int n_milestones;
    double lr_min;             /* cosine: the floor */
    int64_t warmup_steps;      /* 0: none */
    int64_t steps_per_epoch;   /* > 0 */
    int64_t total_steps;       /* cosine: steps of the whole run */
} clt_schedule;

/* CLT_ERR_INVALID_ARG naming the bad setting. */
clt_status clt_schedule_check(const clt_schedule *s);
/* The rate of optimizer step `step` (0 for the first) of a checked schedule. */
double clt_schedule_lr(const clt_schedule *s, int64_t step);
/* The kind a name ("constant", "step", "multistep", "cosine") names; -1 if none. */
int clt_schedule_named(const char *name);
/* The name of a kind ("cosine"); "?" for an unknown one. */
const char *clt_schedule_name(int kind);

#endif
