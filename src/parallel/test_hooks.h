/* Hooks for the tests of the trainer, outside the public API and the
 * trainer's own header: they let one vendor's devices stand in for mixed
 * vendors and make a device fail on cue. */
#ifndef CLT_PARALLEL_TEST_HOOKS_H
#define CLT_PARALLEL_TEST_HOOKS_H

#include "cltrain.h"

/* Per device slot i (NULL arrays: none): force_align[i] bytes of base
 * alignment reported instead of the device's own (0: its own);
 * force_copies[i] != 0: its gradients go through copies even where the
 * device could share them (as a GPU's beside a CPU's). */
typedef struct clt_trainer_test_hooks {
    const size_t *force_align;
    const int *force_copies;
    int host_sum; /* != 0: the host sums even where replicas could read each other's gradients */
} clt_trainer_test_hooks;

/* clt_trainer_create with test hooks (NULL: none). */
clt_status clt_trainer_create_with(const clt_trainer_config *cfg, const clt_trainer_test_hooks *hooks,
                                   clt_trainer **out);
/* Make device slot fail during step number `step` (1-based). */
void clt_trainer_inject_failure(clt_trainer *t, int slot, int64_t step);

#endif
