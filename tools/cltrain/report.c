#include "report.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../common/json.h"
#include "../common/number.h"
#include "outputs.h"

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

void report_epoch(const cli_options *o, const epoch_report *r, const int *devs, int n, int processes)
{
    if (o->json) {
        printf("{\"epoch\": %lld, \"steps\": %lld, \"loss\": %.6f, \"train_acc\": %.6f, ", (long long)r->epoch,
               (long long)r->steps, r->loss, r->train_acc);
        if (r->evaluated) printf("\"test_acc\": %.6f, \"test_loss\": %.6f, ", r->test_acc, r->test_loss);
        else printf("\"test_acc\": null, \"test_loss\": null, ");
        printf("\"seconds\": %.4f, \"samples_per_s\": " NUMBER_MACHINE_FMT ", \"lr\": %.9g, \"devices\": [",
               r->seconds, r->samples_per_s, r->lr);
        device_names(stdout, devs, n, 1);
        if (processes > 1) printf("], \"processes\": %d}\n", processes);
        else printf("]}\n");
    } else if (!o->quiet) {
        char rate[32], secs[32];
        printf("epoch %lld: loss %.4f, train acc %.4f, ", (long long)r->epoch, r->loss, r->train_acc);
        if (r->evaluated) printf("test acc %.4f, ", r->test_acc);
        else if (r->stopped) printf("test acc - (stopped at step %lld), ", (long long)r->steps);
        else printf("test acc - (no test set), ");
        printf("lr %.4g, %s s/epoch, %s samples/s on [", r->lr, format_number(secs, sizeof secs, r->seconds),
               format_number(rate, sizeof rate, r->samples_per_s));
        device_names(stdout, devs, n, 0);
        if (processes > 1) printf("] (process 0 of %d)\n", processes);
        else printf("]\n");
    }
}

int report_csv(const char *path, const epoch_report *r)
{
    FILE *f = cli_open_append("--log-csv", path);
    if (!f) return 1;
    if (ftell(f) == 0) fprintf(f, "epoch,steps,loss,train_acc,test_acc,seconds,samples_per_s,lr\n");
    fprintf(f, "%lld,%lld,%.6f,%.6f,", (long long)r->epoch, (long long)r->steps, r->loss, r->train_acc);
    if (r->evaluated) fprintf(f, "%.6f", r->test_acc); /* empty: not evaluated */
    fprintf(f, ",%.4f," NUMBER_MACHINE_FMT ",%.9g\n", r->seconds, r->samples_per_s, r->lr);
    errno = 0;
    int bad = fflush(f) != 0 || ferror(f);
    int err = errno;
    if (fclose(f) != 0 && !bad) bad = 1, err = errno;
    if (bad) fprintf(stderr, "cltrain: --log-csv %s: write failed: %s\n", path, err ? strerror(err) : "I/O error");
    return bad;
}

void report_progress(int64_t done, int64_t total, double loss, double sps, double elapsed)
{
    int width = 30, filled = total ? (int)(width * done / total) : 0;
    double eta = sps > 0 && total > done ? elapsed / (double)done * (double)(total - done) : 0;
    char rate[32];
    fprintf(stdout, "\r[%.*s%*s] %lld/%lld  loss %.4f  %s samples/s  ETA %.0f s ", filled,
            "##############################", width - filled, "", (long long)done, (long long)total, loss,
            format_number(rate, sizeof rate, sps), eta);
    fflush(stdout);
}

void report_progress_clear(void)
{
    printf("\r%*s\r", 100, "");
    fflush(stdout);
}
