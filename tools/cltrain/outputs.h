/* The files a training run writes, checked before the first step: a run
 * must not train for an hour and then fail on (or destroy) an output. */
#ifndef CLT_CLI_OUTPUTS_H
#define CLT_CLI_OUTPUTS_H

#include <stdio.h>

#include "options.h"

/* Refuses, with a message naming the option and the path: an empty path, a
 * missing parent directory, a target that is not a regular file (links are
 * followed), one that cannot be written, and two outputs (or an output and
 * an input it would destroy) that are the same file. Returns 0 or 1. */
int cli_check_outputs(const cli_options *o);
/* Opens the regular file at path for appending (created if missing), never
 * blocking on a FIFO; prints a message naming opt and returns NULL on
 * failure. */
FILE *cli_open_append(const char *opt, const char *path);

#endif
