/* The files a training run writes, checked before the first step: a run
 * must not train for an hour and then fail on (or destroy) an output. */
#ifndef CLT_CLI_OUTPUTS_H
#define CLT_CLI_OUTPUTS_H

#include <stdio.h>

#include "core/file_lock.h"
#include "options.h"

/* The outputs a run holds: one run writes a file at a time. */
typedef struct cli_outputs {
    clt_file_lock locks[7];
    int n;
} cli_outputs;

/* Refuses, with a message naming the option and the path: an empty path, a
 * missing parent directory, a target that is not a regular file (links are
 * followed), one that cannot be written or replaced (a sticky directory),
 * one another run is writing (its lock names it), and two outputs (or an
 * output and an input it would destroy) that are the same file. Takes the
 * outputs' locks into held (cli_release_outputs drops them). Returns 0 or
 * 1, holding nothing then. Creates no file. */
int cli_check_outputs(const cli_options *o, cli_outputs *held);
void cli_release_outputs(cli_outputs *held);
/* Whether --export-npz and --save fit in their file systems' free space,
 * as the net's parameters (and optimizer_slots copies more in a
 * checkpoint) take it; 0, or 1 after a message with both sizes. */
int cli_check_space(const cli_options *o, const clt_net *net, int optimizer_slots);
/* Opens the regular file at path for appending (created if missing), never
 * blocking on a FIFO; prints a message naming opt and returns NULL on
 * failure. */
FILE *cli_open_append(const char *opt, const char *path);

#endif
