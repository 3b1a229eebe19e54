/* Learning-rate schedules (schedule.h). */
#include "optim/schedule.h"

#include <math.h>
#include <string.h>

#include "core/error.h"

clt_status clt_schedule_check(const clt_schedule *s)
{
    if (!s) return clt_fail(CLT_ERR_INVALID_ARG, "schedule: NULL");
    if (!isfinite(s->lr) || s->lr < 0) return clt_fail(CLT_ERR_INVALID_ARG, "schedule: lr %g", s->lr);
    if (s->steps_per_epoch < 1 || s->warmup_steps < 0)
        return clt_fail(CLT_ERR_INVALID_ARG, "schedule: %lld steps per epoch, %lld warmup steps",
                        (long long)s->steps_per_epoch, (long long)s->warmup_steps);
    switch (s->kind) {
    case CLT_SCHEDULE_CONSTANT: return CLT_OK;
    case CLT_SCHEDULE_STEP:
        if (s->step_epochs < 1) return clt_fail(CLT_ERR_INVALID_ARG, "step schedule: every %lld epochs", (long long)s->step_epochs);
        /* fall through */
    case CLT_SCHEDULE_MULTISTEP:
        if (!isfinite(s->gamma) || s->gamma <= 0)
            return clt_fail(CLT_ERR_INVALID_ARG, "schedule: gamma %g must be > 0", s->gamma);
        if (s->n_milestones < 0 || s->n_milestones > CLT_SCHEDULE_MILESTONES)
            return clt_fail(CLT_ERR_INVALID_ARG, "schedule: %d milestones (at most %d)", s->n_milestones,
                            CLT_SCHEDULE_MILESTONES);
        for (int i = 0; i < s->n_milestones; i++)
            if (s->milestones[i] < 0 || (i && s->milestones[i] <= s->milestones[i - 1]))
                return clt_fail(CLT_ERR_INVALID_ARG, "schedule: milestone %lld is not after %lld",
                                (long long)s->milestones[i], (long long)(i ? s->milestones[i - 1] : 0));
        return CLT_OK;
    case CLT_SCHEDULE_COSINE:
        if (!isfinite(s->lr_min) || s->lr_min < 0 || s->lr_min > s->lr)
            return clt_fail(CLT_ERR_INVALID_ARG, "cosine schedule: floor %g must lie in [0, lr %g]", s->lr_min, s->lr);
        return CLT_OK;
    }
    return clt_fail(CLT_ERR_INVALID_ARG, "schedule: unknown kind %d", (int)s->kind);
}

double clt_schedule_lr(const clt_schedule *s, int64_t step)
{
    int64_t epoch = step / s->steps_per_epoch;
    double lr = s->lr;
    switch (s->kind) {
    case CLT_SCHEDULE_CONSTANT: break;
    case CLT_SCHEDULE_STEP: lr *= pow(s->gamma, (double)(epoch / s->step_epochs)); break;
    case CLT_SCHEDULE_MULTISTEP: {
        int passed = 0;
        while (passed < s->n_milestones && s->milestones[passed] <= epoch) passed++;
        lr *= pow(s->gamma, passed);
        break;
    }
    case CLT_SCHEDULE_COSINE: {
        int64_t span = s->total_steps - s->warmup_steps, t = step - s->warmup_steps;
        if (t < 0) t = 0;
        if (span > 0 && t > span) t = span;
        double pi = acos(-1.0);
        lr = span > 0 ? s->lr_min + (s->lr - s->lr_min) * (1 + cos(pi * (double)t / (double)span)) / 2 : s->lr;
        break;
    }
    }
    if (step < s->warmup_steps) lr *= (double)(step + 1) / (double)s->warmup_steps;
    return lr;
}

static const char *const schedule_names[] = {"constant", "step", "multistep", "cosine"};
#define N_SCHEDULES (int)(sizeof schedule_names / sizeof schedule_names[0])

const char *clt_schedule_name(int kind) { return kind >= 0 && kind < N_SCHEDULES ? schedule_names[kind] : "?"; }

int clt_schedule_named(const char *name)
{
    for (int i = 0; name && i < N_SCHEDULES; i++)
        if (!strcmp(schedule_names[i], name)) return i;
    return -1;
}
