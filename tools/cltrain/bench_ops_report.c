/* cltrain bench ops: the tables and the JSON of the measured ops, each as
 * a fraction of the device's measured peaks. */
#include <math.h>
#include <stdio.h>

#include "../common/json.h"
#include "bench_case.h"
#include "bench_ops.h"

static double frac_of(const bench_row *r, const bench_peaks *p)
{
    if (r->error[0] || !(r->ms > 0)) return NAN;
    double per_s = 1e3 / r->ms;
    if (r->flop > 0) return p->fma_gflops > 0 ? r->flop * per_s * 1e-9 / p->fma_gflops : NAN;
    return p->copy_gbps > 0 ? r->bytes * per_s * 1e-9 / p->copy_gbps : NAN;
}

static const char *type_name(clt_device_type t)
{
    if (t == CLT_DEVICE_GPU) return "GPU";
    if (t == CLT_DEVICE_CPU) return "CPU";
    return t == CLT_DEVICE_ACCELERATOR ? "accelerator" : "other";
}

static void print_row_text(const bench_row *r, const bench_peaks *p)
{
    if (r->error[0]) {
        printf("%-10s %-17s %-32s  failed: %s\n", r->op, r->pass, r->shape, r->error);
        return;
    }
    double per_s = 1e3 / r->ms, f = frac_of(r, p);
    char rate[32], pct[32];
    if (r->flop > 0) snprintf(rate, sizeof rate, "%9.1f GFLOP/s", r->flop * per_s * 1e-9);
    else snprintf(rate, sizeof rate, "%9.2f GB/s   ", r->bytes * per_s * 1e-9);
    if (isfinite(f)) snprintf(pct, sizeof pct, "%6.1f%%", 100 * f);
    else snprintf(pct, sizeof pct, "%7s", "-");
    char tail[400], own[64] = "";
    if (r->own_flop > 0) /* the rate in the algorithm's own multiplies beside the direct-equivalent one */
        snprintf(own, sizeof own, "; own %.1f GFLOP/s %.1f%%", r->own_flop * per_s * 1e-9,
                 p->fma_gflops > 0 ? 100 * r->own_flop * per_s * 1e-9 / p->fma_gflops : NAN);
    snprintf(tail, sizeof tail, "%s%s%s%s", r->kernel, own, (r->kernel[0] || own[0]) && r->note ? "; " : "",
             r->note ? r->note : "");
    if (tail[0])
        printf("%-10s %-17s %-32s %10.3f %s %s %-4s  %s\n", r->op, r->pass, r->shape, r->ms, rate, pct,
               r->flop > 0 ? "fma" : "copy", tail);
    else
        printf("%-10s %-17s %-32s %10.3f %s %s %s\n", r->op, r->pass, r->shape, r->ms, rate, pct,
               r->flop > 0 ? "fma" : "copy");
}

/* Peak measurements further apart than this fraction are reported. */
#define PEAK_STEADY 0.05

