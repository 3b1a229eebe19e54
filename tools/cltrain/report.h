/* What cltrain train says of each epoch: the line (or JSON object) on
 * standard output, the CSV row, the progress bar. */
#ifndef CLT_CLI_REPORT_H
#define CLT_CLI_REPORT_H

#include <stdint.h>

#include "options.h"

typedef struct epoch_report {
    int64_t epoch, steps;
    double loss, train_acc, test_acc, seconds, samples_per_s;
    double lr;      /* of the epoch's last step */
    int evaluated;  /* 0: not evaluated (test_acc is not shown): a stop mid-epoch, or no test set */
    int stopped;    /* the run stopped: the line says at which step */
    double test_loss; /* mean over the test set, where evaluated */
} epoch_report;

/* The epoch's line on stdout (text, or JSON with --json; nothing with
 * --quiet), unflushed (stop_check_output flushes it). devs: this process's devices; under mpirun the count of
 * processes follows. */
void report_epoch(const cli_options *o, const epoch_report *r, const int *devs, int n, int processes);
/* Appends the epoch's row to --log-csv (with a header when the file is
 * empty); 0, or 1 after a message naming the file and the reason. */
int report_csv(const char *path, const epoch_report *r);
/* The progress bar on a terminal: batch done of total. */
void report_progress(int64_t done, int64_t total, double loss, double sps, double elapsed);
void report_progress_clear(void);

#endif
