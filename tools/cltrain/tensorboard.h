/* cltrain train --tensorboard DIR: the run's scalars as TensorBoard event
 * files (io/tfevents.h). Tags: loss/train_step per step; per epoch
 * loss/train, accuracy/train, loss/test and accuracy/test (where
 * evaluated), lr, samples_per_s and epoch; all at the optimizer steps
 * done, so steps and epochs share one axis. */
#ifndef CLT_CLI_TENSORBOARD_H
#define CLT_CLI_TENSORBOARD_H

#include <stdint.h>

#include "io/tfevents.h"
#include "options.h"
#include "report.h"

/* Opens --tensorboard's directory (*w stays NULL without the option) for
 * a run continuing after `steps` done, or a new run (-1), before any
 * training: 0, or 1 (2 where this build cannot write events) after a
 * message naming the option. */
int tboard_open(const cli_options *o, int64_t steps, clt_tfevents **w);
/* The training loss of the step that made `step` steps done (mean over
 * its batch); 0, or 1 after a message. */
int tboard_step(clt_tfevents *w, const char *dir, int64_t step, double loss);
/* The epoch's scalars, then synced to disk; 0, or 1 after a message. */
int tboard_epoch(clt_tfevents *w, const char *dir, const epoch_report *r);

#endif
