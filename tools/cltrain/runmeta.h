/* The training-loop state a checkpoint carries besides the tensors: where
 * the run stands and the settings that fix the data order. */
#ifndef CLT_CLI_RUNMETA_H
#define CLT_CLI_RUNMETA_H

#include <stddef.h>
#include <stdint.h>

typedef struct run_meta {
    int64_t epoch;       /* 1-based epoch to continue in */
    int64_t batch;       /* index of the next batch in that epoch */
    int64_t steps;       /* optimizer steps done */
    int64_t seed, batch_size, limit_train;
    int shuffle, drop_last;
    double lr, momentum, weight_decay;
    char *data;          /* owned (run_meta_parse) or borrowed (formatting) */
} run_meta;

/* Reads a checkpoint's model spec and (when meta is not NULL) its run
 * record text, both malloc'd; 0, or 1 after a message naming the file. */
int run_meta_read_checkpoint(const char *path, char **model, char **meta);
/* JSON text of m, malloc'd (NULL when out of memory). */
char *run_meta_format(const run_meta *m);
/* Parses text written by run_meta_format; 0 on success, else prints a
 * message naming `path` and the field and returns 1. Free m->data. */
int run_meta_parse(const char *text, const char *path, run_meta *m);

#endif
