/* cltrain bench train under mpirun (bench.h): process 0 alone on its
 * devices, then every process on all of theirs, the scaling between the
 * two, and the bus bandwidth of an allreduce of the gradients' size as
 * nccl-tests defines it (busbw = algbw * 2(n-1)/n). */
#include <stdio.h>

#include "../common/number.h"
#include "bench.h"

int cli_bench_world(const cli_options *o, const int *devs, int n, const float *images, const int32_t *labels,
                    int steps, const cli_world *w)
{
    bench_row one = {0}, all = {0};
    int rc = 0;
    if (w->rank == 0) rc = cli_bench_run(o, devs, n, images, labels, steps, NULL, NULL, &one);
    if ((rc = cli_world_max(w, rc))) return rc; /* process 0's failure ends every process */
    cli_world_barrier(w);
    /* a failure here returns at once: the others may be inside the
     * trainer's collectives, and main's MPI_Abort ends them */
    if ((rc = cli_bench_run(o, devs, n, images, labels, steps, w->rank == 0 ? o->trace : NULL, w->comm, &all)))
        return rc;
    double sec = cli_world_allreduce_seconds(w, all.params, 10);
    int devices = cli_world_sum(w, n);
    if (w->rank != 0) return 0;
    double bytes = 4.0 * (double)all.params, algbw = sec > 0 ? bytes / sec / 1e9 : 0;
    double busbw = algbw * 2.0 * (w->size - 1) / w->size, scaling = all.samples_per_s / one.samples_per_s;
    if (o->json) {
        const bench_row *r[2] = {&one, &all};
        printf("{\"model\": \"%s\", \"batch_size\": %lld, \"steps\": %d, \"runs\": [", o->model,
               (long long)o->batch_size, steps);
        for (int i = 0; i < 2; i++)
            printf("%s\n  {\"processes\": %d, \"devices\": %d, \"samples_per_s\": " NUMBER_MACHINE_FMT
                   ", \"scaling\": %.3f, \"step_s\": %.5f, \"compute_s\": %.5f, \"exposed_s\": %.5f}",
                   i ? "," : "", i ? w->size : 1, i ? devices : n, r[i]->samples_per_s,
                   r[i]->samples_per_s / one.samples_per_s, r[i]->step_s, r[i]->compute_s, r[i]->exposed_s);
        printf("\n], \"allreduce\": {\"bytes\": %.0f, \"seconds\": %.6f, \"algbw_gb_per_s\": %.3f, "
               "\"busbw_gb_per_s\": %.3f}}\n", bytes, sec, algbw, busbw);
        return 0;
    }
    char rate[32];
    printf("model %s, batch %lld over all processes, %d timed steps\n", o->model, (long long)o->batch_size, steps);
    printf("%-10s %8s %12s %8s %10s %10s %10s\n", "processes", "devices", "samples/s", "scaling", "step ms", "compute",
           "exposed");
    printf("%-10d %8d %12s %7.2fx %10.2f %10.2f %10.2f\n", 1, n, format_number(rate, sizeof rate, one.samples_per_s),
           1.0, 1e3 * one.step_s, 1e3 * one.compute_s, 1e3 * one.exposed_s);
    printf("%-10d %8d %12s %7.2fx %10.2f %10.2f %10.2f\n", w->size, devices,
           format_number(rate, sizeof rate, all.samples_per_s), scaling, 1e3 * all.step_s, 1e3 * all.compute_s,
           1e3 * all.exposed_s);
    printf("allreduce of %.1f MB over %d processes: %.3f ms, algbw %.2f GB/s, busbw %.2f GB/s\n", bytes / 1e6,
           w->size, 1e3 * sec, algbw, busbw);
    return 0;
}
