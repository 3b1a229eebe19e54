/* cltrain bench train's parts: one timed run (bench.c), and the run
 * across MPI processes (bench_world.c). */
#ifndef CLT_CLI_BENCH_H
#define CLT_CLI_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "options.h"
#include "world.h"

typedef struct bench_row {
    int k;             /* devices (of this process) */
    size_t params;     /* floats of the gradient buffer a step sums */
    double samples_per_s, step_s, compute_s, transfer_s, reduce_s, idle_s, hidden_s, exposed_s;
} bench_row;

/* b synthetic 28x28 images (uniform in [0, 1)) and labels (i mod the
 * model's classes), malloc'd; 0, or 1 (out of memory) or 2 (a model that
 * does not parse) after a message. */
int cli_synthetic_batch(const char *model, size_t b, float **images, int32_t **labels);
/* Warm-up and `steps` timed steps of a trainer on devs[0..k); comm: an
 * MPI_Comm pointer (NULL: this process alone); trace: a file for a trace
 * of the timed steps (NULL: none). 0, or 1 after a message. */
int cli_bench_run(const cli_options *o, const int *devs, int k, const float *images, const int32_t *labels, int steps,
                  const char *trace, void *comm, bench_row *row);
/* Under mpirun: process 0 alone on its devices, then every process, the
 * scaling between them, and the allreduce's bus bandwidth. */
int cli_bench_world(const cli_options *o, const int *devs, int n, const float *images, const int32_t *labels,
                    int steps, const cli_world *w);

#endif
