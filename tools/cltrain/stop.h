/* How a run is asked to stop. SIGINT (Ctrl-C), SIGTERM (kill, timeout,
 * schedulers, mpirun) and SIGHUP (the terminal closed; unless ignored, as
 * under nohup) go to a thread of their own: once a run is armed, the first
 * of them asks it to stop after the current step, saved (and interrupts
 * the trainer's tuning); before that, or a second one, ends the process by
 * that signal at once. SIGPIPE is ignored, so a closed standard output
 * (`cltrain train | head`) shows as a failed write, which asks the run to
 * stop the same way (stop_check_output). */
#ifndef CLT_CLI_STOP_H
#define CLT_CLI_STOP_H

#include <stdio.h>

#include "cltrain.h"

/* First thing in main, before any thread exists (the signals stay blocked
 * in every thread but the watcher); 0, or 1 after a message. */
int stop_init(void);
/* From now on the first stop signal asks the run to stop. */
void stop_arm(void);
/* A stop also interrupts t (clt_trainer_interrupt: tuning under way ends
 * now, the step goes on), a stop already asked included; NULL: none. Call
 * with NULL before destroying t. */
void stop_forward_to(clt_trainer *t);
/* The signal that asked to stop (SIGPIPE for a closed output), or 0. */
int stop_requested(void);
/* Flushes f: 0, or the error number of a write that failed (EIO where
 * none is known); EPIPE (a closed pipe) also asks to stop with SIGPIPE. */
int stop_check_output(FILE *f);
/* "interrupted", "terminated (SIGTERM)", ... for the stop line. */
const char *stop_words(int sig);

#endif
