/* Learning-rate schedules (src/optim/schedule.c) against a reference
 * written from PyTorch's definitions (StepLR, MultiStepLR stepped per
 * epoch; CosineAnnealingLR per step after the warmup; LinearLR-like warmup
 * (step + 1) / N), on every step of a run, and the settings checks; plus
 * clipping's factor (src/optim/clip.c). */
#include <math.h>

#include "check.h"
#include "optim/clip.h"
#include "optim/schedule.h"

/* The reference, step by step as PyTorch's schedulers would be driven:
 * epoch-wise decays applied once per epoch boundary, cosine by recurrence-free
 * closed form per step. */
static double reference(const clt_schedule *s, int64_t step)
{
    double lr = s->lr;
    int64_t epoch = step / s->steps_per_epoch;
    if (s->kind == CLT_SCHEDULE_STEP)
        for (int64_t e = 1; e <= epoch; e++)
            if (e % s->step_epochs == 0) lr *= s->gamma;
    if (s->kind == CLT_SCHEDULE_MULTISTEP)
        for (int i = 0; i < s->n_milestones; i++)
            if (epoch >= s->milestones[i]) lr *= s->gamma;
    if (s->kind == CLT_SCHEDULE_COSINE) {
        double t = (double)(step > s->warmup_steps ? step - s->warmup_steps : 0);
        double T = (double)(s->total_steps - s->warmup_steps);
        lr = s->lr_min + 0.5 * (s->lr - s->lr_min) * (1 + cos(3.14159265358979323846 * fmin(t, T) / T));
    }
    if (step < s->warmup_steps) lr = lr * (double)(step + 1) / (double)s->warmup_steps;
    return lr;
}

static void check_run(const clt_schedule *s, const char *what)
{
    CHECK_OK(clt_schedule_check(s));
    double worst = 0;
    for (int64_t step = 0; step < s->total_steps; step++)
        worst = fmax(worst, fabs(clt_schedule_lr(s, step) - reference(s, step)) / s->lr);
    CHECK(worst < 1e-12, "%s: lr differs from the reference by %g", what, worst);
}

int main(void)
{
    clt_schedule s = {.kind = CLT_SCHEDULE_CONSTANT, .lr = 0.1, .steps_per_epoch = 7, .total_steps = 70};
    check_run(&s, "constant");
    CHECK(clt_schedule_lr(&s, 50) == 0.1, "constant lr");
    s.warmup_steps = 10;
    check_run(&s, "constant, warmup");
    CHECK(fabs(clt_schedule_lr(&s, 0) - 0.01) < 1e-15 && clt_schedule_lr(&s, 9) == 0.1, "warmup ends at lr");
    s = (clt_schedule){.kind = CLT_SCHEDULE_STEP, .lr = 0.2, .gamma = 0.1, .step_epochs = 3, .steps_per_epoch = 5,
                       .total_steps = 60, .warmup_steps = 4};
    check_run(&s, "step");
    CHECK(fabs(clt_schedule_lr(&s, 15) - 0.02) < 1e-15 && clt_schedule_lr(&s, 14) == 0.2, "step decays at epoch 3");
    s = (clt_schedule){.kind = CLT_SCHEDULE_MULTISTEP, .lr = 0.2, .gamma = 0.5, .milestones = {2, 5}, .n_milestones = 2,
                       .steps_per_epoch = 4, .total_steps = 40};
    check_run(&s, "multistep");
    CHECK(clt_schedule_lr(&s, 7) == 0.2 && clt_schedule_lr(&s, 8) == 0.1 && clt_schedule_lr(&s, 20) == 0.05,
          "multistep values");
    s = (clt_schedule){.kind = CLT_SCHEDULE_COSINE, .lr = 0.1, .lr_min = 0.001, .steps_per_epoch = 10,
                       .total_steps = 100, .warmup_steps = 20};
    check_run(&s, "cosine, warmup");
    CHECK(fabs(clt_schedule_lr(&s, 20) - 0.1) < 1e-15 && fabs(clt_schedule_lr(&s, 100) - 0.001) < 1e-15,
          "cosine from lr to the floor");
    s.warmup_steps = 0;
    check_run(&s, "cosine");

    clt_schedule bad = {.kind = CLT_SCHEDULE_STEP, .lr = 0.1, .gamma = 0.1, .steps_per_epoch = 1};
    CHECK_FAIL(clt_schedule_check(&bad), CLT_ERR_INVALID_ARG, "every 0 epochs");
    bad = (clt_schedule){.kind = CLT_SCHEDULE_MULTISTEP, .lr = 0.1, .gamma = 0.1, .milestones = {3, 3},
                         .n_milestones = 2, .steps_per_epoch = 1};
    CHECK_FAIL(clt_schedule_check(&bad), CLT_ERR_INVALID_ARG, "milestone 3 is not after 3");
    bad = (clt_schedule){.kind = CLT_SCHEDULE_COSINE, .lr = 0.1, .lr_min = 0.2, .steps_per_epoch = 1};
    CHECK_FAIL(clt_schedule_check(&bad), CLT_ERR_INVALID_ARG, "floor 0.2");
    CHECK(clt_schedule_named("cosine") == CLT_SCHEDULE_COSINE && clt_schedule_named("linear") == -1, "names");

    /* clipping: norm 5 clipped to 1, and a gradient within the bound kept */
    const float g[2] = {3, 4};
    CHECK(clt_grad_norm(g, 2) == 5.0, "norm of (3, 4)");
    CHECK(fabsf(clt_clip_factor(5.0, 1.0f) - (float)(1.0 / (5.0 + 1e-6))) == 0, "clip factor");
    CHECK(clt_clip_factor(5.0, 10.0f) == 1.0f, "no clipping within the bound");
    return test_result();
}