static void print_peaks_text(const bench_device *d)
{
    const bench_peaks *p = &d->peaks;
    printf("device %d: %s (%s, %s, %d compute units, %d MHz)\n", d->index, d->info.name, d->info.platform,
           type_name(d->info.type), d->info.compute_units, d->info.max_clock_mhz);
    if (d->compute_capability)
        printf("TF32 tensor cores: %s (compute capability %d.%d)\n", d->tf32 ? "yes" : "no", d->compute_capability / 10,
               d->compute_capability % 10);
    else printf("TF32 tensor cores: %s\n", d->tf32 ? "yes" : "no");
    printf("peaks (FMA and copy: the best of %d measurements, before and after the ops):\n", p->samples);
    printf("       FMA %.1f GFLOP/s (%s)\n", p->fma_gflops, p->fma_variant[0] ? p->fma_variant : "-");
    printf("       copy %.2f GB/s read+write (%s, 2 x %zu MiB)\n", p->copy_gbps,
           p->copy_variant[0] ? p->copy_variant : "-", p->copy_bytes >> 20);
    printf("       host->device %.2f GB/s pinned, %.2f GB/s unpinned; device->host %.2f GB/s pinned, %.2f GB/s "
           "unpinned (%zu MiB)\n",
           p->h2d_pinned_gbps, p->h2d_unpinned_gbps, p->d2h_pinned_gbps, p->d2h_unpinned_gbps,
           p->transfer_bytes >> 20);
    /* the peaks are measured before and after the ops: far apart, other load
     * shared the device, and this run's figures move with it */
    double fma_drop = p->fma_gflops > 0 ? 1 - p->fma_low_gflops / p->fma_gflops : 0;
    double copy_drop = p->copy_gbps > 0 ? 1 - p->copy_low_gbps / p->copy_gbps : 0;
    int fma_moved = p->samples > 1 && fma_drop > PEAK_STEADY, copy_moved = p->samples > 1 && copy_drop > PEAK_STEADY;
    if (fma_moved)
        printf("       not steady: FMA %.1f GFLOP/s in one measurement (%.0f%% lower)\n", p->fma_low_gflops,
               100 * fma_drop);
    if (copy_moved)
        printf("       not steady: copy %.2f GB/s in one measurement (%.0f%% lower)\n", p->copy_low_gbps,
               100 * copy_drop);
    if (fma_moved || copy_moved)
        printf("       (other load on the device, or its clock changed: compare ops within this run, not across "
               "runs)\n");
    if (!d->peaks_ok) printf("       (peak measurement failed: %s)\n", d->error);
    printf("compute ops: %% of the FMA peak; memory ops: %% of the copy peak, which is measured beyond the\n"
           "caches, so ops whose data stays in cache can pass 100%%; a convolution's FLOPs count every tap,\n"
           "the padding's too, so kernels that skip those can pass 100%% on small padded images\n");
    fflush(stdout);
}

static void json_num(const char *key, double v, int comma)
{
    if (isfinite(v)) printf("\"%s\": %.6g%s", key, v, comma ? ", " : "");
    else printf("\"%s\": null%s", key, comma ? ", " : "");
}

void bench_report_json(const bench_device *res, int n, const bench_opts *o)
{
    printf("{\"command\": \"bench ops\", ");
    if (o->repeat) printf("\"repeat\": %lld, ", (long long)o->repeat);
    else printf("\"repeat\": null, \"budget_s\": %g, ", BENCH_BUDGET_S);
    printf("\"devices\": [");
    for (int i = 0; i < n; i++) {
        const bench_device *d = &res[i];
        const bench_peaks *p = &d->peaks;
        printf("%s\n {\"index\": %d, \"name\": ", i ? "," : "", d->index);
        json_string(stdout, d->info.name);
        printf(", \"platform\": ");
        json_string(stdout, d->info.platform);
        printf(", \"type\": \"%s\", \"compute_units\": %d, \"max_clock_mhz\": %d, \"tf32\": %s, "
               "\"compute_capability\": %d, ",
               type_name(d->info.type), d->info.compute_units, d->info.max_clock_mhz, d->tf32 ? "true" : "false",
               d->compute_capability);
        if (d->error[0]) {
            printf("\"error\": ");
            json_string(stdout, d->error);
            printf(", ");
        }
        printf("\n  \"peaks\": {");
        json_num("fma_gflop_per_s", p->fma_gflops, 1);
        json_num("fma_gflop_per_s_low", p->fma_low_gflops, 1);
        printf("\"fma_variant\": ");
        json_string(stdout, p->fma_variant);
        printf(", ");
        json_num("copy_gb_per_s", p->copy_gbps, 1);
        json_num("copy_gb_per_s_low", p->copy_low_gbps, 1);
        printf("\"copy_variant\": ");
        json_string(stdout, p->copy_variant);
        printf(", \"copy_bytes\": %zu, ", p->copy_bytes);
        json_num("h2d_pinned_gb_per_s", p->h2d_pinned_gbps, 1);
        json_num("d2h_pinned_gb_per_s", p->d2h_pinned_gbps, 1);
        json_num("h2d_unpinned_gb_per_s", p->h2d_unpinned_gbps, 1);
        json_num("d2h_unpinned_gb_per_s", p->d2h_unpinned_gbps, 1);
        printf("\"transfer_bytes\": %zu, \"samples\": %d},\n  \"models\": [", p->transfer_bytes, p->samples);
        int first = 1;
        for (int m = 0; m < BENCH_N_MODELS; m++) {
            if (!(o->model_mask & (1 << m))) continue;
            printf("%s{\"model\": \"%s\", \"batch_size\": %d, \"params\": %lld", first ? "" : ", ",
                   bench_models[m].name, d->batch[m], (long long)d->params[m]);
            if (bench_models[m].note) {
                printf(", \"note\": ");
                json_string(stdout, bench_models[m].note);
            }
            printf("}");
            first = 0;
        }
        printf("],\n  \"ops\": [");
        for (int j = 0; j < d->n_rows; j++) {
            const bench_row *r = &d->rows[j];
            double per_s = r->ms > 0 ? 1e3 / r->ms : NAN;
            printf("%s\n   {\"model\": \"%s\", \"op\": \"%s\", \"pass\": \"%s\", \"shape\": ", j ? "," : "", r->model,
                   r->op, r->pass);
            json_string(stdout, r->shape);
            /* calls: all timed calls; rounds: how many they were split into (ms_per_call: the fastest's mean) */
            printf(", \"batch_size\": %d, \"calls\": %d, \"rounds\": %d, ", r->batch, r->calls,
                   bench_rounds(r->calls));
            json_num("ms_per_call", r->error[0] ? NAN : r->ms, 1);
            json_num("flop", r->flop > 0 ? r->flop : NAN, 1);
            json_num("bytes", r->flop > 0 ? NAN : r->bytes, 1);
            json_num("gflop_per_s", r->flop > 0 && !r->error[0] ? r->flop * per_s * 1e-9 : NAN, 1);
            json_num("own_gflop_per_s", r->own_flop > 0 && !r->error[0] ? r->own_flop * per_s * 1e-9 : NAN, 1);
            json_num("gb_per_s", r->flop > 0 || r->error[0] ? NAN : r->bytes * per_s * 1e-9, 1);
            printf("\"peak\": \"%s\", ", r->flop > 0 ? "fma" : "copy");
            json_num("fraction_of_peak", frac_of(r, p), r->kernel[0] || r->note || r->error[0]);
            if (r->kernel[0]) {
                printf("\"kernel\": ");
                json_string(stdout, r->kernel);
                if (r->note || r->error[0]) printf(", ");
            }
            if (r->note) {
                printf("\"note\": ");
                json_string(stdout, r->note);
                if (r->error[0]) printf(", ");
            }
            if (r->error[0]) {
                printf("\"error\": ");
                json_string(stdout, r->error);
            }
            printf("}");
        }
        printf("]}");
    }
    printf("\n]}\n");
}

void bench_report_text(const bench_device *d, const bench_opts *o)
{
    print_peaks_text(d);
    int is_cpu = d->info.type == CLT_DEVICE_CPU;
    for (int mi = 0; mi < BENCH_N_MODELS; mi++) {
        if (!(o->model_mask & (1 << mi))) continue;
        const bench_model *m = &bench_models[mi];
        printf("\n%s, batch %d%s; ms/call: back-to-back calls after a warm-up in up to %d rounds, the "
               "fastest round's mean\n",
               m->name, d->batch[mi],
               !o->batch && is_cpu && m->cpu_batch ? " (the default on CPU devices; --batch-size sets it)" : "",
               BENCH_ROUNDS);
        if (m->note) printf("(%s)\n", m->note);
        printf("%-10s %-17s %-32s %10s %17s %s\n", "op", "pass", "shape (per sample)", "ms/call", "rate",
               "  of peak");
        for (int j = 0; j < d->n_rows; j++)
            if (d->rows[j].model == m->name) print_row_text(&d->rows[j], &d->peaks);
    }
    printf("\n");
    fflush(stdout);
}
